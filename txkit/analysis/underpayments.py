"""Under- and overpayments: payments that differ from the amount the merchant expected.

The provider records such a payment (NGN bank transfers to virtual accounts) as a new,
``successful`` transaction with its own reference, ``meta.paymentCollectionType`` set to
``UNDERPAYMENT`` or ``OVERPAYMENT``, the expected amount in
``meta.existingTransaction.expectedAmount`` and the original reference in
``meta.existingTransaction.reference`` (provider notes). Amounts stay exact decimals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import polars as pl

from txkit.analysis._common import Frame, Kind, check_columns, lazy, money, money_scale
from txkit.schema import require

__all__ = [
    "COUNTED_STATUSES",
    "SHORTFALL_NAMES",
    "activity_comparison",
    "is_underpayment",
    "payment_flag",
    "repeat_shortfalls",
    "underpayment_summary",
    "underpayments",
]

_TYPE = "meta.paymentCollectionType"
_EXPECTED = "meta.existingTransaction.expectedAmount"
_ORIGINAL = "meta.existingTransaction.reference"
_ACTIVITY = "meta.customerActivity."
_FLAGS: Final = ("UNDERPAYMENT", "OVERPAYMENT")
#: The statuses whose flagged collections every function here counts (lists, counts, rates,
#: totals, repeat customers and the activity comparison alike): the provider records an
#: under- or overpayment as a new successful collection, and the rates divide by successful
#: collections. Flagged records of other statuses are listed only on request
#: (``underpayments(..., all_statuses=True)``).
COUNTED_STATUSES: Final[tuple[str, ...]] = ("successful",)

_REQUIRED: Final[dict[str, Kind]] = require(
    "id",
    "createdAt",
    "transType",
    "status",
    "transactionReference",
    "toAmount",
    "toCurrency",
    "customerEmail",
    _TYPE,
    _EXPECTED,
    _ORIGINAL,
    "meta.bankName",
    "meta.paymentChannel",
)
_ACTIVITY_REQUIRED: Final[dict[str, Kind]] = require(
    "transType",
    "status",
    _TYPE,
    "meta.paymentChannel",
    f"{_ACTIVITY}attempts",
    f"{_ACTIVITY}errors",
    f"{_ACTIVITY}time_spent",
    f"{_ACTIVITY}mobile",
)

#: The shortfall figures' names, defined once for every page, headline and finding (an index
#: once showed "shortfall 60,703.00 NGN" and "net shortfall 9,269.11 NGN" side by side with
#: no word on how they differ). Keys are :func:`underpayment_summary`'s columns.
SHORTFALL_NAMES: Final[dict[str, str]] = {
    "shortfall": "gross shortfall of underpayments",
    "excess": "excess of overpayments",
    "net_shortfall": "net shortfall (gross shortfall less the excess of overpayments)",
}

#: Dimensions :func:`underpayment_summary` can group by, and the column each comes from.
SUMMARY_DIMENSIONS: Final[dict[str, pl.Expr]] = {
    "currency": pl.col("toCurrency").cast(pl.String),
    "month": pl.col("createdAt").dt.strftime("%Y-%m"),
    "bank": pl.col("meta.bankName").cast(pl.String),
    "channel": pl.col("meta.paymentChannel").cast(pl.String),
}
_GROUPS: Final = ("underpaid", "overpaid", "exact")


def _prepare(transactions: Frame, caller: str, required: dict[str, Kind]) -> pl.LazyFrame:
    lf = lazy(transactions, "transactions", caller)
    check_columns(lf.collect_schema(), required, "transactions", caller)
    return lf


def payment_flag(schema: pl.Schema | None = None) -> pl.Expr:
    """The under/overpayment flag (``meta.paymentCollectionType``), stripped and upper-cased:
    ``" underpayment "`` and ``"UnderPayment"`` are ``"UNDERPAYMENT"``. The one reading of the
    flag for every figure txkit shows (notebook 03, the trends, the index headlines).

    Args:
        schema: the frame's schema; when given and the column is absent, a null flag.
    """
    if schema is not None and _TYPE not in schema:
        return pl.lit(None, pl.String)
    return pl.col(_TYPE).cast(pl.String).str.strip_chars().str.to_uppercase()


def successful_collections() -> pl.Expr:
    """Collections of the counted statuses (:data:`COUNTED_STATUSES`)."""
    return (pl.col("transType") == "collection") & pl.col("status").is_in(COUNTED_STATUSES)


def is_underpayment(schema: pl.Schema | None = None) -> pl.Expr:
    """A counted underpayment: a successful collection flagged ``UNDERPAYMENT`` (see
    :func:`payment_flag`). Its shortfall is expected minus paid, at the money's own scale."""
    return successful_collections() & (payment_flag(schema) == "UNDERPAYMENT")


