"""The fast path: polars' JSON reader, then vectorised conversion with proofs of losslessness.

Why the proofs are needed - facts about ``polars.read_json`` with a schema (polars 2.1):

1. numbers go through ``float64``, even into ``Decimal`` and ``String`` columns, and a value
   with more decimals than the column's scale is rounded silently;
2. fields that are not in the schema are dropped silently;
3. ``true`` in a ``Float64`` field becomes ``1.0``, and a bare string in a list field becomes a
   one-element list;
4. a value it cannot convert raises an error that does not name the record.

So this path reads money and integers as ``Float64`` and converts them itself, checking that
every value round-trips (at most :data:`~txkit.schema.MONEY_SCALE` decimals and a magnitude below
1e13), refuses number tokens of more than 15 digits or with an exponent (which float64 may
round), and counts in the raw bytes of the records what the frame must hold: keys and strings,
booleans, lists (:func:`_byte_accounting`, :func:`_whole_body_counts`, :func:`_accounted`). The
envelope is parsed apart (:func:`_records_span`), so extra envelope keys cost nothing, and polars
reads only the records array, one row per record (a record that is not an object is an error
there, so it takes the exact path). Any doubt sends the page to the exact path
(:mod:`txkit.decode._exact`).

Pages are read one by one (:func:`read_page`, which releases the GIL inside polars), then
verified and converted in batches (:func:`build_frames`), because polars' per-operation
overhead dominates on 1,000-row frames.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

from txkit.decode._exact import decode_exact, envelope_parts
from txkit.decode._wire import (
    ALL_LIST_COLS,
    AUX,
    BOOL_COLS,
    ISO_FORMAT,
    LEAF_NAMES,
    LIST_COLS,
    MAX_EPOCH_MS,
    MAX_EXACT_INT,
    MAX_EXACT_MONEY,
    MIN_EPOCH_MS,
    PARENTS,
    RECORD,
    STRING_COLS,
    WIRE_LEAVES,
    field_expr,
)
from txkit.errors import ApiError, LimitExceededError, ResponseFormatError
from txkit.schema import COLUMNS, EPOCH_MS_COLUMNS, ISO_TIMESTAMP_COLUMNS, OBJECT_LIST_COLUMNS

#: An edge run of a page: its ``createdAt`` (as sent), its size and its records' ids.
EdgeRun = tuple[str, int, frozenset[str]]


@dataclass(slots=True)
class RawPage:
    """A page read by polars' JSON reader, not yet verified or converted.

    Attributes:
        total: the service's ``data.total``.
        count: the number of records on the page.
        message: the envelope's ``message``.
        exact: True once the page was (or had to be) decoded by the exact path.
        ids: the records' ``id`` values, set by :func:`build_frames`.
        edges: the records at the page's start and at its end that share one ``createdAt``
            (its *edge runs*, for tie groups cut by page edges: :mod:`txkit.fetch._ties`), set
            by :func:`build_frames` when asked (``edges=True``): ``(lead, trail)``, each
            ``(createdAt text, size, ids)``, the same object twice when every record of the
            page shares one ``createdAt``; None for an empty page or one with a null ``id``
            or ``createdAt``.
    """

    total: int
    count: int
    message: str | None
    exact: bool = False
    ids: pl.Series | None = None
    edges: tuple[EdgeRun, EdgeRun] | None = None
    _body: bytes | None = None
    _request: Any = None
    _records: pl.DataFrame | None = None  # the records array as polars read it, a row each
    _expected: _Counts | None = None  # the byte-side accounting
    _exact: pl.DataFrame | None = None


#: Number tokens float64 may not carry exactly: more than 15 digits, or an exponent, as the
#: value of a key (a string that merely looks like one costs only speed: its
#: page takes the exact path). Numbers inside arrays need no check here: in a documented list a
#: number already fails the quote accounting, and unknown keys send the page to the exact path.
_ODD_NUMBER: Final = r":\s*-?(?:[0-9]\.?){16}|:\s*-?[0-9][0-9.]*[eE]"
_BOOLEAN: Final = "true|false"
_ODD_NUMBER_RE: Final = re.compile(_ODD_NUMBER.encode())
_BOOLEAN_RE: Final = re.compile(_BOOLEAN.encode())
_KEY: Final = b'"transactions":'
#: One record's fields as top-level columns: polars reads the records array alone.
_RECORD_COLUMNS: Final = {f.name: f.dtype for f in RECORD.fields}


@dataclass(frozen=True, slots=True)
class _Counts:
    """What the bytes of a page's records say the frame must hold (see _byte_accounting)."""

    keys_and_strings: int
    booleans: int
    lists: int
    odd_numbers: int = 0


