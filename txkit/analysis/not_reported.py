"""Records that state no balance: successful, with every balance-after field 0 or absent.

The provider documents such a KES transfer. :func:`~txkit.analysis.balance_summary` counts
them as ``not_reported`` (never as breaks); this lists them, one row each, so that they can be
handed to the provider as an exception list.
"""

from __future__ import annotations

import polars as pl

from txkit.analysis._common import Frame, column_or_null, lazy, money_scale, to_minor
from txkit.analysis.balances import _BALANCES

__all__ = ["not_reported_balances"]


def not_reported_balances(transactions: Frame) -> pl.DataFrame:
    """Successful records whose balance-after fields are all 0 or absent.

    Args:
        transactions: the export (eager or lazy), e.g. from :func:`txkit.load_transactions`;
            needs ``id``, ``createdAt``, ``status``, ``transType`` and ``toCurrency`` (the
            balance-after fields may be absent: then every successful record is listed).

    Returns:
        ``id``, ``createdAt``, ``transType``, ``currency`` (``toCurrency``), ``toAmount`` and
        the four balance-after fields as given, sorted by ``createdAt`` then ``id``.

    Raises:
        ValueError: not a frame, or a required column is missing.
    """
    lf = lazy(transactions, "transactions", "not_reported_balances")
    schema = lf.collect_schema()
    missing = [
        c for c in ("id", "createdAt", "status", "transType", "toCurrency") if c not in schema
    ]
    if missing:
        raise ValueError(
            f"not_reported_balances: missing columns {missing}; pass a frame from "
            "txkit.load_transactions"
        )
    scale = money_scale(schema, [c for c in _BALANCES if c in schema])
    fields = [column_or_null(schema, name, pl.Decimal(38, scale)) for name in _BALANCES]
    none_reported = pl.all_horizontal(to_minor(f, scale).fill_null(0) == 0 for f in fields)
    return (
        lf.filter((pl.col("status") == "successful") & none_reported)
        .select(
            pl.col("id").cast(pl.String),
            "createdAt",
            pl.col("transType").cast(pl.String),
            pl.col("toCurrency").cast(pl.String).alias("currency"),
            column_or_null(schema, "toAmount", pl.Decimal(38, scale)),
            *fields,
        )
        .sort("createdAt", "id")
        .collect()
    )
