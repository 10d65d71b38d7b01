"""Keeping the store cheap to open and read: log checkpoints at a fixed interval, and one data
file per month.

**Checkpoints** (:func:`txkit.store._write.write_checkpoint`, after each commit). Opening a
Delta table reads its newest checkpoint and the commits after it. txkit writes a checkpoint of
every version it commits, so opening the newest version reads that checkpoint alone whether the
store has seen 10 syncs or 365, and keeps one at every version divisible by
:data:`txkit.config.STORE_CHECKPOINT_INTERVAL` (10), so an older version is read from at most
10 commits: each commit removes the checkpoints before the last two that are neither at the
interval nor needed because the commits before them are gone
(:func:`txkit.store._write.drop_stale_checkpoints`). Replaying up to nine commits after the
interval's checkpoint is cheap (docs/benchmarks.md). delta-rs's own default interval is 100,
and its post-commit hook would also remove log entries older than 30 days, including those of
versions a report cites: txkit turns the hook off and leaves the log to the retention policy.

**Compaction.** A sync writes one file per month it touches, but a month can hold several (a
store another tool wrote to): :func:`compact_months` rewrites each such month
as one file, in one commit that carries the same txkit metadata (coverage, source) and the new
file's digest. Each file is read with its digest checked; the rows are the same, in the order
txkit reads them (``createdAt``, then ``id``).
"""

from __future__ import annotations

import io
import os
from datetime import datetime

import polars as pl

from txkit.store._location import objects
from txkit.store._state import commit_metadata, read_state
from txkit.store._table import open_table, read_verified, table_files
from txkit.store._write import commit

__all__ = ["compact_months", "crowded_months"]


def crowded_months(store: str | os.PathLike[str], version: int | None = None) -> list[str]:
    """The months of ``version`` (default: the newest) held in more than one data file."""
    table = open_table(store, version)
    if table is None:
        return []
    counts: dict[str, int] = {}
    for _, month, _ in table_files(table):
        counts[month] = counts.get(month, 0) + 1
    return sorted(m for m, n in counts.items() if n > 1 and m)


def compact_months(
    store: str | os.PathLike[str], *, now: datetime | None = None, months: list[str] | None = None
) -> int | None:
    """Rewrite each month held in several data files as one file, in one commit.

    Args:
        store: the store folder or URI (a local one must be locked by the caller).
        now: the clock recorded as the commit's sync time (default: now).
        months: the months to compact (default: :func:`crowded_months`).

    Returns:
        The new table version, or None when no month needed it.

    Raises:
        StoreDamagedError: a file of such a month is missing or changed.
        StoreError: the store cannot be written.
    """
    state = read_state(store)
    if state.version is None or state.source is None:
        return None
    months = crowded_months(store, state.version) if months is None else months
    if not months:
        return None
    table = open_table(store, state.version)
    files = objects(store)
    frames = []
    for month in months:
        parts = [
            pl.read_parquet(io.BytesIO(read_verified(files, store, rel, month,
                                                     state.files.get(rel), state.version)))
            for rel, m, _ in table_files(table)
            if m == month
        ]  # fmt: skip
        merged = pl.concat(parts, how="diagonal_relaxed").sort(["createdAt", "id"],
                                                                nulls_last=True)  # fmt: skip
        frames.append(merged.with_columns(pl.lit(month).alias("month")))
    meta = commit_metadata(state.source, state.lookback_days, state.coverage, now)
    return commit(store, state.version, frames, months, meta, state.files)