def _records_span(body: bytes, request: Any) -> tuple[list[Any], int, str | None, int, int] | None:
    """``body[start:end]`` is the records array; None: take the exact path (an envelope not
    cheaply told apart, or bad)."""
    key = body.find(_KEY)
    if key < 0 or b"\\" in body[:key]:
        return None
    start = key + len(_KEY)
    while body[start : start + 1] in (b" ", b"\n", b"\r", b"\t"):
        start += 1
    if body[start : start + 1] != b"[":
        return None
    end = len(body)
    for _ in range(8):  # the array's closing bracket, from the end; the tail is small
        end = body.rfind(b"]", start, end)
        if end < 0:
            return None
        try:
            doc = json.loads(body[:start] + b"[]" + body[end + 1 :])
        except (ValueError, RecursionError):
            continue
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, dict) or data.get("transactions") != []:
            continue
        try:
            records, total, message = envelope_parts(doc, request)
        except (ApiError, ResponseFormatError, LimitExceededError):
            # A bracket of an extra key taken for the array's end (try the one before), or a
            # bad envelope (after the tries, the exact path raises the error that applies).
            continue
        # A wrong bracket (inside an extra key after the array) would only widen the span by
        # at least one key and one list, so the accounting would send the page to the exact path.
        return records, total, message, start, end + 1
    return None


def _byte_accounting(body: bytes, start: int, end: int) -> _Counts | None:
    """Why this proves nothing was dropped: docs/exactness.md, "The byte accounting"."""
    if body.find(b"\\", start, end) >= 0:
        return None  # maybe an escaped quote: only the exact path can tell
    envelope = body[:start] + body[end:]
    return _Counts(
        keys_and_strings=body.count(b'"', start, end) // 2 + envelope.count(b":null"),
        booleans=-len(_BOOLEAN_RE.findall(envelope)),
        lists=-envelope.count(b"[") - 1,  # and the records array's own bracket
        odd_numbers=-len(_ODD_NUMBER_RE.findall(envelope)),
    )


def _whole_body_counts(pages: Sequence[RawPage]) -> list[_Counts | None]:
    """Per page: ``-":null"``, booleans, ``[``, odd number tokens (None for a body that is not
    UTF-8)."""
    text = pl.Series([p._body for p in pages], dtype=pl.Binary).cast(pl.String, strict=False)
    found = pl.select(
        text.str.count_matches(":null", literal=True).alias("n"),
        text.str.count_matches(_BOOLEAN).alias("b"),
        text.str.count_matches("[", literal=True).alias("l"),
        text.str.contains(_ODD_NUMBER).alias("o"),
    )
    out: list[_Counts | None] = []
    for page, (nulls, booleans, lists, odd) in zip(pages, found.iter_rows(), strict=True):
        if odd is None:
            out.append(None)
            continue
        if odd:
            single = pl.Series([page._body], dtype=pl.Binary).cast(pl.String)
            odd = single.str.count_matches(_ODD_NUMBER).item()
        out.append(_Counts(-nulls, booleans, lists, int(odd)))
    return out


def _field(parts: Sequence[str]) -> pl.Expr:
    """A record's field: its top-level column, then struct fields."""
    return field_expr(parts[1:], pl.col(parts[0]))


