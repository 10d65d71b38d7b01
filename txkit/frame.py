"""Decode export pages (JSON bytes) into flat, typed polars DataFrames, exactly.

Two decoders produce the same frame:

* the **fast path** reads a page with polars' own JSON reader and an explicit envelope schema,
  then flattens and converts it in a handful of vectorised expressions;
* the **exact path** parses the page with :mod:`json` (``parse_float=Decimal``) and converts
  value by value. It runs only for a page that the fast path cannot prove it read losslessly.

Why the proof is needed - three facts about ``polars.read_json`` with a schema (polars 2.1):

1. numbers go through ``float64``, even into ``Decimal`` and ``String`` columns, and a value
   with more decimals than the column's scale is rounded silently;
2. fields that are not in the schema are dropped silently;
3. a value it cannot convert raises an error that does not name the record.

So the fast path reads money and integers as ``Float64`` and converts them itself, checking
that every value round-trips (at most :data:`~txkit.schema.MONEY_SCALE` decimals and a
magnitude below 1e13, i.e. at most 15 significant digits, where ``float64`` is exact), and it
counts the page's keys in the raw bytes against the fields it read (see :func:`_keys_accounted`).
Any doubt sends the page to the exact path, which keeps unknown fields (flattened the same way,
with a fitting type), coerces drifting types when that loses nothing, and otherwise raises a
:class:`~txkit.errors.SchemaError` naming the record, the field and the value.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import polars as pl

from txkit.errors import ResponseFormatError, SchemaError, excerpt
from txkit.schema import (
    COLUMNS,
    EPOCH_MS_COLUMNS,
    ISO_TIMESTAMP_COLUMNS,
    JSON_TEXT_COLUMNS,
    JSON_TEXT_LIST_COLUMNS,
    MONEY_SCALE,
    OBJECT_LIST_COLUMNS,
    TIMESTAMP,
)

__all__ = [
    "DecodedPage",
    "RawPage",
    "activity_history",
    "assemble",
    "build_frames",
    "combine",
    "decode_page",
    "decode_pages",
    "finalize",
    "read_page",
]

# float64 represents every decimal of at most 15 significant digits exactly enough to recover
# it; with two decimals that is any magnitude below 1e13.
_MAX_EXACT_MONEY = 1e13
_MAX_EXACT_INT = float(2**53)
_ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%.3fZ"
_HISTORY = "meta.customerActivity.history"

#: Pages verified and converted together: polars works faster on larger frames, and the raw
#: bytes are released after each batch, which bounds memory.
BATCH_PAGES = 32


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


# --------------------------------------------------------------------------------------------
# Wire schema: the shape polars reads, derived from the flat column list.


def _wire_dtype(name: str, dtype: pl.DataType) -> pl.DataType:
    if isinstance(dtype, pl.Decimal | pl.Int64) or name in EPOCH_MS_COLUMNS:
        return pl.Float64()
    if name in ISO_TIMESTAMP_COLUMNS:
        return pl.String()
    return dtype


def _nest(columns: dict[str, pl.DataType]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for name, dtype in columns.items():
        node = tree
        *parents, leaf = name.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _wire_dtype(name, dtype)
    return tree


def _to_struct(tree: dict[str, Any]) -> pl.Struct:
    return pl.Struct({k: _to_struct(v) if isinstance(v, dict) else v for k, v in tree.items()})


_RECORD = _to_struct(_nest(COLUMNS))
_ENVELOPE = {
    "success": pl.Boolean(),
    "message": pl.String(),
    "data": pl.Struct({"transactions": pl.List(_RECORD), "total": pl.Float64()}),
}


def _leaves(dtype: pl.Struct, prefix: str = "") -> Iterable[tuple[str, list[str], pl.DataType]]:
    for field in dtype.fields:
        path = f"{prefix}{field.name}"
        if isinstance(field.dtype, pl.Struct):
            yield from ((p, [field.name, *f], d) for p, f, d in _leaves(field.dtype, f"{path}."))
        else:
            yield path, [field.name], field.dtype


_WIRE_LEAVES = list(_leaves(_RECORD))


def _field_expr(parts: Sequence[str], base: pl.Expr) -> pl.Expr:
    expr = base
    for part in parts:
        expr = expr.struct.field(part)
    return expr


# --------------------------------------------------------------------------------------------
# Fast path: pages are read one by one (polars' reader), then verified and converted in
# batches, because polars' per-operation overhead dominates on 1,000-row frames.

_PARENTS = sorted(
    {".".join(n.split(".")[:i]) for n, _, _ in _WIRE_LEAVES for i in range(1, n.count(".") + 1)}
)
_LEAF_NAMES = [n for n, _, _ in _WIRE_LEAVES]
_STRING_COLS = [n for n, _, d in _WIRE_LEAVES if isinstance(d, pl.String)]
_LIST_COLS = [
    n for n, _, d in _WIRE_LEAVES if isinstance(d, pl.List) and isinstance(d.inner, pl.String)
]
_AUX = "__"  # prefix of helper columns that never reach the caller


@dataclass(slots=True)
class RawPage:
    """A page read by polars' JSON reader, not yet verified or converted.

    Attributes:
        total: the service's ``data.total``.
        count: the number of records on the page.
        message: the envelope's ``message``.
        exact: True once the page was (or had to be) decoded by the exact path.
        ids: the records' ``id`` values, set by :func:`build_frames`.
    """

    total: int
    count: int
    message: str | None
    exact: bool = False
    ids: pl.Series | None = None
    _body: bytes | None = None
    _request: Any = None
    _envelope: pl.DataFrame | None = None
    _expected: int | None = None  # the byte-side key accounting
    _exact: pl.DataFrame | None = None


def _byte_accounting(body: bytes, env_keys: int) -> int | None:
    """``quotes / 2 - ":null" - envelope keys`` of a page, or None when it cannot be counted.

    Why this proves no field was dropped: in JSON without escaped quotes, ``quotes / 2 ==
    keys + string values``, and every key is a field polars read (non-null), a null-valued key
    (``"key":null``), or an unknown key. So without unknown keys this equals the non-null
    fields plus the string values that :func:`build_frames` counts in the frame; an unknown key
    with a value makes the byte side larger. Anything unusual also makes the two differ and
    sends the page to the exact path: pretty-printed nulls (``": null"``), a number where a
    string is documented (polars would silently turn it into text), a string containing
    ``:null``. Undetected: an unknown key whose value is null (it carries no information), and
    two such oddities on one page that cancel out exactly.
    """
    if b"\\" in body:
        return None  # maybe an escaped quote: only the exact path can tell
    return body.count(b'"') // 2 - body.count(b":null") - env_keys


def _flatten_exprs() -> list[pl.Expr]:
    """Flatten to wire-typed columns; ``__p.*`` (parents), ``__lists`` and ``__hist`` feed the
    key accounting."""
    leaves = [_field_expr(parts, pl.col("tx")).alias(name) for name, parts, _ in _WIRE_LEAVES]
    parents = [_field_expr(p.split("."), pl.col("tx")).alias(f"{_AUX}p.{p}") for p in _PARENTS]
    lists = pl.sum_horizontal(
        _field_expr(c.split("."), pl.col("tx")).list.len() for c in _LIST_COLS
    )
    # Every non-null member of a listed object is a key and (all are strings) a string value.
    members = pl.sum_horizontal(
        _field_expr(name.split("."), pl.col("tx"))
        .list.eval(
            pl.sum_horizontal(
                pl.element().struct.field(f.name).is_not_null().cast(pl.Int64) for f in item.fields
            )
        )
        .list.sum()
        for name, item in OBJECT_LIST_COLUMNS.items()
    )
    return [
        pl.col(f"{_AUX}page"),
        *leaves,
        *parents,
        lists.alias(f"{_AUX}lists"),
        members.alias(f"{_AUX}hist"),
    ]


def _convert_exprs() -> tuple[list[pl.Expr], list[pl.Expr], list[str]]:
    """(conversions into ``__c.*`` columns, checks that are True where a value could not be
    proven exact, the converted names). Conversions and checks run as two steps so that each
    conversion is computed once."""
    conversions: list[pl.Expr] = []
    checks: list[pl.Expr] = []
    names: list[str] = []
    for name, _, _ in _WIRE_LEAVES:
        raw, done = pl.col(name), pl.col(f"{_AUX}c.{name}")
        final = COLUMNS[name]
        if isinstance(final, pl.Decimal):
            converted = raw.cast(final)
            check = raw.is_not_null() & (
                (done.cast(pl.Float64) != raw) | (raw.abs() >= _MAX_EXACT_MONEY)
            )
        elif isinstance(final, pl.Int64) or name in EPOCH_MS_COLUMNS:
            converted = raw.cast(pl.Int64, strict=False)
            if name in EPOCH_MS_COLUMNS:
                converted = converted.cast(pl.Datetime("ms")).dt.replace_time_zone("UTC")
            check = raw.is_not_null() & ((raw.floor() != raw) | (raw.abs() >= _MAX_EXACT_INT))
        elif name in ISO_TIMESTAMP_COLUMNS:
            converted = raw.str.to_datetime(
                _ISO_FORMAT, time_unit="ms", time_zone="UTC", strict=False, cache=False
            )
            check = raw.is_not_null() & done.is_null()
        else:
            continue
        conversions.append(converted.alias(f"{_AUX}c.{name}"))
        checks.append(check)
        names.append(name)
    return conversions, checks, names


_FLATTEN = _flatten_exprs()
_CONVERSIONS, _CHECKS, _CONVERTED = _convert_exprs()
_FINAL = [
    pl.col(f"{_AUX}c.{n}").alias(n) if n in set(_CONVERTED) else pl.col(n) for n in _LEAF_NAMES
]


def _convert(data: pl.DataFrame) -> pl.DataFrame:
    """Flatten, convert and check: the final columns plus the ``__`` helper columns."""
    flat = data.select(_FLATTEN).with_columns(_CONVERSIONS)
    return flat.with_columns(pl.any_horizontal(_CHECKS).alias(f"{_AUX}bad"))


def read_page(body: bytes, *, request: Any = None) -> RawPage:
    """Read one response body: check the envelope and read the records, without converting.

    Args:
        body: the raw response body.
        request: the :class:`httpx.Request` it answered, for error context.

    Returns:
        A :class:`RawPage`; pass a list of them to :func:`build_frames`.

    Raises:
        ResponseFormatError: the body is not JSON or not the documented envelope.
        ApiError: the envelope says ``success: false``.
        SchemaError: a value cannot be converted without loss (found by the exact path).
    """
    try:
        envelope = pl.read_json(body, schema=_ENVELOPE)
    except Exception:  # polars names neither record nor field: let the exact path explain.
        envelope = None
    if envelope is not None and envelope.height == 1:
        success, message, total, count = envelope.select(
            "success",
            "message",
            pl.col("data").struct.field("total"),
            pl.col("data").struct.field("transactions").list.len(),
        ).row(0)
        if success is True and count is not None and total is not None and total >= 0:
            # success, data, transactions, total; a message adds its key and its string (a
            # null message adds a key and a ":null", which cancel out).
            expected = _byte_accounting(body, 4 + 2 * int(message is not None))
            if expected is not None and total == math.floor(total):
                return RawPage(
                    total=int(total),
                    count=int(count),
                    message=message,
                    _body=body,
                    _request=request,
                    _envelope=envelope,
                    _expected=expected,
                )
    exact = _decode_exact(body, request)
    return RawPage(
        total=exact.total,
        count=exact.frame.height,
        message=exact.message,
        exact=True,
        ids=exact.frame["id"],
        _exact=exact.frame,
    )


def _accounted(converted: pl.DataFrame, counts: Sequence[int]) -> list[int]:
    """Per page: non-null fields read plus string values among them (see _byte_accounting)."""
    leaf_and_parents = [*_LEAF_NAMES, *(f"{_AUX}p.{p}" for p in _PARENTS)]
    null_items = 0
    for c in _LIST_COLS:
        null_items += converted[c].explode(empty_as_null=False, keep_nulls=False).null_count()
    per_row = pl.col(f"{_AUX}lists").fill_null(0) + 2 * pl.col(f"{_AUX}hist").fill_null(0)
    if null_items:  # rare: a null inside a list is neither a key nor a string
        per_row = per_row - pl.sum_horizontal(
            pl.col(c).list.len() - pl.col(c).list.drop_nulls().list.len() for c in _LIST_COLS
        )
    extra = converted.select(per_row.fill_null(0).cum_sum().alias("c"))["c"].to_list()
    strings = set(_STRING_COLS)
    out: list[int] = []
    offset = 0
    for count in counts:
        nulls = converted.select(leaf_and_parents).slice(offset, count).null_count().row(0)
        present = sum(count - n for n in nulls)
        text = sum(count - n for c, n in zip(leaf_and_parents, nulls, strict=True) if c in strings)
        end = extra[offset + count - 1] if count else 0
        start = extra[offset - 1] if offset else 0
        out.append(present + text + int(end - start if count else 0))
        offset += count
    return out


def build_frames(pages: Sequence[RawPage]) -> list[pl.DataFrame]:
    """Verify and convert read pages into flat, typed frames (one per batch or exact page).

    Pages whose keys cannot be accounted for, or holding a value that cannot be proven exact,
    are decoded again by the exact path. Sets each page's ``ids``. The frames may differ in
    undocumented columns and decimal scales: use :func:`combine`.

    Raises:
        SchemaError: a value cannot be converted to its column's type without loss.
    """
    out = [p._exact for p in pages if p._exact is not None]
    fast = [p for p in pages if p._exact is None and p._envelope is not None]
    if not fast:
        return out
    data = pl.concat(
        [
            p._envelope.select(
                pl.col("data").struct.field("transactions").alias("tx"),
                pl.lit(i, dtype=pl.Int32).alias(f"{_AUX}page"),
            )
            for i, p in enumerate(fast)
        ],
        how="vertical",
    ).explode("tx", empty_as_null=False)
    converted = _convert(data)
    counts = [p.count for p in fast]
    accounted = _accounted(converted, counts)
    bad_pages = set(converted.filter(pl.col(f"{_AUX}bad"))[f"{_AUX}page"].unique().to_list()) | set(
        data.filter(pl.col("tx").is_null())[f"{_AUX}page"].unique().to_list()
    )
    redo = {
        i for i, p in enumerate(fast) if i in bad_pages or (p.count and accounted[i] != p._expected)
    }
    keep = converted.filter(~pl.col(f"{_AUX}page").is_in(sorted(redo))) if redo else converted
    out.append(keep.select(_FINAL))
    offset = 0
    for i, page in enumerate(fast):
        if i in redo:
            page.exact = True
            exact = _decode_exact(page._body or b"", page._request).frame
            page.ids = exact["id"]
            out.append(exact)
        else:
            page.ids = converted["id"].slice(offset, page.count)
        offset += page.count
        page._body = page._envelope = None  # the frames hold everything now
    return out


# --------------------------------------------------------------------------------------------
# Exact path.


def _parse_json(body: bytes, request: Any = None) -> Any:
    try:
        return json.loads(body, parse_float=Decimal)
    except (ValueError, UnicodeDecodeError):
        raise ResponseFormatError(
            f"the service did not return JSON; body starts: {excerpt(body)!r}",
            request=request,
        ) from None


def _envelope_parts(doc: Any, request: Any = None) -> tuple[list[Any], int, str | None]:
    if not isinstance(doc, dict):
        raise ResponseFormatError(
            f"expected a JSON object envelope, got {type(doc).__name__}: {excerpt(str(doc))!r}",
            request=request,
        )
    message = doc.get("message")
    message = message if isinstance(message, str) or message is None else str(message)
    if doc.get("success") is not True:
        # Imported here to avoid a cycle: the ApiError subclasses live in errors.
        from txkit.errors import ApiError

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
    if isinstance(total, Decimal) and total == total.to_integral_value():
        total = int(total)
    if isinstance(total, str) and total.isdigit():
        total = int(total)
    if not isinstance(total, int) or isinstance(total, bool) or total < 0:
        raise ResponseFormatError(
            f"the envelope's data.total is not a non-negative integer: {total!r}",
            request=request,
        )
    return records, total, message


_KNOWN_PARENTS = frozenset(
    ".".join(name.split(".")[:i]) for name in COLUMNS for i in range(1, name.count(".") + 1)
)


def _flatten_record(
    record: dict[str, Any], out: dict[str, Any], rid: str | None, prefix: str = ""
) -> None:
    for key, value in record.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and path not in COLUMNS:
            _flatten_record(value, out, rid, f"{path}.")
        elif path in _KNOWN_PARENTS and value is not None:
            raise SchemaError(
                "the document describes an object here, the record has a scalar",
                record_id=rid,
                field=path,
                value=value,
            )
        else:
            out[path] = value  # an object where a scalar is documented fails its conversion


def _json_text(value: Any) -> str:
    """Compact JSON text of a parsed value, numbers exactly as received (Decimal kept)."""
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
    if isinstance(value, str):
        try:
            parsed = Decimal(value.strip())
        except InvalidOperation:
            return None
        return parsed if parsed.is_finite() else None
    return None


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
            f"cannot read {what} without loss", record_id=rid, field=name, value=value
        )

    if isinstance(dtype, pl.Decimal):
        number = _to_decimal(value)
        if number is None:
            raise fail("a money amount")
        return number
    if name in EPOCH_MS_COLUMNS:
        number = _to_decimal(value)
        if number is not None and number == number.to_integral_value():
            return datetime.fromtimestamp(int(number) / 1000, tz=UTC).replace(
                microsecond=(int(number) % 1000) * 1000
            )
        if isinstance(value, str) and (parsed := _parse_iso(value)) is not None:
            return parsed
        raise fail("an epoch-milliseconds timestamp")
    if dtype == TIMESTAMP:
        if isinstance(value, str) and (parsed := _parse_iso(value)) is not None:
            return parsed
        raise fail("an ISO 8601 timestamp with timezone")
    if isinstance(dtype, pl.Int64):
        number = _to_decimal(value)
        if number is None or number != number.to_integral_value():
            raise fail("an integer")
        return int(number)
    if isinstance(dtype, pl.Float64):
        number = _to_decimal(value)
        if number is None:
            raise fail("a number")
        return float(number)
    if isinstance(dtype, pl.Boolean):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise fail("a boolean")
    if isinstance(dtype, pl.String):
        if isinstance(value, str):
            return value
        if name in JSON_TEXT_COLUMNS:
            return _json_text(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | Decimal):
            return str(value)
        raise fail("a string (got an object or array)")
    if name in OBJECT_LIST_COLUMNS:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise fail("a list of objects")
        return value
    if isinstance(dtype, pl.List):
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
    raise fail(f"a value of type {dtype}")  # pragma: no cover - every schema type is handled


def _infer_unknown(name: str, values: list[Any], ids: list[str | None]) -> pl.Series:
    """Type an undocumented field from its values, losslessly, or raise SchemaError."""
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
            if all(len(n.as_tuple().digits) - _scale(n) + scale <= 38 for n in numbers if n):
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
    """A list-of-struct column: the declared members, then any others (as text)."""
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


def _decode_exact(body: bytes, request: Any = None) -> DecodedPage:
    records, total, message = _envelope_parts(_parse_json(body, request), request)
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
    """Fail when one path is a scalar in some record and an object in another."""
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


# --------------------------------------------------------------------------------------------
# Public API.


def decode_page(body: bytes, *, request: Any = None) -> DecodedPage:
    """Decode one export response body into a flat, typed frame.

    Args:
        body: the raw response body.
        request: the :class:`httpx.Request` it answered, for error context.

    Returns:
        The page as a :class:`DecodedPage`.

    Raises:
        ResponseFormatError: the body is not JSON or not the documented envelope.
        ApiError: the envelope says ``success: false``.
        SchemaError: a value cannot be converted to its column's type without loss.
    """
    raw = read_page(body, request=request)
    frames = build_frames([raw])
    frame = combine(frames) if len(frames) != 1 else frames[0]
    return DecodedPage(frame=frame, total=raw.total, message=raw.message, exact=raw.exact)


def decode_pages(bodies: Iterable[bytes], *, threads: int | None = None) -> pl.DataFrame:
    """Decode the response bodies of one export into its final frame.

    The same decoder :func:`txkit.load_transactions` runs after fetching, for bodies saved
    elsewhere: pages are read on ``threads`` threads (polars' reader releases the GIL when it
    is given bytes), verified and converted :data:`BATCH_PAGES` at a time in the calling
    thread, then deduplicated by ``id`` (newest ``updatedAt`` wins) and sorted by
    ``createdAt``, ``id`` (:func:`assemble`). At most ``BATCH_PAGES + threads`` pages are
    read ahead, so memory stays bounded for a long iterator.

    Args:
        bodies: raw ``GET /transaction`` response bodies, in any order.
        threads: reading threads; 1 reads in the calling thread. Default: polars' thread
            pool size (the machine's cores).

    Returns:
        The flat, typed frame (see :data:`txkit.schema.COLUMNS`).

    Raises:
        ValueError: ``threads`` is below 1.
        ResponseFormatError: a body is not JSON or not the documented envelope.
        ApiError: an envelope says ``success: false``.
        SchemaError: a value cannot be converted to its column's type without loss.

    Example:
        >>> bodies = [path.read_bytes() for path in sorted(Path("pages").glob("*.json"))]
        >>> frame = decode_pages(bodies)  # doctest: +SKIP
    """
    threads = pl.thread_pool_size() if threads is None else threads
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    frames: list[pl.DataFrame] = []
    batch: list[RawPage] = []

    def accept(page: RawPage) -> None:
        batch.append(page)
        if len(batch) >= BATCH_PAGES:
            frames.extend(build_frames(batch))
            batch.clear()

    if threads == 1:
        for body in bodies:
            accept(read_page(body))
    else:
        window: deque[Future[RawPage]] = deque()
        with ThreadPoolExecutor(threads, thread_name_prefix="txkit-read") as pool:
            for body in bodies:
                window.append(pool.submit(read_page, body))
                if len(window) > BATCH_PAGES + threads:
                    accept(window.popleft().result())
            while window:
                accept(window.popleft().result())
    if batch:
        frames.extend(build_frames(batch))
    return assemble(frames)


def combine(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate page frames whose undocumented columns or decimal scales may differ.

    Raises:
        SchemaError: one field is an object on one page and a scalar on another, or a column's
            types across pages cannot be reconciled without loss.
    """
    frames = [f for f in frames if f.width]
    if not frames:
        return pl.DataFrame(schema=COLUMNS)
    target: dict[str, pl.DataType] = {}
    for frame in frames:
        for name, dtype in frame.schema.items():
            target[name] = _unify(name, target[name], dtype, frames) if name in target else dtype
    _check_cross_page_paths(target, frames)
    aligned = [
        frame.select(
            _align(pl.col(n), frame.schema[n], d).alias(n)
            if n in frame.columns
            else pl.lit(None, dtype=d).alias(n)
            for n, d in target.items()
        )
        for frame in frames
    ]
    return pl.concat(aligned, how="vertical", rechunk=False)


def _align(expr: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    """Cast ``expr`` to ``target``; a list of structs gains the target's extra members."""
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


def finalize(frame: pl.DataFrame) -> pl.DataFrame:
    """Order columns (documented first, then undocumented by name) and rows (createdAt, id)."""
    extra = sorted(c for c in frame.columns if c not in COLUMNS)
    return frame.select([*COLUMNS, *extra]).sort(["createdAt", "id"], nulls_last=True)


def assemble(frames: list[pl.DataFrame], keep: pl.Expr | None = None) -> pl.DataFrame:
    """Build the final frame from page frames, **consuming** ``frames`` to bound memory.

    Keeps the rows matching ``keep`` (filtered piece by piece, never as a full copy), aligns
    the pieces (:func:`combine`), keeps one row per ``id`` (the newest ``updatedAt``), and
    sorts by ``createdAt`` then ``id`` one column at a time, releasing each unsorted column as
    soon as its sorted copy exists. The peak is then about one frame plus one column, instead
    of the two or three whole frames that filter-then-sort would hold (measured at 200,000
    records).

    Args:
        frames: the page frames; the list is emptied.
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
    missing = frame.filter(pl.col("id").is_null())
    if missing.height:
        row = missing.row(0, named=True)
        raise SchemaError(
            "a record has no id, so it cannot be deduplicated or verified",
            record_id=None,
            field="id",
            value={k: row[k] for k in ("_id", "transactionReference", "createdAt") if k in row},
        )
    if frame.height != frame["id"].n_unique():
        # Seen more than once (passes, queries, moving records): the newest version wins.
        frame = frame.sort("updatedAt", nulls_last=False, maintain_order=True).unique(
            subset="id", keep="last", maintain_order=False
        )
    order = frame.select(
        pl.arg_sort_by(["createdAt", "id"], nulls_last=True).alias("order")
    ).to_series()
    extra = sorted(c for c in frame.columns if c not in COLUMNS)
    names = [*COLUMNS, *extra]
    columns = {name: frame.get_column(name) for name in names}
    del frame
    out: list[pl.Series] = []
    for start in range(0, len(names), 8):
        # 8 columns at a time, released as they go. Rechunked first: a gather from many
        # chunks is ten times slower (measured: 0.27 s vs 0.03 s for 200,000 rows).
        group = pl.DataFrame([columns.pop(name) for name in names[start : start + 8]]).rechunk()
        out.extend(group[order].get_columns())
        del group
    return pl.DataFrame(out)


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
