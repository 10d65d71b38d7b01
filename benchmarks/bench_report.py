"""Monthly report benchmark: first report, rerun, and rerun after one explanation, side by side.

    python benchmarks/bench_report.py                       # 60,000 sandbox records
    python benchmarks/bench_report.py --records 1000000     # a million-record year

First report: an empty store, so the days the report reads are fetched first (its trends' months
up to three days after it: what ``txkit report`` syncs on the sandbox), then the report of the
month executes every notebook (and fills the execution cache, ``data/cache/notebooks/``), with
the orders and the bank statements (camt.053) of the sandbox that served the sync, as a merchant
gives their own files.
Rerun: the same month again with nothing changed: no request, every notebook reused. After one
explanation (``txkit exceptions explain``): only the notebook that reads the register (07) is
executed. Last, the same rerun with ``--no-cache`` (every notebook executed): the rerun as it
was before the cache. Each figure is the wall time of the whole report.

The sandbox serves from ``txkit sandbox`` in a process of its own, as a service is never in the
client's process, and stops once the sync is done; ``--in-process`` serves it from this one
(its million-record ledger and its server then share the client's interpreter).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from _measure import work_folder  # noqa: E402


@contextlib.contextmanager
def _sandbox(
    args: argparse.Namespace, work: Path, orders: Path
) -> Iterator[tuple[str, str, float]]:
    """The sandbox's address, key and generation seconds; its orders written to ``orders``.

    By default it is ``txkit sandbox`` in a process of its own, as a service is never in the
    client's process (stopped once the sync is done, so the report runs alone); with
    ``--in-process``, a :class:`txkit.sandbox.Sandbox` in this one."""
    started = time.perf_counter()
    if args.in_process:
        from txkit.sandbox import Sandbox

        with Sandbox(seed=args.seed, records=args.records, data_dir=work / "sandbox") as box:
            orders.write_bytes(box.ledger.orders_csv())
            yield box.base_url, box.secret_key, time.perf_counter() - started
        return
    folder = work / "sandbox"
    command = [sys.executable, "-m", "txkit.cli", "sandbox", "--records", str(args.records),
               "--seed", str(args.seed), "--data-dir", str(folder)]  # fmt: skip
    served = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        said: dict[str, str] = {}
        assert served.stdout is not None
        for line in served.stdout:
            name, _, value = line.strip().partition("=")
            said[name] = value
            if {"TXKIT_BASE_URL", "TXKIT_SECRET_KEY"} <= said.keys():
                break
        else:
            raise SystemExit(f"txkit sandbox stopped before it was ready (exit {served.wait()})")
        generated = time.perf_counter() - started
        shutil.copyfile(folder / "orders.csv", orders)
        yield said["TXKIT_BASE_URL"], said["TXKIT_SECRET_KEY"], generated
    finally:
        served.terminate()
        served.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--month", default="2026-09")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="serve the sandbox from this process (its ledger and server share the client's "
        "interpreter), not from `txkit sandbox` in a process of its own",
    )
    args = parser.parse_args()
    work = work_folder("txkit-bench-report-")
    os.environ["TXKIT_PROGRESS"] = "0"
    os.environ["TXKIT_DATA_DIR"] = str(work / "data")  # the execution cache goes there
    for name in ("TXKIT_SECRET_KEY", "TXKIT_BASE_URL", "TXKIT_REPORT_CACHE"):
        os.environ.pop(name, None)

    import polars as pl

    import txkit
    from txkit.calendar import next_month
    from txkit.register import explain
    from txkit.report import run_report
    from txkit.report._plan import sync_range
    from txkit.store import sync

    store, out = work / "store", work / "reports"
    where = "in this process" if args.in_process else "in a process of its own"
    print(f"# txkit report benchmark: {args.records:,} sandbox records, seed {args.seed}, "
          f"the sandbox {where}")  # fmt: skip
    orders = work / "orders.csv"
    # The sandbox's calendar: 2025-11 to 2026-10 (its defaults).
    since, until = sync_range(args.month, (date(2025, 11, 1), date(2026, 10, 31)))
    with _sandbox(args, work, orders) as (base_url, key, generated):  # noqa: SIM117
        # the client's own with: the sync's time starts once the sandbox is ready
        with txkit.Client(base_url, key, env_file=None) as client:
            began = time.perf_counter()
            result = sync(client, start=since.isoformat(), end=until.isoformat(), store=store)
            synced = time.perf_counter() - began
    rows = sum(result.rows.values())
    month_rows = txkit.scan_store(store).filter(pl.col("month") == args.month)
    month_rows = month_rows.select(pl.len()).collect().item()
    print(f"sandbox generated in {generated:.1f} s")
    print(f"first sync, {since} to {until}: {len(result.fetched)} months, {rows:,} rows "
          f"in {synced:.1f} s ({rows / synced:,.0f} records/s, "
          f"{result.stats.requests:,} requests)")  # fmt: skip

    # The statements of the sandbox that served the sync (the month's and the next's), as a
    # merchant's own files are given; the embedded default sandbox's would not match its store.
    bank = [str(work / "sandbox" / "bank" / f"statement_{m}.camt053.xml")
            for m in (args.month, next_month(args.month))]  # fmt: skip

    def report(cache: bool = True) -> tuple[float, int, float]:
        """The report's wall time, the notebooks executed and their seconds."""
        began = time.perf_counter()
        done = run_report(args.month, store=store, out=out, notebooks=ROOT / "notebooks",
                          orders=str(orders), bank_statements=bank, progress=False,
                          cache=cache)  # fmt: skip
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
