"""``txkit report --month YYYY-MM``: the monthly job.

For now it exports the month, verified, to Parquet (on the embedded sandbox when no key is
configured) and prints where the file is and what it holds.
"""

from __future__ import annotations

import argparse
import calendar
import re
from datetime import date
from pathlib import Path

__all__ = ["add_parser", "month_bounds"]

_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")


def month_bounds(month: str) -> tuple[date, date]:
    """First and last day of ``'YYYY-MM'``.

    Raises:
        ValueError: not a ``YYYY-MM`` month.
    """
    match = _MONTH_RE.match(month.strip())
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise ValueError(f"--month must be YYYY-MM (e.g. 2026-10), got {month!r}")
    year, mon = int(match.group(1)), int(match.group(2))
    return date(year, mon, 1), date(year, mon, calendar.monthrange(year, mon)[1])


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit report``."""
    p = sub.add_parser(
        "report",
        help="the monthly job: export a month (sandbox when no key is configured)",
        description="Export a month of transactions, verified, to Parquet.",
    )
    p.add_argument("--month", required=True, metavar="YYYY-MM")
    p.add_argument("--out", default="data/exports", metavar="DIR")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from txkit.load import load_transactions
    from txkit.output import write_frame
    from txkit.pages import ExportStats
    from txkit.source import connect

    first, last = month_bounds(args.month)
    stats = ExportStats()
    with connect() as source:
        print(f"source: {source.description}")
        df = load_transactions(
            source.client,
            start=first,
            end=last,
            progress=False if args.no_progress else None,
            stats=stats,
        )
    path = write_frame(df, Path(args.out) / f"{args.month}.parquet")
    print(
        f"{args.month}: {df.height:,} transactions ({stats.pages} pages, {stats.passes} "
        f"pass(es), verified against the service's total) in {stats.seconds:.1f} s"
    )
    print(f"written: {path.resolve()}")
    return 0