def _flagged(
    lf: pl.LazyFrame, history: pl.LazyFrame | None = None, *, all_statuses: bool = False
) -> pl.LazyFrame:
    scale = money_scale(lf.collect_schema(), ["toAmount", _EXPECTED])
    known = [lf] if history is None else [lf, history]
    references = (
        pl.concat(
            [f.select(pl.col("transactionReference").cast(pl.String).alias("ref")) for f in known]
        )
        .drop_nulls()
        .unique()
        .with_columns(pl.lit(True).alias("original_in_export"))
    )
    counted = payment_flag().is_in(_FLAGS)
    if not all_statuses:
        counted = counted & successful_collections()
    return (
        lf.filter(counted)
        .select(
            pl.col("id").cast(pl.String),
            "createdAt",
            pl.col("transactionReference").cast(pl.String),
            payment_flag().alias("type"),
            pl.col("status").cast(pl.String),
            pl.col("toCurrency").cast(pl.String).alias("currency"),
            money(_EXPECTED, scale).alias("expected"),
            money("toAmount", scale).alias("paid"),
            (money(_EXPECTED, scale) - money("toAmount", scale))
            .cast(pl.Decimal(38, scale))
            .alias("shortfall"),
            pl.col(_ORIGINAL).cast(pl.String).alias("original_reference"),
            pl.col("meta.bankName").cast(pl.String).alias("bank"),
            pl.col("meta.paymentChannel").cast(pl.String).alias("channel"),
            pl.col("customerEmail").cast(pl.String),
        )
        .join(references, left_on="original_reference", right_on="ref", how="left")
        .with_columns(pl.col("original_in_export").fill_null(False))
        .select(
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
        )
        .sort(["createdAt", "id"], nulls_last=True)
    )


def underpayments(
    transactions: Frame, *, history: Frame | None = None, all_statuses: bool = False
) -> pl.DataFrame:
    """Every successful collection marked ``UNDERPAYMENT`` or ``OVERPAYMENT``, with its
    shortfall.

    Only successful collections count (:data:`COUNTED_STATUSES`), here and in every summary
    of this module, so that the list, the counts and the rates agree.

    Args:
        transactions: the export (eager or lazy), e.g. from :func:`txkit.load_transactions`.
        history: optional earlier records (eager or lazy), e.g. the store's earlier months:
            an original reference found there is not reported as missing.
        all_statuses: also list flagged records of other statuses and types (to investigate
            them; the summaries never count them).

    Returns:
        One row per flagged record, by ``createdAt`` then ``id``: ``id``,
        ``createdAt``, ``transactionReference``, ``type`` (``UNDERPAYMENT`` or
        ``OVERPAYMENT``), ``status``, ``currency`` (``toCurrency``), ``expected``
        (``meta.existingTransaction.expectedAmount``), ``paid`` (``toAmount``), ``shortfall``
        (expected minus paid; negative for an overpayment; null when either is missing),
        ``original_reference`` (``meta.existingTransaction.reference``),
        ``original_in_export`` (True when that reference is the ``transactionReference`` of a
        record, of any status, in ``transactions`` or ``history``), ``bank``
        (``meta.bankName``), ``channel`` (``meta.paymentChannel``) and ``customerEmail``.
        Money columns are exact decimals of one scale.

    Raises:
        ValueError: a required column is missing or of the wrong type.

    Example:
        >>> flagged = underpayments(df, history=earlier_months)
        >>> flagged.filter(~pl.col("original_in_export"))  # originals found nowhere
    """
    lf = _prepare(transactions, "underpayments", _REQUIRED)
    earlier = None
    if history is not None:
        earlier = lazy(history, "history", "underpayments")
        check_columns(
            earlier.collect_schema(),
            {"transactionReference": "string"},
            "history",
            "underpayments",
        )
    return _flagged(lf, earlier, all_statuses=all_statuses).collect()