def _flatten_exprs() -> list[pl.Expr]:
    """``__p.*`` (parents), ``__lists`` and ``__hist`` feed the key accounting."""
    leaves = [_field(parts).alias(name) for name, parts, _ in WIRE_LEAVES]
    parents = [_field(p.split(".")).alias(f"{AUX}p.{p}") for p in PARENTS]
    lists = pl.sum_horizontal(_field(c.split(".")).list.len() for c in LIST_COLS)
    # Every non-null member of a listed object is a key and (all are strings) a string value.
    members = pl.sum_horizontal(
        _field(name.split("."))
        .list.eval(
            pl.sum_horizontal(
                pl.element().struct.field(f.name).is_not_null().cast(pl.Int64) for f in item.fields
            )
        )
        .list.sum()
        for name, item in OBJECT_LIST_COLUMNS.items()
    )
    return [
        pl.col(f"{AUX}page"),
        *leaves,
        *parents,
        lists.alias(f"{AUX}lists"),
        members.alias(f"{AUX}hist"),
    ]


def _convert_exprs() -> tuple[list[pl.Expr], list[pl.Expr], list[str]]:
    """Checks are True where a value is not proven exact; two steps, so each conversion is
    computed once."""
    conversions: list[pl.Expr] = []
    checks: list[pl.Expr] = []
    names: list[str] = []
    for name, _, _ in WIRE_LEAVES:
        raw, done = pl.col(name), pl.col(f"{AUX}c.{name}")
        final = COLUMNS[name]
        if isinstance(final, pl.Decimal):
            converted = raw.cast(final, strict=False)  # overflow: null, then flagged
            check = raw.is_not_null() & (
                (done.cast(pl.Float64) != raw) | (raw.abs() >= MAX_EXACT_MONEY)
            )
        elif isinstance(final, pl.Int64) or name in EPOCH_MS_COLUMNS:
            converted = raw.cast(pl.Int64, strict=False)
            if name in EPOCH_MS_COLUMNS:
                converted = converted.cast(pl.Datetime("ms")).dt.replace_time_zone("UTC")
            check = raw.is_not_null() & ((raw.floor() != raw) | (raw.abs() >= MAX_EXACT_INT))
            if name in EPOCH_MS_COLUMNS:
                check = check | (raw < MIN_EPOCH_MS) | (raw > MAX_EPOCH_MS)
        elif name in ISO_TIMESTAMP_COLUMNS:
            converted = raw.str.to_datetime(
                ISO_FORMAT, time_unit="ms", time_zone="UTC", strict=False, cache=False
            )
            check = raw.is_not_null() & done.is_null()
        else:
            continue
        conversions.append(converted.alias(f"{AUX}c.{name}"))
        checks.append(check)
        names.append(name)
    return conversions, checks, names


_FLATTEN = _flatten_exprs()
_CONVERSIONS, _CHECKS, _CONVERTED = _convert_exprs()
_FINAL = [pl.col(f"{AUX}c.{n}").alias(n) if n in set(_CONVERTED) else pl.col(n) for n in LEAF_NAMES]


def _convert(data: pl.DataFrame) -> pl.DataFrame:
    flat = data.select(_FLATTEN).with_columns(_CONVERSIONS)
    return flat.with_columns(pl.any_horizontal(_CHECKS).alias(f"{AUX}bad"))


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
    span = _records_span(body, request)
    if span is not None:
        _, total, message, start, end = span
        counts = _byte_accounting(body, start, end)
        if counts is not None:
            try:
                # The span is one JSON array (else polars raises); a null or non-object record
                # raises too, so every row is a record object.
                records = pl.read_json(body[start:end], schema=_RECORD_COLUMNS)
            except Exception:  # polars names neither record nor field: the exact path explains
                records = None
            if records is not None:
                return RawPage(
                    total=total,
                    count=records.height,
                    message=message,
                    _body=body,
                    _request=request,
                    _records=records,
                    _expected=counts,
                )
    exact = decode_exact(body, request)
    return RawPage(
        total=exact.total,
        count=exact.frame.height,
        message=exact.message,
        exact=True,
        ids=exact.frame["id"],
        _exact=exact.frame,
    )


