"""underpayments and its summaries.

Against the sandbox: exactly the planted under- and overpayments, with their expected and paid
amounts, shortfall, original reference and whether the original is in the export. Hand-written
frames pin down the summaries.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from analysis_cases import RATES, SEEDS, Case, load_case, tx_frame
from polars.testing import assert_frame_equal

from txkit.analysis import (
    COUNTED_STATUSES,
    activity_comparison,
    repeat_shortfalls,
    underpayment_summary,
    underpayments,
)

COLUMNS = [
    "id",
    "type",
    "expected",
    "paid",
    "shortfall",
    "original_reference",
    "original_in_export",
]


def expected_flagged(case: Case) -> pl.DataFrame:
    rows = [
        (
            e["id"],
            e["kind"].upper(),
            Decimal(e["expected_amount"]),
            Decimal(e["paid_amount"]),
            Decimal(e["expected_amount"]) - Decimal(e["paid_amount"]),
            e["existing_reference"],
            e["existing_in_export"],
        )
        for e in case.truth("underpayment", "overpayment")
    ]
    money = pl.Decimal(38, 2)
    schema = {
        "id": pl.String,
        "type": pl.String,
        "expected": money,
        "paid": money,
        "shortfall": money,
        "original_reference": pl.String,
        "original_in_export": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort("id")


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("seed", SEEDS)
def test_finds_exactly_the_planted_under_and_overpayments(
    seed: int, rate: float, as_input: Callable[[pl.DataFrame], Any]
) -> None:
    case = load_case(seed, rate)
    flagged = underpayments(as_input(case.frame))
    assert_frame_equal(flagged.select(COLUMNS).sort("id"), expected_flagged(case))
    if rate:
        assert flagged["type"].n_unique() == 2
        assert flagged["original_in_export"].n_unique() == 2  # both cases are planted
    assert flagged.select("currency", "channel", "status").unique().rows() in (
        [],
        [("NGN", "VA", "successful")],
    )
    assert flagged["createdAt"].is_sorted()


@pytest.mark.parametrize("seed", SEEDS)
def test_summary_adds_up_to_the_flagged_records(seed: int) -> None:
    case = load_case(seed, 0.03)
    flagged = underpayments(case.frame)
    for by in ("currency", "month", "bank", "channel", ["month", "bank"]):
        summary = underpayment_summary(case.frame, by=by)
        assert summary["underpayments"].sum() == (flagged["type"] == "UNDERPAYMENT").sum()
        assert summary["overpayments"].sum() == (flagged["type"] == "OVERPAYMENT").sum()
        shortfall = flagged.filter(pl.col("type") == "UNDERPAYMENT")["shortfall"].sum()
        assert summary["shortfall"].sum() == shortfall
        assert summary["net_shortfall"].sum() == flagged["shortfall"].sum()
        successful = case.frame.filter(
            (pl.col("transType") == "collection") & (pl.col("status") == "successful")
        )
        assert summary["successful_collections"].sum() == successful.height
        assert summary.columns[0] == "currency"
    by_currency = underpayment_summary(case.frame, by="currency")
    ngn = by_currency.row(by_predicate=pl.col("currency") == "NGN", named=True)
    assert ngn["underpayment_rate"] == ngn["underpayments"] / ngn["successful_collections"]


# ---------------------------------------------------------------------------------------------
# Hand-written records.


def _payment(rid: str, day: int, paid: str, expected: str | None = None, **kw: Any) -> dict:
    flag = None
    if expected is not None:
        flag = "UNDERPAYMENT" if Decimal(paid) < Decimal(expected) else "OVERPAYMENT"
    return {
        "id": rid,
        "createdAt": datetime(2026, 1, day, tzinfo=UTC),
        "transType": "collection",
        "status": "successful",
        "transactionReference": f"REF-{rid}",
        "toAmount": paid,
        "toCurrency": "NGN",
        "customerEmail": kw.pop("email", "a@example.test"),
        "meta.paymentCollectionType": kw.pop("flag", flag),
        "meta.existingTransaction.expectedAmount": expected,
        "meta.existingTransaction.reference": kw.pop("original", None),
        "meta.bankName": kw.pop("bank", "Sandbox Bank"),
        "meta.paymentChannel": kw.pop("channel", "VA"),
        **kw,
    }


ROWS = [
    _payment("p1", 1, "100.00"),
    _payment("u1", 2, "60.00", "100.00", original="REF-p1"),
    _payment("u2", 3, "90.50", "100.00", original="REF-gone"),
    _payment("u3", 4, "10.00", "20.00", email="b@example.test"),
    _payment("u4", 5, "15.00", "20.00", email="b@example.test", flag="underpayment"),
    _payment("o1", 6, "150.00", "100.00", email="c@example.test"),
    _payment("o2", 7, "150.00", "100.00", email="c@example.test"),
    _payment("u5", 8, "1.00", "99.00", email="d@example.test", channel="CARD", bank=None),
    _payment("p2", 9, "5.00", channel="CARD", bank=None),
]


def test_underpayments_on_hand_written_records(as_input: Callable[[pl.DataFrame], Any]) -> None:
    flagged = underpayments(as_input(tx_frame(ROWS)))
    assert flagged.select("id", "type", "shortfall", "original_in_export").rows() == [
        ("u1", "UNDERPAYMENT", Decimal("40.00"), True),
        ("u2", "UNDERPAYMENT", Decimal("9.50"), False),
        ("u3", "UNDERPAYMENT", Decimal("10.00"), False),
        ("u4", "UNDERPAYMENT", Decimal("5.00"), False),  # the flag's case is not significant
        ("o1", "OVERPAYMENT", Decimal("-50.00"), False),
        ("o2", "OVERPAYMENT", Decimal("-50.00"), False),
        ("u5", "UNDERPAYMENT", Decimal("98.00"), False),
    ]
    assert flagged.columns == [
        "id",
        "createdAt",
        "transactionReference",
        "type",
        "status",
        "currency",
        "expected",
        "paid",
        "shortfall",
        "original_reference",
        "original_in_export",
        "bank",
        "channel",
        "customerEmail",
    ]


def test_summary_by_channel() -> None:
    summary = underpayment_summary(tx_frame(ROWS), by="channel")
    expected = pl.DataFrame(
        {
            "currency": ["NGN", "NGN"],
            "channel": ["CARD", "VA"],
            "successful_collections": [2, 7],
            "underpayments": [1, 4],
            "overpayments": [0, 2],
            "underpayment_rate": [0.5, 4 / 7],
            "overpayment_rate": [0.0, 2 / 7],
            "flagged_rate": [0.5, 6 / 7],
            "shortfall": [Decimal("98.00"), Decimal("64.50")],
            "excess": [Decimal("0.00"), Decimal("100.00")],
            "net_shortfall": [Decimal("98.00"), Decimal("-35.50")],
        },
        schema_overrides={
            "successful_collections": pl.UInt32,
            "underpayments": pl.UInt32,
            "overpayments": pl.UInt32,
            "shortfall": pl.Decimal(38, 2),
            "excess": pl.Decimal(38, 2),
            "net_shortfall": pl.Decimal(38, 2),
        },
    )
    assert_frame_equal(summary, expected)


def test_summary_keeps_groups_without_a_bank() -> None:
    summary = underpayment_summary(tx_frame(ROWS), by=["bank"])
    assert summary.select("bank", "successful_collections", "underpayments").rows() == [
        ("Sandbox Bank", 7, 4),
        (None, 2, 1),
    ]


def test_summary_rejects_unknown_dimensions() -> None:
    with pytest.raises(ValueError, match=r"unknown dimension\(s\) \['week'\].*accepted: currency"):
        underpayment_summary(tx_frame(ROWS), by=["month", "week"])


def test_repeat_shortfalls_ranks_customers_by_total_shortfall() -> None:
    result = repeat_shortfalls(tx_frame(ROWS))
    assert result.select("customerEmail", "underpayments", "total_shortfall").rows() == [
        ("a@example.test", 2, Decimal("49.50")),
        ("b@example.test", 2, Decimal("15.00")),
    ]  # c only overpaid, d underpaid once
    row = result.row(0, named=True)
    assert row["largest_shortfall"] == Decimal("40.00")
    assert row["references"] == ["REF-u1", "REF-u2"]
    assert row["first_at"] == datetime(2026, 1, 2, tzinfo=UTC)
    assert repeat_shortfalls(tx_frame(ROWS), min_count=1, top=1)["customerEmail"].to_list() == [
        "d@example.test"
    ]
    assert repeat_shortfalls(tx_frame(ROWS), min_count=3).is_empty()
    assert repeat_shortfalls(tx_frame(ROWS), min_count=1, top=None).height == 3


@pytest.mark.parametrize(("kw", "name"), [({"min_count": 0}, "min_count"), ({"top": 1.5}, "top")])
def test_repeat_shortfalls_checks_its_arguments(kw: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
        repeat_shortfalls(tx_frame(ROWS), **kw)


def test_activity_comparison_on_hand_written_records() -> None:
    activity = {
        "p1": (1, 0, 30.0, True),
        "u1": (3, 2, 120.0, True),
        "u2": (2, 1, 60.0, False),
        "o1": (1, 0, 10.0, False),
    }
    rows = []
    for row in ROWS:
        attempts, errors, spent, mobile = activity.get(row["id"], (None, None, None, None))
        rows.append(
            {
                **row,
                "meta.customerActivity.attempts": attempts,
                "meta.customerActivity.errors": errors,
                "meta.customerActivity.time_spent": spent,
                "meta.customerActivity.mobile": mobile,
            }
        )
    result = activity_comparison(tx_frame(rows), channel="VA")
    assert result["group"].to_list() == ["underpaid", "overpaid", "exact"]
    underpaid = result.row(0, named=True)
    assert underpaid["collections"] == 4 and underpaid["with_activity"] == 2
    assert underpaid["mean_attempts"] == 2.5 and underpaid["mean_errors"] == 1.5
    assert underpaid["share_with_errors"] == 1.0 and underpaid["mobile_share"] == 0.5
    assert underpaid["mean_time_spent"] == 90.0 and underpaid["median_time_spent"] == 90.0
    exact = result.row(2, named=True)
    assert exact["collections"] == 1 and exact["share_with_errors"] == 0.0
    empty = activity_comparison(tx_frame(rows).filter(pl.col("id") == "p1"))
    assert empty["collections"].to_list() == [0, 0, 1]
    assert empty["mean_attempts"].to_list() == [None, None, 1.0]


def test_activity_comparison_on_the_sandbox() -> None:
    case = load_case(1, 0.03)
    result = activity_comparison(case.frame.lazy(), channel="VA")
    flagged = underpayments(case.frame)
    assert result["collections"].to_list()[:2] == [
        (flagged["type"] == "UNDERPAYMENT").sum(),
        (flagged["type"] == "OVERPAYMENT").sum(),
    ]
    assert (result["with_activity"] == result["collections"]).all()


def test_missing_columns_are_named() -> None:
    frame = tx_frame(ROWS).drop("meta.existingTransaction.expectedAmount", "meta.bankName")
    with pytest.raises(
        ValueError,
        match="missing columns 'meta.existingTransaction.expectedAmount', 'meta.bankName'",
    ):
        underpayments(frame)


# ---------------------------------------------------------------------------------------------
# Statuses: every function counts the same records (COUNTED_STATUSES).

ODD = [
    _payment("x1", 10, "10.00", "50.00", status="pending", email="a@example.test"),
    _payment("x2", 11, "70.00", "50.00", status="failed"),
    _payment("x3", 12, "1.00", "50.00", transType="transfer", email="a@example.test"),
]


def test_only_successful_collections_count_everywhere() -> None:
    assert COUNTED_STATUSES == ("successful",)
    frame = tx_frame(ROWS + ODD)
    flagged = underpayments(frame)
    assert_frame_equal(flagged, underpayments(tx_frame(ROWS)))
    every = underpayments(frame, all_statuses=True)
    assert every.filter(pl.col("id").str.starts_with("x"))["id"].to_list() == ["x1", "x2", "x3"]
    summary = underpayment_summary(frame, by="currency")
    assert_frame_equal(summary, underpayment_summary(tx_frame(ROWS), by="currency"))
    row = summary.row(0, named=True)
    assert row["underpayments"] + row["overpayments"] == flagged.height  # same records
    assert row["underpayment_rate"] == row["underpayments"] / row["successful_collections"]
    assert_frame_equal(repeat_shortfalls(frame), repeat_shortfalls(tx_frame(ROWS)))
    activity = activity_comparison(
        frame.with_columns(pl.lit(1).alias("meta.customerActivity.attempts"))
    )
    assert activity["collections"].to_list()[:2] == [
        (flagged["type"] == "UNDERPAYMENT").sum(),
        (flagged["type"] == "OVERPAYMENT").sum(),
    ]


def test_the_original_reference_is_looked_up_in_history() -> None:
    earlier = tx_frame([_payment("old", 1, "100.00")]).with_columns(
        pl.lit("REF-gone").alias("transactionReference"),
        pl.lit("pending").alias("status"),  # any status is the original's record
    )
    alone = underpayments(tx_frame(ROWS))
    assert alone.filter(pl.col("id") == "u2")["original_in_export"].to_list() == [False]
    found = underpayments(tx_frame(ROWS), history=earlier.lazy())
    assert found.filter(pl.col("id") == "u2")["original_in_export"].to_list() == [True]
    assert found.drop("original_in_export").equals(alone.drop("original_in_export"))
    with pytest.raises(ValueError, match="history has missing column 'transactionReference'"):
        underpayments(tx_frame(ROWS), history=earlier.drop("transactionReference"))
