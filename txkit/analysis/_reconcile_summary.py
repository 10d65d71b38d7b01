"""What a :func:`txkit.analysis.reconcile` result says: its rules as sentences, its sums by
category and currency."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Final

import polars as pl

from txkit.analysis._common import Frame, Kind, check_columns, lazy, money, money_scale
from txkit.analysis._reconcile_base import (
    CATEGORY_DTYPE,
    DEFAULT_DATE_TOLERANCE,
    MONTH_END_CATEGORIES,
    Tolerance,
    at_stake,
    whole_days,
)
from txkit.money import format_money, sum_in_currency

__all__ = ["describe_matching", "reconcile_summary"]


def describe_matching(
    result: pl.DataFrame,
    *,
    month: str | None,
    date_tolerance: int | timedelta = DEFAULT_DATE_TOLERANCE,
    amount_tolerance: Tolerance | Mapping[str, Tolerance] | None = None,
) -> list[str]:
    """The date and amount rules a :func:`reconcile` result was made with, as sentences
    with what they changed in it (for a notebook's assumptions).

    Args:
        result: the frame :func:`reconcile` returned.
        month, date_tolerance, amount_tolerance: as given to :func:`reconcile`.

    Returns:
        Two sentences: the date rule and the amount rule.
    """
    counts = dict(result.group_by(pl.col("category").cast(pl.String)).len().iter_rows())
    days = whole_days(date_tolerance).days
    return [_date_rule(counts, month, days), _amount_rule(counts, amount_tolerance)]


def _date_rule(counts: dict[str, int], month: str | None, days: int) -> str:
    if month is None:
        return "Order dates are shown, not compared: every record and order given is matched."
    crossing = {c: counts[c] for c in MONTH_END_CATEGORIES if counts.get(c)}
    found = ", ".join(f"{n:,} {c}" for c, n in crossing.items()) or "none"
    return (
        f"{month} is reconciled with {days} day(s) of margin: a payment or order up to "
        f"{days} day(s) beyond the month on either side still matches its counterpart "
        f"(found: {found})."
    )


def _amount_rule(
    counts: dict[str, int], amount_tolerance: Tolerance | Mapping[str, Tolerance] | None
) -> str:
    if amount_tolerance is None:
        return "Amounts are compared exactly: every difference is an amount_mismatch."
    given = (
        ", ".join(format_money(v, c) for c, v in sorted(amount_tolerance.items()))
        if isinstance(amount_tolerance, Mapping)
        else format_money(amount_tolerance)
    )
    return (
        f"Differences up to {given} are amount_within_tolerance "
        f"({counts.get('amount_within_tolerance', 0):,} reference(s)); larger ones are "
        "amount_mismatch."
    )


def reconcile_summary(result: Frame) -> pl.DataFrame:
    """Summarise a :func:`reconcile` result by category and currency.

    The currency of a row is the export's, or the order's when the export has none.

    Args:
        result: the frame :func:`reconcile` returned (eager or lazy).

    Returns:
        One row per category and currency present (and per orders' currency where it is
        another, a currency mismatch), in the order of :data:`CATEGORIES` then currency:
        ``category``, ``currency``, ``references`` (count), ``export_amount``,
        ``export_amount_successful`` (the export's amount of its successful records: what
        money in counts; a pair agreeing on ``failed`` or ``pending`` is matched too),
        ``order_currency`` (only where the orders' is another currency than ``currency``),
        ``order_amount`` (in ``order_currency``, else ``currency``), ``difference`` and
        ``at_stake`` (:func:`at_stake`); each a sum over the rows that have one, blank where
        none has (nothing compared), never across currencies
        (:func:`txkit.money.sum_in_currency`).

    Raises:
        ValueError: ``result`` lacks the columns :func:`reconcile` produces.
    """
    lf = lazy(result, "result", "reconcile_summary")
    schema = lf.collect_schema()
    check_columns(schema, _RESULT_COLUMNS, "result", "reconcile_summary")
    scale = money_scale(schema, ["export_amount", "order_amount", "difference"])
    return (
        _summable(lf, scale)
        .group_by(pl.col("category").cast(pl.String).cast(CATEGORY_DTYPE), "currency", "_other")
        .agg(
            pl.len().alias("references"),
            sum_in_currency("export_amount", "export_currency"),
            sum_in_currency("export_amount_successful", "export_currency"),
            sum_in_currency("order_amount"),
            sum_in_currency("difference"),
            sum_in_currency("at_stake"),
        )
        .rename({"_other": "order_currency"})
        .select(_SUMMARY_COLUMNS)
        .sort(["category", "currency", "order_currency"], nulls_last=True)
        .collect()
    )


_RESULT_COLUMNS: Final[dict[str, Kind]] = {
    "reference": "string",
    "category": "string",
    "export_currency": "string",
    "order_currency": "string",
    "export_amount": "money",
    "order_amount": "money",
    "difference": "money",
}
_SUMMARY_COLUMNS: Final = (
    "category",
    "currency",
    "references",
    "export_amount",
    "export_amount_successful",
    "order_currency",
    "order_amount",
    "difference",
    "at_stake",
)


def _summable(lf: pl.LazyFrame, scale: int) -> pl.LazyFrame:
    row_currency = pl.coalesce("export_currency", "order_currency").cast(pl.String)
    names = lf.collect_schema().names()
    # The successful records' side apart: a pair that agrees on "failed" or "pending" is
    # matched too, and money in counts the successful ones only (issue 47, Why 8.7).
    successful = (
        pl.col("export_status").cast(pl.String) == "successful"
        if "export_status" in names
        else pl.lit(value=False)
    )
    return lf.with_columns(
        money("export_amount", scale),
        pl.when(successful).then(money("export_amount", scale)).alias("export_amount_successful"),
        money("order_amount", scale),
        money("difference", scale),
        at_stake(lf.collect_schema().names()).cast(pl.Decimal(38, scale)),
        row_currency.alias("currency"),
        # The orders' amounts in another currency than the row's are summed apart, in
        # their own currency (a currency mismatch), never under the row's.
        pl.when(pl.col("order_currency").cast(pl.String) != row_currency)
        .then(pl.col("order_currency").cast(pl.String))
        .alias("_other"),
    )
