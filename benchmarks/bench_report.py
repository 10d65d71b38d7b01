"""Monthly report benchmark: first report, rerun, and rerun after one explanation, side by side.

    python benchmarks/bench_report.py                       # 60,000 sandbox records
    python benchmarks/bench_report.py --records 1000000     # a million-record year

First report: an empty store, so the days the report reads are fetched first (its trends' months
up to three days after it: what ``txkit report`` syncs on the sandbox), then the report of the
month executes every notebook (and fills the execution cache, ``data/cache/notebooks/``).
Rerun: the same month again with nothing changed: no request, every notebook reused. After one
explanation (``txkit exceptions explain``): only the notebook that reads the register (07) is
executed. Last, the same rerun with ``--no-cache`` (every notebook executed): the rerun as it
was before the cache. Each figure is the wall time of the whole report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--month", default="2026-09")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="txkit-bench-report-"))
    os.environ["TXKIT_PROGRESS"] = "0"
    os.environ["TXKIT_DATA_DIR"] = str(work / "data")  # the execution cache goes there
    for name in ("TXKIT_SECRET_KEY", "TXKIT_BASE_URL", "TXKIT_REPORT_CACHE"):
        os.environ.pop(name, None)

    import polars as pl

    import txkit
    from txkit.register import explain
    from txkit.report import run_report
    from txkit.report._plan import sync_range
    from txkit.sandbox import Sandbox
    from txkit.store import sync

    store, out = work / "store", work / "reports"
    print(f"# txkit report benchmark: {args.records:,} sandbox records, seed {args.seed}")
    started = time.perf_counter()
    with Sandbox(seed=args.seed, records=args.records) as box:
        generated = time.perf_counter() - started
        orders = work / "orders.csv"
        orders.write_bytes(box.ledger.orders_csv())
        with txkit.Client(box.base_url, box.secret_key, env_file=None) as client:
            began = time.perf_counter()
            # The sandbox's calendar: 2025-11 to 2026-10 (its defaults).
            calendar = (date(2025, 11, 1), date(2026, 10, 31))
            since, until = sync_range(args.month, calendar)
            result = sync(client, start=since.isoformat(), end=until.isoformat(), store=store)
            synced = time.perf_counter() - began
    rows = sum(result.rows.values())
    month_rows = txkit.scan_store(store).filter(pl.col("month") == args.month)
    month_rows = month_rows.select(pl.len()).collect().item()
    print(f"sandbox generated in {generated:.1f} s")
    print(f"first sync, {since} to {until}: {len(result.fetched)} months, {rows:,} rows "
          f"in {synced:.1f} s ({rows / synced:,.0f} records/s, "
          f"{result.stats.requests:,} requests)")  # fmt: skip

    def report(cache: bool = True) -> tuple[float, int, float]:
        """The report's wall time, the notebooks executed and their seconds."""
        began = time.perf_counter()
        done = run_report(args.month, store=store, out=out, notebooks=ROOT / "notebooks",
                          orders=str(orders), progress=False, cache=cache)  # fmt: skip
        executed = [n for n in done.notebooks if n not in done.reused]
        return time.perf_counter() - began, len(executed), sum(done.notebooks.values())

    runs = [("first report (the sync of its days + report)", report())]
    runs[0] = (runs[0][0], (runs[0][1][0] + synced, *runs[0][1][1:]))
    runs.append(("rerun, nothing changed", report()))
    lists = sorted((out / args.month).glob("*.download.json"))
    key = next(k for p in lists for k in json.loads(p.read_text())["open"])
    explain(store, key, note="benchmark: one explanation", actor="bench_report")
    runs.append(("rerun after one explanation", report()))
    runs.append(("rerun after one explanation, --no-cache", report(cache=False)))
    print(f"\nmonth {args.month}: {month_rows:,} records\n")
    print("| run | total (s) | notebooks executed | notebooks' seconds |")
    print("| --- | ---: | ---: | ---: |")
    for label, (total, executed, seconds) in runs:
        print(f"| {label} | {total:.1f} | {executed} of 8 | {seconds:.1f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
