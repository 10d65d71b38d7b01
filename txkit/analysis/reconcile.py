"""Reconcile the export's collections with the merchant's own record of expected payments.

The export side is every record with ``transType == "collection"``, keyed by
``transactionReference``; the merchant side is an orders frame (see :func:`read_orders`) keyed
by ``reference``. Amounts are compared exactly, as decimals.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Final, NamedTuple

import polars as pl

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
from txkit.analysis.orders import (
    MAX_ORDER_DECIMALS,
    ORDERS_FORMATS,
    ORDERS_OPTIONAL,
    ORDERS_REQUIRED,
    OrdersFile,
    read_orders,
    read_orders_file,
)
from txkit.calendar import month_bounds
from txkit.money import format_money, sum_in_currency
from txkit.schema import require

__all__ = [
    "AGREED_CATEGORIES",
    "CATEGORIES",
    "DEFAULT_DATE_TOLERANCE",
    "GROUP_CATEGORIES",
    "MAX_ORDER_DECIMALS",
    "MISMATCH_CATEGORIES",
    "MONTH_END_CATEGORIES",
    "NEAR_MATCH_CATEGORIES",
    "ORDERS_FORMATS",
    "OrdersFile",
    "at_stake",
    "describe_matching",
    "duplicate_references",
    "read_orders",
    "read_orders_file",
    "reconcile",
    "reconcile_summary",
]

#: Found across a month's end: the counterpart lies in the next or previous month, within
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
#: Reconciliation categories, in the order summaries list them.
CATEGORIES: Final[tuple[str, ...]] = (
    *AGREED_CATEGORIES,
    *GROUP_CATEGORIES,
    *MISMATCH_CATEGORIES,
)
_CATEGORY = pl.Enum(CATEGORIES)
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
#: An amount tolerance: exact, in the record's currency.
Tolerance = Decimal | int | str

_TX_REQUIRED: Final[dict[str, Kind]] = require(
    "id", "createdAt", "transType", "status", "transactionReference", "toAmount", "toCurrency"
)
#: The default ``date_tolerance`` of :func:`reconcile`: days looked at beyond the month.
DEFAULT_DATE_TOLERANCE: Final = 3


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
    ``order_count`` tell how often on each, 0 included), ``missing_in_export`` (only in the
    orders), ``missing_in_orders`` (only in the export), ``currency_mismatch``,
    ``amount_mismatch``, ``status_mismatch`` (only when the orders have a ``status``),
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
        result = _amount_sum_rules(result, sides)
    return _with_at_stake(result, sides.scale)


@dataclass(frozen=True)
class _Sides:
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


_SAME_CURRENCY: Final = pl.col("export_currency").eq_missing(pl.col("order_currency"))
_GAP: Final = pl.col("export_amount") - pl.col("order_amount")
_LINK_COLUMNS: Final = ("rule", "group", "other_candidates")


def _prepare(
    transactions: Frame,
    orders: Frame,
    month: str | None,
    date_tolerance: int | timedelta,
    amount_tolerance: Tolerance | Mapping[str, Tolerance] | None,
) -> _Sides:
    """Both sides checked and cut to the month and its tolerance, at one money scale."""
    tx = lazy(transactions, "transactions", "reconcile")
    od = lazy(orders, "orders", "reconcile")
    tx_schema = tx.collect_schema()
    od_schema = od.collect_schema()
    check_columns(tx_schema, _TX_REQUIRED, "transactions", "reconcile")
    check_columns(od_schema, ORDERS_REQUIRED, "orders", "reconcile", optional=ORDERS_OPTIONAL)
    days = _days(date_tolerance)
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
    return _Sides(collections, merchant_rows, tx_schema, od_schema, bounds, days, tolerance, scale)


def _by_reference(sides: _Sides) -> pl.LazyFrame:
    """One row per reference with each side's count and first values (the earliest collection
    by ``createdAt``, ``id``; the first order row)."""
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
    """The month's references, without a side that belongs to another month."""
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


