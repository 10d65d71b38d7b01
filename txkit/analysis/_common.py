"""Input checks and exact money helpers shared by the analysis modules (private)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Final

import polars as pl

from txkit.schema import MONEY_SCALE, Kind

Frame = pl.DataFrame | pl.LazyFrame

_INTEGERS: Final = (
    pl.Int8,
    pl.Int16,
    pl.Int32,
    pl.Int64,
    pl.Int128,
    pl.UInt8,
    pl.UInt16,
    pl.UInt32,
    pl.UInt64,
)
_ACCEPTED: Final[dict[str, str]] = {
    "money": "Decimal or integer",
    "string": "String",
    "datetime": "Datetime",
    "bool": "Boolean",
    "int": "integer",
    "number": "integer or float",
    "date": "Date or Datetime",
}


def _is_integer(dtype: pl.DataType) -> bool:
    return isinstance(dtype, _INTEGERS)


def _accepts(kind: Kind, dtype: pl.DataType) -> bool:
    if isinstance(dtype, pl.Null):
        return True  # an all-null column (e.g. a field no record carries)
    if kind == "money":
        return isinstance(dtype, pl.Decimal) or _is_integer(dtype)
    if kind == "string":
        return isinstance(dtype, pl.String | pl.Categorical | pl.Enum)
    if kind == "datetime":
        return isinstance(dtype, pl.Datetime)
    if kind == "bool":
        return isinstance(dtype, pl.Boolean)
    if kind == "int":
        return _is_integer(dtype)
    if kind == "number":
        return _is_integer(dtype) or isinstance(dtype, pl.Float32 | pl.Float64)
    if kind == "date":
        return isinstance(dtype, pl.Date | pl.Datetime)
    raise AssertionError(kind)  # pragma: no cover


def lazy(frame: object, what: str, caller: str) -> pl.LazyFrame:
    """Return ``frame`` as a LazyFrame, or raise ValueError for anything else."""
    if isinstance(frame, pl.LazyFrame):
        return frame
    if isinstance(frame, pl.DataFrame):
        return frame.lazy()
    raise ValueError(
        f"{caller}: {what} must be a polars DataFrame or LazyFrame, got {type(frame).__name__}"
    )


def check_columns(
    schema: pl.Schema,
    required: Mapping[str, Kind],
    what: str,
    caller: str,
    optional: Mapping[str, Kind] | None = None,
) -> None:
    """Raise ValueError naming every missing required column and every column of a wrong type.

    Args:
        schema: the frame's schema.
        required: columns that must be present, with what they must hold.
        what: how the frame is called in messages (``transactions``, ``orders``).
        caller: the public function, for messages.
        optional: columns that may be absent but, when present, must hold the given kind.
    """
    missing = [name for name in required if name not in schema]
    wrong = [
        f"{name!r} is {schema[name]}, expected {_ACCEPTED[kind]}"
        + (" (floats are not exact money)" if schema[name].is_float() and kind == "money" else "")
        for name, kind in {**required, **(optional or {})}.items()
        if name in schema and not _accepts(kind, schema[name])
    ]
    problems = []
    if missing:
        problems.append(
            "missing column" + ("s " if len(missing) > 1 else " ") + ", ".join(map(repr, missing))
        )
    if wrong:
        problems.append("wrong type: " + "; ".join(wrong))
    if problems:
        accepted = ", ".join(f"{n} ({_ACCEPTED[k]})" for n, k in required.items())
        hint = ""
        if what == "transactions":
            hint = " A frame from txkit.load_transactions has them all."
        raise ValueError(
            f"{caller}: {what} has "
            + " and ".join(problems)
            + f". Required columns: {accepted}.{hint}"
        )


def column_or_null(schema: pl.Schema, name: str, dtype: pl.DataType) -> pl.Expr:
    """The column cast to ``dtype``, or a typed null literal when the frame lacks it."""
    if name in schema:
        return pl.col(name).cast(dtype)
    return pl.lit(None, dtype=dtype).alias(name)


def money_scale(schema: pl.Schema, names: Iterable[str]) -> int:
    """The common scale of the money columns ``names``: their widest, at least MONEY_SCALE."""
    scales = [MONEY_SCALE]
    for name in names:
        dtype = schema.get(name)
        if isinstance(dtype, pl.Decimal):
            scales.append(dtype.scale or 0)
    return max(scales)


def to_minor(expr: pl.Expr, scale: int) -> pl.Expr:
    """Exact integer minor units (``Int128``) of a decimal or integer money expression.

    ``scale`` must be at least the expression's own scale (see :func:`money_scale`), so the
    cast to ``Decimal(38, scale)`` only appends zeros.
    """
    return (expr.cast(pl.Decimal(38, scale)) * (10**scale)).cast(pl.Int128)


def from_minor(expr: pl.Expr, scale: int) -> pl.Expr:
    """Back from integer minor units to ``Decimal(38, scale)``, exactly."""
    unit = pl.lit(Decimal(1).scaleb(-scale), dtype=pl.Decimal(38, scale))
    return (expr.cast(pl.Decimal(38, 0)) * unit).cast(pl.Decimal(38, scale))


def money(name: str, scale: int) -> pl.Expr:
    """A money column at ``scale`` as ``Decimal(38, scale)``."""
    return pl.col(name).cast(pl.Decimal(38, scale))


def to_minor_map(values: Mapping[str, object], scale: int, what: str) -> dict[str, int]:
    """Convert a currency -> amount mapping (Decimal, int or str) to minor units, exactly."""
    out: dict[str, int] = {}
    for currency, value in values.items():
        if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
            raise ValueError(
                f"{what}[{currency!r}] must be a Decimal, int or str amount, got {value!r}"
            )
        try:
            amount = Decimal(value)
        except ArithmeticError as exc:
            raise ValueError(f"{what}[{currency!r}] is not a number: {value!r}") from exc
        minor = amount.scaleb(scale)
        if not amount.is_finite() or minor != minor.to_integral_value():
            raise ValueError(
                f"{what}[{currency!r}] = {value!r} has more than {scale} decimals or is not finite"
            )
        out[currency] = int(minor)
    return out


def decimals_of(value: object) -> int:
    """Decimal places of an exact amount given as ``Decimal`` or ``str`` (0 for anything
    else, and for what :func:`to_minor_map` will reject)."""
    if isinstance(value, bool) or not isinstance(value, Decimal | str):
        return 0
    try:
        exponent = Decimal(value).as_tuple().exponent
    except ArithmeticError:
        return 0
    return max(0, -exponent) if isinstance(exponent, int) else 0


def tolerance_scales(tolerance: object) -> list[int]:
    """Decimal places of an amount tolerance (or of each per currency), so that the common
    scale holds it exactly."""
    values = tolerance.values() if isinstance(tolerance, Mapping) else [tolerance]
    return [decimals_of(value) for value in values]


def amount_tolerances(
    tolerance: object, scale: int, who: str
) -> dict[str, Decimal] | Decimal | None:
    """``amount_tolerance`` as an exact Decimal at ``scale``, or one per currency (a mapping).

    Raises:
        ValueError: not an exact amount 0 or more (named with ``who``, the caller's name).
    """
    if tolerance is None:
        return None
    if isinstance(tolerance, Mapping):
        return {
            str(currency): _one_tolerance(value, scale, f"{who}: amount_tolerance[{currency!r}]")
            for currency, value in tolerance.items()
        }
    return _one_tolerance(tolerance, scale, f"{who}: amount_tolerance")


def _one_tolerance(value: object, scale: int, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise ValueError(
            f"{what} must be a Decimal, int or exact str amount (or a mapping of currency to "
            f"one), got {value!r}"
        )
    try:
        amount = Decimal(value)
    except ArithmeticError:
        raise ValueError(f"{what} is not a number: {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{what} must be a finite amount, 0 or more, got {value!r}")
    return amount.quantize(Decimal(1).scaleb(-scale))
