"""``txkit sandbox``: run the sandbox service from a shell until Ctrl-C.

On start it prints exactly two lines on stdout, ready for a shell or a ``.env`` file::

    TXKIT_BASE_URL=http://127.0.0.1:PORT
    TXKIT_SECRET_KEY=sk_sandbox_...

and everything else (progress, where the data files went, how to stop) on stderr. It writes
``orders.csv`` and ``ground_truth.json`` to ``--data-dir``. Ctrl-C (or SIGTERM) stops it with
exit status 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from typing import Any

from txkit.cli._args import month_arg
from txkit.config import BASE_URL_VAR, SECRET_KEY_VAR, sandbox_data_dir
from txkit.sandbox.faults import Faults
from txkit.sandbox.ledger import BALANCE_MODELS, Ledger, generate_ledger
from txkit.sandbox.server import DEFAULT_LIMIT, MAX_LIMIT, Sandbox

__all__ = ["add_parser", "run"]


def _faults(text: str) -> Faults:
    try:
        return Faults.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"a port is a whole number from 0 to 65535 (0: a free one), got {text!r}"
        )
    return port


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``sandbox`` subcommand.

    Args:
        subparsers: the object returned by ``ArgumentParser.add_subparsers()``.

    Returns:
        The subcommand's parser (its ``func`` default is :func:`run`).
    """
    parser = subparsers.add_parser(
        "sandbox",
        help="run the local sandbox transaction service",
        description=(
            "Serve a deterministic synthetic ledger over the documented transaction export "
            f"interface on loopback (newest first, default limit {DEFAULT_LIMIT}, pages capped "
            f"at {MAX_LIMIT}). Prints {BASE_URL_VAR} and {SECRET_KEY_VAR}; Ctrl-C stops it."
        ),
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port", type=_port, default=0, help="port 0-65535 (default 0: a free port)"
    )
    _add_ledger_arguments(parser)
    _add_service_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def _add_ledger_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=7, help="ledger seed (default: %(default)s)")
    parser.add_argument(
        "--records", type=int, default=20_000, help="number of records (default: %(default)s)"
    )
    parser.add_argument(
        "--start-month",
        default="2025-11",
        type=month_arg,
        metavar="YYYY-MM",
        help="first month of the ledger's calendar (default: %(default)s)",
    )
    parser.add_argument(
        "--months", type=int, default=12, help="calendar length in months (default: %(default)s)"
    )
    parser.add_argument(
        "--anomaly-rate",
        type=float,
        default=0.01,
        help="planted anomalies per record (default: %(default)s)",
    )
    parser.add_argument(
        "--balance-model",
        choices=BALANCE_MODELS,
        default="net",
        help="how balances move: 'net' of fee and tax, or 'fee-only' (tax included in the "
        "fee) (default: %(default)s)",
    )
    parser.add_argument(
        "--zero-balance-rate",
        type=float,
        default=0.0,
        metavar="F",
        help="share of successful transfers reporting all four balance-after fields as 0 "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--late-payments",
        type=int,
        default=3,
        metavar="N",
        help="late payments planted at each month start: ordered on the last evening of a "
        "month, paid after midnight (default: %(default)s)",
    )
    parser.add_argument(
        "--repeat-underpayers",
        type=int,
        default=0,
        metavar="N",
        help="customers given two or three underpayments in the calendar's last month "
        "(default: %(default)s)",
    )


def _add_service_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--faults",
        type=_faults,
        default=None,
        metavar="SPEC",
        help=f"faults to inject, e.g. 'rate_limit=0.2,cap=100'; accepted: {Faults.ACCEPTED}",
    )
    parser.add_argument(
        "--data-dir",
        default=str(sandbox_data_dir()),
        help="where orders.csv and ground_truth.json are written (default: %(default)s)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (the key then travels unencrypted)",
    )


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Run the sandbox until Ctrl-C or SIGTERM.

    Args:
        args: the parsed ``txkit sandbox`` arguments.

    Returns:
        The exit status: 0 after Ctrl-C/SIGTERM, 2 for bad arguments, 1 if the port cannot
        be bound.
    """
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if threading.current_thread() is threading.main_thread():
        # A process started in the background inherits SIGINT as ignored: Ctrl-C must work.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
    sandbox: Sandbox | None = None
    try:
        print(
            f"txkit sandbox: generating {args.records:,} records (seed {args.seed}) ...",
            file=sys.stderr,
            flush=True,
        )
        started = time.perf_counter()
        try:
            ledger = _ledger(args)
            sandbox = Sandbox(
                ledger=ledger,
                faults=args.faults,
                host=args.host,
                port=args.port,
                data_dir=args.data_dir,
                allow_remote=args.allow_remote,
            )
        except ValueError as exc:
            print(f"txkit sandbox: error: {exc}", file=sys.stderr)
            return 2
        try:
            sandbox.start()
        except OSError as exc:
            print(
                f"txkit sandbox: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr
            )
            return 1
        _say_ready(args, ledger, sandbox, time.perf_counter() - started)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("txkit sandbox: stopped", file=sys.stderr, flush=True)
        return 0
    finally:
        if sandbox is not None:
            sandbox.stop()


def _ledger(args: argparse.Namespace) -> Ledger:
    return generate_ledger(
        seed=args.seed,
        records=args.records,
        start_month=args.start_month,
        months=args.months,
        anomaly_rate=args.anomaly_rate,
        balance_model=args.balance_model,
        zero_balance_rate=args.zero_balance_rate,
        late_payments_per_month=args.late_payments,
        repeat_underpayers=args.repeat_underpayers,
    )


def _say_ready(args: argparse.Namespace, ledger: Ledger, sandbox: Sandbox, took: float) -> None:
    print(
        f"txkit sandbox: ready in {took:.1f} s; "
        f"{len(ledger.export_rows()):,} records served, {len(ledger.ground_truth)} planted "
        f"anomalies, {len(ledger.late_payments)} late payments, "
        f"{len(ledger.zero_balances)} zero-balance records (balance model "
        f"{ledger.balance_model}); orders.csv and ground_truth.json in {args.data_dir}; "
        f"faults: {sandbox.faults}. Press Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )
    print(f"{BASE_URL_VAR}={sandbox.base_url}", flush=True)
    print(f"{SECRET_KEY_VAR}={sandbox.secret_key}", flush=True)
