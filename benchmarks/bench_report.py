"""Monthly report benchmark: first run vs rerun over a 12-month store, and each notebook.

    python benchmarks/bench_report.py                    # 1,000,000 sandbox records
    python benchmarks/bench_report.py --records 100000   # quick look

First run: an empty store, so ``txkit sync`` fetches all twelve months, then the report of one
month executes the notebooks. Rerun: the same month again; it is closed and outside the
look-back window, so no request is sent and only the notebooks run. Timings of each notebook
are for that month (about 100,000 records at the default size).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--month", default="2026-09")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.environ["TXKIT_PROGRESS"] = "0"
    for name in ("TXKIT_SECRET_KEY", "TXKIT_BASE_URL"):
        os.environ.pop(name, None)

    import polars as pl

    import txkit
    from txkit.report import run_report
    from txkit.sandbox import Sandbox
    from txkit.store import sync, sync_needed

    work = Path(tempfile.mkdtemp(prefix="txkit-bench-report-"))
    store, out = work / "store", work / "reports"
    print(f"# txkit report benchmark: {args.records:,} sandbox records, seed {args.seed}")
    started = time.perf_counter()
    with Sandbox(seed=args.seed, records=args.records) as box:
        generated = time.perf_counter() - started
        orders = work / "orders.csv"
        orders.write_bytes(box.ledger.orders_csv())
        with txkit.Client(box.base_url, box.secret_key, env_file=None) as client:
            began = time.perf_counter()
            result = sync(client, start="2025-11-01", end="2026-10-31", store=store)
            synced = time.perf_counter() - began
    rows = sum(result.rows.values())
    month_rows = txkit.scan_store(store).filter(pl.col("month") == args.month)
    month_rows = month_rows.select(pl.len()).collect().item()
    print(f"sandbox generated in {generated:.1f} s")
    print(f"first sync: {len(result.fetched)} months, {rows:,} rows in {synced:.1f} s "
          f"({rows / synced:,.0f} records/s, {result.stats.requests:,} requests)")  # fmt: skip

    assert not sync_needed(store=store, start=args.month + "-01", end=args.month + "-28")
    first = run_report(args.month, store=store, out=out, notebooks=ROOT / "notebooks",
                       orders=str(orders), progress=False)  # fmt: skip
    first_total = synced + first.sync_seconds + sum(first.notebooks.values())
    began = time.perf_counter()
    again = run_report(args.month, store=store, out=out, notebooks=ROOT / "notebooks",
                       orders=str(orders), progress=False)  # fmt: skip
    rerun_total = time.perf_counter() - began
    print(f"\nmonth {args.month}: {month_rows:,} records\n")
    print("| run | sync (s) | notebooks (s) | total (s) |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| first (empty store, 12 months) | {synced:.1f} | "
          f"{sum(first.notebooks.values()):.1f} | {first_total:.1f} |")  # fmt: skip
    print(f"| rerun (closed month, no request) | {again.sync_seconds:.1f} | "
          f"{sum(again.notebooks.values()):.1f} | {rerun_total:.1f} |")  # fmt: skip
    print("\n| notebook | seconds (rerun) |")
    print("| --- | ---: |")
    for name, seconds in again.notebooks.items():
        print(f"| {name} | {seconds:.1f} |")
    print(f"\nindex: {again.index}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
