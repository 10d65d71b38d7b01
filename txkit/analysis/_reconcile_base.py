"""What the steps of :func:`txkit.analysis.reconcile` share: the categories, the tolerances and
the two sides ready to match."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Final

import polars as pl

#: the date tolerance.
MONTH_END_CATEGORIES: Final[tuple[str, ...]] = (
    "paid_next_month",
    "ordered_previous_month",
    "paid_previous_month",
    "ordered_next_month",
)
#: Agreeing, but not exactly: across a month's end or within the amount tolerance.
NEAR_MATCH_CATEGORIES: Final[tuple[str, ...]] = (*MONTH_END_CATEGORIES, "amount_within_tolerance")
#: The categories where both sides agree: exactly, across a month's end or within the amount
#: tolerance. Every other category is listed for a look.
AGREED_CATEGORIES: Final[tuple[str, ...]] = ("matched", *NEAR_MATCH_CATEGORIES)
#: Matches of several collections to one order (``paid_in_parts``) or of one collection to
#: several orders (``grouped``), by the amount-sum rule: matched, and listed for allocation.
GROUP_CATEGORIES: Final[tuple[str, ...]] = ("paid_in_parts", "grouped")
#: The references that do not agree.
MISMATCH_CATEGORIES: Final[tuple[str, ...]] = (
    "missing_in_export",
    "missing_in_orders",
    "duplicate_reference",
    "currency_mismatch",
    "amount_mismatch",
    "status_mismatch",
)
#: Payment attempts never paid that no order expects (a failed, declined, abandoned or
#: expired collection, in the export only): nothing at stake, counted apart, neither agreed
#: nor a mismatch (outside the mismatch rate and the exception register).
UNPAID_CATEGORIES: Final[tuple[str, ...]] = ("unpaid_attempt",)
#: The service's statuses of an attempt that was never paid.
UNPAID_STATUSES: Final[tuple[str, ...]] = ("failed", "declined", "abandoned", "expired")
#: The service's statuses of a payment still under way: what a shop calls pending.
IN_FLIGHT_STATUSES: Final[tuple[str, ...]] = (
    "pending",
    "ongoing",
    "processing",
    "initiated",
    "verified",
)
#: Reconciliation categories, in the order summaries list them.
CATEGORIES: Final[tuple[str, ...]] = (
    *AGREED_CATEGORIES,
    *GROUP_CATEGORIES,
    *MISMATCH_CATEGORIES,
    *UNPAID_CATEGORIES,
)
#: The categories that are no exception: agreed, or an attempt never paid nor ordered.
NOT_EXCEPTIONS: Final[tuple[str, ...]] = (*AGREED_CATEGORIES, *UNPAID_CATEGORIES)
CATEGORY_DTYPE: Final = pl.Enum(CATEGORIES)
#: An amount tolerance: exact, in the record's currency.
Tolerance = Decimal | int | str
#: The default ``date_tolerance`` of :func:`reconcile`: days looked at beyond the month.
DEFAULT_DATE_TOLERANCE: Final = 3


@dataclass(frozen=True)
class Sides:
    """Both sides of a reconciliation, ready to match: the collections and the orders that
    carry a reference (lazy, each with its UTC ``_day``, cut to the month and its tolerance),
    their schemas, and the settings every step shares."""

    collections: pl.LazyFrame
    orders: pl.LazyFrame
    tx_schema: pl.Schema
    od_schema: pl.Schema
    bounds: tuple[date, date] | None
    days: timedelta
    tolerance: dict[str, Decimal] | Decimal | None
    scale: int

    @property
    def in_month(self) -> pl.Expr:
        """A row's ``_day`` is in the month (always true without one; undated rows are)."""
        if self.bounds is None:
            return pl.lit(True)
        first, last = self.bounds
        return pl.col("_day").is_between(first, last) | pl.col("_day").is_null()


def at_stake(columns: Collection[str] = ("export_status", "order_status")) -> pl.Expr:
    """The amount at stake on a reconciliation row (``reconcile``'s ``at_stake``), in the row's
    one currency. Where the orders lack the reference, the export lacks it or the statuses
    differ (``difference`` is then null or 0 while the whole payment is in question): what was
    paid (the export's amount if its status is ``successful``) minus what an order claims paid
    (the order's amount if its status is ``successful``), so an expired or abandoned collection
    nobody ordered has nothing at stake; else ``difference``; null for a currency mismatch (two
    currencies: nothing to subtract). A side whose status column is not in ``columns`` (a
    hand-built frame) counts as paid."""
    category = pl.col("category").cast(pl.String)

    def side(name: str) -> pl.Expr:
        amount = pl.col(f"{name}_amount").fill_null(0)
        if f"{name}_status" not in columns:
            return amount
        paid = pl.col(f"{name}_status").cast(pl.String).eq("successful").fill_null(True)
        return pl.when(paid).then(amount).otherwise(pl.lit(0))

    return (
        pl.when(
            category.is_in(
                ["missing_in_orders", "status_mismatch", "missing_in_export", *UNPAID_CATEGORIES]
            )
        )
        .then(side("export") - side("order"))
        .otherwise(pl.col("difference"))
        .alias("at_stake")
    )


def whole_days(tolerance: object) -> timedelta:
    """``date_tolerance`` as a whole number of days, or ValueError."""
    if isinstance(tolerance, timedelta):
        if tolerance >= timedelta(0) and tolerance % timedelta(days=1) == timedelta(0):
            return tolerance
    elif isinstance(tolerance, int) and not isinstance(tolerance, bool) and tolerance >= 0:
        return timedelta(days=tolerance)
    raise ValueError(
        "reconcile: date_tolerance must be a whole number of days, 0 or more (an int or a "
        f"timedelta of whole days), got {tolerance!r}"
    )
