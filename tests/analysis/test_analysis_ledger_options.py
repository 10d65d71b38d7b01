"""The analyses against the sandbox's ground truth under its ledger options.

* Balance models: on ledgers whose balances move by ``net`` or ``fee-only``, with and without
  records reporting zero balances, ``balance_breaks`` (``model="auto"``) finds exactly the
  planted breaks and nothing else, for several seeds; the fit table picks the ledger's model
  for every wallet; zero balances are counted as not reported.
* Month ends: every planted late payment (an order of the month's last evening paid after
  midnight) is ``paid_next_month`` in its order's month and ``ordered_previous_month`` in its
  payment's month; no reference is missing in two consecutive months.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from typing import Any

import polars as pl
import pytest
from analysis_cases import SEEDS, Case, load_case, month_bounds
from polars.testing import assert_frame_equal

from txkit.analysis import (
    balance_breaks,
    balance_model_choice,
    balance_model_fit,
    balance_summary,
    reconcile,
    underpayments,
)
from txkit.sandbox.ledger import parse_record

MODELS = ("net", "fee-only")
ZERO_RATE = 0.05
#: Records of this module's 15 ledgers (3 seeds x the options): 5,000 plant every anomaly kind,
#: zero balances and at least 3 late payments in each, as 10,000 did, at half the CPU.
RECORDS = 5_000
BREAK_COLUMNS = ["currency", "side", "field", "id", "expected", "reported", "difference", "kind"]
SCHEMA = {
    "currency": pl.String,
    "side": pl.String,
    "field": pl.String,
    "id": pl.String,
    "expected": pl.Decimal(38, 2),
    "reported": pl.Decimal(38, 2),
    "difference": pl.Decimal(38, 2),
    "kind": pl.String,
}


def _charge(record: dict[str, Any], model: str) -> Decimal:
    return record["feeAmount"] + (record["taxAmount"] if model == "net" else 0)


def _next_reported_entry(case: Case, currency: str, after: datetime, after_id: str) -> dict:
    """The served successful entry with a reported ledger value that follows a moment."""
    ok = case.frame.filter(pl.col("status") == "successful")
    ttype = pl.col("transType")
    to_side = ok.filter(
        ttype.is_in(["collection", "conversion"]) & (pl.col("toCurrency") == currency)
    ).select(
        "id", "createdAt", pl.lit("to").alias("pos"), pl.col("toBalanceAfterLedger").alias("L")
    )
    from_side = ok.filter(
        (ttype.is_in(["transfer", "settlement"]) & (pl.col("toCurrency") == currency))
        | ((ttype == "conversion") & (pl.col("fromCurrency") == currency))
    ).select(
        "id", "createdAt", pl.lit("from").alias("pos"), pl.col("fromBalanceAfterLedger").alias("L")
    )
    entries = pl.concat([to_side, from_side]).filter(pl.col("L") != 0).sort("createdAt", "id")
    later = (pl.col("createdAt") > after) | (
        (pl.col("createdAt") == after) & (pl.col("id") > after_id)
    )
    return entries.filter(later).row(0, named=True)


def expected_breaks(case: Case) -> pl.DataFrame:
    """The planted balance breaks, with their values under the ledger's balance model."""
    model = case.ledger.balance_model
    rows: list[dict[str, Any]] = []
    for kind, side, out in (
        ("bad_balance", "ledger", "bad_value"),
        ("reserve_mismatch", "available", "reserve_mismatch"),
    ):
        for e in case.truth(kind):
            expected, reported = Decimal(e["expected"]), Decimal(e["reported"])
            rows.append(
                {
                    "currency": e["currency"],
                    "side": side,
                    "field": e["field"],
                    "id": e["id"],
                    "expected": expected,
                    "reported": reported,
                    "difference": reported - expected,
                    "kind": out,
                }
            )
    index = case.ledger.index.with_row_index("row")
    for e in case.truth("missing_from_export"):
        row = index.filter(pl.col("id") == e["id"])["row"][0]
        hidden = parse_record(case.ledger.body(row))
        assert hidden["transType"] == "collection" and hidden["status"] == "successful"
        delta = hidden["toAmount"] - _charge(hidden, model)
        created = datetime.fromisoformat(hidden["createdAt"].replace("Z", "+00:00"))
        nxt = _next_reported_entry(case, e["currency"], created, e["id"])
        rows.append(
            {
                "currency": e["currency"],
                "side": "ledger",
                "field": f"{nxt['pos']}BalanceAfterLedger",
                "id": nxt["id"],
                "expected": nxt["L"] - delta,
                "reported": nxt["L"],
                "difference": delta,
                "kind": "chain_gap",
            }
        )
    return pl.DataFrame(rows, schema=SCHEMA).select(BREAK_COLUMNS).sort("id", "field")


