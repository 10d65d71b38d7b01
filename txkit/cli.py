"""The ``txkit`` command line: ``sandbox``, ``export``, ``sync``, ``report`` and ``probe``.

The secret key is never a flag: it comes from ``TXKIT_SECRET_KEY`` or a ``.env`` file.
Errors are printed as one scrubbed line (``txkit: error: ...``), never as a traceback, by one
top-level handler (:func:`describe_failure`); exit codes: 0 success, 1 any failure (HTTP,
format, incomplete export, file system), 2 only the user's own bad arguments. Output paths are
checked (a probe file is written) before any request is sent.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import NoReturn

from txkit import config
from txkit._scrub import install_log_filter, scrub
from txkit.calendar import parse_day, parse_month
from txkit.errors import TxkitError, one_line
from txkit.fetch.progress import quiet_logging

__all__ = [
    "build_parser",
    "check_writable",
    "day_arg",
    "describe_failure",
    "main",
    "month_arg",
    "version_arg",
]


# Arguments are parsed once, here at the edge (argparse ``type=``), so a bad one is exit 2
# before anything runs and the commands receive the parsed values, never the raw text.


def _argument_error(exc: ValueError) -> argparse.ArgumentTypeError:
    # The calendar's messages start with the argument's name; argparse names it already.
    return argparse.ArgumentTypeError(str(exc).strip())


def month_arg(text: str) -> str:
    """argparse type of a ``YYYY-MM`` month (ASCII digits, nothing around them)."""
    try:
        return parse_month(text, "")
    except ValueError as exc:
        raise _argument_error(exc) from None


def day_arg(text: str) -> date:
    """argparse type of a ``YYYY-MM-DD`` UTC day (ASCII digits, nothing around them)."""
    try:
        day = parse_day(text, "")
    except ValueError as exc:
        raise _argument_error(exc) from None
    assert day is not None
    return day


#: Delta table versions are signed 64-bit integers.
_MAX_VERSION = 2**63 - 1


def version_arg(text: str) -> int:
    """argparse type of a store table version: a whole number, 0 or more."""
    if not re.fullmatch(r"[0-9]+", text) or int(text) > _MAX_VERSION:
        raise argparse.ArgumentTypeError(
            f"a table version is a whole number, 0 or more (report.json names the one a report "
            f"read; `txkit store status` the newest), got {text!r}"
        )
    return int(text)


def _split(values: list[str] | None) -> list[str] | None:
    """``--status a,b --status c`` -> ``[a, b, c]``."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export transactions to Parquet or CSV",
        description=(
            "Export every matching transaction, verified against the service's total, to a "
            f"Parquet or CSV file. Reads {config.BASE_URL_VAR} and {config.SECRET_KEY_VAR} "
            "(environment or "
            ".env). Filters take one value, a comma-separated list, or repeat."
        ),
    )
    p.add_argument("--trans-type", action="append", metavar="T", help="transaction type(s)")
    p.add_argument("--status", action="append", metavar="S", help="status(es)")
    p.add_argument("--currency", action="append", metavar="C", help="currency(ies)")
    p.add_argument("--start", type=day_arg, metavar="YYYY-MM-DD", help="first day (UTC, included)")
    p.add_argument("--end", type=day_arg, metavar="YYYY-MM-DD", help="last day (UTC, included)")
    p.add_argument(
        "--base-url", metavar="URL", help=f"service address (default {config.BASE_URL_VAR})"
    )
    p.add_argument("--page-size", type=int, default=1000, metavar="N")
    p.add_argument("--concurrency", type=int, default=8, metavar="N", help="pages at once")
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="write an export that does not add up to the total (with a loud warning)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--no-confirm",
        action="store_true",
        help="skip the confirming re-read of every page (proves the set of records, not only "
        "their count; one request per page)",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help=".parquet or .csv")
    p.set_defaults(func=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from txkit.fetch.client import Client, describe_retries
    from txkit.fetch.load import load_transactions, validate_filters
    from txkit.fetch.pages import ExportStats
    from txkit.output import write_frame

    output = Path(args.output)
    if output.suffix.lower() not in (".parquet", ".csv"):
        raise ValueError(f"--output must end in .parquet or .csv, got {output.name!r}")
    filters = {
        "trans_type": _split(args.trans_type),
        "status": _split(args.status),
        "currency": _split(args.currency),
        "start": args.start,
        "end": args.end,
    }
    validate_filters(**filters)
    stats = ExportStats()
    with Client(base_url=args.base_url) as client:
        df = load_transactions(
            client,
            **filters,
            page_size=args.page_size,
            concurrency=args.concurrency,
            allow_incomplete=args.allow_incomplete,
            progress=False if args.no_progress else None,
            stats=stats,
            confirm=not args.no_confirm,
        )
        retries = describe_retries(client.retry_causes)
    write_frame(df, output)
    print(
        f"exported {df.height:,} rows ({stats.pages:,} pages, {stats.requests:,} requests, "
        f"{retries}, {stats.passes} pass(es){stats.summary()}) in {stats.seconds:.1f} s "
        f"-> {output}"
    )
    return 0


def _add_sync(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sync",
        help="update the local store (a Delta table; incremental)",
        description=(
            "Fetch what the store is missing: months not yet stored, days of a month never "
            "fetched, and days fetched before their look-back ended (statuses change after a "
            "record is first seen); all in one commit. Uses "
            f"{config.BASE_URL_VAR}/{config.SECRET_KEY_VAR}, "
            "or the embedded sandbox when no key is configured."
        ),
    )
    p.add_argument("--start", type=day_arg, metavar="YYYY-MM-DD",
                   help="first day (default: 11 months back)")  # fmt: skip
    p.add_argument("--end", type=day_arg, metavar="YYYY-MM-DD",
                   help="last day (default: today, UTC)")  # fmt: skip
    p.add_argument("--store", metavar="DIR|URI",
                   help="a folder or s3://bucket/prefix (default: data/store/sandbox without a "
                   "key, data/store/<host> with one)")  # fmt: skip
    p.add_argument("--lookback-days", type=int, default=config.LOOKBACK_DAYS, metavar="N")
    p.add_argument("--refresh", action="append", default=[], type=month_arg, metavar="YYYY-MM",
                   help="fetch this month whole again (repeatable)")  # fmt: skip
    p.add_argument(
        "--status",
        action="store_true",
        help="print each month's coverage, rows, totals and last fetch; fetch nothing",
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run_sync)


def _run_sync(args: argparse.Namespace) -> int:
    from txkit.config import default_store
    from txkit.fetch.source import connect
    from txkit.store import format_status, sync, sync_needed

    store = args.store or str(default_store())
    if args.status:
        print(format_status(store))
        return 0
    kwargs = {
        "start": args.start,
        "end": args.end,
        "store": store,
        "lookback_days": args.lookback_days,
        "refresh": args.refresh,
    }
    if not sync_needed(**kwargs):
        print(f"store {store} is up to date: no request sent")
        return 0
    if "://" not in str(store):  # only now: a store with nothing to fetch may be read-only
        check_writable(Path(store), is_file=False, flag="--store")
    with connect() as source:
        print(f"source: {source.description}")
        result = sync(
            client=source.client,
            **kwargs,
            progress=False if args.no_progress else None,
            source=source.label,
            source_url=source.url,
        )
    for note in result.notes:
        print(note)
    for month, kind in result.fetched.items():
        print(f"  {month}: {kind} fetch, {result.rows[month]:,} rows stored")
    print(
        f"synced {len(result.fetched)} month(s), skipped {len(result.skipped)} "
        f"({result.stats.requests:,} requests, {result.stats.seconds:.1f} s) -> {store} "
        f"(table version {result.version})"
    )
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (no usage block), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {scrub(message)} (see {self.prog} --help)\n")


def _add_store(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "store",
        help="the local store: status, verify, migrate",
        description="Look after the store: `status` prints each month's coverage; `verify` "
        "checks every data file of a version against the digest recorded when it was "
        "committed; `migrate` converts a store of the previous format (Parquet generations) "
        "to a Delta table.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="each month's coverage, rows, totals, last fetch")
    status.add_argument("--store", metavar="DIR|URI", help="default: this source's store")
    status.set_defaults(func=_run_store_status)
    verify = actions.add_parser(
        "verify", help="check every data file of a version against its recorded digest"
    )
    verify.add_argument("--store", metavar="DIR|URI", help="default: this source's store")
    verify.add_argument("--version", type=_version_number, metavar="N",
                        help="a table version (default: the newest)")  # fmt: skip
    verify.set_defaults(func=_run_store_verify)
    migrate = actions.add_parser("migrate", help="convert a previous-format store to Delta")
    migrate.add_argument("--store", default=str(config.store_root()), metavar="DIR",
                         help="the old store (default: %(default)s)")  # fmt: skip
    migrate.add_argument("--to", metavar="DIR",
                         help="where the Delta store goes (default: in place; data/store goes "
                         "to data/store/sandbox or data/store/<host>)")  # fmt: skip
    migrate.set_defaults(func=_run_store_migrate)


def _run_store_status(args: argparse.Namespace) -> int:
    from txkit.config import default_store
    from txkit.store import format_status

    print(format_status(args.store or str(default_store())))
    return 0


def _version_number(text: str) -> int:
    """A table version: a non-negative whole number (argparse type; bad input exits 2)."""
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"a table version is a whole number from 0, got {text!r}")
    return int(text)


def _run_store_verify(args: argparse.Namespace) -> int:
    from txkit.config import default_store
    from txkit.store import format_verify, verify_store

    store = args.store or str(default_store())
    text, whole = format_verify(store, verify_store(store, version=args.version), args.version)
    print(text)
    return 0 if whole else 1


def _run_store_migrate(args: argparse.Namespace) -> int:
    from txkit.store._migrate import migrate_store

    result = migrate_store(args.store, to=args.to)
    if result.version is None:
        print(f"{result.source}: already migrated to {result.target}; old files removed")
    else:
        print(
            f"migrated {len(result.months)} month(s), {result.rows:,} rows from {result.source} "
            f"to the Delta store {result.target} (table version {result.version})"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Build the ``txkit`` argument parser with every subcommand."""
    from txkit import report
    from txkit.probe import cli as probe_cli
    from txkit.sandbox import cli as sandbox_cli

    parser = _Parser(
        prog="txkit",
        description="Exact, complete transaction exports into polars; sandbox included.",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every retry (DEBUG) and pass"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sandbox_cli.add_parser(sub)
    _add_export(sub)
    _add_sync(sub)
    _add_store(sub)
    report.add_parser(sub)
    probe_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``txkit`` command line; returns the process exit code.

    Every failure is one scrubbed line on stderr (``txkit: error: ...``) naming what went wrong
    and what to do: exit 2 for the user's own bad arguments (argparse, or a ``ValueError`` from
    validating them before any request was sent), 1 for everything else, 130 on Ctrl-C.
    """
    from txkit.fetch.client import requests_started

    parser = build_parser()
    args = parser.parse_args(argv)
    rust_log = os.environ.get("RUST_LOG")
    _configure_logging(args.verbose)
    sent_before = requests_started()
    try:
        _check_paths(args)
        with quiet_logging():
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("txkit: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the one place every failure is reported
        code, message = describe_failure(exc, requests_started() > sent_before)
        print(f"txkit: error: {scrub(message)}", file=sys.stderr)
        return code
    finally:
        if rust_log is None:  # set for this command only (main() may run in a caller's process)
            os.environ.pop("RUST_LOG", None)


def _configure_logging(verbose: bool) -> None:
    """``txkit: LEVEL: message`` on stderr, scrubbed; ``-v`` shows txkit's DEBUG records (one
    line per retry) and httpx's requests.

    delta-rs logs from Rust (the AWS SDK's multi-line warnings about regions and credentials,
    with a timestamp each) straight to stderr, filtered by ``RUST_LOG`` when it is first
    imported: without ``-v`` they are turned off (a ``RUST_LOG`` the user set is kept; the
    report's kernels inherit it). What goes wrong reaches the user as the error's one line.
    """
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


def _check_paths(args: argparse.Namespace) -> None:
    """Check every local path the command will write before any request is sent (an
    ``s3://`` store is checked by the store itself; ``sync --status`` writes nothing)."""
    command = getattr(args, "command", None)
    if command == "export" and getattr(args, "output", None):
        check_writable(Path(args.output), is_file=True, flag="-o/--output")
    if command == "probe" and getattr(args, "out", None):
        check_writable(Path(args.out), is_file=True, flag="--out")
    store = getattr(args, "store", None)
    if store:
        from txkit.store._location import check_store

        check_store(store)  # before delta-rs (and the AWS SDK) ever sees it
    reads_only = getattr(args, "status", False) or getattr(args, "as_of", None) is not None
    if command in ("sync", "report") and store and not reads_only:
        # Writability is checked once a sync is needed (a store with nothing to fetch may be
        # read-only); a folder that is not a store is refused before anything else.
        from txkit.errors import StoreError
        from txkit.store._location import refuse_foreign_folder

        try:
            refuse_foreign_folder(store)
        except StoreError as exc:
            raise ValueError(str(exc)) from None
    if command == "report" and getattr(args, "out", None):
        check_writable(Path(args.out), is_file=False, flag="--out")


def check_writable(path: Path, *, is_file: bool, flag: str) -> None:
    """Raise ``OSError`` (with the file name) unless ``path`` can be written: a file whose
    folder accepts a new file with some data in it, or a folder that does; ``ValueError`` (a bad
    argument) for a folder given as a file or the other way round.

    Args:
        path: the output file or folder (it or its parents may not exist yet).
        is_file: ``path`` is a file (else a folder).
        flag: the option that named it, for the message.
    """
    if is_file and path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a folder: give a file name")
    if not is_file and path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a file: give a folder")
    folder = path.parent if is_file else path
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{existing} is not a folder", str(path))
    try:
        fd, probe = tempfile.mkstemp(prefix=".txkit-probe-", dir=existing)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        block = memoryview(b"\0" * 65536)  # a full disk fails here, before the export starts
        while block:
            block = block[os.write(fd, block) :]
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(fd)
        os.unlink(probe)


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
        ``(code, message)``: 2 only for a ``ValueError`` (or a ``DataFileError``: a file the
        user gave) raised before any request was sent (the user's arguments); 1 for anything
        else.
    """
    text = one_line(exc)
    if isinstance(exc, ValueError) and not after_requests:
        return 2, text  # also a StoreVersionError, and a DataFileError (a file the user gave)
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


if __name__ == "__main__":
    sys.exit(main())
