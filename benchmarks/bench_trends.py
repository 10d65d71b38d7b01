"""Trends benchmark: ``monthly_metrics`` over a store of many months, read lazily.

Writes a synthetic store (``--months`` months of ``--records`` records each, with the columns
the metrics read plus wide ones they must not read: ids, e-mails, narrations, balances), then
times ``txkit.analysis.monthly_metrics(txkit.scan_store(path))`` in a fresh process and reports
its peak resident memory, beside reading every column of the same store. Target: 12 months of
1,000,000 records in at most 10 s and 2 GB peak.

    python benchmarks/bench_trends.py                                   # 12 x 16,000 (quick)
    python benchmarks/bench_trends.py --months 12 --records 1000000     # the target size
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from txkit.calendar import previous_months

_STATUSES = np.array(["successful"] * 17 + ["failed", "pending", "abandoned"])
_TYPES = np.array(["collection"] * 8 + ["transfer", "conversion"])
_CURRENCIES = np.array(["NGN"] * 6 + ["USD", "GHS", "KES", "USDT"])


def _month_frame(month: str, n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    start = datetime.fromisoformat(f"{month}-01T00:00:00+00:00")
    millis = rng.integers(0, 28 * 86_400_000, n)
    amount_cents = rng.integers(100, 50_000_000, n)
    flags = rng.random(n)
    return pl.DataFrame(
        {
            "id": [f"{seed:08x}{i:016x}" for i in range(n)],
            "createdAt": pl.Series(millis + int(start.timestamp() * 1000), dtype=pl.Int64),
            "status": rng.choice(_STATUSES, n),
            "transType": rng.choice(_TYPES, n),
            "toCurrency": rng.choice(_CURRENCIES, n),
            "toAmount": pl.Series(amount_cents, dtype=pl.Int64),
            "feeAmount": pl.Series(amount_cents // 70, dtype=pl.Int64),
            "toBalanceAfterLedger": pl.Series(rng.integers(0, 10**12, n), dtype=pl.Int64),
            "customerEmail": [f"customer{i % 20_000:05d}@example.test" for i in range(n)],
            "meta.narration": [f"TRF FROM {i % 20_000:05d} REF {i:010d}" for i in range(n)],
            "meta.paymentCollectionType": np.where(
                flags < 0.003, "UNDERPAYMENT", np.where(flags < 0.005, "OVERPAYMENT", "")
            ),
            "meta.existingTransaction.expectedAmount": pl.Series(
                np.where(flags < 0.005, amount_cents + 1_000, 0), dtype=pl.Int64
            ),
        }
    ).with_columns(
        pl.col("createdAt").cast(pl.Datetime("ms", "UTC")),
        pl.col("meta.paymentCollectionType").replace("", None),
        *[
            (pl.col(c).cast(pl.Decimal(38, 0)) / 100).cast(pl.Decimal(38, 2))
            for c in (
                "toAmount",
                "feeAmount",
                "toBalanceAfterLedger",
                "meta.existingTransaction.expectedAmount",
            )
        ],
    )


def write_store(path: Path, months: list[str], records: int) -> None:
    """A store as txkit keeps it: a Delta table partitioned by ``month``, one commit a month."""
    from deltalake import write_deltalake

    for number, month in enumerate(months):
        frame = _month_frame(month, records, seed=number + 1).with_columns(month=pl.lit(month))
        write_deltalake(str(path), frame, partition_by=["month"], mode="append")


_MEASURE = """
import json, resource, sys, time
import polars as pl
import txkit
from txkit.analysis.trends import monthly_metrics
before = resource.getrusage(resource.RUSAGE_SELF)
cpu_before = before.ru_utime + before.ru_stime
started = time.perf_counter()
if sys.argv[2] == "metrics":
    result = monthly_metrics(txkit.scan_store(sys.argv[1]))
    rows = result.height
else:
    rows = txkit.scan_store(sys.argv[1]).collect().height
seconds = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu = usage.ru_utime + usage.ru_stime - cpu_before
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak": usage.ru_maxrss * 1024, "rows": rows}))
"""


def measure(path: Path, what: str) -> dict[str, float]:
    """Time and peak memory of ``what`` in a fresh process (imports before the clock)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), what],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--records", type=int, default=16_000, help="records per month")
    parser.add_argument("--last", default="2026-10", help="the last month (YYYY-MM)")
    args = parser.parse_args()
    months = [*previous_months(args.last, args.months - 1), args.last]
    with tempfile.TemporaryDirectory(prefix="txkit-bench-trends-") as tmp:
        store = Path(tmp) / "store"
        began = time.perf_counter()
        write_store(store, months, args.records)
        size = sum(f.stat().st_size for f in store.rglob("*.parquet"))
        print(
            f"store: {args.months} months x {args.records:,} records, {size / 1e6:.0f} MB on "
            f"disk, written in {time.perf_counter() - began:.1f} s ({datetime.now(UTC):%F})"
        )
        for what, label in (("all", "read every column"), ("metrics", "monthly_metrics")):
            got = measure(store, what)
            print(
                f"{label:>20}: {got['seconds']:.2f} s ({got['cpu']:.2f} s CPU), peak "
                f"{got['peak'] / 1e9:.2f} GB "
                f"({got['rows']:,} rows out)"
            )
        print("target for 12 x 1,000,000: monthly_metrics at most 10 s and 2 GB peak")


if __name__ == "__main__":
    main()
