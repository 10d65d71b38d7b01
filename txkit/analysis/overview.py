"""What is in an export: volumes by type, status, currency and day; fees and taxes.

Sums are exact decimals; rates and shares are floats (they are ratios, not amounts).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from txkit.money import format_money

__all__ = ["daily_volume", "explore_findings", "fee_summary", "status_mix", "volume_summary"]

Frame = pl.DataFrame | pl.LazyFrame


def _lazy(df: Frame) -> pl.LazyFrame:
    return df.lazy() if isinstance(df, pl.DataFrame) else df


def _require(df: Frame, columns: Sequence[str]) -> None:
    names = set(_lazy(df).collect_schema().names())
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(
            f"missing columns {missing}: pass a frame from txkit.load_transactions "
            "(or one with these columns)"
        )


def volume_summary(
    df: Frame, by: Sequence[str] = ("transType", "status", "toCurrency")
) -> pl.DataFrame:
    """Count, amount, fees and taxes per group.

    Args:
        df: transactions (eager or lazy).
        by: grouping columns.

    Returns:
        One row per group: the ``by`` columns, ``count``, ``amount`` (sum of ``toAmount``),
        ``fees``, ``taxes`` (exact decimals), sorted by the ``by`` columns.
    """
    _require(df, [*by, "toAmount", "feeAmount", "taxAmount"])
    return (
        _lazy(df)
        .group_by(list(by))
        .agg(
            count=pl.len(),
            amount=pl.col("toAmount").sum(),
            fees=pl.col("feeAmount").sum(),
            taxes=pl.col("taxAmount").sum(),
        )
        .sort(list(by), nulls_last=True)
        .collect()
    )


def status_mix(df: Frame) -> pl.DataFrame:
    """Share of each status per transaction type (counts and shares of the type's records).

    Returns:
        ``transType``, ``status``, ``count``, ``share`` (0-1), sorted by type, then count
        (largest first), then status (statuses of equal count by name: the same data always
        reads the same).
    """
    _require(df, ["transType", "status"])
    return (
        _lazy(df)
        .group_by("transType", "status")
        .agg(count=pl.len())
        .with_columns(share=pl.col("count") / pl.col("count").sum().over("transType"))
        .sort(["transType", "count", "status"], descending=[False, True, False])
        .collect()
    )


def daily_volume(df: Frame, *, currency: str | None = None) -> pl.DataFrame:
    """Successful amount and count per UTC day, transaction type and currency, each side of a
    record in its own currency: a conversion is money in to its ``toCurrency`` (``conversion``,
    its ``toAmount``) and money out of its ``fromCurrency`` (``conversion_out``, its
    ``fromAmount``), as money in and out are defined everywhere
    (:data:`txkit.analysis.trends.MONEY_IN`, :data:`~txkit.analysis.trends.MONEY_OUT`).

    Args:
        df: transactions.
        currency: keep one currency (amounts of different currencies do not add up).

    Returns:
        ``day``, ``transType``, ``currency``, ``count``, ``amount`` (exact), sorted by day.
    """
    _require(df, ["createdAt", "transType", "status", "toCurrency", "toAmount"])
    lf = _lazy(df).filter(pl.col("status") == "successful")
    day = pl.col("createdAt").dt.date().alias("day")
    sides = [
        lf.select(day, pl.col("transType").cast(pl.String),
                  pl.col("toCurrency").cast(pl.String).alias("currency"), pl.col("toAmount")),
    ]  # fmt: skip
    if {"fromCurrency", "fromAmount"} <= set(lf.collect_schema().names()):
        conversions = lf.filter(
            (pl.col("transType").cast(pl.String) == "conversion")
            & pl.col("fromCurrency").is_not_null()
        )
        sides.append(
            conversions.select(
                day,
                pl.lit("conversion_out").alias("transType"),
                pl.col("fromCurrency").cast(pl.String).alias("currency"),
                pl.col("fromAmount").cast(lf.collect_schema()["toAmount"]).alias("toAmount"),
            )
        )
    rows = pl.concat(sides)
    if currency is not None:
        rows = rows.filter(pl.col("currency") == currency)
    return (
        rows.group_by("day", "transType", "currency")
        .agg(count=pl.len(), amount=pl.col("toAmount").sum())
        .sort(["day", "transType", "currency"])
        .collect()
    )


def fee_summary(df: Frame) -> pl.DataFrame:
    """Fees and taxes of successful records per type and currency, with effective rates.

    Returns:
        ``transType``, ``toCurrency``, ``count``, ``amount``, ``fees``, ``taxes`` (exact), and
        ``fee_rate`` (fees / amount) and ``tax_rate`` (taxes / fees) as floats.
    """
    _require(df, ["transType", "status", "toCurrency", "toAmount", "feeAmount", "taxAmount"])
    return (
        _lazy(df)
        .filter(pl.col("status") == "successful")
        .group_by("transType", "toCurrency")
        .agg(
            count=pl.len(),
            amount=pl.col("toAmount").sum(),
            fees=pl.col("feeAmount").sum(),
            taxes=pl.col("taxAmount").sum(),
        )
        .with_columns(
            fee_rate=pl.col("fees").cast(pl.Float64) / pl.col("amount").cast(pl.Float64),
            tax_rate=pl.col("taxes").cast(pl.Float64) / pl.col("fees").cast(pl.Float64),
        )
        .sort(["transType", "toCurrency"])
        .collect()
    )


_OPEN = ("ongoing", "pending", "processing", "verified", "initiated")
_FAILED = ("failed", "declined", "expired", "abandoned", "reversed")


def explore_findings(df: Frame) -> list[str]:
    """Plain-language findings about an export, computed from it (for "what to look at").

    Returns:
        Sentences with exact amounts: size and success share, the volumes of every
        currency, the busiest day, records still open (their status may change), failures,
        and fees.
    """
    _require(df, ["createdAt", "transType", "status", "toCurrency", "toAmount", "feeAmount"])
    frame = _lazy(df).collect()
    if frame.height == 0:
        return ["The export is empty: check the month and the filters."]
    ok = frame.filter(pl.col("status") == "successful")
    out = [
        f"{frame.height:,} transactions, {ok.height:,} successful ({ok.height / frame.height:.1%})."
    ]
    volume = (
        ok.group_by("toCurrency")
        .agg(amount=pl.col("toAmount").sum(), count=pl.len(), fees=pl.col("feeAmount").sum())
        .sort(["count", "toCurrency"], descending=[True, False])  # ties by currency code
    )
    for row in volume.iter_rows(named=True):  # every currency: none is dropped
        rate = float(row["fees"] or 0) / float(row["amount"]) if row["amount"] else 0.0
        out.append(
            f"{row['toCurrency']}: {row['count']:,} successful records moving "
            f"{format_money(row['amount'], row['toCurrency'])}; fees "
            f"{format_money(row['fees'], row['toCurrency'])} ({rate:.2%})."
        )
    main = volume["toCurrency"][0]
    busiest = (
        ok.filter(pl.col("toCurrency") == main)
        .group_by(pl.col("createdAt").dt.date().alias("day"))
        .agg(amount=pl.col("toAmount").sum(), count=pl.len())
        .sort(["amount", "day"], descending=[True, False])
        .row(0, named=True)
    )
    out.append(
        f"Busiest {main} day by amount: {busiest['day']} with {busiest['count']:,} successful "
        "records "
        f"({format_money(busiest['amount'], main)})."
    )
    still_open = frame.filter(pl.col("status").is_in(_OPEN))
    if still_open.height:
        counts = (  # ties by name: the same data always reads the same
            still_open.group_by("status").len().sort(["len", "status"], descending=[True, False])
        )
        listed = ", ".join(f"{r['len']:,} {r['status']}" for r in counts.iter_rows(named=True))
        out.append(
            f"{still_open.height:,} records are still open ({listed}): their status can change "
            "(verified becomes successful, unfinished payments become abandoned); rerun later."
        )
    failed = frame.filter(pl.col("status").is_in(_FAILED))
    if failed.height:
        worst = (
            failed.group_by("transType").len().sort(["len", "transType"], descending=[True, False])
        ).row(0, named=True)
        out.append(
            f"{failed.height:,} records did not complete ({failed.height / frame.height:.1%}); "
            f"most of them are {worst['transType']}s ({worst['len']:,})."
        )
    return out