def _present(columns: Sequence[str]) -> pl.Expr:
    return pl.sum_horizontal(pl.col(c).is_not_null().cast(pl.Int64) for c in columns)


def _account_aggs(null_items: bool) -> list[pl.Expr]:
    """The frame's side of the accounting, per page; built once (at import) for both cases."""
    per_row = pl.col(f"{AUX}lists").fill_null(0) + 2 * pl.col(f"{AUX}hist").fill_null(0)
    if null_items:  # rare: a null inside a list is neither a key nor a string
        per_row = per_row - pl.sum_horizontal(
            pl.col(c).list.len() - pl.col(c).list.drop_nulls().list.len() for c in LIST_COLS
        )
    leaf_and_parents = [*LEAF_NAMES, *(f"{AUX}p.{p}" for p in PARENTS)]
    keys = _present(leaf_and_parents) + _present(STRING_COLS)
    return [
        (keys + per_row.fill_null(0).cast(pl.Int64)).sum().alias("keys_and_strings"),
        _present(BOOL_COLS).sum().alias("booleans"),
        _present(ALL_LIST_COLS).sum().alias("lists"),
    ]


_ACCOUNT = {False: _account_aggs(False), True: _account_aggs(True)}


def _accounted(converted: pl.DataFrame, counts: Sequence[int]) -> list[_Counts]:
    null_items = 0
    for c in LIST_COLS:
        null_items += converted[c].explode(empty_as_null=False, keep_nulls=False).null_count()
    sums = converted.group_by(f"{AUX}page").agg(_ACCOUNT[null_items > 0])
    by_page = {int(row[0]): row[1:] for row in sums.iter_rows()}
    return [_Counts(*(int(v) for v in by_page.get(i, (0, 0, 0)))) for i in range(len(counts))]


def _add(a: _Counts | None, b: _Counts | None) -> _Counts | None:
    if a is None or b is None:
        return None
    return _Counts(
        a.keys_and_strings + b.keys_and_strings,
        a.booleans + b.booleans,
        a.lists + b.lists,
        a.odd_numbers + b.odd_numbers,
    )


def _edge_runs(frame: pl.DataFrame, pages: int) -> list[tuple[EdgeRun, EdgeRun] | None]:
    page, created, rid = pl.col(f"{AUX}page"), pl.col("createdAt"), pl.col("id")
    new_run = ((created != created.shift()) | (page != page.shift())).fill_null(True)
    runs = frame.select(
        page.alias("page"),
        rid.alias("id"),
        created.alias("stamp"),
        new_run.cum_sum().alias("run"),
        (rid.is_null() | created.is_null()).alias("null"),
    )
    run = pl.col("run")
    edge_rows = (
        runs.filter(
            ((run == run.first().over("page")) | (run == run.last().over("page")))
            & ~pl.col("null").any().over("page")
        )
        .group_by("page", "run", maintain_order=True)
        .agg(pl.col("stamp").first(), pl.col("id"), pl.len().alias("size"))
        .select("page", "stamp", "size", "id")
    )
    out: list[tuple[EdgeRun, EdgeRun] | None] = [None] * pages
    for index, stamp, size, ids in edge_rows.iter_rows():
        edge = (str(stamp), int(size), frozenset(str(i) for i in ids))
        found = out[index]
        out[index] = (edge, edge) if found is None else (found[0], edge)
    return out


def _exact_edges(frame: pl.DataFrame) -> tuple[EdgeRun, EdgeRun] | None:
    if not frame.height or "id" not in frame.columns or "createdAt" not in frame.columns:
        return None
    created = frame["createdAt"]
    if created.dtype != pl.String:
        created = created.dt.strftime(ISO_FORMAT)
    keys = pl.DataFrame(
        {f"{AUX}page": pl.zeros(frame.height, pl.Int32, eager=True), "createdAt": created}
    ).with_columns(frame["id"].cast(pl.String).alias("id"))
    return _edge_runs(keys, 1)[0]


