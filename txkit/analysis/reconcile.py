"""Reconcile the export's collections with the merchant's own record of expected payments.

The export side is every record with ``transType == "collection"``, keyed by
``transactionReference``; the merchant side is an orders frame (see :func:`read_orders`) keyed
by ``reference``. Amounts are compared exactly, as decimals.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal
from typing import Final

import polars as pl

from txkit.analysis._amount_sum import amount_sum_rules
from txkit.analysis._common import (
    Frame,
    Kind,
    amount_tolerances,
    check_columns,
    lazy,
    money,
    money_scale,
    tolerance_scales,
)
from txkit.analysis._reconcile_base import (
    AGREED_CATEGORIES,
    CATEGORIES,
    CATEGORY_DTYPE,
    DEFAULT_DATE_TOLERANCE,
    GROUP_CATEGORIES,
    IN_FLIGHT_STATUSES,
    MISMATCH_CATEGORIES,
    MONTH_END_CATEGORIES,
    NEAR_MATCH_CATEGORIES,
    NOT_EXCEPTIONS,
    UNPAID_CATEGORIES,
    UNPAID_STATUSES,
    Sides,
    Tolerance,
    at_stake,
    whole_days,
)
from txkit.analysis._reconcile_summary import describe_matching, reconcile_summary
from txkit.calendar import month_bounds
from txkit.inputs.columns import UNPAID
from txkit.inputs.orders import ORDERS_OPTIONAL, ORDERS_REQUIRED
from txkit.schema import require

__all__ = [
    "AGREED_CATEGORIES",
    "CATEGORIES",
    "DEFAULT_DATE_TOLERANCE",
    "GROUP_CATEGORIES",
    "MISMATCH_CATEGORIES",
    "MONTH_END_CATEGORIES",
    "NEAR_MATCH_CATEGORIES",
    "NOT_EXCEPTIONS",
    "UNPAID_CATEGORIES",
    "at_stake",
    "describe_matching",
    "duplicate_references",
    "reconcile",
    "reconcile_summary",
]

_SIDE_COLUMNS: Final = {
    "export": (
        "export_id",
        "export_amount",
        "export_currency",
        "export_status",
        "export_date",
        "_export_in_month",
    ),
    "order": ("order_amount", "order_currency", "order_status", "order_date", "_order_in_month"),
}

_TX_REQUIRED: Final[dict[str, Kind]] = require(
    "id", "createdAt", "transType", "status", "transactionReference", "toAmount", "toCurrency"
)


def reconcile(
    transactions: Frame,
    orders: Frame,
    *,
    month: str | None = None,
    date_tolerance: int | timedelta = DEFAULT_DATE_TOLERANCE,
    amount_tolerance: Tolerance | Mapping[str, Tolerance] | None = None,
    parts: bool = True,
) -> pl.DataFrame:
    """Match the export's collections against the merchant's orders, one row per reference.

    Each reference found on either side gets one ``category``, the first that applies in this
    order: ``duplicate_reference`` (more than once on either side; ``export_count`` and
    ``order_count`` tell how often on each, 0 included), ``unpaid_attempt`` (nothing paid on
    either side: a failed, declined, abandoned or expired collection without an order, or
    with an order whose status maps to ``unpaid``, or such an order without a collection;
    no exception, see :data:`UNPAID_CATEGORIES`), ``missing_in_export`` (only in the
    orders), ``missing_in_orders`` (only in the export), ``currency_mismatch``,
    ``amount_mismatch``, ``status_mismatch`` (only when the orders have a ``status``; a
    shop's ``pending`` agrees with any status of a payment under way,
    ``IN_FLIGHT_STATUSES``),
    ``amount_within_tolerance`` (only with ``amount_tolerance``: the amounts differ by no more
    than it), then with ``month`` the four month-end categories below, else ``matched``.

    Without ``month`` the order date is reported, never compared (the export's ``createdAt``
    and a merchant's order date need not be the same day). With ``month``, the
    reconciliation is the month's: a reference belongs to it when its order is dated in the
    month (or undated) or its collection was made in the month (UTC date of ``createdAt``).
    Its counterpart is looked for up to ``date_tolerance`` days beyond the month on either
    side, so an order of the 31st paid just after midnight is not missing in either month:
    it is ``paid_next_month`` in its order's month and ``ordered_previous_month`` in its
    payment's month (and the reverse, an order dated after its payment across the month's
    start or end, ``paid_previous_month`` or ``ordered_next_month``). Records and orders
    beyond the tolerance are left out; so are references whose every date is outside the
    month (they are another month's). Pass the records and orders of those extra days (e.g.
    :func:`txkit.notebook.load_margin` and ``load_orders(..., margin_days=...)``).

    Collections without a ``transactionReference`` and orders without a ``reference`` cannot be
    matched and are left out.

    Then, among what is left unmatched (``missing_in_export``, ``missing_in_orders`` and
    ``amount_mismatch``, each once on its side), the amount-sum rules (``parts``, on by
    default):

    * ``paid_in_parts``: an order paid by two or more collections whose amounts sum to its
      amount (within ``amount_tolerance``), in its currency. A collection is a candidate part
      when it carries the order's reference (``transactionReference``, or
      ``meta.existingTransaction.reference`` for the provider's under- and overpayments) or,
      with the orders' ``customer`` column, comes from that customer (``customerEmail``,
      case ignored) within ``date_tolerance`` days of the order;
    * ``grouped``: one collection whose amount equals the sum of two or more open orders of
      its customer (within ``date_tolerance`` days), or of orders carrying its reference.

    A set is matched only when it is the one set that fits: two sets summing to the same
    amount, or a collection or order fitting two sets, are left as they were (never
    guessed). Every row of a set gets the category, ``group`` (the order's reference for
    parts, the collection's for a group) and ``rule``; the set's difference is on its
    ``group`` row. An under- or overpaid part keeps its underpayment meaning for
    :func:`~txkit.analysis.underpayments`, which this does not change.

    Args:
        transactions: the export (eager or lazy), e.g. from :func:`txkit.load_transactions`;
            needs ``id``, ``createdAt``, ``transType``, ``status``, ``transactionReference``,
            ``toAmount`` and ``toCurrency``.
        orders: the merchant's orders (eager or lazy), e.g. from :func:`read_orders`: columns
            ``reference``, ``amount`` (decimal or integer) and ``currency``; ``status`` and
            ``date`` optional (``date`` is needed to place orders in ``month``).
        month: ``YYYY-MM`` (UTC) to reconcile one month with its month ends; None (the
            default): every record and order given, dates not compared.
        date_tolerance: with ``month``, how many days beyond the month a counterpart is
            looked for (an ``int`` of days or a whole-day ``timedelta``, 0 or more; default
            3).
        amount_tolerance: optional largest difference (a ``Decimal``, ``int`` or exact
            ``str``, in the record's currency; or a mapping of currency to one, currencies
            it lacks having none) that makes ``amount_within_tolerance`` instead of
            ``amount_mismatch`` (and by which parts may miss their order's amount). Off by
            default: every difference is a mismatch.
        parts: apply the amount-sum rules (``paid_in_parts``, ``grouped``); False gives the
            one-to-one reconciliation alone.

    Returns:
        One row per reference, sorted by reference: ``reference``, ``category`` (an Enum in the
        order of :data:`CATEGORIES`), ``export_count`` and ``order_count`` (occurrences on each
        side), ``export_id``, ``export_amount``, ``export_currency``, ``export_status``,
        ``export_date`` (UTC date of ``createdAt``), ``order_amount``, ``order_currency``,
        ``order_status``, ``order_date``, ``difference`` (export amount minus order amount,
        when both exist and the currencies agree; for a group of parts, on its ``group`` row,
        the sum of the collections minus the sum of the orders), ``at_stake`` (see
        :func:`at_stake`: the difference, or the whole amount of a missing reference or a
        status mismatch), ``rule`` (what matched:
        ``reference`` one to one; for a group, ``amount-sum`` with ``reference`` and/or
        ``date window`` for how its members were linked; null when nothing matched),
        ``group`` (the reference a part or grouped order belongs to) and
        ``other_candidates`` (for a group: candidates linked the same way but not in the
        set; for a set left unmatched because several fit, how many fitting sets there
        were). Money columns share one decimal scale.
        Where a reference occurs more than once, the values shown are those of its earliest
        collection (by ``createdAt``, ``id``) and its first order row.

    Raises:
        ValueError: a frame misses a required column or has one of the wrong type; a bad
            ``month``, ``date_tolerance`` or ``amount_tolerance``.

    Example:
        >>> result = reconcile(df, read_orders("orders.csv"), month="2026-10")
        >>> result.filter(pl.col("category") != "matched")
    """
    sides = _prepare(transactions, orders, month, date_tolerance, amount_tolerance)
    joined = _by_reference(sides)
    if sides.bounds is not None:
        joined = _the_months(joined, sides.days)
    result = _one_to_one(joined, sides)
    if parts:
        result = amount_sum_rules(result, sides)
    return _with_at_stake(result, sides.scale)


_SAME_CURRENCY: Final = pl.col("export_currency").eq_missing(pl.col("order_currency"))
_GAP: Final = pl.col("export_amount") - pl.col("order_amount")
_LINK_COLUMNS: Final = ("rule", "group", "other_candidates")


def _prepare(
    transactions: Frame,
    orders: Frame,
    month: str | None,
    date_tolerance: int | timedelta,
    amount_tolerance: Tolerance | Mapping[str, Tolerance] | None,
) -> Sides:
    tx = lazy(transactions, "transactions", "reconcile")
    od = lazy(orders, "orders", "reconcile")
    tx_schema = tx.collect_schema()
    od_schema = od.collect_schema()
    check_columns(tx_schema, _TX_REQUIRED, "transactions", "reconcile")
    check_columns(od_schema, ORDERS_REQUIRED, "orders", "reconcile", optional=ORDERS_OPTIONAL)
    days = whole_days(date_tolerance)
    bounds = None if month is None else month_bounds(month)
    scale = max(
        money_scale(tx_schema, ["toAmount"]),
        money_scale(od_schema, ["amount"]),
        *tolerance_scales(amount_tolerance),
    )
    tolerance = amount_tolerances(amount_tolerance, scale, "reconcile")
    order_date = _date_expr(od_schema) if "date" in od_schema else pl.lit(None, dtype=pl.Date)
    collections = tx.filter(
        (pl.col("transType") == "collection") & pl.col("transactionReference").is_not_null()
    ).with_columns(pl.col("createdAt").dt.date().alias("_day"))
    merchant_rows = od.filter(pl.col("reference").is_not_null()).with_columns(
        order_date.alias("_day")
    )
    if bounds is not None:
        first, last = bounds
        window = pl.col("_day").is_between(first - days, last + days)
        collections = collections.filter(window)
        merchant_rows = merchant_rows.filter(window | pl.col("_day").is_null())
    return Sides(collections, merchant_rows, tx_schema, od_schema, bounds, days, tolerance, scale)


def _by_reference(sides: Sides) -> pl.LazyFrame:
    """First values: the earliest collection by ``createdAt``, ``id``; the first order row."""
    scale, in_month = sides.scale, sides.in_month
    order_status = (
        pl.col("status").cast(pl.String)
        if "status" in sides.od_schema
        else pl.lit(None, dtype=pl.String)
    )
    export = (
        sides.collections.sort(["createdAt", "id"], nulls_last=True)
        .group_by(pl.col("transactionReference").cast(pl.String).alias("reference"))
        .agg(
            pl.len().alias("export_count"),
            pl.col("id").first().cast(pl.String).alias("export_id"),
            money("toAmount", scale).first().alias("export_amount"),
            pl.col("toCurrency").first().cast(pl.String).alias("export_currency"),
            pl.col("status").first().cast(pl.String).alias("export_status"),
            pl.col("_day").first().alias("export_date"),
            in_month.any().alias("_export_in_month"),
        )
    )
    merchant = sides.orders.group_by(pl.col("reference").cast(pl.String)).agg(
        pl.len().alias("order_count"),
        money("amount", scale).first().alias("order_amount"),
        pl.col("currency").first().cast(pl.String).alias("order_currency"),
        order_status.first().alias("order_status"),
        pl.col("_day").first().alias("order_date"),
        in_month.any().alias("_order_in_month"),
    )
    return export.join(merchant, on="reference", how="full", coalesce=True).with_columns(
        pl.col("export_count").fill_null(0).cast(pl.UInt32),
        pl.col("order_count").fill_null(0).cast(pl.UInt32),
    )


def _the_months(joined: pl.LazyFrame, days: timedelta) -> pl.LazyFrame:
    # A reference is the month's when its order or its payment is in the month; what
    # lies only in the days around it is another month's.
    joined = joined.filter(
        pl.col("_order_in_month").fill_null(False) | pl.col("_export_in_month").fill_null(False)
    )
    # A counterpart outside the month further than the tolerance from the other side is
    # not this reference's (its own month sees it as missing, and so does this one).
    far = ((pl.col("export_date") - pl.col("order_date")).abs() > days).fill_null(False)
    joined = joined.with_columns(
        (far & ~pl.col(f"_{side}_in_month").fill_null(True)).alias(f"_hide_{side}")
        for side in _SIDE_COLUMNS
    )
    hide = {side: pl.col(f"_hide_{side}") for side in _SIDE_COLUMNS}
    return joined.with_columns(
        pl.when(hide[side]).then(pl.lit(None)).otherwise(pl.col(name)).alias(name)
        for side, names in _SIDE_COLUMNS.items()
        for name in names
    ).with_columns(
        pl.when(hide[side]).then(0).otherwise(pl.col(f"{side}_count")).alias(f"{side}_count")
        for side in _SIDE_COLUMNS
    )


def _category(sides: Sides) -> pl.Expr:
    within = _within(_GAP, sides.tolerance, sides.scale)
    has_order_status = pl.col("order_status").is_not_null()
    # The shop's order never paid (a preset's status.<shop status>=unpaid), the service's
    # attempt never paid: nothing was paid on either side, whatever the amounts.
    never_paid = (pl.col("order_status") == UNPAID).fill_null(False)
    attempt_unpaid = pl.col("export_status").is_in(UNPAID_STATUSES).fill_null(False)
    # A shop's pending order (Shopify's pending, authorized) is any payment still under way.
    in_flight = (pl.col("order_status") == "pending") & pl.col("export_status").is_in(
        IN_FLIGHT_STATUSES
    )
    category = (
        pl.when((pl.col("export_count") > 1) | (pl.col("order_count") > 1))
        .then(pl.lit("duplicate_reference"))
        .when((pl.col("export_count") == 0) & never_paid)
        .then(pl.lit("unpaid_attempt"))
        .when(pl.col("export_count") == 0)
        .then(pl.lit("missing_in_export"))
        .when((pl.col("order_count") == 0) & attempt_unpaid)
        .then(pl.lit("unpaid_attempt"))
        .when(pl.col("order_count") == 0)
        .then(pl.lit("missing_in_orders"))
        .when(never_paid & attempt_unpaid)
        .then(pl.lit("unpaid_attempt"))
        .when(~_SAME_CURRENCY)
        .then(pl.lit("currency_mismatch"))
        .when(pl.col("export_amount").ne_missing(pl.col("order_amount")) & ~within)
        .then(pl.lit("amount_mismatch"))
        .when(
            has_order_status
            & pl.col("export_status").ne_missing(pl.col("order_status"))
            & ~in_flight.fill_null(False)
        )
        .then(pl.lit("status_mismatch"))
        .when(pl.col("export_amount").ne_missing(pl.col("order_amount")))
        .then(pl.lit("amount_within_tolerance"))
    )
    if sides.bounds is not None:
        first, last = sides.bounds
        paid, ordered = pl.col("export_date"), pl.col("order_date")
        category = (
            category.when(pl.col("_order_in_month") & (paid > last))
            .then(pl.lit("paid_next_month"))
            .when(pl.col("_order_in_month") & (paid < first))
            .then(pl.lit("paid_previous_month"))
            .when(ordered < first)
            .then(pl.lit("ordered_previous_month"))
            .when(ordered > last)
            .then(pl.lit("ordered_next_month"))
        )
    return category.otherwise(pl.lit("matched"))


def _one_to_one(joined: pl.LazyFrame, sides: Sides) -> pl.DataFrame:
    difference = (
        pl.when(_SAME_CURRENCY & pl.col("export_currency").is_not_null())
        .then(_GAP)
        .cast(pl.Decimal(38, sides.scale))
    )
    result = (
        joined.select(
            "reference",
            _category(sides).cast(CATEGORY_DTYPE).alias("category"),
            "export_count",
            "order_count",
            "export_id",
            "export_amount",
            "export_currency",
            "export_status",
            "export_date",
            "order_amount",
            "order_currency",
            "order_status",
            "order_date",
            difference.alias("difference"),
        )
        .sort("reference")
        .collect()
    )
    linked = pl.col("export_count").gt(0) & pl.col("order_count").gt(0)
    return result.with_columns(
        pl.when(linked).then(pl.lit("reference")).alias("rule"),
        pl.lit(None, dtype=pl.String).alias("group"),
        pl.lit(None, dtype=pl.UInt32).alias("other_candidates"),
    )


def _with_at_stake(result: pl.DataFrame, scale: int) -> pl.DataFrame:
    return result.with_columns(at_stake(result.columns).cast(pl.Decimal(38, scale))).select(
        *[c for c in result.columns if c not in _LINK_COLUMNS], "at_stake", *_LINK_COLUMNS
    )


def _within(gap: pl.Expr, tolerance: dict[str, Decimal] | Decimal | None, scale: int) -> pl.Expr:
    if tolerance is None:
        return pl.lit(False)
    if isinstance(tolerance, Decimal):
        limit = pl.lit(tolerance, dtype=pl.Decimal(38, scale))
    else:
        if not tolerance:
            return pl.lit(False)
        limit = pl.col("export_currency").replace_strict(
            tolerance, default=None, return_dtype=pl.Decimal(38, scale)
        )
    return (gap.abs() <= limit).fill_null(False)


def duplicate_references(transactions: Frame) -> pl.DataFrame:
    """Every record whose ``transactionReference`` is shared with another record, any type.

    :func:`reconcile` only sees collections; a reference reused by, say, a transfer and a
    collection shows up here.

    Args:
        transactions: the export (eager or lazy); needs ``id``, ``createdAt``, ``transType``,
            ``status`` and ``transactionReference``.

    Returns:
        ``transactionReference``, ``id``, ``createdAt``, ``transType``, ``status``,
        ``occurrence`` (1 for the earliest record with the reference, by ``createdAt`` then
        ``id``) and ``count`` (records sharing the reference), sorted by reference and
        occurrence.

    Raises:
        ValueError: a required column is missing or of the wrong type.
    """
    lf = lazy(transactions, "transactions", "duplicate_references")
    required = require("id", "createdAt", "transType", "status", "transactionReference")
    check_columns(lf.collect_schema(), required, "transactions", "duplicate_references")
    ref = "transactionReference"
    return (
        lf.filter(pl.col(ref).is_not_null())
        .select(
            pl.col(ref).cast(pl.String),
            pl.col("id").cast(pl.String),
            "createdAt",
            pl.col("transType").cast(pl.String),
            pl.col("status").cast(pl.String),
        )
        .filter(pl.len().over(ref) > 1)
        .sort([ref, "createdAt", "id"], nulls_last=True)
        .with_columns(
            pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(ref).alias("occurrence"),
            pl.len().over(ref).cast(pl.UInt32).alias("count"),
        )
        .collect()
    )


def _date_expr(schema: pl.Schema) -> pl.Expr:
    if isinstance(schema["date"], pl.Datetime):
        return pl.col("date").dt.date()
    return pl.col("date").cast(pl.Date)
