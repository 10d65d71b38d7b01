"""The exact path: a page parsed by :mod:`json` with exact decimals, converted value by value.

It runs only for a page the fast path (:mod:`txkit.decode._fast`) cannot prove it read
losslessly. It keeps unknown fields (flattened like the documented ones, with a fitting type),
coerces a drifting type when that loses nothing, and otherwise raises a
:class:`~txkit.errors.SchemaError` naming the record, the field and the value. It also owns the
envelope checks every page gets (``success``, ``data.transactions``, ``data.total``).
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import polars as pl

from txkit.config import MAX_TOTAL_VAR, max_total_setting
from txkit.decode._wire import MAX_EPOCH_MS, MIN_EPOCH_MS
from txkit.errors import (
    ApiError,
    LimitExceededError,
    ResponseFormatError,
    SchemaError,
    excerpt,
)
from txkit.schema import (
    COLUMNS,
    EPOCH_MS_COLUMNS,
    FIELD_BY_NAME,
    JSON_TEXT_COLUMNS,
    JSON_TEXT_LIST_COLUMNS,
    MONEY_SCALE,
    OBJECT_LIST_COLUMNS,
    TIMESTAMP,
)


@dataclass(frozen=True, slots=True)
class DecodedPage:
    """One decoded page of the export.

    Attributes:
        frame: the page's records, flattened and typed (see :data:`txkit.schema.COLUMNS`).
        total: the service's ``data.total`` for the query.
        message: the envelope's ``message``.
        exact: True when the page went through the exact (slow) path.
    """

    frame: pl.DataFrame
    total: int
    message: str | None
    exact: bool

    @property
    def count(self) -> int:
        """Number of records on the page."""
        return self.frame.height


#: Nesting depth a record's values may reach (a documented record needs 4: meta,
#: customerActivity, history, an entry); deeper values fail with a one-line SchemaError.
MAX_DEPTH: Final = 32

#: Default of the largest ``data.total`` believed (``TXKIT_MAX_TOTAL`` raises it): 100 million
#: records is about 120 GB of JSON. A larger total is refused before anything is sized from it.
DEFAULT_MAX_TOTAL: Final = 100_000_000

# Integer tokens longer than this are kept as Decimal (so they reach the 38-digit checks)
# instead of Python ints (whose text conversion is capped at 4,300 digits).
_MAX_INT_TOKEN: Final = 40


def max_total() -> int:
    """The largest ``data.total`` accepted: ``TXKIT_MAX_TOTAL`` or :data:`DEFAULT_MAX_TOTAL`.

    Raises:
        ConfigError: ``TXKIT_MAX_TOTAL`` is not a positive integer.
    """
    setting = max_total_setting()
    return DEFAULT_MAX_TOTAL if setting is None else setting


def check_total(total: int, request: Any = None) -> int:
    """Refuse a ``data.total`` above :func:`max_total` (before anything is sized from it).

    Raises:
        LimitExceededError: the total is above the bound (``bound="max_total"``).
    """
    bound = max_total()
    if total > bound:
        shown = f"{total:,}" if total < 10**40 else f"a {len(str(total))}-digit number"
        raise LimitExceededError(
            f"the service reports data.total = {shown}, above the plausible maximum of "
            f"{bound:,} records (max_total); if the export really is that large, raise it with "
            f"{MAX_TOTAL_VAR}=<records>",
            bound="max_total",
            limit=bound,
            request=request,
        )
    return total


def _parse_int(text: str) -> int | Decimal:
    return int(text) if len(text) <= _MAX_INT_TOKEN else Decimal(text)


def _parse_json(body: bytes, request: Any = None) -> Any:
    try:
        return json.loads(body, parse_float=Decimal, parse_int=_parse_int)
    except RecursionError:
        raise ResponseFormatError(
            f"the response nests JSON deeper than the parser allows (a transaction record is "
            f"at most {MAX_DEPTH} levels deep); body starts: {excerpt(body, 80)!r}",
            request=request,
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise ResponseFormatError(
            f"the service did not return JSON; body starts: {excerpt(body)!r}",
            request=request,
        ) from None


def envelope_parts(doc: Any, request: Any = None) -> tuple[list[Any], int, str | None]:
    """Check the envelope: ``(data.transactions, data.total, message)``; extra keys are ignored.

    Raises:
        ResponseFormatError: not the documented envelope.
        LimitExceededError: a total above :func:`max_total`.
        ApiError: the envelope says ``success: false``.
    """
    if not isinstance(doc, dict):
        raise ResponseFormatError(
            f"expected a JSON object envelope, got {type(doc).__name__}: {reprlib.repr(doc)}",
            request=request,
        )
    message = doc.get("message")
    message = message if isinstance(message, str) or message is None else str(message)
    if doc.get("success") is not True:
        raise ApiError(
            "the service answered success: false",
            status_code=200,
            server_message=message,
            request=request,
        )
    data = doc.get("data")
    if not isinstance(data, dict):
        raise ResponseFormatError(
            f"the envelope has no 'data' object (keys: {sorted(doc)})", request=request
        )
    records = data.get("transactions")
    total = data.get("total")
    if not isinstance(records, list):
        raise ResponseFormatError("the envelope's data.transactions is not a list", request=request)
    if isinstance(total, Decimal) and total.is_finite() and total == total.to_integral_value():
        total = int(total)
    if isinstance(total, str) and total.isascii() and total.isdigit():
        total = int(total)
    if not isinstance(total, int) or isinstance(total, bool) or total < 0:
        raise ResponseFormatError(
            f"the envelope's data.total is not a non-negative integer: {excerpt(repr(total), 60)}",
            request=request,
        )
    return records, check_total(total, request), message


# A numeric string: optional sign, digits, optional fraction and exponent. No separators,
# no spaces inside, no NaN or Infinity.
_NUMERIC_TEXT: Final = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

_KNOWN_PARENTS = frozenset(
    ".".join(name.split(".")[:i]) for name in COLUMNS for i in range(1, name.count(".") + 1)
)


def _flatten_record(
    record: dict[str, Any], out: dict[str, Any], rid: str | None, prefix: str = "", depth: int = 1
) -> None:
    for key, value in record.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and path not in COLUMNS:
            if depth >= MAX_DEPTH:
                raise _too_deep(rid, path, value)
            _flatten_record(value, out, rid, f"{path}.", depth + 1)
        elif path in _KNOWN_PARENTS and value is not None:
            raise SchemaError(
                "the document describes an object here, the record has a scalar",
                record_id=rid,
                field=path,
                value=value,
            )
        else:
            if isinstance(value, list | dict) and _nesting(value) + depth > MAX_DEPTH:
                raise _too_deep(rid, path, value)
            out[path] = value  # an object where a scalar is documented fails its conversion


def _nesting(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, list | dict))
    return deepest


def _too_deep(rid: str | None, path: str, value: Any) -> SchemaError:
    return SchemaError(
        f"the value nests lists or objects deeper than {MAX_DEPTH} levels (a documented "
        "record needs 4)",
        record_id=rid,
        field=path,
        value=reprlib.repr(value),
    )


def _json_text(value: Any) -> str:
    if isinstance(value, dict):
        inner = ",".join(f"{json.dumps(str(k))}:{_json_text(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _to_decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, str) and _NUMERIC_TEXT.fullmatch(value.strip()):
        try:
            return Decimal(value.strip())
        except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
            return None
    return None


def _holds_in_float64(number: Decimal) -> bool:
    as_float = float(number)
    return math.isfinite(as_float) and Decimal(repr(as_float)) == number


def _integer_digits(number: Decimal) -> int:
    return max(0, number.adjusted() + 1)


def _scale(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _parse_iso(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None  # a naive timestamp: which timezone? refuse to guess
    if parsed.microsecond % 1000:
        return None  # sub-millisecond precision would be lost in a ms column
    return parsed.astimezone(UTC)


def _convert_known(name: str, dtype: pl.DataType, value: Any, rid: str | None) -> Any:
    if value is None:
        return None

    def fail(what: str) -> SchemaError:
        return SchemaError(
            f"cannot read {what} without loss (accepted: {FIELD_BY_NAME[name].accepts})",
            record_id=rid,
            field=name,
            value=value,
        )

    if isinstance(dtype, pl.Decimal):
        return _to_money(value, fail)
    if name in EPOCH_MS_COLUMNS:
        return _to_epoch_ms(value, fail)
    if dtype == TIMESTAMP:
        if isinstance(value, str) and (parsed := _parse_iso(value)) is not None:
            return parsed
        raise fail("an ISO 8601 timestamp with timezone")
    if isinstance(dtype, pl.Int64):
        return _to_int(value, fail)
    if isinstance(dtype, pl.Float64):
        return _to_float(value, fail)
    if isinstance(dtype, pl.Boolean):
        return _to_bool(value, fail)
    if isinstance(dtype, pl.String):
        return _to_string(name, value, fail)
    if name in OBJECT_LIST_COLUMNS:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise fail("a list of objects")
        return value
    if isinstance(dtype, pl.List):
        return _to_string_list(name, value, fail)
    raise fail(f"a value of type {dtype}")  # pragma: no cover - every schema type is handled


_Fail = Callable[[str], SchemaError]


def _to_money(value: Any, fail: _Fail) -> Decimal:
    number = _to_decimal(value)
    if number is None:
        raise fail("a money amount")
    if _integer_digits(number) + _scale(number) > 38:
        raise fail("a money amount of more than 38 digits")
    return number


def _to_epoch_ms(value: Any, fail: _Fail) -> datetime:
    number = _to_decimal(value)
    if number is not None and number == number.to_integral_value():
        if not MIN_EPOCH_MS <= number <= MAX_EPOCH_MS:
            raise fail("an epoch-milliseconds timestamp outside the years 1-9999")
        millis = int(number)
        return _EPOCH + timedelta(milliseconds=millis)
    if isinstance(value, str) and (parsed := _parse_iso(value)) is not None:
        return parsed
    raise fail("an epoch-milliseconds timestamp")


def _to_int(value: Any, fail: _Fail) -> int:
    number = _to_decimal(value)
    if number is None or number != number.to_integral_value():
        raise fail("an integer")
    if not -(2**63) <= number < 2**63:
        raise fail("an integer within 64 bits")
    return int(number)


def _to_float(value: Any, fail: _Fail) -> float:
    number = _to_decimal(value)
    if number is None:
        raise fail("a number")
    if not _holds_in_float64(number):
        raise fail("a number that float64 holds exactly")
    return float(number)


def _to_bool(value: Any, fail: _Fail) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise fail("a boolean")


def _to_string(name: str, value: Any, fail: _Fail) -> str:
    if isinstance(value, str):
        return value
    if name in JSON_TEXT_COLUMNS:
        return _json_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)
    raise fail("a string (got an object or array)")


def _to_string_list(name: str, value: Any, fail: _Fail) -> list[str | None]:
    if not isinstance(value, list):
        raise fail("a list")
    out = []
    for item in value:
        if item is None or isinstance(item, str):
            out.append(item)
        elif name in JSON_TEXT_LIST_COLUMNS:
            out.append(_json_text(item))
        else:
            raise fail("a list of strings")
    return out


def _infer_unknown(name: str, values: list[Any], ids: list[str | None]) -> pl.Series:
    present = [(v, i) for v, i in zip(values, ids, strict=True) if v is not None]
    kinds = {_kind(v) for v, _ in present}
    if not kinds:
        return pl.Series(name, values, dtype=pl.Null)
    if "object" in kinds and len(kinds) > 1:
        value, rid = next((v, i) for v, i in present if _kind(v) != "object")
        raise SchemaError(
            "a field is an object in some records and a scalar in others",
            record_id=rid,
            field=name,
            value=value,
        )
    if kinds == {"bool"}:
        return pl.Series(name, values, dtype=pl.Boolean)
    if kinds == {"int"} and all(abs(v) < 2**63 for v, _ in present):
        return pl.Series(name, values, dtype=pl.Int64)
    if kinds <= {"int", "decimal", "str"} and kinds & {"int", "decimal"}:
        # Numbers, maybe with numeric strings: exact decimals if every string reads back as
        # itself ("1500.00" does, "007" or "abc" do not).
        numbers = [_to_decimal(v) if v is not None else None for v in values]
        ok = all(
            n is not None and (not isinstance(v, str) or str(n) == v.strip())
            for v, n in zip(values, numbers, strict=True)
            if v is not None
        )
        if ok:
            scale = max((_scale(n) for n in numbers if n is not None), default=0)
            if all(_integer_digits(n) + scale <= 38 for n in numbers if n is not None):
                return pl.Series(name, numbers, dtype=pl.Decimal(38, scale))
        if "bool" not in kinds:
            return pl.Series(name, [None if v is None else str(v) for v in values], pl.String)
    if kinds == {"str"}:
        return pl.Series(name, values, dtype=pl.String)
    if kinds == {"list"}:
        return pl.Series(
            name,
            [
                None if v is None else [x if isinstance(x, str) else _json_text(x) for x in v]
                for v in values
            ],
            dtype=pl.List(pl.String()),
        )
    value, rid = present[0]
    raise SchemaError(
        f"an undocumented field mixes types {sorted(kinds)} that cannot be reconciled",
        record_id=rid,
        field=name,
        value=value,
    )


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _object_list_series(name: str, values: list[Any]) -> pl.Series:
    fields = {f.name: None for f in OBJECT_LIST_COLUMNS[name].fields}
    for items in values:
        for item in items or ():
            fields.update(dict.fromkeys(item))
    rows = [
        None
        if items is None
        else [
            {
                k: v if v is None or isinstance(v, str) else _json_text(v)
                for k, v in ((k, item.get(k)) for k in fields)
            }
            for item in items
        ]
        for items in values
    ]
    return pl.Series(name, rows, dtype=pl.List(pl.Struct({f: pl.String() for f in fields})))


def decode_exact(body: bytes, request: Any = None) -> DecodedPage:
    """Decode a page value by value (``json`` with exact decimals); see the module docstring.

    Raises:
        ResponseFormatError: the body is not JSON or not the documented envelope.
        ApiError: the envelope says ``success: false``.
        SchemaError: a value cannot be converted to its column's type without loss.
    """
    records, total, message = envelope_parts(_parse_json(body, request), request)
    flat: list[dict[str, Any]] = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise SchemaError(
                "a transaction is not a JSON object", record_id=f"#{index}", field="", value=record
            )
        rid = record.get("id") or record.get("_id")
        out: dict[str, Any] = {}
        _flatten_record(record, out, None if rid is None else str(rid))
        flat.append(out)
    ids = [None if r.get("id") is None else str(r["id"]) for r in flat]

    names: dict[str, None] = {}
    for row in flat:
        names.update(dict.fromkeys(row))
    _check_paths(names, flat, ids)

    columns: dict[str, pl.Series] = {}
    for name, dtype in COLUMNS.items():
        values = [row.get(name) for row in flat]
        converted = [_convert_known(name, dtype, v, i) for v, i in zip(values, ids, strict=True)]
        if name in OBJECT_LIST_COLUMNS:
            columns[name] = _object_list_series(name, converted)
        elif isinstance(dtype, pl.Decimal):
            scale = max([_scale(v) for v in converted if v is not None] + [MONEY_SCALE])
            for v, rid in zip(converted, ids, strict=True):
                if v is not None and _integer_digits(v) + scale > 38:
                    raise SchemaError(
                        f"the page's amounts need more than 38 digits at {scale} decimals "
                        f"(accepted: {FIELD_BY_NAME[name].accepts})",
                        record_id=rid,
                        field=name,
                        value=v,
                    )
            columns[name] = pl.Series(name, converted, dtype=pl.Decimal(38, scale))
        else:
            columns[name] = pl.Series(name, converted, dtype=dtype)
    for name in sorted(n for n in names if n not in COLUMNS):
        columns[name] = _infer_unknown(name, [row.get(name) for row in flat], ids)
    frame = pl.DataFrame(list(columns.values())) if flat else _empty_with(columns)
    return DecodedPage(frame=frame, total=total, message=message, exact=True)


def _empty_with(columns: dict[str, pl.Series]) -> pl.DataFrame:
    return pl.DataFrame({n: s for n, s in columns.items()})


def _check_paths(names: dict[str, None], flat: list[dict[str, Any]], ids: list[str | None]) -> None:
    for name in names:
        prefix = f"{name}."
        if not any(other.startswith(prefix) for other in names):
            continue
        for row, rid in zip(flat, ids, strict=True):
            if row.get(name) is not None:
                raise SchemaError(
                    "a field is an object in some records and a scalar in others",
                    record_id=rid,
                    field=name,
                    value=row[name],
                )
