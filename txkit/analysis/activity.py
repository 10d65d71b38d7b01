"""Customer activity of the checkout: ``meta.customerActivity.history`` as a long table."""

from __future__ import annotations

import polars as pl

__all__ = ["activity_history"]

_HISTORY = "meta.customerActivity.history"


def activity_history(df: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Return ``meta.customerActivity.history`` as a long table.

    Args:
        df: a frame from :func:`txkit.load_transactions` (eager or lazy).

    Returns:
        One row per history entry: ``id`` (the transaction), ``position`` (0-based order in the
        record's history), ``type``, ``message`` and ``time``.

    Example:
        >>> hist = activity_history(df)
        >>> hist.filter(pl.col("type") == "error").group_by("message").len()
    """
    lazy = df.lazy() if isinstance(df, pl.DataFrame) else df
    return (
        lazy.select("id", pl.col(_HISTORY).alias("h"))
        .filter(pl.col("h").list.len() > 0)
        .with_columns(position=pl.int_ranges(0, pl.col("h").list.len()))
        .explode("h", "position")
        .select(
            "id",
            pl.col("position").cast(pl.Int64),
            pl.col("h").struct.field("type"),
            pl.col("h").struct.field("message"),
            pl.col("h").struct.field("time"),
        )
        .collect()
    )
