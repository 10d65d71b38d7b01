"""``txkit sync``: bring the local store up to date (one commit), or print its status."""

from __future__ import annotations

import argparse

from txkit import config
from txkit.cli._args import day_arg, month_arg
from txkit.config import default_store
from txkit.register import retention_policy
from txkit.store import format_status, format_vacuum, sync

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit sync``."""
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
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
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
        "retention": retention_policy(),
    }
    # With no client, sync connects (the service, or the sandbox without a key) only when
    # something is to be fetched (a store with nothing to fetch may be read-only).
    result = sync(**kwargs, progress=False if args.no_progress else None)
    if not result.fetched:
        print(f"store {store} is up to date: no request sent")
        return 0
    for note in result.notes:
        print(note)
    for month, kind in result.fetched.items():
        print(f"  {month}: {kind} fetch, {result.rows[month]:,} rows stored")
    print(
        f"synced {len(result.fetched)} month(s), skipped {len(result.skipped)} "
        f"({result.stats.requests:,} requests, {result.stats.seconds:.1f} s) -> {store} "
        f"(table version {result.version})"
    )
    if result.vacuum is not None and (result.vacuum.files or result.vacuum.log_entries):
        print(format_vacuum(result.vacuum, verbose=False))
    return 0
