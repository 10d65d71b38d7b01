"""Month over month: the figures of every stored month, read lazily with projected columns.

:func:`monthly_metrics` reads only the nine columns it needs from a lazy scan of the store
(``txkit.scan_store()``), so twelve months of a million records each are summarised in
seconds. The report's index uses it for the change against the previous month; the
``05_trends`` notebook for the trends, with the records of :func:`txkit.notebook.trend_records`
and, in :func:`trend_table`, what only the monthly reports know (reconciliation mismatches
against the merchant's orders, balance breaks: :func:`txkit.notebook.report_history`).

Amounts stay exact decimals; rates are floats (ratios, not money). Underpayments count
``successful`` records, like the rate's denominator (the month's successful collections).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from txkit.analysis._common import column_or_null, money, money_scale
from txkit.analysis.exception_lists import LISTS
from txkit.analysis.underpayments import (
    COUNTED_STATUSES,
    is_underpayment,
    successful_collections,
)
from txkit.calendar import parse_month, previous_month

__all__ = [
    "METRIC_COLUMNS",
    "MONEY_IN",
    "MONEY_OUT",
    "month_over_month",
    "monthly_metrics",
    "trend_table",
]

#: The store columns :func:`monthly_metrics` reads (and nothing else).
METRIC_COLUMNS = (
    "createdAt",
    "status",
    "transType",
    "toCurrency",
    "toAmount",
    "feeAmount",
    "meta.paymentCollectionType",
    "meta.existingTransaction.expectedAmount",
)
_EXPECTED = "meta.existingTransaction.expectedAmount"
#: Money in to a currency: collections and conversions into it (their ``toAmount``). The one
#: definition of money in and out: page 01's chart, page 05 and the close summary.
MONEY_IN: Final[tuple[str, ...]] = ("collection", "conversion")
#: Money out of a currency: transfers, settlements (``toAmount``) and conversions out of it
#: (``conversion_out``: a conversion's ``fromAmount`` in its ``fromCurrency``), so money in and
#: out measure conversions alike, on both sides.
MONEY_OUT: Final[tuple[str, ...]] = ("transfer", "settlement", "conversion_out")
_INCOMING = MONEY_IN
_OUTGOING = MONEY_OUT


def monthly_metrics(
    transactions: pl.LazyFrame | pl.DataFrame, months: int | None = None
) -> pl.DataFrame:
    """One row per month and currency: volumes, success, fee and underpayment rates.

    Args:
        transactions: records (e.g. ``txkit.scan_store()``); a ``month`` column is used when
            present (the store's partition), else the UTC month of ``createdAt``.
        months: keep only the last this many months (None: all).

    Returns:
        ``month``, ``currency``, ``records``, ``successful``, ``success_rate``, ``incoming``
        (successful collections and conversions into the currency), ``outgoing`` (successful
        transfers, settlements and conversions out of the currency, at their ``fromAmount``),
        ``fees``, ``fee_rate`` (fees / the successful records' own amounts moved in and out,
        a conversion counted once), ``collections`` (successful),
        ``underpayments``, ``underpayment_rate`` (of successful collections), ``shortfall``
        (expected − paid over the underpayments), sorted by month then currency.

    Raises:
        ValueError: a needed column is missing.
    """
    lf = transactions.lazy()
    names = set(lf.collect_schema().names())
    missing = [c for c in METRIC_COLUMNS if c not in names and not c.startswith("meta.")]
    if missing:
        raise ValueError(f"missing columns {missing}: pass txkit.scan_store() or a loaded export")
    schema = lf.collect_schema()
    # Money at its own scale (six decimals for USDT/USDC): a cast to two would round it.
    scale = money_scale(schema, ["toAmount", "feeAmount", _EXPECTED, "fromAmount"])
    rows = _metric_rows(lf, names, schema, scale)
    if {"fromAmount", "fromCurrency"} <= names:
        rows = pl.concat([rows, _conversions_out(lf, names, scale)])
    frame = (
        _with_rates(_month_totals(rows), scale)
        .select(
            "month",
            "currency",
            "records",
            "successful",
            "success_rate",
            "incoming",
            "outgoing",
            "fees",
            "fee_rate",
            "collections",
            "underpayments",
            "underpayment_rate",
            "shortfall",
        )
        .sort("month", "currency")
        .collect()
    )
    if months is not None:
        keep = sorted(frame["month"].unique().to_list())[-months:]
        frame = frame.filter(pl.col("month").is_in(keep))
    return frame


def _metric_rows(lf: pl.LazyFrame, names: set[str], schema: pl.Schema, scale: int) -> pl.LazyFrame:
    month = (
        pl.col("month").cast(pl.String)
        if "month" in names
        else pl.col("createdAt").dt.strftime("%Y-%m")
    )
    expected = column_or_null(schema, _EXPECTED, pl.Decimal(38, scale))
    return lf.select(
        month.alias("month"),
        pl.col("toCurrency").cast(pl.String).alias("currency"),
        pl.lit(True).alias("record"),
        pl.col("status").is_in(COUNTED_STATUSES).alias("ok"),
        pl.col("transType").cast(pl.String).alias("type"),
        successful_collections().alias("collection"),
        is_underpayment(schema).alias("under"),
        money("toAmount", scale).alias("amount"),
        money("feeAmount", scale).alias("fee"),
        expected.cast(pl.Decimal(38, scale)).alias("expected"),
    )


def _conversions_out(lf: pl.LazyFrame, names: set[str], scale: int) -> pl.LazyFrame:
    """Money out of ``fromCurrency``, not a record of it (a conversion is counted once, in its
    ``toCurrency``)."""
    month = (
        pl.col("month").cast(pl.String)
        if "month" in names
        else pl.col("createdAt").dt.strftime("%Y-%m")
    )
    return lf.filter(
        (pl.col("transType").cast(pl.String) == "conversion") & pl.col("fromCurrency").is_not_null()
    ).select(
        month.alias("month"),
        pl.col("fromCurrency").cast(pl.String).alias("currency"),
        pl.lit(False).alias("record"),
        pl.col("status").is_in(COUNTED_STATUSES).alias("ok"),
        pl.lit("conversion_out").alias("type"),
        pl.lit(False).alias("collection"),
        pl.lit(False).alias("under"),
        money("fromAmount", scale).alias("amount"),
        pl.lit(None, pl.Decimal(38, scale)).alias("fee"),
        pl.lit(None, pl.Decimal(38, scale)).alias("expected"),
    )


def _month_totals(rows: pl.LazyFrame) -> pl.LazyFrame:
    record = pl.col("record")
    return rows.group_by("month", "currency").agg(
        records=record.sum().cast(pl.UInt32),
        successful=(pl.col("ok") & record).sum(),
        incoming=pl.col("amount").filter(pl.col("ok") & pl.col("type").is_in(_INCOMING)).sum(),
        outgoing=pl.col("amount").filter(pl.col("ok") & pl.col("type").is_in(_OUTGOING)).sum(),
        # the fee rate's base: the records' own amounts (a conversion once, not on both sides)
        moved=pl.col("amount")
        .filter(pl.col("ok") & record & pl.col("type").is_in(_INCOMING + _OUTGOING))
        .sum(),
        fees=pl.col("fee").filter(pl.col("ok")).sum(),
        collections=pl.col("collection").sum(),
        underpayments=pl.col("under").sum(),
        shortfall=(pl.col("expected") - pl.col("amount")).filter(pl.col("under")).sum(),
    )


def _with_rates(totals: pl.LazyFrame, scale: int) -> pl.LazyFrame:
    """Null where undefined; no shortfall is 0."""
    zero = pl.lit(0, pl.Decimal(38, scale))
    return totals.with_columns(
        success_rate=pl.col("successful") / pl.col("records"),
        fee_rate=pl.when(pl.col("moved") != 0).then(
            pl.col("fees").cast(pl.Float64) / pl.col("moved").cast(pl.Float64)
        ),
        underpayment_rate=pl.when(pl.col("collections") > 0).then(
            pl.col("underpayments") / pl.col("collections")
        ),
        shortfall=pl.col("shortfall").fill_null(zero),
    )


def month_over_month(metrics: pl.DataFrame, month: str) -> pl.DataFrame:
    """The month's metrics per currency beside the previous month's (``prev_`` columns).

    Every currency of either month is listed (none dropped); a currency absent in one month
    has nulls on that side.
    """
    month = parse_month(month)
    before = previous_month(month)
    now = metrics.filter(pl.col("month") == month).drop("month")
    prev = metrics.filter(pl.col("month") == before).drop("month")
    prev = prev.rename({c: f"prev_{c}" for c in prev.columns if c != "currency"})
    return now.join(prev, on="currency", how="full", coalesce=True).sort("currency")


def trend_table(metrics: pl.DataFrame, history: pl.DataFrame) -> pl.DataFrame:
    """One row per month and currency: :func:`monthly_metrics` with that currency's match rate
    and balance breaks from the month's report.

    Each row holds its own currency's figures (a month's total on every currency row read as
    18 breaks per currency). Null when the month has no report, or its list recorded no
    per-currency figures (a list without a currency); a currency absent from a recorded list
    has 0 breaks.

    Args:
        metrics: :func:`monthly_metrics`.
        history: :func:`txkit.notebook.report_history` (``month``, ``list``, ``currency``,
            ``rows``, ``population``).
    """
    per_currency = history.filter(pl.col("currency").is_not_null())

    def figure(name: str, value: pl.Expr) -> pl.DataFrame:
        return per_currency.filter(pl.col("list") == name).select("month", "currency", value)

    breaks = figure(LISTS["balance_breaks"].name, pl.col("rows").alias("breaks"))
    breaks_months = breaks["month"].unique().implode()
    matched = figure(
        LISTS["reconciliation_mismatches"].name,
        pl.when(pl.col("population") > 0)
        .then(1 - pl.col("rows") / pl.col("population"))
        .alias("match_rate"),
    )
    out = (
        # The metrics' order (month, currency): a join keeps none unless asked.
        metrics.join(breaks, on=["month", "currency"], how="left", maintain_order="left")
        .join(matched, on=["month", "currency"], how="left", maintain_order="left")
        .with_columns(
            # A recorded list without the currency: none of its rows were in that currency.
            breaks=pl.when(pl.col("month").is_in(breaks_months))
            .then(pl.col("breaks").fill_null(0))
            .otherwise(pl.col("breaks"))
            .cast(pl.Int64),
            match_rate=pl.col("match_rate").cast(pl.Float64),
        )
    )
    return out.select(*metrics.columns, "match_rate", "breaks")
