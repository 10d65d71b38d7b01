"""The final frame: one row per ``id`` (:func:`dedupe_latest`), ordered (:func:`finalize`).

:func:`dedupe_latest` is the one rule for choosing between copies of a record, used by the
loader (:func:`assemble`) and by the store (:func:`txkit.store.sync`): the newest ``updatedAt``
wins; on equal or missing ``updatedAt``, the copy fetched later wins.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from txkit.decode._combine import combine
from txkit.errors import SchemaError
from txkit.schema import COLUMNS


def finalize(frame: pl.DataFrame) -> pl.DataFrame:
    """Order columns (documented first, then undocumented by name) and rows (createdAt, id)."""
    extra = sorted(c for c in frame.columns if c not in COLUMNS)
    frame = frame.select([*COLUMNS, *extra])
    order = frame.select(pl.arg_sort_by(["createdAt", "id"], nulls_last=True)).to_series()
    # Rows that are in order already (a month read back from the store) are not gathered:
    # the gather of the nested columns is most of a sort's cost.
    if (order == pl.int_range(frame.height, dtype=order.dtype, eager=True)).all():
        return frame
    return frame[order]


def dedupe_latest(frames: pl.DataFrame | Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Keep one row per ``id``: the newest ``updatedAt``; on a tie, the copy fetched later.

    A copy with an ``updatedAt`` beats one without. When both copies have the same
    ``updatedAt``, or neither has one, the one that comes later (in a later frame, or lower in
    the same frame) wins: pass the frames in the order they were fetched.

    Args:
        frames: a frame, or frames in the order they were fetched (aligned by :func:`combine`).

    Returns:
        The records, one row per ``id``, in no particular order (see :func:`finalize`).

    Raises:
        SchemaError: a record has no ``id``, or the frames' types cannot be reconciled.

    Example:
        >>> latest = dedupe_latest([stored, refetched])  # doctest: +SKIP
    """
    frame = frames if isinstance(frames, pl.DataFrame) else combine(frames)
    return _dedupe(frame)


def _dedupe(frame: pl.DataFrame) -> pl.DataFrame:
    missing = frame.filter(pl.col("id").is_null())
    if missing.height:
        row = missing.row(0, named=True)
        raise SchemaError(
            "a record has no id, so it cannot be deduplicated or verified",
            record_id=None,
            field="id",
            value={k: row[k] for k in ("_id", "transactionReference", "createdAt") if k in row},
        )
    if frame.height == frame["id"].n_unique():
        return frame
    # A stable sort keeps the fetch order among equal (or missing, sorted first) updatedAt,
    # so the last row of each id is the newest, or the one fetched later.
    return frame.sort("updatedAt", nulls_last=False, maintain_order=True).unique(
        subset="id", keep="last", maintain_order=False
    )


def assemble(frames: list[pl.DataFrame], keep: pl.Expr | None = None) -> pl.DataFrame:
    """Build the final frame from page frames, **consuming** ``frames`` to bound memory.

    Keeps the rows matching ``keep`` (filtered piece by piece, never as a full copy), aligns
    the pieces (:func:`combine`), keeps one row per ``id`` (:func:`dedupe_latest`: pass the
    frames in the order they were fetched), and sorts by ``createdAt`` then ``id`` one column
    at a time, releasing each unsorted column as soon as its sorted copy exists. The peak is
    then about one frame plus one column, instead of the two or three whole frames that
    filter-then-sort would hold.

    Args:
        frames: the page frames, in fetch order; the list is emptied.
        keep: an optional row predicate (the local date range).

    Returns:
        The final frame, as :func:`finalize` orders it.

    Raises:
        SchemaError: a record without ``id``, or types :func:`combine` cannot reconcile.
    """
    if keep is not None:
        for i, piece in enumerate(frames):
            frames[i] = piece.filter(keep)
    frame = combine(frames)
    frames.clear()
    frame = _dedupe(frame)
    order = frame.select(
        pl.arg_sort_by(["createdAt", "id"], nulls_last=True).alias("order")
    ).to_series()
    extra = sorted(c for c in frame.columns if c not in COLUMNS)
    names = [*COLUMNS, *extra]
    columns = {name: frame.get_column(name) for name in names}
    del frame
    out: list[pl.Series] = []
    for start in range(0, len(names), 8):
        # 8 columns at a time, released as they go; rechunked first, as a gather from many
        # chunks is much slower (docs/benchmarks.md).
        group = pl.DataFrame([columns.pop(name) for name in names[start : start + 8]]).rechunk()
        out.extend(group[order].get_columns())
        del group
    return pl.DataFrame(out)
