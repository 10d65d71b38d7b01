"""Reading the store: every data file's bytes checked against the digest its commit recorded,
then parsed from memory (:class:`_Reader`), lazily (:func:`scan_store`) or by month
(:func:`read_months`).
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl
from polars.io.plugins import register_io_source

from txkit._session import notebook_value
from txkit.calendar import parse_month
from txkit.decode import finalize
from txkit.errors import StoreDamagedError, StoreError
from txkit.schema import COLUMNS
from txkit.store._location import StoreLike, objects, store_location
from txkit.store._problems import damaged_message
from txkit.store._state import recorded_digests
from txkit.store._table import log_problems, open_table, read_verified, table_files

log = logging.getLogger("txkit")


def _casts(schema: pl.Schema) -> list[pl.Expr]:
    """Delta stores microseconds; back to milliseconds, exact for what txkit writes
    (:func:`_check_millis` proves it)."""
    return [
        pl.col(name).cast(dtype)
        for name, dtype in COLUMNS.items()
        if name in schema and schema[name] != dtype and isinstance(dtype, pl.Datetime)
    ]


def _check_millis(frame: pl.DataFrame, store: str | os.PathLike[str]) -> None:
    """Another writer's sub-millisecond part would be dropped by the cast: fail, naming the
    record."""
    names = [
        n
        for n, d in frame.schema.items()
        if n in COLUMNS and isinstance(d, pl.Datetime) and d.time_unit != "ms"
    ]
    if not names or frame.height == 0:
        return
    fine = pl.any_horizontal(pl.col(n).dt.microsecond() % 1000 != 0 for n in names)
    bad = frame.filter(fine).head(1)
    if bad.height:
        row = bad.row(0, named=True)
        name = next(n for n in names if row[n] is not None and row[n].microsecond % 1000)
        raise StoreError(
            f"the store {store} holds record {row.get('id')}'s {name} = {row[name].isoformat()}, "
            "finer than the milliseconds txkit reads it in: it was not written by txkit; point "
            "--store at a store `txkit sync` wrote"
        )


def _typed(lf: pl.LazyFrame) -> pl.LazyFrame:
    casts = _casts(lf.collect_schema())
    return lf.with_columns(casts) if casts else lf


def _plain_files(table: Any) -> bool:
    protocol = table.protocol()
    return protocol.min_reader_version == 1 or (
        protocol.min_reader_version >= 3 and not set(protocol.reader_features or ())
    )


#: Delta table features some reader of the store cannot read: DuckDB's delta extension, Daft
#: and Spark read a table at reader version 1, and choke on these (deletion vectors above all;
#: column mapping renames what they see; timestamps without a time zone).
UNREAD_FEATURES = ("deletionVectors", "columnMapping", "timestampNtz", "v2Checkpoint",
                   "typeWidening", "variantType")  # fmt: skip


def reader_problems(table: Any) -> list[str]:
    """What in ``table`` (a DeltaTable) some reader of the store cannot read; [] for a table
    as txkit writes it: reader version 1, no reader feature, no deletion vectors, timestamps
    with their time zone (UTC) and none inside a nested column, the ``month`` partition as
    text."""
    problems = []
    protocol = table.protocol()
    features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    problems += [f"the table feature {f} is enabled" for f in UNREAD_FEATURES if f in features]
    if protocol.min_reader_version > 1 and not problems:
        problems.append(f"reader version {protocol.min_reader_version} (readers expect 1)")
    config = table.metadata().configuration or {}
    if str(config.get("delta.enableDeletionVectors", "false")).lower() == "true":
        problems.append("delta.enableDeletionVectors is true")
    schema = json.loads(table.schema().to_json())

    def walk(kind: Any, where: str, nested: bool) -> None:
        if isinstance(kind, str):
            if kind == "timestamp_ntz":
                problems.append(f"{where} is a timestamp without a time zone")
            elif kind == "timestamp" and nested:
                problems.append(f"{where} is a timestamp inside a nested column")
        elif kind.get("type") == "struct":
            for f in kind["fields"]:
                walk(f["type"], f"{where}.{f['name']}" if where else f["name"], bool(where))
        elif kind.get("type") == "array":
            walk(kind["elementType"], f"{where}[]", True)
        elif kind.get("type") == "map":
            walk(kind["valueType"], f"{where}{{}}", True)

    walk(schema, "", False)
    partitions = table.metadata().partition_columns
    types = {f["name"]: f["type"] for f in schema["fields"]}
    if partitions != ["month"] or types.get("month") != "string":
        problems.append(f"the partition columns are {partitions}, not month as text")
    return problems


def _digests(table: Any, store: str | os.PathLike[str]) -> dict[str, str]:
    """{} for a table txkit did not write."""
    try:
        return recorded_digests(table, store)
    except StoreError:
        return {}


class _Reader:
    """The data files of one table version, read with their digests checked.

    Every read txkit makes goes through it (:func:`read_months`, :func:`scan_store`, the sync's
    merge read, the report's reads): each file's bytes are read once, checked against the
    digest recorded when the file was committed, and parsed from memory, so what is parsed
    is what was checked. A file without a recorded digest (another tool added it) is read as it is;
    :func:`verify_store` lists those.
    """

    def __init__(self, table: Any, store: str | os.PathLike[str], version: int | None) -> None:
        self.table = table
        self.store = store
        self.version = version
        self.digests = _digests(table, store)
        self.files = table_files(table)
        self.log = log_problems(self.files, self.digests)
        self.objects = objects(store)
        full = pl.Schema(table.schema())
        self.schema = pl.Schema({k: v for k, v in full.items() if k != "month"})

    def months(self) -> list[str]:
        return sorted({month for _, month, _ in self.files})

    def buffers(self, month: str) -> list[bytes]:
        """The month's files, each proven (or unverified: no digest recorded).

        Raises:
            StoreDamagedError: a file of the month is missing from the Delta log, or filed
                under another month (names it and the repair).
        """
        for rel, m, what in self.log:
            if m == month:
                raise StoreDamagedError(
                    damaged_message(self.store, rel, month, what, self.version),
                    months=[month],
                    path=rel,
                )
        out = []
        for rel, m, _ in self.files:
            if m == month:
                expected = self.digests.get(rel)
                if expected is None:
                    _note_unverified(self.store, rel)
                out.append(
                    read_verified(self.objects, self.store, rel, month, expected, self.version)
                )
        return out

    def scan(self, month: str) -> pl.LazyFrame:
        """The month's records in the stored types (without ``month``)."""
        buffers = self.buffers(month)
        if not buffers:
            return pl.LazyFrame(schema=self.schema)
        return pl.scan_parquet(
            buffers,
            schema=self.schema,
            missing_columns="insert",  # a file written before a column was added to the table
            extra_columns="ignore",
        )


def _note_unverified(store: str | os.PathLike[str], rel: str) -> None:
    # Said once per notebook (each page of a report says it), not once per kernel.
    seen: set[tuple[str, str]] = notebook_value("txkit.store.unverified_seen", set)
    if any(said == str(store) for said, _ in seen):
        seen.add((str(store), rel))
        return
    seen.add((str(store), rel))
    month = rel.split("/", 1)[0].removeprefix("month=")
    log.warning(
        "the store %s holds data files unverified (no digest recorded), e.g. %s: `txkit "
        "store verify --store %s` lists them; `txkit sync --store %s --refresh %s` rewrites a "
        "month with digests",
        store,
        rel,
        store,
        store,
        month,
    )


def _reader(table: Any, store: str | os.PathLike[str], version: int | None) -> _Reader | None:
    """None: a table not written by txkit (column mapping, deletion vectors, other partitions)."""
    if not _plain_files(table) or set(table.metadata().partition_columns) != {"month"}:
        return None
    return _Reader(table, store, version)


def _month_filter(predicate: pl.Expr | None, months: list[str]) -> list[str]:
    """Only conjuncts on ``month`` alone, evaluated on the month names; all months when there are
    none."""
    if predicate is None:
        return months
    on_month = [c for c in _conjuncts(predicate) if set(c.meta.root_names()) == {"month"}]
    if not on_month or not months:
        return months
    try:
        return pl.DataFrame({"month": months}).filter(*on_month)["month"].to_list()
    except Exception:  # an expression that needs other columns after all: read every month
        return months


def _conjuncts(expr: pl.Expr) -> list[pl.Expr]:
    try:
        tree = json.loads(expr.meta.serialize(format="json"))
        top = tree.get("BinaryExpr") if isinstance(tree, dict) else None
        if isinstance(top, dict) and top.get("op") == "And":
            return [c for part in expr.meta.pop() for c in _conjuncts(part)]
    except Exception:  # a serialisation this version does not offer: no split
        pass
    return [expr]


def scan_store(store: StoreLike = None, *, version: int | None = None) -> pl.LazyFrame:
    """Scan the store as one LazyFrame (documented columns first, plus ``month``).

    Nothing is read until the frame is collected; then only the months a filter on ``month``
    selects are read, each data file checked against its recorded digest first.

    Args:
        store: the store folder or URI (``s3://bucket/prefix``).
        version: read this table version instead of the newest (time travel).

    Returns:
        A :class:`polars.LazyFrame`; empty (with every documented column) if nothing is stored.

    Raises:
        StoreError: a missing version, or a store that cannot be read;
            :class:`StoreDamagedError` (when collected) for a data file whose bytes are not
            those committed, naming the month and the command that repairs it.

    Example:
        >>> txkit.scan_store().filter(pl.col("month") == "2026-10").collect()
    """
    store = store_location(store)
    table = open_table(store, version)
    if table is None:
        return pl.LazyFrame(schema={**COLUMNS, "month": pl.String()})
    reader = _reader(table, store, version)
    if reader is None:
        return _scan_unverified(table)
    order, typed = _columns(reader)
    source = functools.partial(_month_frames, reader, store, order)
    return register_io_source(source, schema=typed, explain_name=f"txkit store {store}")


def _scan_unverified(table: Any) -> pl.LazyFrame:
    lf = pl.scan_delta(table)  # the version opened above, with its storage options
    names = lf.collect_schema().names()
    extra = sorted(c for c in names if c not in COLUMNS and c != "month")
    return _typed(lf).select([*(c for c in COLUMNS if c in names), *extra, "month"])


def _columns(reader: _Reader) -> tuple[list[str], pl.Schema]:
    names = reader.schema.names()
    order = [
        *(c for c in COLUMNS if c in names),
        *sorted(c for c in names if c not in COLUMNS),
        "month",
    ]
    stored = {**reader.schema, "month": pl.String()}
    typed = {name: stored[name] for name in order}
    for cast in _casts(pl.Schema(typed)):
        name = cast.meta.output_name()
        typed[name] = COLUMNS[name]
    return order, pl.Schema(typed)


def _month_frames(
    reader: _Reader,
    store: str | os.PathLike[str],
    order: list[str],
    with_columns: list[str] | None,
    predicate: pl.Expr | None,
    n_rows: int | None,
    batch_size: int | None,
) -> Iterator[pl.DataFrame]:
    left = n_rows
    needed = None
    if with_columns is not None:
        needed = set(with_columns)
        if predicate is not None:
            needed |= set(predicate.meta.root_names())
    for month in _month_filter(predicate, reader.months()):
        if left is not None and left <= 0:
            return
        lf = reader.scan(month).with_columns(pl.lit(month).alias("month"))
        lf = lf.select([c for c in order if needed is None or c in needed])
        frame = _collect(lf, store, [month])
        _check_millis(frame, store)
        lf = frame.lazy().with_columns(_casts(frame.schema))
        if predicate is not None:
            lf = lf.filter(predicate)
        lf = lf.select(with_columns if with_columns is not None else order)
        if left is not None:
            lf = lf.head(left)
        out = lf.collect()
        if left is not None:
            left -= out.height
        yield out


def read_months(
    months: Sequence[str],
    *,
    store: StoreLike = None,
    currency: str | None = None,
    version: int | None = None,
) -> pl.DataFrame:
    """The stored records of ``months``, as :func:`txkit.load_transactions` would return them.

    Each data file is checked against the digest recorded when it was committed before it is
    parsed (see :class:`_Reader`).

    Args:
        months: ``YYYY-MM`` months.
        store: the store folder or URI.
        currency: optionally one ``toCurrency``.
        version: a table version (default: the newest).

    Returns:
        One row per transaction, documented columns first, sorted by ``createdAt`` then ``id``
        (no ``month`` column).

    Raises:
        ValueError: a malformed month.
        StoreDamagedError: a data file of the months is missing or changed (names the month
            and the command that repairs it).
        StoreError: the store cannot be read (the message names the file when it can).
    """
    store = store_location(store)
    wanted = [parse_month(m) for m in months]
    table = open_table(store, version)
    reader = _reader(table, store, version) if table is not None else None
    if reader is not None:
        parts = [reader.scan(m) for m in wanted]
        lf = pl.concat(parts, how="vertical") if parts else pl.LazyFrame(schema=reader.schema)
    else:
        lf = scan_store(store, version=version).filter(pl.col("month").is_in(wanted))
        lf = lf.drop("month")
    if currency is not None:
        lf = lf.filter(pl.col("toCurrency") == currency)
    # Sorted before the casts to the loader's types: a frame cast in the scan comes back in
    # chunks, slower to sort (docs/benchmarks.md).
    frame = finalize(_collect(lf, store, wanted))
    _check_millis(frame, store)
    casts = _casts(frame.schema)
    return frame.with_columns(casts) if casts else frame


def _collect(lf: pl.LazyFrame, store: str | os.PathLike[str], months: list[str]) -> pl.DataFrame:
    """A file that does not parse (without a recorded digest, or damaged) becomes
    :class:`StoreDamagedError`."""
    try:
        return lf.collect()
    except StoreError:
        raise
    except (pl.exceptions.ComputeError, pl.exceptions.PanicException, OSError) as exc:
        text = " ".join(str(exc).split())[:200]
        bad = _damaged_file(store, months)
        if bad is not None:
            rel, month, why = bad
            raise StoreDamagedError(
                damaged_message(store, rel, month, f"does not read ({why})"),
                months=[month],
                path=rel,
            ) from None
        refresh = " ".join(f"--refresh {m}" for m in months)
        raise StoreError(
            f"a data file of the store {store} cannot be read: {text}; run `txkit sync "
            f"--store {store} {refresh}` to fetch the month(s) again"
        ) from None


def _damaged_file(store: str | os.PathLike[str], months: list[str]) -> tuple[str, str, str] | None:
    table = open_table(store)
    files = objects(store)
    for rel, month, _ in table_files(table) if table is not None else []:
        if month not in months:
            continue
        try:
            pl.read_parquet(io.BytesIO(files.get(rel)))
        except Exception as exc:  # any parse failure or a lost file names the file
            return rel, month, " ".join(str(exc).split())[:120]
    return None
