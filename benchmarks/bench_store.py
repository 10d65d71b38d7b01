"""Store benchmark: the Delta store beside the previous Parquet-generations store, one run.

    python benchmarks/bench_store.py                     # 1,000,000 sandbox records
    python benchmarks/bench_store.py --records 200000    # what fits a shared machine

* **First sync** of the sandbox's 12 months into an empty store. Baseline: the previous store's
  write path (``generations/g000001.tmp/transactions/month=M/part-0.parquet`` plus a JSON
  manifest per month, fsync, rename, ``current`` symlink swap), reproduced below since the
  module is gone; the fetch (``txkit.load_transactions`` per month) is the same for both.
* **Look-back sync** of 7 days (October still open): the Delta store rewrites October only;
  timed on the 12-month table and on a table holding October alone, to show it is
  proportional to the window's month, not to the table.
* **Month read-back** (``read_months``, the loader's column and row order) against the
  previous store's ``scan_parquet`` of the month's file; median of 5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

MONTHS = [f"2025-{m}" for m in (11, 12)] + [f"2026-{m:02d}" for m in range(1, 11)]


def old_first_sync(client: object, store: Path) -> int:
    """The previous store's first sync: a new generation of Parquet files, swapped in."""
    from txkit import load_transactions
    from txkit.calendar import month_bounds

    gen = store / "generations" / "g000001.tmp"
    rows = 0
    for month in MONTHS:
        first, last = month_bounds(month)
        frame = load_transactions(client, start=first, end=last)  # type: ignore[arg-type]
        folder = gen / "transactions" / f"month={month}"
        folder.mkdir(parents=True)
        frame.write_parquet(folder / "part-0.parquet", compression="zstd")
        (gen / "manifests").mkdir(exist_ok=True)
        manifest = {"month": month, "rows": frame.height, "windows": [[str(first), str(last)]]}
        (gen / "manifests" / f"{month}.json").write_text(json.dumps(manifest))
        rows += frame.height
    for file in gen.rglob("*"):
        if file.is_file():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
    final = gen.with_name("g000001")
    os.rename(gen, final)
    (store / "current.tmp").symlink_to(final.relative_to(store))
    os.replace(store / "current.tmp", store / "current")
    return rows


def old_read_month(store: Path, month: str) -> object:
    """The previous store's month read (``notebook._read_store`` over ``scan_store``)."""
    import polars as pl

    from txkit.decode import finalize

    file = store / "current" / "transactions" / f"month={month}" / "part-0.parquet"
    lf = pl.scan_parquet(file, hive_partitioning=True, hive_schema={"month": pl.String()})
    return finalize(lf.filter(pl.col("month") == month).drop("month").collect())


def median_seconds(call: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--month", default="2026-09")
    args = parser.parse_args()
    os.environ["TXKIT_PROGRESS"] = "0"

    import txkit
    from txkit.sandbox import Sandbox
    from txkit.store import read_months, sync

    work = Path(tempfile.mkdtemp(prefix="txkit-bench-store-"))
    print(f"# txkit store benchmark: {args.records:,} sandbox records, seed {args.seed}")
    with (
        Sandbox(seed=args.seed, records=args.records) as box,
        txkit.Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        open_day = date(2026, 10, 31)  # October still within its look-back
        # Round-robin: old, Delta, old, Delta; the median of the two of each.
        old_times, delta_times = [], []
        for run in range(2):
            began = time.perf_counter()
            rows_old = old_first_sync(client, work / f"old{run}")
            old_times.append(time.perf_counter() - began)
            began = time.perf_counter()
            result = sync(client, start="2025-11-01", end="2026-10-31", store=work / f"delta{run}",
                          today=open_day)  # fmt: skip
            delta_times.append(time.perf_counter() - began)
        rows_delta = sum(result.rows.values())
        assert rows_old == rows_delta, (rows_old, rows_delta)
        old_first, delta_first = statistics.median(old_times), statistics.median(delta_times)
        ratio = delta_first / old_first
        print(f"first sync, {rows_delta:,} rows, 12 months: previous store {old_first:.1f} s, "
              f"Delta {delta_first:.1f} s ({ratio:.2f}x; target <= 1.2x)")  # fmt: skip

        began = time.perf_counter()
        sync(client, start="2025-11-01", end="2026-10-31", store=work / "delta0", today=open_day)
        lookback_full = time.perf_counter() - began
        sync(client, start="2026-10-01", end="2026-10-31", store=work / "oct", today=open_day)
        began = time.perf_counter()
        sync(client, start="2026-10-01", end="2026-10-31", store=work / "oct", today=open_day)
        lookback_one = time.perf_counter() - began
        print(f"look-back sync (7 days of October): {lookback_full:.2f} s on the 12-month table, "
              f"{lookback_one:.2f} s on a table of October alone")  # fmt: skip

    month = args.month
    old = median_seconds(lambda: old_read_month(work / "old0", month))
    new = median_seconds(lambda: read_months([month], store=work / "delta0"))
    height = read_months([month], store=work / "delta0").height
    print(f"month read-back ({month}, {height:,} rows): previous store {old * 1000:.0f} ms, "
          f"Delta {new * 1000:.0f} ms ({new / old:.2f}x; target <= 1.2x)")  # fmt: skip
    print(f"(stores under {work}; remove when done)")


if __name__ == "__main__":
    main()
