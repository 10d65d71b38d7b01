"""The ``txkit`` command line: ``sandbox``, ``export`` and ``report``.

The secret key is never a flag: it comes from ``TXKIT_SECRET_KEY`` or a ``.env`` file.
Errors are printed as one line (``txkit: error: ...``), never as a traceback; exit codes:
0 success, 1 a txkit error (HTTP, format, incomplete export), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from txkit import defaults
from txkit.errors import TxkitError

__all__ = ["build_parser", "main"]


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
            "Parquet or CSV file. Reads TXKIT_BASE_URL and TXKIT_SECRET_KEY (environment or "
            ".env). Filters take one value, a comma-separated list, or repeat."
        ),
    )
    p.add_argument("--trans-type", action="append", metavar="T", help="transaction type(s)")
    p.add_argument("--status", action="append", metavar="S", help="status(es)")
    p.add_argument("--currency", action="append", metavar="C", help="currency(ies)")
    p.add_argument("--start", metavar="YYYY-MM-DD", help="first day (UTC, included)")
    p.add_argument("--end", metavar="YYYY-MM-DD", help="last day (UTC, included)")
    p.add_argument("--base-url", metavar="URL", help="service address (default TXKIT_BASE_URL)")
    p.add_argument("--page-size", type=int, default=1000, metavar="N")
    p.add_argument("--concurrency", type=int, default=8, metavar="N", help="pages at once")
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="write an export that does not add up to the total (with a loud warning)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help=".parquet or .csv")
    p.set_defaults(func=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from txkit.client import Client
    from txkit.load import load_transactions, validate_filters
    from txkit.output import write_frame
    from txkit.pages import ExportStats

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
        )
    write_frame(df, output)
    print(
        f"exported {df.height:,} rows ({stats.pages:,} pages, {stats.requests:,} requests, "
        f"{stats.retries:,} retries, {stats.passes} pass(es)) in {stats.seconds:.1f} s "
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
            "record is first seen); all in one commit. Uses TXKIT_BASE_URL/TXKIT_SECRET_KEY, "
            "or the embedded sandbox when no key is configured."
        ),
    )
    p.add_argument("--start", metavar="YYYY-MM-DD", help="first day (default: 11 months back)")
    p.add_argument("--end", metavar="YYYY-MM-DD", help="last day (default: today, UTC)")
    p.add_argument("--store", metavar="DIR|URI",
                   help="a folder or s3://bucket/prefix (default: data/store/sandbox without a "
                   "key, data/store/<host> with one)")  # fmt: skip
    p.add_argument("--lookback-days", type=int, default=defaults.LOOKBACK_DAYS, metavar="N")
    p.add_argument("--refresh", action="append", default=[], metavar="YYYY-MM",
                   help="fetch this month whole again (repeatable)")  # fmt: skip
    p.add_argument(
        "--status",
        action="store_true",
        help="print each month's coverage, rows, totals and last fetch; fetch nothing",
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run_sync)


def _run_sync(args: argparse.Namespace) -> int:
    from txkit.source import connect, default_store
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
    with connect() as source:
        print(f"source: {source.description}")
        result = sync(
            client=source.client,
            **kwargs,
            progress=False if args.no_progress else None,
            source=source.label,
            source_url=source.url,
        )
    for month, kind in result.fetched.items():
        print(f"  {month}: {kind} fetch, {result.rows[month]:,} rows stored")
    print(
        f"synced {len(result.fetched)} month(s), skipped {len(result.skipped)} "
        f"({result.stats.requests:,} requests, {result.stats.seconds:.1f} s) -> {store} "
        f"(table version {result.version})"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Build the ``txkit`` argument parser with every subcommand."""
    from txkit import report
    from txkit.sandbox import cli as sandbox_cli

    parser = argparse.ArgumentParser(
        prog="txkit",
        description="Exact, complete transaction exports into polars; sandbox included.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log retries and passes")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sandbox_cli.add_parser(sub)
    _add_export(sub)
    _add_sync(sub)
    report.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``txkit`` command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="txkit: %(levelname)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"txkit: error: {exc}", file=sys.stderr)
        return 2
    except TxkitError as exc:
        print(f"txkit: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("txkit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
