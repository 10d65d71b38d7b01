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
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import round_robin

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


def _row(name: str, m: dict[str, float], rows: int, base: dict[str, float] | None) -> str:
    ratio = f"{m['seconds'] / base['seconds']:.2f}x" if base else "baseline"
    return (
        f"| {name} | {m['seconds'] * 1000:,.0f} ms | {m['min'] * 1000:,.0f}-{m['max'] * 1000:,.0f} "
        f"| {rows / m['seconds']:,.0f} | {ratio} | {m['peak_mb']:,.0f} |"
    )


def _table(title: str, rows: int, results: dict[str, dict[str, float]], base: str) -> None:
    print(f"\n{title}\n")
    print("| step | median | min-max | records/s | vs previous store | peak MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, m in results.items():
        print(_row(name, m, rows, None if name == base else results[base]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--month", default="2026-09")
    parser.add_argument("--runs", type=int, default=21, help="read-back runs (median)")
    args = parser.parse_args()
    os.environ["TXKIT_PROGRESS"] = "0"

    import polars as pl

    import txkit
    from txkit import load_transactions
    from txkit.calendar import month_bounds
    from txkit.sandbox import Sandbox
    from txkit.store import read_months, sync
    from txkit.store._location import open_table

    work = Path(tempfile.mkdtemp(prefix="txkit-bench-store-"))
    print(f"# txkit store benchmark: {args.records:,} sandbox records, seed {args.seed}")
    print(
        "(peak MB: the process's peak resident set above the step's start, the sandbox "
        "serving the pages included; floors: the fetch alone, the month's file read alone)"
    )
    with (
        Sandbox(seed=args.seed, records=args.records) as box,
        txkit.Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        open_day = date(2026, 10, 31)  # October still within its look-back
        first, last = month_bounds(MONTHS[0])[0], month_bounds(MONTHS[-1])[1]
        counts: dict[str, int] = {}
        runs = iter(range(100))

        def fetch_alone() -> None:
            counts["fetch"] = sum(
                load_transactions(client, start=month_bounds(m)[0], end=month_bounds(m)[1]).height
                for m in MONTHS
            )

        def old_sync() -> None:
            counts["old"] = old_first_sync(client, work / f"old{next(runs)}")

        def delta_sync() -> None:
            store = work / f"delta{next(runs)}"
            result = sync(client, start=first, end=last, store=store, today=open_day)
            counts["delta"] = sum(result.rows.values())
            counts["last_delta"] = int(store.name.removeprefix("delta"))

        first_sync = round_robin(
            {"fetch alone (floor)": fetch_alone, "previous store": old_sync, "Delta": delta_sync},
            runs=2,
        )
        assert counts["fetch"] == counts["old"] == counts["delta"], counts
        rows = counts["delta"]
        delta_store = work / f"delta{counts['last_delta']}"
        old_store = next(work.glob("old*"))
        _table(
            f"First sync of 12 months ({rows:,} rows, median of 2)",
            rows,
            {
                "previous store": first_sync["previous store"],
                "Delta": first_sync["Delta"],
                "fetch alone (floor)": first_sync["fetch alone (floor)"],
            },
            "previous store",
        )

        week = (date(2026, 10, 24), open_day)
        sync(client, start="2026-10-01", end="2026-10-31", store=work / "oct", today=open_day)
        lookback = round_robin(
            {
                "7-day fetch alone (floor)": lambda: load_transactions(
                    client, start=week[0], end=week[1]
                ),
                "12-month table": lambda: sync(
                    client, start=first, end=last, store=delta_store, today=open_day
                ),
                "table of October alone": lambda: sync(
                    client,
                    start="2026-10-01",
                    end="2026-10-31",
                    store=work / "oct",
                    today=open_day,
                ),
            },
            runs=3,
        )
        print("\nLook-back sync, 7 days of October (median of 3)\n")
        print("| step | median | min-max | peak MB |")
        print("|---|---:|---:|---:|")
        for name, m in lookback.items():
            print(
                f"| {name} | {m['seconds'] * 1000:,.0f} ms | {m['min'] * 1000:,.0f}-"
                f"{m['max'] * 1000:,.0f} | {m['peak_mb']:,.0f} |"
            )

    month = args.month
    files = [u for u in open_table(delta_store).file_uris() if f"month={month}/" in u]
    height = read_months([month], store=delta_store).height
    read_back = round_robin(
        {
            "previous store": lambda: old_read_month(old_store, month),
            "Delta (read_months)": lambda: read_months([month], store=delta_store),
            "month's file alone (floor)": lambda: pl.read_parquet(files),
        },
        runs=args.runs,
    )
    _table(
        f"Month read-back ({month}, {height:,} rows, median of {args.runs})",
        height,
        read_back,
        "previous store",
    )
    ratios = {
        "first sync": first_sync["Delta"]["seconds"] / first_sync["previous store"]["seconds"],
        "read-back": read_back["Delta (read_months)"]["seconds"]
        / read_back["previous store"]["seconds"],
    }
    print(
        "\n"
        + "; ".join(f"{k} {v:.2f}x the previous store (target <= 1.2x)" for k, v in ratios.items())
    )
    print(f"(stores under {work}; remove when done)")


if __name__ == "__main__":
    main()
