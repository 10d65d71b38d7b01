"""Month by month on the sandbox, as the notebooks run: history and the days around a month.

Underpayment originals from earlier months are found with the history; a reference is never
reported missing in two consecutive months; the notebook loaders bring the days around a month
from the store.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

import polars as pl
import pytest
from analysis_cases import SEEDS, load_case, month_bounds

from txkit.analysis import describe_matching, reconcile, underpayments

MISSING = ("missing_in_export", "missing_in_orders")


def month_names(df: pl.DataFrame) -> list[str]:
    return df["createdAt"].dt.strftime("%Y-%m").unique().sort().to_list()


def in_month(df: pl.DataFrame, month: str) -> pl.DataFrame:
    return df.filter(pl.col("createdAt").dt.strftime("%Y-%m") == month)


@pytest.mark.parametrize("seed", SEEDS)
def test_originals_from_earlier_months_are_found_in_the_history(seed: int) -> None:
    case = load_case(seed, 0.03)
    truth = {e["id"]: e["existing_in_export"] for e in case.truth("underpayment", "overpayment")}
    found_only_in_history = 0
    for month in month_names(case.frame):
        first, _ = month_bounds(month)
        part = in_month(case.frame, month)
        earlier = case.frame.filter(pl.col("createdAt").dt.date() < first)
        flagged = underpayments(part, history=earlier)
        assert dict(flagged.select("id", "original_in_export").iter_rows()) == {
            i: truth[i] for i in flagged["id"]
        }
        alone = underpayments(part)
        found_only_in_history += (
            flagged["original_in_export"] & ~alone["original_in_export"]
        ).sum()
    assert found_only_in_history > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_no_reference_is_missing_in_two_consecutive_months(seed: int) -> None:
    """Each month reconciled as notebook 02 does (its records and orders with the days
    around it): what one month reports missing, the next does not report missing again."""
    case = load_case(seed, 0.03)
    orders = case.ledger.orders
    results = {}
    for month in month_names(case.frame):
        first, last = month_bounds(month)
        day = pl.col("createdAt").dt.date()
        near = case.frame.filter(
            day.is_between(first - timedelta(days=3), last + timedelta(days=3))
        )
        results[month] = reconcile(near, orders, month=month)
    for before, after in pairwise(results):
        missing = [
            results[m].filter(pl.col("category").is_in(MISSING)).select("reference")
            for m in (before, after)
        ]
        assert missing[0].join(missing[1], on="reference").is_empty(), (before, after)
    # Every reference of the whole ledger is reconciled in some month, once per month it
    # touches, with the whole-ledger category unless it crosses a month end.
    whole = reconcile(case.frame, orders)
    seen = pl.concat(r.select("reference") for r in results.values()).unique()
    assert seen.height == whole.height
    month = month_names(case.frame)[1]
    dates, amounts = describe_matching(results[month], month=month, date_tolerance=3)
    assert dates.startswith(f"{month} is reconciled with 3 day(s) of margin")
    assert amounts == "Amounts are compared exactly: every difference is an amount_mismatch."