def build_frames(pages: Sequence[RawPage], *, edges: bool = False) -> list[pl.DataFrame]:
    """Verify and convert read pages into flat, typed frames, in the pages' order.

    Pages whose keys cannot be accounted for, or holding a value that cannot be proven exact,
    are decoded again by the exact path. Sets each page's ``ids`` (and, with ``edges``, its
    :attr:`~RawPage.edges`). A record found on two pages appears in the frames in the order
    of its pages (so that :func:`dedupe_latest` can prefer the later one). The frames may
    differ in undocumented columns and decimal scales: use :func:`combine`.

    Raises:
        SchemaError: a value cannot be converted to its column's type without loss.
    """
    fast = [p for p in pages if p._exact is None and p._records is not None]
    if edges:
        for page in pages:
            if page._exact is not None:
                page.edges = _exact_edges(page._exact)
    if not fast:
        return [p._exact for p in pages if p._exact is not None]
    data = _transactions(fast)
    converted = _convert(data)
    redo = _pages_to_redo(fast, converted)
    runs = _edge_runs(converted, len(fast)) if edges else [None] * len(fast)
    return _frames_in_order(pages, fast, converted, redo, runs)


def _transactions(fast: list[RawPage]) -> pl.DataFrame:
    records = pl.concat(
        [p._records for p in fast if p._records is not None], how="vertical", rechunk=True
    )
    # Each row's page index, built once for the batch (a column added page by page costs a
    # polars call per page).
    pages = pl.select(
        pl.int_range(len(fast), dtype=pl.Int32)
        .repeat_by(pl.Series([p.count for p in fast], dtype=pl.UInt32))
        .explode()
        .drop_nulls()
        .alias(f"{AUX}page")
    ).to_series()
    return records.with_columns(pages)


def _pages_to_redo(fast: list[RawPage], converted: pl.DataFrame) -> set[int]:
    accounted = _accounted(converted, [p.count for p in fast])
    bad_pages = set(converted.filter(pl.col(f"{AUX}bad"))[f"{AUX}page"].unique().to_list())
    whole = _whole_body_counts(fast)
    return {
        i
        for i, p in enumerate(fast)
        if i in bad_pages or accounted[i] != _add(p._expected, whole[i])
    }


def _frames_in_order(
    pages: Sequence[RawPage],
    fast: list[RawPage],
    converted: pl.DataFrame,
    redo: set[int],
    runs: Sequence[tuple[EdgeRun, EdgeRun] | None],
) -> list[pl.DataFrame]:
    final = converted.select(_FINAL)
    out: list[pl.DataFrame] = []
    run_start = run_end = 0  # rows of consecutive fast pages not yet emitted
    offset = 0
    index = {id(p): i for i, p in enumerate(fast)}
    for page in pages:
        i = index.get(id(page))
        if i is not None and i not in redo:
            page.ids = converted["id"].slice(offset, page.count)
            page.edges = runs[i]
            offset += page.count
            run_end = offset
            page._body = page._records = None  # the frames hold everything now
            continue
        if run_end > run_start:
            out.append(final.slice(run_start, run_end - run_start))
        if i is None:
            if page._exact is not None:
                out.append(page._exact)
        else:
            page.exact = True
            exact = decode_exact(page._body or b"", page._request).frame
            page.ids = exact["id"]
            # The wire's text, as for the other fast pages and the confirming read's keys
            # (a timestamp written otherwise, e.g. "+00:00", stays comparable with them).
            page.edges = runs[i]
            out.append(exact)
            offset += page.count
            page._body = page._records = None
        run_start = run_end = offset
    if run_end > run_start:
        out.append(final.slice(run_start, run_end - run_start))
    return out
