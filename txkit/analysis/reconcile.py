"""Reconcile the export's collections with the merchant's own record of expected payments.

The export side is every record with ``transType == "collection"``, keyed by
``transactionReference``; the merchant side is an orders frame (see :func:`read_orders`) keyed
by ``reference``. Amounts are compared exactly, as decimals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Final

import polars as pl

from txkit.analysis._common import (
    Frame,
    Kind,
    check_columns,
    decimals_of,
    lazy,
    money,
    money_scale,
)
from txkit.calendar import month_bounds
from txkit.schema import require

__all__ = [
    "AGREED_CATEGORIES",
    "CATEGORIES",
    "DEFAULT_DATE_TOLERANCE",
    "describe_matching",
    "duplicate_references",
    "read_orders",
    "reconcile",
    "reconcile_summary",
]

#: Reconciliation categories, in the order summaries list them.
CATEGORIES: Final[tuple[str, ...]] = (
    "matched",
    "paid_next_month",
    "ordered_previous_month",
    "paid_previous_month",
    "ordered_next_month",
    "amount_within_tolerance",
    "missing_in_export",
    "missing_in_orders",
    "duplicate_reference",
    "currency_mismatch",
    "amount_mismatch",
    "status_mismatch",
)
#: The categories where both sides agree: exactly, across a month's end (the counterpart
#: found within the date tolerance) or within the amount tolerance. Every other category is an
#: exception to look at.
AGREED_CATEGORIES: Final[tuple[str, ...]] = CATEGORIES[:6]
_CATEGORY = pl.Enum(CATEGORIES)
_MONTH_END: Final = CATEGORIES[1:5]
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
_ORDERS_REQUIRED: Final[dict[str, Kind]] = {
    "reference": "string",
    "amount": "money",
    "currency": "string",
}
_ORDERS_OPTIONAL: Final[dict[str, Kind]] = {"status": "string", "date": "date"}
# A plain decimal: optional sign, digits, optional fraction. No exponent, no separators.
_AMOUNT_RE: Final = r"^[+-]?[0-9]+(\.[0-9]+)?$"
_DATE_RE: Final = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
_MAX_LISTED: Final = 10
#: The default ``date_tolerance`` of :func:`reconcile`: days looked at beyond the month.
DEFAULT_DATE_TOLERANCE: Final = 3


def reconcile(
    transactions: Frame,
    orders: Frame,
    *,
    month: str | None = None,
    date_tolerance: int | timedelta = DEFAULT_DATE_TOLERANCE,
    amount_tolerance: Tolerance | Mapping[str, Tolerance] | None = None,
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
            ``amount_mismatch``. Off by default: every difference is a mismatch.

    Returns:
        One row per reference, sorted by reference: ``reference``, ``category`` (an Enum in the
        order of :data:`CATEGORIES`), ``export_count`` and ``order_count`` (occurrences on each
        side), ``export_id``, ``export_amount``, ``export_currency``, ``export_status``,
        ``export_date`` (UTC date of ``createdAt``), ``order_amount``, ``order_currency``,
        ``order_status``, ``order_date`` and ``difference`` (export amount minus order amount,
        when both exist and the currencies agree). Money columns share one decimal scale.
        Where a reference occurs more than once, the values shown are those of its earliest
        collection (by ``createdAt``, ``id``) and its first order row.

    Raises:
        ValueError: a frame misses a required column or has one of the wrong type; a bad
            ``month``, ``date_tolerance`` or ``amount_tolerance``.

    Example:
        >>> result = reconcile(df, read_orders("orders.csv"), month="2026-10")
        >>> result.filter(pl.col("category") != "matched")
    """
    tx = lazy(transactions, "transactions", "reconcile")
    od = lazy(orders, "orders", "reconcile")
    tx_schema = tx.collect_schema()
    od_schema = od.collect_schema()
    check_columns(tx_schema, _TX_REQUIRED, "transactions", "reconcile")
    check_columns(od_schema, _ORDERS_REQUIRED, "orders", "reconcile", optional=_ORDERS_OPTIONAL)
    days = _days(date_tolerance)
    bounds = None if month is None else month_bounds(month)
    scale = max(
        money_scale(tx_schema, ["toAmount"]),
        money_scale(od_schema, ["amount"]),
        *_tolerance_scales(amount_tolerance),
    )
    tolerance = _tolerances(amount_tolerance, scale)
    order_status = (
        pl.col("status").cast(pl.String) if "status" in od_schema else pl.lit(None, dtype=pl.String)
    )
    order_date = _date_expr(od_schema) if "date" in od_schema else pl.lit(None, dtype=pl.Date)
    collections = tx.filter(
        (pl.col("transType") == "collection") & pl.col("transactionReference").is_not_null()
    ).with_columns(pl.col("createdAt").dt.date().alias("_day"))
    merchant_rows = od.filter(pl.col("reference").is_not_null()).with_columns(
        order_date.alias("_day")
    )
    in_month: pl.Expr = pl.lit(True)
    if bounds is not None:
        first, last = bounds
        window = pl.col("_day").is_between(first - days, last + days)
        collections = collections.filter(window)
        merchant_rows = merchant_rows.filter(window | pl.col("_day").is_null())
        in_month = pl.col("_day").is_between(first, last) | pl.col("_day").is_null()

    export = (
        collections.sort(["createdAt", "id"], nulls_last=True)
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
    merchant = merchant_rows.group_by(pl.col("reference").cast(pl.String)).agg(
        pl.len().alias("order_count"),
        money("amount", scale).first().alias("order_amount"),
        pl.col("currency").first().cast(pl.String).alias("order_currency"),
        order_status.first().alias("order_status"),
        pl.col("_day").first().alias("order_date"),
        in_month.any().alias("_order_in_month"),
    )
    joined = export.join(merchant, on="reference", how="full", coalesce=True).with_columns(
        pl.col("export_count").fill_null(0).cast(pl.UInt32),
        pl.col("order_count").fill_null(0).cast(pl.UInt32),
    )
    if bounds is not None:
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
        joined = joined.with_columns(
            pl.when(hide[side]).then(pl.lit(None)).otherwise(pl.col(name)).alias(name)
            for side, names in _SIDE_COLUMNS.items()
            for name in names
        ).with_columns(
            pl.when(hide[side]).then(0).otherwise(pl.col(f"{side}_count")).alias(f"{side}_count")
            for side in _SIDE_COLUMNS
        )
    same_currency = pl.col("export_currency").eq_missing(pl.col("order_currency"))
    has_order_status = pl.col("order_status").is_not_null()
    gap = pl.col("export_amount") - pl.col("order_amount")
    within = _within(gap, tolerance, scale)
    category = (
        pl.when((pl.col("export_count") > 1) | (pl.col("order_count") > 1))
        .then(pl.lit("duplicate_reference"))
        .when(pl.col("export_count") == 0)
        .then(pl.lit("missing_in_export"))
        .when(pl.col("order_count") == 0)
        .then(pl.lit("missing_in_orders"))
        .when(~same_currency)
        .then(pl.lit("currency_mismatch"))
        .when(pl.col("export_amount").ne_missing(pl.col("order_amount")) & ~within)
        .then(pl.lit("amount_mismatch"))
        .when(has_order_status & pl.col("export_status").ne_missing(pl.col("order_status")))
        .then(pl.lit("status_mismatch"))
        .when(pl.col("export_amount").ne_missing(pl.col("order_amount")))
        .then(pl.lit("amount_within_tolerance"))
    )
    if bounds is not None:
        first, last = bounds
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
    category = category.otherwise(pl.lit("matched"))
    difference = (
        pl.when(same_currency & pl.col("export_currency").is_not_null())
        .then(gap)
        .cast(pl.Decimal(38, scale))
    )
    return (
        joined.select(
            "reference",
            category.cast(_CATEGORY).alias("category"),
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


def _tolerance_scales(tolerance: object) -> list[int]:
    """Decimal places of the amount tolerance(s), so the common scale holds them exactly."""
    values = tolerance.values() if isinstance(tolerance, Mapping) else [tolerance]
    return [decimals_of(value) for value in values]


def _tolerances(tolerance: object, scale: int) -> dict[str, Decimal] | Decimal | None:
    """The amount tolerance as a Decimal, or one per currency; ValueError if not exact."""
    if tolerance is None:
        return None
    if isinstance(tolerance, Mapping):
        out = {}
        for currency, value in tolerance.items():
            out[str(currency)] = _one_tolerance(value, scale, f"amount_tolerance[{currency!r}]")
        return out
    return _one_tolerance(tolerance, scale, "amount_tolerance")


def _one_tolerance(value: object, scale: int, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise ValueError(
            f"reconcile: {what} must be a Decimal, int or exact str amount (or a mapping of "
            f"currency to one), got {value!r}"
        )
    try:
        amount = Decimal(value)
    except ArithmeticError:
        raise ValueError(f"reconcile: {what} is not a number: {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"reconcile: {what} must be a finite amount, 0 or more, got {value!r}")
    return amount.quantize(Decimal(1).scaleb(-scale))


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
        crossing = {c: counts[c] for c in _MONTH_END if counts.get(c)}
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
            ", ".join(f"{v} {c}" for c, v in amount_tolerance.items())
            if isinstance(amount_tolerance, Mapping)
            else f"{amount_tolerance}"
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
        One row per category and currency present, in the order of :data:`CATEGORIES` then
        currency: ``category``, ``currency``, ``references`` (count), ``export_amount`` and
        ``order_amount`` (sums over the rows that have one) and ``difference`` (sum of the
        differences).

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
    return (
        lf.group_by(
            pl.col("category").cast(pl.String).cast(_CATEGORY),
            pl.coalesce("export_currency", "order_currency").cast(pl.String).alias("currency"),
        )
        .agg(
            pl.len().alias("references"),
            money("export_amount", scale).sum().alias("export_amount"),
            money("order_amount", scale).sum().alias("order_amount"),
            money("difference", scale).sum().alias("difference"),
        )
        .sort(["category", "currency"], nulls_last=True)
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


def read_orders(path: str | Path) -> pl.DataFrame:
    """Read the merchant's orders from CSV or Parquet, with exact decimal amounts.

    CSV is read as text and each amount is converted from its digits (never through a float);
    an amount must be a plain decimal number (``1500``, ``-12.5``, ``0.10``; no exponent, no
    thousands separator). A ``date`` must start with ``YYYY-MM-DD`` (the date part of an ISO
    timestamp is taken as written). Other columns are kept as read.

    Args:
        path: a ``.csv`` file, or a ``.parquet``/``.pq`` file (amounts stored as decimal,
            integer or text; floating-point amounts are refused as inexact).

    Returns:
        The orders: ``reference`` (String), ``amount`` (``Decimal(38, s)`` where ``s`` is the
        largest number of decimals in the file, at least 2), ``currency`` (String), and when
        present ``status`` (String) and ``date`` (Date), followed by any other columns.

    Raises:
        ValueError: unsupported file type; missing required columns (all named); empty
            references, currencies or amounts, or amounts that are not plain decimal numbers
            (with their row numbers, 1 = the first row after the header); unreadable dates.
        FileNotFoundError: ``path`` does not exist.

    Example:
        >>> orders = read_orders("orders.csv")
        >>> reconcile(df, orders)
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.exists():
        raise FileNotFoundError(f"read_orders: no such file: {path}")
    if suffix == ".csv":
        frame = pl.read_csv(path, infer_schema=False)
        frame = frame.rename({c: c.strip() for c in frame.columns})
    elif suffix in (".parquet", ".pq"):
        frame = pl.read_parquet(path)
    else:
        raise ValueError(
            f"read_orders: {path.name}: unsupported file type {suffix or '(none)'!r}; "
            "accepted: .csv, .parquet, .pq"
        )
    missing = [c for c in _ORDERS_REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(
            f"read_orders: {path.name} is missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))}; required: reference, amount, currency "
            f"(optional: status, date); found: {', '.join(map(repr, frame.columns))}"
        )
    frame = frame.with_columns(
        _text("reference", frame), _text("currency", frame), _amount(frame, path.name)
    )
    if "status" in frame.columns:
        frame = frame.with_columns(_text("status", frame))
    if "date" in frame.columns:
        frame = frame.with_columns(_read_date(frame, path.name))
    for name in ("reference", "currency"):
        _fail_rows(frame, pl.col(name).is_null() | (pl.col(name) == ""), path.name, f"no {name}")
    optional = [c for c in _ORDERS_OPTIONAL if c in frame.columns]
    first = [*_ORDERS_REQUIRED, *optional]
    return frame.select([*first, *(c for c in frame.columns if c not in first)])


def _text(name: str, frame: pl.DataFrame) -> pl.Expr:
    dtype = frame.schema[name]
    if isinstance(dtype, pl.String | pl.Categorical | pl.Enum | pl.Null):
        return pl.col(name).cast(pl.String).str.strip_chars()
    return pl.col(name).cast(pl.String)


def _amount(frame: pl.DataFrame, source: str) -> pl.Expr:
    dtype = frame.schema["amount"]
    if isinstance(dtype, pl.Decimal):
        return pl.col("amount").cast(pl.Decimal(38, max(2, dtype.scale or 0)))
    if dtype.is_integer():
        return pl.col("amount").cast(pl.Decimal(38, 2))
    if not isinstance(dtype, pl.String | pl.Null):
        raise ValueError(
            f"read_orders: {source}: 'amount' is stored as {dtype}, which is not an exact "
            "amount; store amounts as decimal, integer or text"
        )
    text = pl.col("amount").cast(pl.String).str.strip_chars()
    values = frame.select(text.alias("a"))["a"]
    bad = ~values.str.contains(_AMOUNT_RE).fill_null(False)
    if bad.any():
        rows = (bad.arg_true() + 1).to_list()
        raise ValueError(
            f"read_orders: {source}: amount is missing or not a plain decimal number in "
            f"{len(rows)} row{'s' if len(rows) > 1 else ''} (counted from 1 after the header): "
            f"rows {_list(rows)}; values {_list(values.filter(bad).to_list())}"
        )
    decimals = values.str.extract(r"\.([0-9]+)$", 1).str.len_chars().fill_null(0)
    scale = max(2, int(decimals.max() or 0))
    if scale > 30:
        raise ValueError(f"read_orders: {source}: amounts have more than 30 decimals")
    return text.cast(pl.Decimal(38, scale)).alias("amount")


def _read_date(frame: pl.DataFrame, source: str) -> pl.Expr:
    dtype = frame.schema["date"]
    if isinstance(dtype, pl.Date):
        return pl.col("date")
    if isinstance(dtype, pl.Datetime):
        return pl.col("date").dt.date()
    text = pl.col("date").cast(pl.String).str.strip_chars()
    values = frame.select(text.alias("d"))["d"]
    parsed = values.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False)
    unreadable = parsed.is_null() | ~values.str.contains(_DATE_RE)
    bad = values.is_not_null() & (values != "") & unreadable
    if bad.any():
        rows = (bad.arg_true() + 1).to_list()
        raise ValueError(
            f"read_orders: {source}: date is not YYYY-MM-DD in rows {_list(rows)} (rows "
            f"counted from 1 after the header); values {_list(values.filter(bad).to_list())}"
        )
    return text.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False).alias("date")


def _date_expr(schema: pl.Schema) -> pl.Expr:
    if isinstance(schema["date"], pl.Datetime):
        return pl.col("date").dt.date()
    return pl.col("date").cast(pl.Date)


def _fail_rows(frame: pl.DataFrame, condition: pl.Expr, source: str, what: str) -> None:
    bad = frame.select(condition.fill_null(True).alias("b"))["b"]
    if bad.any():
        rows = (bad.arg_true() + 1).to_list()
        raise ValueError(
            f"read_orders: {source}: {what} in rows {_list(rows)} (rows counted from 1 after "
            "the header)"
        )


def _list(values: Sequence[object]) -> str:
    items = list(values)
    shown = ", ".join(str(v) if not isinstance(v, str) else repr(v) for v in items[:_MAX_LISTED])
    return shown + (f" ... ({len(items)} in all)" if len(items) > _MAX_LISTED else "")