def underpayment_summary(
    transactions: Frame, by: str | Sequence[str] = ("currency", "month")
) -> pl.DataFrame:
    """Counts, rates and totals of under- and overpayments per group.

    The rate of a group is its flagged successful collections divided by its successful
    collections; flagged records of other statuses are not counted (:data:`COUNTED_STATUSES`). Money
    totals of different currencies are never added: ``currency`` is always one of the
    grouping columns.

    Args:
        transactions: the export (eager or lazy).
        by: one or more of ``currency``, ``month`` (``YYYY-MM`` of ``createdAt``, UTC),
            ``bank`` (``meta.bankName``) and ``channel`` (``meta.paymentChannel``).

    Returns:
        One row per group that has successful collections or flagged records, sorted by the
        grouping columns (``currency`` first): the grouping columns, ``successful_collections``,
        ``underpayments``, ``overpayments``, ``underpayment_rate``, ``overpayment_rate`` and
        ``flagged_rate`` (both together; Float64, null without successful collections),
        ``shortfall`` (sum of expected minus paid over underpayments), ``excess`` (sum of paid
        minus expected over overpayments) and ``net_shortfall`` (``shortfall - excess``),
        exact decimals.

    Raises:
        ValueError: a required column is missing, or ``by`` names an unknown dimension.

    Example:
        >>> underpayment_summary(df, by=["bank"])
    """
    lf = _prepare(transactions, "underpayment_summary", _REQUIRED)
    dims = [by] if isinstance(by, str) else list(by)
    unknown = [d for d in dims if d not in SUMMARY_DIMENSIONS]
    if unknown or not dims:
        raise ValueError(
            f"underpayment_summary: unknown dimension(s) {unknown or dims!r} in by; "
            f"accepted: {', '.join(SUMMARY_DIMENSIONS)}"
        )
    dims = ["currency", *dict.fromkeys(d for d in dims if d != "currency")]
    keyed = lf.with_columns(SUMMARY_DIMENSIONS[d].alias(f"_{d}") for d in dims)
    keys = [f"_{d}" for d in dims]
    flagged = _flagged(lf).with_columns(
        pl.col("currency").alias("_currency"),
        pl.col("createdAt").dt.strftime("%Y-%m").alias("_month"),
        pl.col("bank").alias("_bank"),
        pl.col("channel").alias("_channel"),
    )
    scale = money_scale(flagged.collect_schema(), ["shortfall"])
    zero = pl.lit(0, dtype=pl.Decimal(38, scale))
    under = pl.col("type") == "UNDERPAYMENT"
    over = pl.col("type") == "OVERPAYMENT"
    totals = flagged.group_by(keys).agg(
        under.sum().cast(pl.UInt32).alias("underpayments"),
        over.sum().cast(pl.UInt32).alias("overpayments"),
        pl.col("shortfall").filter(under).sum().alias("shortfall"),
        (-pl.col("shortfall")).filter(over).sum().cast(pl.Decimal(38, scale)).alias("excess"),
    )
    base = (
        keyed.filter(successful_collections())
        .group_by(keys)
        .agg(pl.len().cast(pl.UInt32).alias("successful_collections"))
    )
    per_collection = pl.when(pl.col("successful_collections") > 0).then(
        pl.col("successful_collections").cast(pl.Float64)
    )
    return (
        base.join(totals, on=keys, how="full", coalesce=True, nulls_equal=True)
        .with_columns(
            pl.col("successful_collections", "underpayments", "overpayments").fill_null(0),
            pl.col("shortfall", "excess").fill_null(zero),
        )
        .select(
            *(pl.col(k).alias(d) for k, d in zip(keys, dims, strict=True)),
            "successful_collections",
            "underpayments",
            "overpayments",
            (pl.col("underpayments") / per_collection).alias("underpayment_rate"),
            (pl.col("overpayments") / per_collection).alias("overpayment_rate"),
            ((pl.col("underpayments") + pl.col("overpayments")) / per_collection).alias(
                "flagged_rate"
            ),
            "shortfall",
            "excess",
            (pl.col("shortfall") - pl.col("excess"))
            .cast(pl.Decimal(38, scale))
            .alias("net_shortfall"),
        )
        .sort(dims, nulls_last=True)
        .collect()
    )


