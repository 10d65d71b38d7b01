"""The ``txkit`` command's entry point: the parser, logging, and one handler for every failure.

The secret key is never a flag: it comes from ``TXKIT_SECRET_KEY`` or a ``.env`` file.
Errors are printed as one scrubbed line (``txkit: error: ...``), never as a traceback, by one
top-level handler (:func:`describe_failure`); exit codes: 0 success, 1 any failure (HTTP,
format, incomplete export, file system), 2 only the user's own bad arguments and settings (a
``ConfigError``). Output paths are checked (a probe file is written) before any request is sent.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import txkit
from txkit import config
from txkit._scrub import install_log_filter, scrub
from txkit.cli import (
    _exceptions,
    _export,
    _probe,
    _project,
    _report,
    _sandbox,
    _store,
    _sync,
)
from txkit.errors import ConfigError, NoRecordsError, StoreError, TxkitError, one_line
from txkit.fetch.client import requests_started
from txkit.fetch.progress import quiet_logging
from txkit.output import check_writable
from txkit.store import check_store, refuse_foreign_folder

__all__ = ["build_parser", "describe_failure", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (no usage block), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {scrub(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the ``txkit`` argument parser with every subcommand."""
    parser = _Parser(
        prog="txkit",
        description="Exact, complete transaction exports into polars; sandbox included.",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every retry (DEBUG) and pass"
    )
    parser.add_argument("--version", action="version", version=f"txkit {txkit.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _project.add_parser(sub)
    _sandbox.add_parser(sub)
    _export.add_parser(sub)
    _sync.add_parser(sub)
    _store.add_parser(sub)
    _report.add_parser(sub)
    _probe.add_parser(sub)
    _exceptions.add_parser(sub)
    return parser


def _spelled(argv: Sequence[str]) -> list[str]:
    """argparse has no subcommand under one that takes options of its own: ``report sign`` ->
    ``report-sign``."""
    out = list(argv)
    for i, word in enumerate(out):
        if word.startswith("-"):
            continue
        if word == "report" and out[i + 1 : i + 2] in (["sign"], ["verify"], ["pdf"]):
            out[i : i + 2] = [f"report-{out[i + 1]}"]
        break
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``txkit`` command line; returns the process exit code.

    Every failure is one scrubbed line on stderr (``txkit: error: ...``) naming what went wrong
    and what to do: exit 2 for the user's own bad arguments and settings (argparse, a
    ``ConfigError``, or a ``ValueError`` from validating them before any request was sent), 1
    for everything else, 130 on Ctrl-C.
    """
    parser = build_parser()
    args = parser.parse_args(_spelled(sys.argv[1:] if argv is None else argv))
    rust_log = os.environ.get("RUST_LOG")
    _configure_logging(args.verbose)
    sent_before = requests_started()
    try:
        _in_project(args)
        _check_paths(args)
        with quiet_logging():
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("txkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader stopped reading (`txkit exceptions | head`): not a failure to report.
        # stdout points at /dev/null so that Python's flush at exit raises nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # the one place every failure is reported
        code, message = describe_failure(exc, requests_started() > sent_before)
        print(f"txkit: error: {scrub(message)}", file=sys.stderr)
        return code
    finally:
        if rust_log is None:  # set for this command only (main() may run in a caller's process)
            os.environ.pop("RUST_LOG", None)


def _configure_logging(verbose: bool) -> None:
    # delta-rs logs from Rust straight to stderr (RUST_LOG, read once): off without -v unless
    # the user set it; its errors reach the user as their one line.
    if "RUST_LOG" not in os.environ and not verbose:
        os.environ["RUST_LOG"] = "off"
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="txkit: %(levelname)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:
        install_log_filter(handler)
    if verbose:
        logging.getLogger("txkit").setLevel(logging.DEBUG)


def _in_project(args: argparse.Namespace) -> None:
    """Every relative path of the command read from the project folder (the working folder or
    the nearest one above it with a ``txkit.toml``), as a notebook reads its parameters."""
    for name in ("out", "output", "notebooks", "orders", "reports", "data_dir", "file"):
        value = getattr(args, name, None)
        if value and not (name == "orders" and value in ("auto", "sandbox")):
            setattr(args, name, str(config.project_path(value)))
    if getattr(args, "bank_statements", None):
        args.bank_statements = [str(config.project_path(p)) for p in args.bank_statements]
    store = getattr(args, "store", None)
    if store and "://" not in str(store):
        args.store = str(config.project_path(store))


def _check_paths(args: argparse.Namespace) -> None:
    """Before any request is sent (an ``s3://`` store checks itself; ``sync --status`` writes
    nothing)."""
    command = getattr(args, "command", None)
    if command == "export" and getattr(args, "output", None):
        check_writable(Path(args.output), is_file=True, flag="-o/--output")
    if command == "probe" and getattr(args, "out", None):
        check_writable(Path(args.out), is_file=True, flag="--out")
    store = getattr(args, "store", None)
    if store:
        check_store(store)  # before delta-rs (and the AWS SDK) ever sees it
    reads_only = getattr(args, "status", False) or getattr(args, "as_of", None) is not None
    if command in ("sync", "report") and store and not reads_only:
        # Writability is checked once a sync is needed (a store with nothing to fetch may be
        # read-only); a folder that is not a store is refused before anything else.
        try:
            refuse_foreign_folder(store)
        except StoreError as exc:
            raise ValueError(str(exc)) from None
    if command == "report" and getattr(args, "out", None):
        check_writable(Path(args.out), is_file=False, flag="--out")


_OS_ADVICE = {
    errno.ENOSPC: "the disk is full: free some space or write elsewhere",
    errno.EFBIG: "the file may not grow (a full disk or a file-size limit): write elsewhere",
    errno.EDQUOT: "the disk quota is exhausted: free some space or write elsewhere",
    errno.EROFS: "the file system is read-only: choose another location",
    errno.EACCES: "permission denied: choose another location or fix its permissions",
    errno.EPERM: "not permitted: choose another location or fix its permissions",
    errno.ENOENT: "it does not exist (or cannot be created there): check the path",
    errno.EISDIR: "it is a folder: give a file name",
    errno.ENOTDIR: "a part of the path is not a folder: check the path",
}


def describe_failure(exc: BaseException, after_requests: bool = True) -> tuple[int, str]:
    """The exit code and the one-line message for an exception that ended a command.

    Args:
        exc: the exception.
        after_requests: whether the command had sent a request before it failed.

    Returns:
        ``(code, message)``: 2 for a ``ConfigError`` (the user's settings: ``TXKIT_*``,
        ``.env``, ``txkit.toml``, ``materiality.toml``, whenever it is found) and for a
        ``ValueError`` (or a ``DataFileError``: a file the user gave) raised before any request
        was sent (the user's arguments); 1 for anything else.
    """
    text = one_line(exc)
    if isinstance(exc, ConfigError):
        return 2, f"ConfigError: {text}"
    if isinstance(exc, ValueError) and not after_requests:
        return 2, text  # also a StoreVersionError, and a DataFileError (a file the user gave)
    if isinstance(exc, NoRecordsError):  # a month the service holds nothing of: the argument
        return 2, text
    if isinstance(exc, TxkitError):
        return 1, f"{type(exc).__name__}: {text}"
    if isinstance(exc, OSError):
        advice = _OS_ADVICE.get(exc.errno or -1, "check the path and try again")
        where = f" {exc.filename}" if exc.filename else ""
        what = exc.strerror or text or type(exc).__name__
        return 1, f"cannot write or read{where}: {what}; {advice}"
    if isinstance(exc, MemoryError):
        return 1, "out of memory: export a smaller date range or fewer filters at a time"
    if isinstance(exc, ValueError | ArithmeticError | RecursionError | LookupError | TypeError):
        return 1, (
            f"the service's answer could not be read ({type(exc).__name__}: {text}); "
            "this is not a problem with your arguments: retry, and report it with `txkit -v` "
            "output if it persists"
        )
    return 1, (f"unexpected {type(exc).__name__}: {text}; rerun with -v for details and report it")