def _category(sides: _Sides) -> pl.Expr:
    """A reference's category: the first that applies, in the order :func:`reconcile` gives."""
    within = _within(_GAP, sides.tolerance, sides.scale)
    has_order_status = pl.col("order_status").is_not_null()
    category = (
        pl.when((pl.col("export_count") > 1) | (pl.col("order_count") > 1))
        .then(pl.lit("duplicate_reference"))
        .when(pl.col("export_count") == 0)
        .then(pl.lit("missing_in_export"))
        .when(pl.col("order_count") == 0)
        .then(pl.lit("missing_in_orders"))
        .when(~_SAME_CURRENCY)
        .then(pl.lit("currency_mismatch"))
        .when(pl.col("export_amount").ne_missing(pl.col("order_amount")) & ~within)
        .then(pl.lit("amount_mismatch"))
        .when(has_order_status & pl.col("export_status").ne_missing(pl.col("order_status")))
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


def _one_to_one(joined: pl.LazyFrame, sides: _Sides) -> pl.DataFrame:
    """The one-to-one reconciliation, sorted by reference, with its ``rule`` (``reference``
    where both sides have it) and empty ``group`` and ``other_candidates``."""
    difference = (
        pl.when(_SAME_CURRENCY & pl.col("export_currency").is_not_null())
        .then(_GAP)
        .cast(pl.Decimal(38, sides.scale))
    )
    result = (
        joined.select(
            "reference",
            _category(sides).cast(_CATEGORY).alias("category"),
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
    """``at_stake`` added, before the columns that say how a reference was linked."""
    return result.with_columns(at_stake(result.columns).cast(pl.Decimal(38, scale))).select(
        *[c for c in result.columns if c not in _LINK_COLUMNS], "at_stake", *_LINK_COLUMNS
    )


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
        pl.when(category.is_in(["missing_in_orders", "status_mismatch", "missing_in_export"]))
        .then(side("export") - side("order"))
        .otherwise(pl.col("difference"))
        .alias("at_stake")
    )


# The most candidates searched for one order or collection: 2^14 subsets at most.
_MAX_CANDIDATES: Final = 14


class _Fit(NamedTuple):
    """One set that fits: a ``kind`` of amount-sum match anchored on a reference."""

    kind: str  # paid_in_parts or grouped
    anchor: str  # the order paid in parts, or the collection grouping orders
    members: list[str]
    how: set[str]  # how the members were linked: reference, date window
    others: int  # candidates linked the same way but not in the set


def _amount_sum_rules(result: pl.DataFrame, sides: _Sides) -> pl.DataFrame:
    """``paid_in_parts`` and ``grouped`` among the references left unmatched."""
    open_collections = _open_collections(result, sides)
    if open_collections.height == 0:
        return result
    open_orders = _open_orders(result, open_collections, sides)
    if open_orders.height == 0:
        return result
    pays = _items(_linked_to(open_collections, open_orders), "export")
    dues = _items(open_orders, "order")
    taken, undecided = _unshared(*_fits(pays, dues, sides))
    if not taken and not undecided:
        return result
    return _apply(result, _changes(taken, undecided, [*pays, *dues], sides.scale), sides.scale)


def _open_collections(result: pl.DataFrame, sides: _Sides) -> pl.DataFrame:
    """The references with one collection and no order that agrees, with the collection's
    ``customer`` and the reference it pays (``existing``: an under- or overpayment's)."""
    open_collections = result.filter(
        pl.col("category").is_in(["missing_in_orders", "amount_mismatch"])
        & (pl.col("export_count") == 1)
    )
    if open_collections.height == 0:
        return open_collections
    tx_info = (
        sides.collections.filter(
            pl.col("transactionReference")
            .cast(pl.String)
            .is_in(open_collections["reference"].implode())
        )
        .select(
            pl.col("transactionReference").cast(pl.String).alias("reference"),
            _customer(sides.tx_schema, "customerEmail").alias("customer"),
            _optional(sides.tx_schema, "meta.existingTransaction.reference").alias("existing"),
        )
        .unique("reference", keep="first")
        .collect()
    )
    return open_collections.join(tx_info, on="reference", how="left")


def _open_orders(
    result: pl.DataFrame, open_collections: pl.DataFrame, sides: _Sides
) -> pl.DataFrame:
    """The references with one order and no collection that agrees, that an open collection
    can be linked to (by a reference or its customer), with the order's ``customer``."""
    # Only what can be linked at all is looked at: the orders carrying an open collection's
    # reference or from its customer (the open orders can be a million, none of them linked;
    # reading each one's customer cost 0.5 s there, and 10 s in Python).
    linkable_refs = pl.concat(
        [open_collections["reference"], open_collections["existing"].drop_nulls()]
    ).implode()
    customers = open_collections["customer"].drop_nulls().implode()
    od_info = (
        sides.orders.select(
            pl.col("reference").cast(pl.String),
            _customer(sides.od_schema, "customer").alias("customer"),
        )
        .filter(pl.col("reference").is_in(linkable_refs) | pl.col("customer").is_in(customers))
        .unique("reference", keep="first")
        .collect()
    )
    return result.filter(
        pl.col("category").is_in(["missing_in_export", "amount_mismatch"])
        & (pl.col("order_count") == 1)
        & pl.col("reference").is_in(od_info["reference"].implode())
    ).join(od_info, on="reference", how="left")


def _linked_to(open_collections: pl.DataFrame, open_orders: pl.DataFrame) -> pl.DataFrame:
    """The open collections that carry an open order's reference or come from its customer."""
    order_customers = open_orders["customer"].drop_nulls().implode()
    order_links = open_orders["reference"].implode()
    return open_collections.filter(
        pl.col("reference").is_in(order_links)
        | pl.col("existing").is_in(order_links)
        | pl.col("customer").is_in(order_customers)
    )


def _items(frame: pl.DataFrame, side: str) -> list[dict[str, Any]]:
    """Each row as a candidate: its columns, and its ``side``'s amount, currency and day."""
    return [
        {**r, "amount": r[f"{side}_amount"], "currency": r[f"{side}_currency"],
         "day": r[f"{side}_date"]}
        for r in frame.iter_rows(named=True)
    ]  # fmt: skip


def _fits(
    pays: list[dict[str, Any]], dues: list[dict[str, Any]], sides: _Sides
) -> tuple[list[_Fit], dict[str, int]]:
    """The one set that fits each order (parts) and each collection (a group), and the
    targets that several sets fit (with how many)."""
    fits: list[_Fit] = []
    undecided: dict[str, int] = {}
    for kind, targets, pool in (("paid_in_parts", dues, pays), ("grouped", pays, dues)):
        by_key = _index(pool)
        for target in targets:
            if target["amount"] is None or target["currency"] is None:
                continue
            candidates = _candidates(target, pool, by_key, sides.days)
            if len(candidates) < 2 or len(candidates) > _MAX_CANDIDATES:
                continue
            amounts = [item["amount"] for item, _ in candidates]
            limit = _tolerance_for(sides.tolerance, target["currency"])
            found = _subsets(amounts, target["amount"], limit)
            if len(found) == 1:
                members = [candidates[i] for i in found[0]]
                fits.append(_fit(kind, target, members, len(candidates)))
            elif len(found) > 1:
                undecided[target["reference"]] = len(found)
    return fits, undecided


def _fit(
    kind: str, target: dict[str, Any], members: list[tuple[dict[str, Any], set[str]]], seen: int
) -> _Fit:
    how = set().union(*(h for _, h in members))
    refs = [m["reference"] for m, _ in members]
    return _Fit(kind, target["reference"], refs, how, seen - len(members))


def _tolerance_for(tolerance: dict[str, Decimal] | Decimal | None, currency: str | None) -> Decimal:
    if tolerance is None:
        return Decimal(0)
    if isinstance(tolerance, Decimal):
        return tolerance
    return tolerance.get(currency or "", Decimal(0))


def _index(pool: list[dict[str, Any]]) -> dict[tuple[str, Any], list[int]]:
    """Pool items by reference, by the reference they pay, and by customer."""
    found: dict[tuple[str, Any], list[int]] = {}
    for i, item in enumerate(pool):
        found.setdefault(("ref", item["reference"]), []).append(i)
        if item.get("existing"):
            found.setdefault(("ref", item["existing"]), []).append(i)
        if item.get("customer"):
            found.setdefault(("customer", item["customer"]), []).append(i)
    return found


def _candidates(
    target: dict[str, Any],
    pool: list[dict[str, Any]],
    by_key: dict[tuple[str, Any], list[int]],
    days: timedelta,
) -> list[tuple[dict[str, Any], set[str]]]:
    """The pool's items in ``target``'s currency linked to it, each with how, in pool order."""
    near_ids = {
        *by_key.get(("ref", target["reference"]), []),
        *by_key.get(("ref", target.get("existing")), []),
        *by_key.get(("customer", target.get("customer")), []),
    }
    candidates = []
    for i in sorted(near_ids):
        item = pool[i]
        if item["currency"] != target["currency"] or item["amount"] is None:
            continue
        how = _links(target, item, days)
        if how:
            candidates.append((item, how))
    return candidates


def _links(item: dict[str, Any], other: dict[str, Any], days: timedelta) -> set[str]:
    """How ``other`` is linked to ``item`` (empty: not a candidate)."""
    how = set()
    if other["reference"] == item["reference"]:
        how.add("reference")
    if other.get("existing") and other["existing"] == item["reference"]:
        how.add("reference")
    if item.get("existing") and item["existing"] == other["reference"]:
        how.add("reference")
    if (
        item.get("customer")
        and item["customer"] == other.get("customer")
        and _near(item["day"], other["day"], days)
    ):
        how.add("date window")
    return how


def _near(a: Any, b: Any, days: timedelta) -> bool:
    return a is not None and b is not None and abs(a - b) <= days


def _unshared(fits: list[_Fit], undecided: dict[str, int]) -> tuple[list[_Fit], dict[str, int]]:
    """The fits that share no reference with another, and the undecided targets with the
    anchors of the fits left (a reference in two fits would be guessed: neither is taken)."""
    seen: dict[str, int] = {}
    for fit in fits:
        for ref in {fit.anchor, *fit.members}:
            seen[ref] = seen.get(ref, 0) + 1
    taken = [f for f in fits if all(seen[r] == 1 for r in {f.anchor, *f.members})]
    undecided = dict(undecided)
    for f in fits:
        if f not in taken:
            undecided[f.anchor] = undecided.get(f.anchor, 1) + 1
    return taken, undecided


def _changes(
    taken: list[_Fit], undecided: dict[str, int], items: list[dict[str, Any]], scale: int
) -> pl.DataFrame:
    """One row per reference that changes: its set's category, rule, group and others, the
    set's difference on its anchor, or how many sets fit it."""
    updates: dict[str, tuple[str, str, str, int]] = {}
    by_reference = {r["reference"]: r for r in items}
    diffs: dict[str, tuple[Any]] = {}
    for fit in taken:
        rule = "amount-sum" + "".join(f" + {h}" for h in sorted(fit.how))
        refs = {fit.anchor, *fit.members}
        for ref in refs:
            updates[ref] = (fit.kind, rule, fit.anchor, fit.others)
        rows = [by_reference[ref] for ref in refs]
        paid = sum((r["export_amount"] for r in rows if r["export_amount"] is not None), Decimal(0))
        due = sum((r["order_amount"] for r in rows if r["order_amount"] is not None), Decimal(0))
        diffs[fit.anchor] = (paid - due,)
    return pl.DataFrame(
        [
            (ref, *updates.get(ref, (None,) * 4), *diffs.get(ref, (None,)), undecided.get(ref))
            for ref in {*updates, *diffs, *undecided}
        ],
        schema={
            "reference": pl.String,
            "_cat": pl.String,
            "_rule": pl.String,
            "_group": pl.String,
            "_others": pl.UInt32,
            "_diff": pl.Decimal(38, scale),
            "_sets": pl.UInt32,
        },
        orient="row",
    )


def _apply(result: pl.DataFrame, changes: pl.DataFrame, scale: int) -> pl.DataFrame:
    """``result`` with the ``changes``' rows rewritten in place."""
    grouped = pl.col("_cat").is_not_null()
    # Only the few rows of the sets change: updated apart and put back at their rows (a join
    # and a rewrite of every row's columns cost 0.3 s at a million references).
    rows = (
        result.with_row_index("_row")
        .filter(pl.col("reference").is_in(changes["reference"].implode()))
        .join(changes, on="reference")
        .select(
            "_row",
            pl.when(grouped)
            .then(pl.col("_cat"))
            .otherwise(pl.col("category").cast(pl.String))
            .cast(_CATEGORY)
            .alias("category"),
            pl.when(grouped).then(pl.col("_rule")).otherwise("rule").alias("rule"),
            pl.when(grouped).then(pl.col("_group")).otherwise("group").alias("group"),
            pl.when(grouped)
            .then(pl.col("_others"))
            .otherwise(pl.col("_sets"))
            .alias("other_candidates"),
            pl.when(grouped)
            .then(pl.col("_diff"))
            .otherwise("difference")
            .cast(pl.Decimal(38, scale))
            .alias("difference"),
        )
    )
    return result.with_columns(
        result[name].cast(rows.schema[name]).scatter(rows["_row"], rows[name])
        for name in rows.columns[1:]
    )


def _subsets(amounts: list[Decimal], target: Decimal, tolerance: Decimal) -> list[tuple[int, ...]]:
    """Every set of two or more of ``amounts`` whose sum is within ``tolerance`` of
    ``target`` (at most two are returned: one fits, or more than one does)."""
    from itertools import combinations

    found: list[tuple[int, ...]] = []
    indices = range(len(amounts))
    for size in range(2, len(amounts) + 1):
        for combo in combinations(indices, size):
            if abs(sum((amounts[i] for i in combo), Decimal(0)) - target) <= tolerance:
                found.append(combo)
                if len(found) > 1:
                    return found
    return found


def _days(tolerance: object) -> timedelta:
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


def _optional(schema: pl.Schema, name: str) -> pl.Expr:
    """Column ``name`` as text, or null text when the frame lacks it."""
    return pl.col(name).cast(pl.String) if name in schema else pl.lit(None, dtype=pl.String)


def _customer(schema: pl.Schema, name: str) -> pl.Expr:
    """A customer's e-mail as compared: trimmed, lower case (null when absent)."""
    return _optional(schema, name).str.strip_chars().str.to_lowercase()


def _within(gap: pl.Expr, tolerance: dict[str, Decimal] | Decimal | None, scale: int) -> pl.Expr:
    """Is the (same-currency) difference within the tolerance? Exact decimal comparison."""
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
    days = _days(date_tolerance).days
    if month is None:
        dates = "Order dates are shown, not compared: every record and order given is matched."
    else:
        crossing = {c: counts[c] for c in MONTH_END_CATEGORIES if counts.get(c)}
        found = ", ".join(f"{n:,} {c}" for c, n in crossing.items()) or "none"
        dates = (
            f"{month} is reconciled with {days} day(s) of margin: a payment or order up to "
            f"{days} day(s) beyond the month on either side still matches its counterpart "
            f"(found: {found})."
        )
    if amount_tolerance is None:
        amounts = "Amounts are compared exactly: every difference is an amount_mismatch."
    else:
        given = (
            ", ".join(format_money(v, c) for c, v in sorted(amount_tolerance.items()))
            if isinstance(amount_tolerance, Mapping)
            else format_money(amount_tolerance)
        )
        amounts = (
            f"Differences up to {given} are amount_within_tolerance "
            f"({counts.get('amount_within_tolerance', 0):,} reference(s)); larger ones are "
            "amount_mismatch."
        )
    return [dates, amounts]


def reconcile_summary(result: Frame) -> pl.DataFrame:
    """Summarise a :func:`reconcile` result by category and currency.

    The currency of a row is the export's, or the order's when the export has none.

    Args:
        result: the frame :func:`reconcile` returned (eager or lazy).

    Returns:
        One row per category and currency present (and per orders' currency where it is
        another, a currency mismatch), in the order of :data:`CATEGORIES` then currency:
        ``category``, ``currency``, ``references`` (count), ``export_amount``,
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
    check_columns(
        schema,
        {
            "reference": "string",
            "category": "string",
            "export_currency": "string",
            "order_currency": "string",
            "export_amount": "money",
            "order_amount": "money",
            "difference": "money",
        },
        "result",
        "reconcile_summary",
    )
    scale = money_scale(schema, ["export_amount", "order_amount", "difference"])
    row_currency = pl.coalesce("export_currency", "order_currency").cast(pl.String)
    return (
        lf.with_columns(
            money("export_amount", scale),
            money("order_amount", scale),
            money("difference", scale),
            at_stake(schema.names()).cast(pl.Decimal(38, scale)),
            row_currency.alias("currency"),
            # The orders' amounts in another currency than the row's are summed apart, in
            # their own currency (a currency mismatch), never under the row's.
            pl.when(pl.col("order_currency").cast(pl.String) != row_currency)
            .then(pl.col("order_currency").cast(pl.String))
            .alias("_other"),
        )
        .group_by(pl.col("category").cast(pl.String).cast(_CATEGORY), "currency", "_other")
        .agg(
            pl.len().alias("references"),
            sum_in_currency("export_amount", "export_currency"),
            sum_in_currency("order_amount"),
            sum_in_currency("difference"),
            sum_in_currency("at_stake"),
        )
        .rename({"_other": "order_currency"})
        .select(
            "category",
            "currency",
            "references",
            "export_amount",
            "order_currency",
            "order_amount",
            "difference",
            "at_stake",
        )
        .sort(["category", "currency", "order_currency"], nulls_last=True)
        .collect()
    )


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
