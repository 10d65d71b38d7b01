"""reconcile(month=..., date_tolerance=..., amount_tolerance=...): month ends and tolerances.

Hand-written frames pin down which references belong to a month, the four month-end
categories and the amount tolerance; two consecutive months together never report one
reference missing in both. The sandbox's planted late payments are checked in
test_analysis_ledger_options.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from analysis_cases import tx_frame

from txkit.analysis import CATEGORIES, describe_matching, reconcile, reconcile_summary

MISSING = ("missing_in_export", "missing_in_orders")


def _paid(ref: str, when: datetime, amount: str = "100.00", currency: str = "NGN") -> dict:
    return {
        "id": f"t-{ref}",
        "createdAt": when,
        "transType": "collection",
        "status": "successful",
        "transactionReference": ref,
        "toAmount": amount,
        "toCurrency": currency,
    }


def _orders(rows: list[tuple[str, str, str, date | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "reference": [r[0] for r in rows],
            "amount": [Decimal(r[1]) for r in rows],
            "currency": [r[2] for r in rows],
            "status": ["successful"] * len(rows),
            "date": [r[3] for r in rows],
        },
        schema={
            "reference": pl.String,
            "amount": pl.Decimal(38, 2),
            "currency": pl.String,
            "status": pl.String,
            "date": pl.Date,
        },
    )


def at(day: date, hour: int = 12, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


OCT31, NOV1 = date(2026, 10, 31), date(2026, 11, 1)
TX = [
    _paid("LATE", at(NOV1, 0, 5)),  # ordered Oct 31, paid just after midnight
    _paid("EARLY", at(OCT31, 23, 50)),  # ordered Nov 1 (local time), paid Oct 31
    _paid("OCT", at(date(2026, 10, 15))),
    _paid("NOV", at(date(2026, 11, 15))),
    _paid("FAR", at(date(2026, 11, 20))),  # ordered Oct 30: beyond a 3-day tolerance
    _paid("MARGIN", at(date(2026, 11, 2))),  # ordered Nov 2: November's only
    _paid("UNDATED", at(date(2026, 11, 2))),
    _paid("STRAY", at(date(2026, 10, 30))),  # no order
]
ORDERS = _orders(
    [
        ("LATE", "100.00", "NGN", OCT31),
        ("EARLY", "100.00", "NGN", NOV1),
        ("OCT", "100.00", "NGN", date(2026, 10, 15)),
        ("NOV", "100.00", "NGN", date(2026, 11, 15)),
        ("FAR", "100.00", "NGN", date(2026, 10, 30)),
        ("MARGIN", "100.00", "NGN", date(2026, 11, 2)),
        ("UNDATED", "100.00", "NGN", None),
        ("ORPHAN", "100.00", "NGN", date(2026, 10, 29)),  # never paid
    ]
)


def _categories(result: pl.DataFrame) -> dict[str, str]:
    return dict(result.select("reference", pl.col("category").cast(pl.String)).iter_rows())


def test_october_sees_its_month_end_payments(as_input: Callable[[pl.DataFrame], Any]) -> None:
    result = reconcile(as_input(tx_frame(TX)), as_input(ORDERS), month="2026-10")
    assert _categories(result) == {
        "EARLY": "ordered_next_month",
        "FAR": "missing_in_export",  # paid 21 days later: beyond the tolerance
        "LATE": "paid_next_month",
        "OCT": "matched",
        "ORPHAN": "missing_in_export",
        "STRAY": "missing_in_orders",
        "UNDATED": "paid_next_month",  # an undated order counts as the month's
    }
    late = result.row(by_predicate=pl.col("reference") == "LATE", named=True)
    assert late["export_date"] == NOV1 and late["order_date"] == OCT31
    assert late["difference"] == Decimal("0.00")


def test_november_sees_the_other_side() -> None:
    result = reconcile(tx_frame(TX), ORDERS, month="2026-11")
    assert _categories(result) == {
        "EARLY": "paid_previous_month",
        "FAR": "missing_in_orders",
        "LATE": "ordered_previous_month",
        "MARGIN": "matched",
        "NOV": "matched",
        "UNDATED": "matched",
    }


def test_no_reference_is_missing_in_both_months_within_the_tolerance() -> None:
    october = reconcile(tx_frame(TX), ORDERS, month="2026-10")
    november = reconcile(tx_frame(TX), ORDERS, month="2026-11")
    both = october.filter(pl.col("category").is_in(MISSING)).join(
        november.filter(pl.col("category").is_in(MISSING)), on="reference"
    )
    assert both["reference"].to_list() == ["FAR"]  # 21 days apart: beyond 3 days
    wide = [
        reconcile(tx_frame(TX), ORDERS, month=m, date_tolerance=21) for m in ("2026-10", "2026-11")
    ]
    both = (
        wide[0]
        .filter(pl.col("category").is_in(MISSING))
        .join(wide[1].filter(pl.col("category").is_in(MISSING)), on="reference")
    )
    assert both.is_empty()
    assert _categories(wide[0])["FAR"] == "paid_next_month"


def test_without_a_tolerance_the_month_end_is_a_hard_line() -> None:
    result = reconcile(tx_frame(TX), ORDERS, month="2026-10", date_tolerance=0)
    assert _categories(result)["LATE"] == "missing_in_export"
    assert _categories(result)["EARLY"] == "missing_in_orders"
    assert reconcile(
        tx_frame(TX), ORDERS, month="2026-10", date_tolerance=timedelta(days=3)
    ).equals(reconcile(tx_frame(TX), ORDERS, month="2026-10"))


def test_without_a_month_dates_are_not_compared() -> None:
    result = reconcile(tx_frame(TX), ORDERS)
    assert set(_categories(result).values()) == {
        "matched",
        "missing_in_export",
        "missing_in_orders",
    }
    assert _categories(result)["LATE"] == "matched"


def test_value_differences_beat_the_month_end_categories() -> None:
    tx = [*TX[1:], _paid("LATE", at(NOV1, 0, 5), amount="99.00")]
    assert _categories(reconcile(tx_frame(tx), ORDERS, month="2026-10"))["LATE"] == (
        "amount_mismatch"
    )


def test_summary_lists_the_new_categories_in_order() -> None:
    summary = reconcile_summary(reconcile(tx_frame(TX), ORDERS, month="2026-10"))
    assert summary["category"].cast(pl.String).to_list() == [
        "matched",
        "paid_next_month",
        "ordered_next_month",
        "missing_in_export",
        "missing_in_orders",
    ]
    assert summary.filter(pl.col("category") == "paid_next_month")["references"].item() == 2


@pytest.mark.parametrize("bad", [-1, 1.5, "3", timedelta(hours=5), True])
def test_bad_date_tolerances_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="date_tolerance must be a whole number of days"):
        reconcile(tx_frame(TX), ORDERS, month="2026-10", date_tolerance=bad)


def test_a_bad_month_is_refused() -> None:
    with pytest.raises(ValueError, match="YYYY-MM"):
        reconcile(tx_frame(TX), ORDERS, month="October")


# ---------------------------------------------------------------------------------------------
# Amount tolerance.

AMOUNTS_TX = [
    _paid("SAME", at(date(2026, 1, 5))),
    _paid("CENT", at(date(2026, 1, 5)), amount="100.01"),
    _paid("EDGE", at(date(2026, 1, 5)), amount="99.95"),
    _paid("FAR", at(date(2026, 1, 5)), amount="100.06"),
    _paid("USD", at(date(2026, 1, 5)), amount="100.50", currency="USD"),
]
AMOUNTS_ORDERS = _orders(
    [
        (ref, "100.00", "USD" if ref == "USD" else "NGN", date(2026, 1, 5))
        for ref in ("SAME", "CENT", "EDGE", "FAR", "USD")
    ]
)


def test_amount_tolerance_is_off_by_default() -> None:
    result = _categories(reconcile(tx_frame(AMOUNTS_TX), AMOUNTS_ORDERS))
    assert result == {
        "SAME": "matched",
        "CENT": "amount_mismatch",
        "EDGE": "amount_mismatch",
        "FAR": "amount_mismatch",
        "USD": "amount_mismatch",
    }


@pytest.mark.parametrize("tolerance", [Decimal("0.05"), "0.05", "0.050"])
def test_differences_within_the_tolerance_get_their_own_category(tolerance: Any) -> None:
    result = reconcile(tx_frame(AMOUNTS_TX), AMOUNTS_ORDERS, amount_tolerance=tolerance)
    assert _categories(result) == {
        "SAME": "matched",
        "CENT": "amount_within_tolerance",
        "EDGE": "amount_within_tolerance",  # exactly the tolerance
        "FAR": "amount_mismatch",
        "USD": "amount_mismatch",
    }
    edge = result.row(by_predicate=pl.col("reference") == "EDGE", named=True)
    assert edge["difference"] == Decimal("-0.05")


def test_tolerance_per_currency() -> None:
    result = reconcile(
        tx_frame(AMOUNTS_TX), AMOUNTS_ORDERS, amount_tolerance={"USD": "1", "NGN": Decimal("0.01")}
    )
    assert _categories(result) == {
        "SAME": "matched",
        "CENT": "amount_within_tolerance",
        "EDGE": "amount_mismatch",
        "FAR": "amount_mismatch",
        "USD": "amount_within_tolerance",
    }
    only_usd = _categories(
        reconcile(tx_frame(AMOUNTS_TX), AMOUNTS_ORDERS, amount_tolerance={"USD": 1})
    )
    assert only_usd["CENT"] == "amount_mismatch" and only_usd["USD"] == "amount_within_tolerance"


def test_a_status_mismatch_beats_a_difference_within_tolerance() -> None:
    tx = [{**AMOUNTS_TX[1], "status": "pending"}]
    result = reconcile(tx_frame(tx), AMOUNTS_ORDERS.head(2).tail(1), amount_tolerance="1")
    assert _categories(result) == {"CENT": "status_mismatch"}


def test_a_finer_tolerance_than_the_amounts_is_exact() -> None:
    tx = [_paid("X", at(date(2026, 1, 5)), amount="100.01")]
    orders = _orders([("X", "100.00", "NGN", date(2026, 1, 5))])
    assert _categories(reconcile(tx_frame(tx), orders, amount_tolerance="0.009")) == {
        "X": "amount_mismatch"
    }
    assert _categories(reconcile(tx_frame(tx), orders, amount_tolerance="0.0100")) == {
        "X": "amount_within_tolerance"
    }


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (0.05, "amount_tolerance must be a Decimal, int or exact str"),
        ("five", "amount_tolerance is not a number"),
        ("-1", "must be a finite amount, 0 or more"),
        ({"NGN": 0.1}, r"amount_tolerance\['NGN'\] must be a Decimal"),
    ],
)
def test_bad_amount_tolerances_are_refused(bad: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reconcile(tx_frame(AMOUNTS_TX), AMOUNTS_ORDERS, amount_tolerance=bad)


def test_categories_keep_their_documented_order() -> None:
    assert CATEGORIES[0] == "matched"
    assert CATEGORIES.index("amount_within_tolerance") < CATEGORIES.index("missing_in_export")


def test_the_settings_are_described_with_what_they_changed() -> None:
    result = reconcile(tx_frame(TX), ORDERS, month="2026-10", amount_tolerance={"NGN": "0.5"})
    dates, amounts = describe_matching(
        result, month="2026-10", date_tolerance=3, amount_tolerance={"NGN": "0.5"}
    )
    assert dates == (
        "2026-10 is reconciled with 3 day(s) of margin: a payment or order up to 3 day(s) "
        "beyond the month on either side still matches its counterpart (found: 2 "
        "paid_next_month, 1 ordered_next_month)."
    )
    assert amounts == (
        "Differences up to 0.50 NGN are amount_within_tolerance (0 reference(s)); larger ones "
        "are amount_mismatch."
    )
    assert describe_matching(result, month=None)[0].startswith("Order dates are shown, not")
