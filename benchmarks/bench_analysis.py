"""Analysis benchmark: the analysis functions on a large sandbox ledger, with a correctness check.

Generates a ledger, decodes its served records with txkit's page decoder (no HTTP), then times
``balance_breaks`` under the fixed ``net`` model beside ``balance_model_fit`` plus
``balance_breaks(model="auto")`` (the notebooks' way), ``balance_summary``, ``reconcile`` and
``underpayments`` (best of ``--repeat`` runs) and checks the auto results against the
generator's ground truth: on a clean ledger (``--rate 0``, the default) every break is a false
break, so the expected count is 0.

    python benchmarks/bench_analysis.py                       # 1,000,000 clean records
    python benchmarks/bench_analysis.py --rate 0.001          # with planted anomalies
    python benchmarks/bench_analysis.py --records 100000      # quick look
    python benchmarks/bench_analysis.py --balance-model fee-only --zero-rate 0.05
    python benchmarks/bench_analysis.py --close               # the month-end close (issue 25)

``--close`` times the month-end close on one month of ``--records`` records (a one-month
calendar): today's one-to-one ``reconcile`` against 1,000,000 orders (the baseline), then
the close's matching: ``reconcile`` with the amount-sum rules plus ``match_settlements``
against a statement of 50,000 lines (target: within 2x the baseline), beside the floor (a
bare polars join of the same references) and the statement's reading in each format.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

import txkit.decode
from txkit.analysis import (
    balance_breaks,
    balance_model_choice,
    balance_model_fit,
    balance_summary,
    reconcile,
    underpayments,
)
from txkit.sandbox.ledger import Ledger, generate_ledger
from txkit.sandbox.ledger._bank import CSV_COLUMNS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import round_robin, work_folder

PAGE = 5_000
BATCH = 40  # pages verified together, as the loader does


def _decode(ledger: Ledger) -> tuple[pl.DataFrame, int]:
    bodies = ledger.export_bodies()
    total = len(bodies)
    frames: list[pl.DataFrame] = []
    exact = 0
    for start in range(0, total, PAGE * BATCH):
        raws = []
        for page in range(start, min(start + PAGE * BATCH, total), PAGE):
            body = (
                b'{"success":true,"message":"ok","data":{"total":%d,"transactions":[' % total
                + b",".join(bodies[page : page + PAGE])
                + b"]}}"
            )
            raws.append(txkit.decode.read_page(body))
        frames.extend(txkit.decode.build_frames(raws))
        exact += sum(r.exact for r in raws)
    return txkit.decode.finalize(txkit.decode.combine(frames)), exact


def _tie_order_artifacts(ledger: Ledger, df: pl.DataFrame, breaks: pl.DataFrame) -> int:
    """How many breaks sit on, or right after, records the generator chained out of id order.

    ``generate_ledger`` sorts ids only inside the ties it plants on purpose; records that
    share a ``createdAt`` millisecond by chance keep their generation order, and the balance
    chain follows that order instead of the documented ``createdAt``-then-``id`` order.
    """
    out_of_order = (
        ledger.index.group_by("createdAt")
        .agg("id")
        .filter((pl.col("id").list.len() > 1) & (pl.col("id").list.sort() != pl.col("id")))
        .explode("id")["id"]
    )
    ok = pl.col("status") == "successful"
    ttype = pl.col("transType")
    wallet = (
        pl.when(ttype == "conversion").then("fromCurrency").otherwise("toCurrency").alias("wallet")
    )
    entries = pl.concat(
        [
            df.filter(ok & ttype.is_in(["collection", "conversion"])).select(
                "id", "createdAt", pl.col("toCurrency").alias("wallet"), pl.lit(1).alias("side")
            ),
            df.filter(ok & ttype.is_in(["transfer", "settlement", "conversion"])).select(
                "id", "createdAt", wallet, pl.lit(0).alias("side")
            ),
        ]
    ).sort("createdAt", "id", "side")
    suspect = entries.with_columns(
        pl.col("id").shift(1).over("wallet").is_in(out_of_order.implode()).alias("after")
    ).filter(pl.col("id").is_in(out_of_order.implode()) | pl.col("after"))
    keys = suspect.select("id", pl.col("wallet").alias("currency"))
    return breaks.join(keys, on=["id", "currency"], how="semi").height


def _best(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _pairs(pairs: set[tuple[str, str]]) -> pl.Series:
    frame = pl.DataFrame(sorted(pairs), schema={"id": pl.String, "field": pl.String}, orient="row")
    return frame.select(pl.struct("id", "field")).to_series().implode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rate", type=float, default=0.0, help="anomaly rate (0: clean)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--balance-model", choices=["net", "fee-only"], default="net")
    parser.add_argument("--zero-rate", type=float, default=0.0, help="zero-balance transfers")
    parser.add_argument("--close", action="store_true", help="the month-end close benchmark")
    args = parser.parse_args()
    if args.close:
        close_benchmark(args)
        return

    start = time.perf_counter()
    ledger = generate_ledger(
        seed=args.seed,
        records=args.records,
        anomaly_rate=args.rate,
        balance_model=args.balance_model,
        zero_balance_rate=args.zero_rate,
    )
    print(f"generate  {args.records:>10,} records          {time.perf_counter() - start:7.1f} s")
    start = time.perf_counter()
    df, exact = _decode(ledger)
    print(
        f"decode    {df.height:>10,} served records   {time.perf_counter() - start:7.1f} s"
        f"  ({exact} pages on the exact path)"
    )

    fixed, net_breaks = _best(args.repeat, lambda: balance_breaks(df, model="net"))
    print(f"balance_breaks(model='net')           {fixed:7.2f} s  {net_breaks.height} breaks")

    def fit_and_check() -> tuple[pl.DataFrame, pl.DataFrame]:
        choice = balance_model_choice(balance_model_fit(df))
        return choice, balance_breaks(df, model="auto")

    seconds, (choice, breaks) = _best(args.repeat, fit_and_check)
    models = ", ".join(f"{c}: {m}" for c, m in choice.select("currency", "model").iter_rows())
    print(
        f"balance_model_fit + balance_breaks(auto) {seconds:4.2f} s  {breaks.height} breaks "
        f"({seconds / fixed:.2f}x the fixed model; {models})"
    )
    seconds, summary = _best(args.repeat, lambda: balance_summary(df))
    entries = summary.filter(pl.col("side") == "ledger")["entries"].sum()
    unverifiable = summary["unverifiable"].sum()
    print(
        f"balance_summary                       {seconds:7.2f} s  {entries:,} ledger entries, "
        f"{unverifiable} unverifiable values"
    )
    seconds, result = _best(args.repeat, lambda: reconcile(df, ledger.orders))
    unmatched = result.filter(pl.col("category") != "matched").height
    print(f"reconcile                             {seconds:7.2f} s  {unmatched} unmatched refs")
    seconds, flagged = _best(args.repeat, lambda: underpayments(df))
    print(f"underpayments                         {seconds:7.2f} s  {flagged.height} flagged")

    truth = Counter(e["kind"] for e in ledger.ground_truth)
    found = Counter(breaks["kind"].to_list())
    planted = {
        "chain_gap": truth["missing_from_export"],
        "bad_value": truth["bad_balance"],
        "reserve_mismatch": truth["reserve_mismatch"],
        "other": 0,
    }
    print("balance breaks by kind (found / planted):")
    for kind, count in planted.items():
        print(f"  {kind:<17} {found[kind]:>6} / {count}")
    expected = {
        (e["id"], e["field"])
        for e in ledger.ground_truth
        if e["kind"] in ("bad_balance", "reserve_mismatch")
    }
    got = {
        (r["id"], r["field"])
        for r in breaks.filter(pl.col("kind") != "chain_gap").iter_rows(named=True)
    }
    unplanted = breaks.filter(
        (pl.col("kind") == "other")
        | ((pl.col("kind") != "chain_gap") & ~pl.struct("id", "field").is_in(_pairs(expected)))
    ).height + max(0, found["chain_gap"] - planted["chain_gap"])
    explained = _tie_order_artifacts(ledger, df, breaks)
    print(
        f"breaks not planted: {unplanted}, of which {explained} on or right after records the "
        "generator chained out of (createdAt, id) order"
    )
    print(f"false breaks: {unplanted - explained}; missed: {len(expected - got)}")
    if unplanted - explained or expected - got:
        raise SystemExit("MISMATCH with the ground truth")


def close_benchmark(args: argparse.Namespace) -> None:
    """One month of ``--records`` records, 1,000,000 orders, a 50,000-line statement."""
    from txkit.analysis.settlements import match_settlements
    from txkit.inputs import read_statements

    start = time.perf_counter()
    ledger = generate_ledger(
        seed=args.seed, records=args.records, months=1, start_month="2026-10", anomaly_rate=0.001
    )
    df, _ = _decode(ledger)
    month = "2026-10"
    orders = ledger.orders
    if orders.height < 1_000_000:  # pad to 1,000,000 orders with ones no collection pays
        extra = 1_000_000 - orders.height
        orders = pl.concat(
            [
                orders,
                pl.DataFrame(
                    {
                        "reference": [f"PAD-{k:09d}" for k in range(extra)],
                        "amount": [Decimal("100.00")] * extra,
                        "currency": ["NGN"] * extra,
                        "status": ["successful"] * extra,
                        "date": [orders["date"].min()] * extra,
                        "customer": [None] * extra,
                    },
                    schema=orders.schema,
                ),
            ]
        )
    folder = work_folder("txkit-bench-analysis-")
    os.environ["TXKIT_DATA_DIR"] = str(folder / "data")  # the kept reads go there
    paths = {}
    for fmt, suffix in (("csv", ".csv"), ("mt940", ".mt940"), ("camt053", ".xml")):
        paths[fmt] = []
        for m in ledger.statement_months():
            path = folder / f"statement_{m}{suffix}"
            path.write_bytes(ledger.bank_statement(m, fmt))
            paths[fmt].append(path)
    # Each format read first (every line checked), then again (the kept read: txkit.inputs._kept).
    reads, read = {}, {}
    for fmt, files in paths.items():
        columns = CSV_COLUMNS if fmt == "csv" else None
        began = time.perf_counter()
        read[fmt] = read_statements(files, columns=columns)
        first = time.perf_counter() - began
        began = time.perf_counter()
        read_statements(files, columns=columns)
        reads[fmt] = (first, time.perf_counter() - began, read[fmt].entries.height)
    statement = read["camt053"]
    print(
        f"set-up {time.perf_counter() - start:.1f} s: {df.height:,} records in {month}, "
        f"{orders.height:,} orders, a statement of {statement.entries.height:,} lines"
    )
    refs = df.filter(pl.col("transType") == "collection").select(
        pl.col("transactionReference").alias("reference")
    )

    def floor() -> object:
        return refs.join(orders.select("reference"), on="reference", how="full").height

    def baseline() -> object:
        return reconcile(df, orders, month=month, parts=False)

    def close() -> object:
        result = reconcile(df, orders, month=month)
        return result, match_settlements(df, statement, month=month)

    results = round_robin({"floor": floor, "baseline": baseline, "close": close}, runs=args.repeat)
    base = results["baseline"]["seconds"]
    for name, label in (
        ("floor", "bare polars full join of the references (floor)"),
        ("baseline", "reconcile one to one (today's reconciliation)"),
        ("close", "reconcile with amount-sum rules + match_settlements"),
    ):
        r = results[name]
        print(
            f"{label:<55} {r['seconds']:6.2f} s (min {r['min']:.2f}, max {r['max']:.2f}) "
            f"{df.height / r['seconds']:>12,.0f} rec/s  CPU {r['cpu']:6.2f} s  "
            f"peak {r['peak_mb']:6.0f} MB  {r['seconds'] / base:4.2f}x baseline"
        )
    ratio = results["close"]["seconds"] / base
    cpu_ratio = results["close"]["cpu"] / results["baseline"]["cpu"]
    print(
        f"close / baseline: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU (target: at most 2x) "
        f"{'met' if ratio <= 2 else 'NOT met'}"
    )
    for fmt, (first, again, lines) in reads.items():
        print(
            f"read the statement as {fmt:<8} {first:6.2f} s ({lines:,} lines); "
            f"again, kept: {again:6.3f} s"
        )


if __name__ == "__main__":
    main()
