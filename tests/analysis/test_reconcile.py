"""reconcile / reconcile_summary / duplicate_references / read_orders.

Against the sandbox: every planted ``order_*``, ``missing_from_export`` and (collection)
``duplicate_reference`` anomaly gets its category and nothing else is unmatched. Hand-written
frames pin down the precedence rules; files pin down read_orders' exactness and errors.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from analysis_cases import RATES, SEEDS, Case, load_case, tx_frame
from polars.testing import assert_frame_equal

from txkit.analysis import (
    CATEGORIES,
    duplicate_references,
    read_orders,
    reconcile,
    reconcile_summary,
)

_BY_KIND = {
    "order_missing": "missing_in_orders",
    "order_extra": "missing_in_export",
    "missing_from_export": "missing_in_export",  # hidden collections stay in the orders
    "order_amount": "amount_mismatch",
    "order_status": "status_mismatch",
    "order_currency": "currency_mismatch",
}


def expected_unmatched(case: Case) -> pl.DataFrame:
    """(reference, category, difference) of every reference the planted anomalies unmatch."""
    types = dict(case.ledger.index.select("id", "transType").iter_rows())
    rows = []
    for e in case.ledger.ground_truth:
        difference = None
        if e["kind"] == "order_amount":
            difference = Decimal(e["expected"]) - Decimal(e["reported"])
        if e["kind"] in _BY_KIND:
            rows.append((e["reference"], _BY_KIND[e["kind"]], difference))
        # Orders and the export side hold collections only: a reference shared with a
        # transfer, settlement or conversion is one collection matched to one order.
        elif e["kind"] == "duplicate_reference" and (
            types[e["id"]] == types[e["original_id"]] == "collection"
        ):
            rows.append((e["reference"], "duplicate_reference", Decimal(0)))
    return pl.DataFrame(
        rows,
        schema={"reference": pl.String, "category": pl.String, "difference": pl.Decimal(38, 2)},
        orient="row",
    ).sort("reference")


@pytest.mark.slow
@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("seed", SEEDS)
def test_finds_exactly_the_planted_order_anomalies(
    seed: int, rate: float, as_input: Callable[[pl.DataFrame], Any]
) -> None:
    case = load_case(seed, rate)
    result = reconcile(as_input(case.frame), as_input(case.ledger.orders))
    unmatched = (
        result.filter(pl.col("category") != "matched")
        .select("reference", pl.col("category").cast(pl.String), "difference")
        .with_columns(
            # a duplicate's difference compares its first collection with its first order
            pl.when(pl.col("category") == "duplicate_reference")
            .then(pl.lit(Decimal(0)))
            .otherwise(pl.col("difference"))
            .cast(pl.Decimal(38, 2))
            .alias("difference")
        )
        .with_columns(
            pl.when(pl.col("category").is_in(["amount_mismatch", "duplicate_reference"]))
            .then(pl.col("difference"))
            .alias("difference")
        )
    )
    assert_frame_equal(unmatched, expected_unmatched(case))
    matched = result.filter(pl.col("category") == "matched")
    assert (matched["difference"] == 0).all()
    assert (matched["export_count"] == 1).all() and (matched["order_count"] == 1).all()
    collections = case.frame.filter(pl.col("transType") == "collection")
    assert (
        result.height
        == pl.concat(
            [collections["transactionReference"], case.ledger.orders["reference"]]
        ).n_unique()
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_duplicate_references_lists_every_planted_pair(seed: int) -> None:
    case = load_case(seed, 0.03)
    found = (
        duplicate_references(case.frame)
        .group_by("transactionReference")
        .agg(pl.col("id").sort())
        .sort("transactionReference")
    )
    planted = pl.DataFrame(
        [
            (e["reference"], sorted([e["original_id"], e["id"]]))
            for e in case.truth("duplicate_reference")
        ],
        schema={"transactionReference": pl.String, "id": pl.List(pl.String)},
        orient="row",
    ).sort("transactionReference")
    assert planted.height > 0
    assert_frame_equal(found, planted)


def test_read_orders_reads_the_sandbox_orders_csv_exactly(tmp_path: Path) -> None:
    case = load_case(1, 0.03)
    path = tmp_path / "orders.csv"
    path.write_bytes(case.ledger.orders_csv())
    orders = read_orders(path)
    assert_frame_equal(orders, case.ledger.orders)
    assert_frame_equal(reconcile(case.frame, orders), reconcile(case.frame, case.ledger.orders))


# ---------------------------------------------------------------------------------------------
# Precedence and values on hand-written frames.


def _collection(rid: str, ref: str, amount: str, currency: str = "NGN", **kw: Any) -> dict:
    return {
        "id": rid,
        "createdAt": kw.pop("createdAt", datetime(2026, 1, 2, 3, tzinfo=UTC)),
        "transType": kw.pop("transType", "collection"),
        "status": kw.pop("status", "successful"),
        "transactionReference": ref,
        "toAmount": amount,
        "toCurrency": currency,
        **kw,
    }


TRANSACTIONS = [
    _collection("t1", "R1", "100.00"),
    _collection("t2", "R2", "100.00"),
    _collection("t3", "R3", "100.00", "USD"),
    _collection("t4", "R4", "100.00", status="failed"),
    _collection("t5b", "R5", "100.00", createdAt=datetime(2026, 1, 3, tzinfo=UTC)),
    _collection("t5a", "R5", "90.00", "GHS"),
    _collection("t6", "R6", "100.00"),
    _collection("t7", "R7", "100.00"),
    _collection("t9", "R9", "100.00", transType="transfer"),
    _collection("t10", "R10", "100.00", status="failed"),
    _collection("t11", None, "5.00"),  # type: ignore[arg-type]
    _collection("t12", "R12", "5.00"),
    _collection("t13", "R12", "5.00"),
]
ORDERS = pl.DataFrame(
    {
        "reference": ["R1", "R2", "R3", "R4", "R5", "R6", "R6", "R8", "R9", "R10"],
        "amount": ["100", "99.99", "100.01", "100", "100", "100", "100", "1.5", "100", "100.5"],
        "currency": ["NGN", "NGN", "NGN", "NGN", "NGN", "NGN", "NGN", "KES", "NGN", "NGN"],
        "status": ["successful"] * 10,
        "date": [date(2026, 1, 2)] * 10,
    }
).with_columns(pl.col("amount").cast(pl.Decimal(38, 2)))


def test_categories_follow_the_documented_precedence(
    as_input: Callable[[pl.DataFrame], Any],
) -> None:
    result = reconcile(as_input(tx_frame(TRANSACTIONS)), as_input(ORDERS))
    expected = pl.DataFrame(
        [
            ("R1", "matched", 1, 1, "t1", "0.00"),
            ("R10", "amount_mismatch", 1, 1, "t10", "-0.50"),  # amount beats status
            ("R12", "duplicate_reference", 2, 0, "t12", None),  # duplicate beats missing
            ("R2", "amount_mismatch", 1, 1, "t2", "0.01"),
            ("R3", "currency_mismatch", 1, 1, "t3", None),  # currency beats amount
            ("R4", "status_mismatch", 1, 1, "t4", "0.00"),
            ("R5", "duplicate_reference", 2, 1, "t5a", None),  # earliest first: t5a, GHS
            ("R6", "duplicate_reference", 1, 2, "t6", "0.00"),
            ("R7", "missing_in_orders", 1, 0, "t7", None),
            ("R8", "missing_in_export", 0, 1, None, None),
            ("R9", "missing_in_export", 0, 1, None, None),  # a transfer is not a collection
        ],
        schema={
            "reference": pl.String,
            "category": pl.Enum(CATEGORIES),
            "export_count": pl.UInt32,
            "order_count": pl.UInt32,
            "export_id": pl.String,
            "difference": pl.String,
        },
        orient="row",
    ).with_columns(pl.col("difference").cast(pl.Decimal(38, 2)))
    assert_frame_equal(result.select(expected.columns), expected)
    row = result.row(by_predicate=pl.col("reference") == "R7", named=True)
    assert row["export_date"] == date(2026, 1, 2)
    assert row["export_amount"] == Decimal("100.00") and row["order_amount"] is None


def test_without_an_order_status_statuses_are_not_compared() -> None:
    result = reconcile(tx_frame(TRANSACTIONS), ORDERS.drop("status", "date"))
    row = result.row(by_predicate=pl.col("reference") == "R4", named=True)
    assert row["category"] == "matched" and row["order_status"] is None
    assert result.schema["order_date"] == pl.Date


def test_summary_by_category_and_currency() -> None:
    summary = reconcile_summary(reconcile(tx_frame(TRANSACTIONS), ORDERS))
    expected = pl.DataFrame(
        [
            ("matched", "NGN", 1, "100.00", "100.00", "0.00"),
            ("missing_in_export", "KES", 1, "0.00", "1.50", "0.00"),
            ("missing_in_export", "NGN", 1, "0.00", "100.00", "0.00"),
            ("missing_in_orders", "NGN", 1, "100.00", "0.00", "0.00"),
            ("duplicate_reference", "GHS", 1, "90.00", "100.00", "0.00"),
            ("duplicate_reference", "NGN", 2, "105.00", "100.00", "0.00"),
            ("currency_mismatch", "USD", 1, "100.00", "100.01", "0.00"),
            ("amount_mismatch", "NGN", 2, "200.00", "200.49", "-0.49"),
            ("status_mismatch", "NGN", 1, "100.00", "100.00", "0.00"),
        ],
        schema={
            "category": pl.Enum(CATEGORIES),
            "currency": pl.String,
            "references": pl.UInt32,
            "export_amount": pl.String,
            "order_amount": pl.String,
            "difference": pl.String,
        },
        orient="row",
    ).with_columns(pl.col("export_amount", "order_amount", "difference").cast(pl.Decimal(38, 2)))
    assert_frame_equal(summary, expected)


def test_amounts_of_different_scales_compare_exactly() -> None:
    orders = pl.DataFrame(
        {"reference": ["R1", "R2"], "amount": ["100.000", "100.001"], "currency": ["NGN", "NGN"]}
    ).with_columns(pl.col("amount").cast(pl.Decimal(38, 3)))
    result = reconcile(tx_frame(TRANSACTIONS[:2]), orders)
    assert result["category"].to_list() == ["matched", "amount_mismatch"]
    assert result["difference"].to_list() == [Decimal("0.000"), Decimal("-0.001")]
    assert result.schema["export_amount"] == pl.Decimal(38, 3)


def test_missing_order_columns_are_named() -> None:
    with pytest.raises(ValueError, match="orders has missing columns 'amount', 'currency'"):
        reconcile(tx_frame(TRANSACTIONS), ORDERS.select("reference"))


def test_float_order_amounts_are_refused() -> None:
    orders = ORDERS.with_columns(pl.col("amount").cast(pl.Float64))
    with pytest.raises(ValueError, match="'amount' is Float64, expected Decimal or integer"):
        reconcile(tx_frame(TRANSACTIONS), orders)


def test_missing_transaction_columns_are_named() -> None:
    with pytest.raises(ValueError, match="transactions has missing column 'transactionReference'"):
        reconcile(tx_frame(TRANSACTIONS).drop("transactionReference"), ORDERS)


def test_summary_needs_a_reconcile_result() -> None:
    with pytest.raises(ValueError, match="reconcile_summary: result has missing columns"):
        reconcile_summary(ORDERS)


# ---------------------------------------------------------------------------------------------
# read_orders


def _write(tmp_path: Path, text: str, name: str = "orders.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_orders_keeps_amounts_exact_and_widens_the_scale(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        " reference , amount ,currency,note\n"
        "A, 0.1 ,NGN,x\n"
        "B,1234567890123456789.125,NGN,\n"
        "C,-7,USD,y\n",
    )
    orders = read_orders(path)
    assert orders.columns == ["reference", "amount", "currency", "note"]
    assert orders.schema["amount"] == pl.Decimal(38, 3)
    assert orders["amount"].to_list() == [
        Decimal("0.100"),
        Decimal("1234567890123456789.125"),  # far beyond float64's 15-16 digits
        Decimal("-7.000"),
    ]
    assert orders["reference"].to_list() == ["A", "B", "C"]


def test_read_orders_parses_optional_status_and_date(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "date,status,reference,amount,currency\n"
        "2026-01-02,successful,A,1,NGN\n"
        "2026-01-03T10:00:00Z,failed,B,2,NGN\n"
        ",,C,3,NGN\n",
    )
    orders = read_orders(path)
    assert orders.columns == ["reference", "amount", "currency", "status", "date"]
    assert orders["date"].to_list() == [date(2026, 1, 2), date(2026, 1, 3), None]
    assert orders["status"].to_list() == ["successful", "failed", None]


def test_read_orders_names_every_missing_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "ref,total\nA,1\n")
    with pytest.raises(ValueError, match="missing columns 'reference', 'amount', 'currency'"):
        read_orders(path)


def test_read_orders_lists_unparseable_amounts_with_their_rows(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'reference,amount,currency\nA,1.00,NGN\nB,1e5,NGN\nC,"1,500.00",NGN\nD,,NGN\nE,2,NGN\n',
    )
    with pytest.raises(
        ValueError, match=r"in 3 rows .*: rows 2, 3, 4; values '1e5', '1,500.00', None"
    ):
        read_orders(path)


def test_read_orders_refuses_empty_references_and_bad_dates(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no reference in rows 2"):
        read_orders(_write(tmp_path, "reference,amount,currency\nA,1,NGN\n ,2,NGN\n"))
    with pytest.raises(
        ValueError, match="date is not YYYY-MM-DD in rows 1 .*; values '02/01/2026'"
    ):
        read_orders(_write(tmp_path, "reference,amount,currency,date\nA,1,NGN,02/01/2026\n"))


def test_read_orders_reads_parquet(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    ORDERS.write_parquet(path)
    assert_frame_equal(read_orders(path), ORDERS)
    ORDERS.with_columns(pl.col("amount").cast(pl.String)).write_parquet(path)
    assert_frame_equal(read_orders(path), ORDERS)
    ORDERS.with_columns(pl.col("amount").cast(pl.Int64)).write_parquet(path)
    assert read_orders(path)["amount"][0] == Decimal("100.00")


def test_read_orders_refuses_float_parquet_amounts(tmp_path: Path) -> None:
    path = tmp_path / "orders.pq"
    ORDERS.with_columns(pl.col("amount").cast(pl.Float64)).write_parquet(path)
    with pytest.raises(ValueError, match="stored as Float64, which is not an exact amount"):
        read_orders(path)


def test_read_orders_refuses_other_file_types(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unsupported file type '.xlsx'; accepted: .csv"):
        read_orders(_write(tmp_path, "x", "orders.xlsx"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_orders(tmp_path / "absent.csv")
