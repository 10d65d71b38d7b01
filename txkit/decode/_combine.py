"""Combining page frames: aligning undocumented columns and unifying types across pages.

Pages decoded apart can differ: an undocumented field may be missing on one page, a money
column may carry more decimals on another (a wider scale, never rounded), a field may be a
number on one page and text on another. :func:`combine` reconciles them losslessly or raises a
:class:`~txkit.errors.SchemaError` naming a record.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from txkit.errors import SchemaError
from txkit.schema import COLUMNS


def combine(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate page frames whose undocumented columns or decimal scales may differ.

    Raises:
        SchemaError: one field is an object on one page and a scalar on another, or a column's
            types across pages cannot be reconciled without loss.
    """
    frames = [f for f in frames if f.width]
    if not frames:
        return pl.DataFrame(schema=COLUMNS)
    # Each page's schema is read once: ``frame.schema`` and ``frame.columns`` build a new
    # object at each call, per column that added up (docs/benchmarks.md).
    schemas = [frame.schema for frame in frames]
    target: dict[str, pl.DataType] = {}
    for schema in schemas:
        for name, dtype in schema.items():
            target[name] = _unify(name, target[name], dtype, frames) if name in target else dtype
    _check_cross_page_paths(target, frames)
    _check_rescaled_money(target, frames, schemas)
    aligned = [_aligned(f, s, target) for f, s in zip(frames, schemas, strict=True)]
    return pl.concat(aligned, how="vertical", rechunk=False)


def _aligned(
    frame: pl.DataFrame, schema: pl.Schema, target: dict[str, pl.DataType]
) -> pl.DataFrame:
    if list(schema.items()) == list(target.items()):
        return frame
    return frame.select(
        _align(pl.col(n), schema[n], d).alias(n) if n in schema else pl.lit(None, dtype=d).alias(n)
        for n, d in target.items()
    )


def _check_rescaled_money(
    target: dict[str, pl.DataType], frames: Sequence[pl.DataFrame], schemas: Sequence[pl.Schema]
) -> None:
    """A scale widened by another page (``1.1000000000000001``: 16 decimals) can push an amount
    past 38 digits."""
    for name, dtype in target.items():
        if not isinstance(dtype, pl.Decimal):
            continue
        room = 38 - (dtype.scale or 0)
        for frame, schema in zip(frames, schemas, strict=True):
            source = schema.get(name)
            if source is None or source == dtype or not source.is_numeric():
                continue
            largest = frame.select(pl.col(name).abs().max()).item()
            if largest is not None and len(str(int(largest))) > room:
                row = frame.filter(pl.col(name).abs() == largest).head(1)
                raise SchemaError(
                    f"an amount does not fit in 38 digits beside another page's amounts "
                    f"with {dtype.scale} decimals",
                    record_id=row["id"][0] if "id" in row.columns else None,
                    field=name,
                    value=row[name][0],
                )


def _align(expr: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    if source == target:
        return expr
    if (
        isinstance(target, pl.List)
        and isinstance(target.inner, pl.Struct)
        and isinstance(source, pl.List)
        and isinstance(source.inner, pl.Struct)
    ):
        have = {f.name for f in source.inner.fields}
        return expr.list.eval(
            pl.struct(
                pl.element().struct.field(f.name).cast(f.dtype)
                if f.name in have
                else pl.lit(None, dtype=f.dtype).alias(f.name)
                for f in target.inner.fields
            )
        )
    return expr.cast(target)


def _unify(
    name: str, a: pl.DataType, b: pl.DataType, frames: Sequence[pl.DataFrame]
) -> pl.DataType:
    if a == b:
        return a
    if isinstance(a, pl.Null):
        return b
    if isinstance(b, pl.Null):
        return a
    numeric = (pl.Decimal, pl.Int64)
    if isinstance(a, numeric) and isinstance(b, numeric):
        scale = max(getattr(a, "scale", 0) or 0, getattr(b, "scale", 0) or 0)
        return pl.Decimal(38, scale)
    if (
        isinstance(a, pl.List)
        and isinstance(b, pl.List)
        and isinstance(a.inner, pl.Struct)
        and isinstance(b.inner, pl.Struct)
    ):
        fields = {f.name: f.dtype for f in a.inner.fields}
        fields |= {f.name: f.dtype for f in b.inner.fields}
        return pl.List(pl.Struct(fields))
    if {type(a), type(b)} <= {pl.String, pl.Decimal, pl.Int64}:
        return pl.String()  # number on one page, non-numeric text on another: keep the text
    for frame in frames:
        if name in frame.columns and frame.schema[name] == b:
            row = frame.filter(pl.col(name).is_not_null()).head(1)
            if row.height:
                raise SchemaError(
                    f"the field's type changes between pages ({a} vs {b})",
                    record_id=row["id"][0] if "id" in row.columns else None,
                    field=name,
                    value=row[name][0],
                )
    return a


def _check_cross_page_paths(target: dict[str, pl.DataType], frames: Sequence[pl.DataFrame]) -> None:
    for name in target:
        prefix = f"{name}."
        if name in COLUMNS or not any(o.startswith(prefix) for o in target):
            continue
        for frame in frames:
            if name in frame.columns:
                row = frame.filter(pl.col(name).is_not_null()).head(1)
                if row.height:
                    raise SchemaError(
                        "a field is an object on one page and a scalar on another",
                        record_id=row["id"][0],
                        field=name,
                        value=row[name][0],
                    )