def repeat_shortfalls(
    transactions: Frame, min_count: int = 2, top: int | None = 10
) -> pl.DataFrame:
    """Customers who underpaid repeatedly, largest total shortfall first.

    Only underpayments count (overpayments are not shortfalls), and only successful ones
    (:data:`COUNTED_STATUSES`); records without a ``customerEmail`` cannot be attributed and
    are left out. Totals are per currency.

    Args:
        transactions: the export (eager or lazy).
        min_count: the least number of underpayments that makes a customer "repeated".
        top: how many customers to return (None: all).

    Returns:
        ``customerEmail``, ``currency``, ``underpayments`` (count), ``total_shortfall``,
        ``largest_shortfall``, ``first_at`` and ``last_at`` (``createdAt`` of the first and
        last underpayment) and ``references`` (their ``transactionReference``, oldest first),
        sorted by ``total_shortfall`` descending, then ``underpayments`` descending, then
        e-mail.

    Raises:
        ValueError: a required column is missing, or ``min_count``/``top`` is not a positive
            integer.
    """
    for name, value in (("min_count", min_count), ("top", top)):
        if value is None and name == "top":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"repeat_shortfalls: {name} must be a positive integer, got {value!r}")
    lf = _prepare(transactions, "repeat_shortfalls", _REQUIRED)
    result = (
        _flagged(lf)
        .filter((pl.col("type") == "UNDERPAYMENT") & pl.col("customerEmail").is_not_null())
        .group_by("customerEmail", "currency")
        .agg(
            pl.len().cast(pl.UInt32).alias("underpayments"),
            pl.col("shortfall").sum().alias("total_shortfall"),
            pl.col("shortfall").max().alias("largest_shortfall"),
            pl.col("createdAt").min().alias("first_at"),
            pl.col("createdAt").max().alias("last_at"),
            pl.col("transactionReference").sort_by("createdAt", "id").alias("references"),
        )
        .filter(pl.col("underpayments") >= min_count)
        .sort(
            ["total_shortfall", "underpayments", "customerEmail", "currency"],
            descending=[True, True, False, False],
            nulls_last=True,
        )
    )
    if top is not None:
        result = result.head(top)
    return result.collect()


def activity_comparison(transactions: Frame, channel: str | None = None) -> pl.DataFrame:
    """How the customer's checkout activity differs between under-, over- and exact payments.

    Compares successful collections in three groups: ``underpaid`` and ``overpaid`` (by
    ``meta.paymentCollectionType``) and ``exact`` (all other successful collections). Since the
    provider flags only virtual-account payments, ``channel="VA"`` gives the fairer
    comparison.

    Args:
        transactions: the export (eager or lazy).
        channel: keep only this ``meta.paymentChannel`` (None: all channels).

    Returns:
        One row per group, always all three in the order underpaid, overpaid, exact:
        ``group``, ``collections``, ``with_activity`` (those carrying
        ``meta.customerActivity``), ``mean_attempts``, ``mean_errors``, ``share_with_errors``
        (share with at least one error), ``mean_time_spent`` and ``median_time_spent`` (in the
        unit the service uses, which the interface does not state) and ``mobile_share``.
        Means and shares are over the records that have the field; null for an empty group.

    Raises:
        ValueError: a required column is missing or of the wrong type.
    """
    lf = _prepare(transactions, "activity_comparison", _ACTIVITY_REQUIRED)
    lf = lf.filter(successful_collections())
    if channel is not None:
        lf = lf.filter(pl.col("meta.paymentChannel") == channel)
    group = (
        pl.when(payment_flag() == "UNDERPAYMENT")
        .then(pl.lit("underpaid"))
        .when(payment_flag() == "OVERPAYMENT")
        .then(pl.lit("overpaid"))
        .otherwise(pl.lit("exact"))
        .cast(pl.Enum(_GROUPS))
    )
    attempts = pl.col(f"{_ACTIVITY}attempts")
    errors = pl.col(f"{_ACTIVITY}errors")
    spent = pl.col(f"{_ACTIVITY}time_spent").cast(pl.Float64)
    mobile = pl.col(f"{_ACTIVITY}mobile")
    present = attempts.is_not_null() | errors.is_not_null() | spent.is_not_null()
    stats = (
        lf.group_by(group.alias("group"))
        .agg(
            pl.len().cast(pl.UInt32).alias("collections"),
            (present | mobile.is_not_null()).sum().cast(pl.UInt32).alias("with_activity"),
            attempts.cast(pl.Float64).mean().alias("mean_attempts"),
            errors.cast(pl.Float64).mean().alias("mean_errors"),
            (errors > 0).cast(pl.Float64).mean().alias("share_with_errors"),
            spent.mean().alias("mean_time_spent"),
            spent.median().alias("median_time_spent"),
            mobile.cast(pl.Float64).mean().alias("mobile_share"),
        )
        .collect()
    )
    groups = pl.DataFrame({"group": list(_GROUPS)}, schema={"group": pl.Enum(_GROUPS)})
    return (
        groups.join(stats, on="group", how="left")
        .with_columns(pl.col("collections", "with_activity").fill_null(0))
        .sort("group")
    )