@pytest.mark.slow
@pytest.mark.parametrize("zero_rate", [0.0, ZERO_RATE])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("seed", SEEDS)
def test_auto_finds_exactly_the_planted_breaks_under_either_model(
    seed: int, model: str, zero_rate: float
) -> None:
    case = load_case(seed, 0.03, RECORDS, balance_model=model, zero_balance_rate=zero_rate)
    choice = balance_model_choice(balance_model_fit(case.frame))
    assert choice["model"].to_list() == [model] * choice.height, choice
    breaks = balance_breaks(case.frame)
    assert set(breaks["model"]) == {model}
    expected = expected_breaks(case)
    assert expected.height > 0
    assert_frame_equal(breaks.select(BREAK_COLUMNS).sort("id", "field"), expected)
    zero_ids = {e["id"] for e in case.ledger.zero_balances}
    assert (len(zero_ids) > 0) == (zero_rate > 0)
    assert not zero_ids & set(breaks["id"])
    summary = balance_summary(case.frame)
    assert summary.filter(pl.col("side") == "ledger")["not_reported"].sum() == len(zero_ids)
    assert summary.filter(pl.col("side") == "available")["not_reported"].sum() == len(zero_ids)
    assert set(summary["model"]) == {model}


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_the_fixed_net_model_floods_a_fee_only_ledger_and_auto_does_not(seed: int) -> None:
    case = load_case(seed, 0.0, RECORDS, balance_model="fee-only", zero_balance_rate=ZERO_RATE)
    flood = balance_breaks(case.frame, model="net")
    assert flood.height > case.frame.height // 10
    assert balance_breaks(case.frame).is_empty()
    fit = balance_model_fit(case.frame)
    rates = fit.group_by("model").agg(pl.col("fit_rate").min()).sort("model")
    assert dict(rates.iter_rows())["fee-only"] == 1.0
    assert dict(rates.iter_rows())["net"] < 0.95


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_months_with_history_under_either_model_with_zero_balances(model: str) -> None:
    """A month checked with the month before as history: the full ledger's breaks inside it,
    every value checked or not reported."""
    case = load_case(2, 0.03, RECORDS, balance_model=model, zero_balance_rate=ZERO_RATE)
    full = balance_breaks(case.frame)
    month = pl.col("createdAt").dt.strftime("%Y-%m")
    parts = [p for _, p in case.frame.sort("createdAt", "id").group_by(month, maintain_order=True)]
    for before, part in pairwise(parts):
        breaks = balance_breaks(part, history=before)
        assert_frame_equal(breaks, full.filter(pl.col("id").is_in(part["id"].implode())))
        ledger = balance_summary(part, history=before).filter(pl.col("side") == "ledger")
        assert (ledger["unverifiable"] == ledger["not_reported"]).all()


# ---------------------------------------------------------------------------------------------
# Month ends.


def _month(day: date) -> str:
    return day.strftime("%Y-%m")


def _reconcile_month(case: Case, month: str, days: int = 3) -> pl.DataFrame:
    """As notebook 02: the month's records and orders with ``days`` around it."""
    first, last = month_bounds(month)
    near = case.frame.filter(
        pl.col("createdAt").dt.date().is_between(first - timedelta(days), last + timedelta(days))
    )
    orders = case.ledger.orders.filter(
        pl.col("date").is_between(first - timedelta(days), last + timedelta(days))
    )
    return reconcile(near, orders, month=month, date_tolerance=days)


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("seed", SEEDS)
def test_late_payments_are_matched_across_the_month_end(seed: int, model: str) -> None:
    case = load_case(seed, 0.03, RECORDS, balance_model=model, zero_balance_rate=ZERO_RATE)
    late = case.ledger.late_payments
    assert len(late) >= 3
    months = sorted({_month(d) for d in case.frame["createdAt"].dt.date()})
    results = {m: _reconcile_month(case, m) for m in months}
    for e in late:
        ordered = date.fromisoformat(e["order_date"])
        paid = datetime.fromisoformat(e["createdAt"].replace("Z", "+00:00")).astimezone(UTC)
        assert _month(ordered) != _month(paid.date())
        for month, category in ((_month(ordered), "paid_next_month"),
                                (_month(paid.date()), "ordered_previous_month")):  # fmt: skip
            row = results[month].row(by_predicate=pl.col("reference") == e["reference"], named=True)
            assert row["category"] == category, (month, e)
            assert row["difference"] == 0 and row["order_date"] == ordered
    # Nothing else crosses a month end, and no reference is missing in two months running.
    crossing = pl.concat(
        r.filter(pl.col("category").is_in(["paid_next_month", "ordered_previous_month"]))
        for r in results.values()
    )
    assert sorted(set(crossing["reference"])) == sorted(e["reference"] for e in late)
    assert crossing.height == 2 * len(late)
    missing = ["missing_in_export", "missing_in_orders"]
    for before, after in pairwise(months):
        both = (
            results[before]
            .filter(pl.col("category").is_in(missing))
            .join(results[after].filter(pl.col("category").is_in(missing)), on="reference")
        )
        assert both.is_empty(), both
    # Without the tolerance, the month end is a hard line: each late payment goes missing twice.
    hard = {m: _reconcile_month(case, m, days=0) for m in months}
    for e in late:
        ordered = date.fromisoformat(e["order_date"])
        paid_month = e["createdAt"][:7]
        categories = [
            hard[m].row(by_predicate=pl.col("reference") == e["reference"], named=True)["category"]
            for m in (_month(ordered), paid_month)
        ]
        assert categories == ["missing_in_export", "missing_in_orders"]


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_underpayment_originals_under_either_model(model: str) -> None:
    case = load_case(3, 0.03, RECORDS, balance_model=model, zero_balance_rate=ZERO_RATE)
    truth = {e["id"]: e["existing_in_export"] for e in case.truth("underpayment", "overpayment")}
    assert truth
    for month in sorted({_month(d) for d in case.frame["createdAt"].dt.date()}):
        first, _ = month_bounds(month)
        part = case.frame.filter(pl.col("createdAt").dt.strftime("%Y-%m") == month)
        earlier = case.frame.filter(pl.col("createdAt").dt.date() < first)
        flagged = underpayments(part, history=earlier)
        assert dict(flagged.select("id", "original_in_export").iter_rows()) == {
            i: truth[i] for i in flagged["id"]
        }
