"""``txkit export``: every matching transaction, verified, to a Parquet or CSV file."""

from __future__ import annotations

import argparse
from pathlib import Path

from txkit import config
from txkit.cli._args import day_arg
from txkit.fetch.client import Client, describe_retries
from txkit.fetch.load import load_transactions, validate_filters
from txkit.fetch.pages import ExportStats
from txkit.output import write_frame

__all__ = ["add_parser"]


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit export``."""
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
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:

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
