"""How a sync's months become one Delta commit (:class:`MonthWriter`, :func:`commit`).

The months a sync touched are replaced in one commit that also carries txkit's metadata (the
source, every month's coverage and the digest of every data file of the version). txkit writes
each data file itself (polars' Parquet writer, faster than delta-rs's: docs/benchmarks.md), to a
folder or to object storage, records its digest (``_location.digest_of``) and commits the
files with their add actions; nothing is visible before the commit: a sync killed or
failing earlier leaves files that no version references, and the table at its previous
version. The records never carry the secret key into the table: a value a server echoed it
into is stored with ``***`` in its place.

**Writing never changes a value.** A column the table holds with a narrower type than new
records need (``Decimal(38, 2)`` money and a six-decimal USDT amount; an undocumented field
stored as integers and now ``0.75``) is widened by the rules the loader itself uses between
pages (:func:`txkit.decode.combine`): the commit records the wider type, and every data file
of the version holding the column under the narrower one is rewritten under the wider type in
the same commit. So the table needs no reader feature (Delta's ``typeWidening`` is one, which
polars' ``scan_delta`` refuses), and every Delta reader reads it. Every cast, of new records
and of rewritten files alike, is proven by casting back and comparing (a strict cast is not
enough: polars rounds when it reduces a decimal scale); a value no common type holds fails
the sync naming the record, the field and the value, and nothing is written.

The commit is made against the version the sync read, with no retry: if another writer
committed meanwhile, this commit fails with :class:`~txkit.store._location.StoreLockedError`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import io
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from txkit import config
from txkit._scrub import scrub_frame
from txkit.errors import StoreError, StoreLockedError
from txkit.schema import COLUMNS
from txkit.store._location import digest_of, objects, storage_options, table_uri
from txkit.store._problems import is_io_error, os_problem, write_problem
from txkit.store._table import new_store_beside, open_table, read_verified, table_files

__all__ = [
    "META_KEY",
    "TABLE_CONFIGURATION",
    "MonthWriter",
    "checkpoint_due",
    "commit",
    "drop_stale_checkpoints",
    "wider_type",
    "write_checkpoint",
]

#: The commit-metadata key of txkit's metadata.
META_KEY = "txkit.store"
#: Statistics (for data skipping by DuckDB, Spark, polars) on the columns analysts filter by,
#: not on every nested column: writing them costs more than they save.
TABLE_CONFIGURATION = {
    "delta.dataSkippingStatsColumns": "id,createdAt,updatedAt,status,transType,toCurrency"
}
_STATS_COLUMNS = ("id", "createdAt", "updatedAt")


# --------------------------------------------------------------------------------------------
# Types: the common type of two, and casts proven exact.


def wider_type(have: pl.DataType, new: pl.DataType) -> pl.DataType | None:
    """The type that holds every value of both ``have`` and ``new``, by the loader's rules
    between pages (:func:`txkit.decode.combine`), or None when there is none.

    Integers and decimals: ``Decimal(38, larger scale)``; a number and text: text (the number's
    digits); lists of objects: the union of their members, each member widened alike.
    """
    if have == new:
        return have
    if isinstance(have, pl.Null):
        return new
    if isinstance(new, pl.Null):
        return have
    numeric = (pl.Decimal, pl.Int64)
    if isinstance(have, numeric) and isinstance(new, numeric):
        scale = max(getattr(have, "scale", 0) or 0, getattr(new, "scale", 0) or 0)
        return pl.Decimal(38, scale)
    if isinstance(have, pl.List) and isinstance(new, pl.List):
        inner = wider_type(have.inner, new.inner)
        return pl.List(inner) if inner is not None else None
    if isinstance(have, pl.Struct) and isinstance(new, pl.Struct):
        fields = {f.name: f.dtype for f in have.fields}
        for f in new.fields:
            if f.name in fields:
                both = wider_type(fields[f.name], f.dtype)
                if both is None:
                    return None
                fields[f.name] = both
            else:
                fields[f.name] = f.dtype
        return pl.Struct(fields)
    if {type(have), type(new)} <= {pl.String, pl.Decimal, pl.Int64}:
        return pl.String()  # a number in some records, text in others: keep the text
    return None


def _convert(expr: pl.Expr, source: pl.DataType, target: pl.DataType) -> pl.Expr:
    """Structs gain the target's extra members and lose those it lacks (the cast back of a
    widened struct)."""
    if source == target:
        return expr
    if isinstance(source, pl.List) and isinstance(target, pl.List):
        return expr.list.eval(_convert(pl.element(), source.inner, target.inner))
    if isinstance(source, pl.Struct) and isinstance(target, pl.Struct):
        have = {f.name: f.dtype for f in source.fields}
        return pl.struct(
            _convert(expr.struct.field(f.name), have[f.name], f.dtype).alias(f.name)
            if f.name in have
            else pl.lit(None, dtype=f.dtype).alias(f.name)
            for f in target.fields
        )
    return expr.cast(target, strict=True)


def cast_exactly(
    frame: pl.DataFrame, name: str, target: pl.DataType, *, store: Any, month: str
) -> pl.Series:
    """Column ``name`` of ``frame`` as ``target``, proven unchanged: cast back to its own type,
    it equals the original, value for value (nulls included).

    Raises:
        StoreError: a value the cast changes or cannot carry, named with its record.
    """
    column = frame.get_column(name)
    source = column.dtype
    try:
        cast = frame.select(_convert(pl.col(name), source, target)).to_series()
        back = pl.DataFrame({name: cast}).select(_convert(pl.col(name), target, source))
        if back.to_series().equals(column, check_dtypes=True, null_equal=True):
            return cast
    except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError):
        pass
    row = _first_changed(frame, name, target)
    rid = row.get("id")
    raise StoreError(
        f"writing record {rid} ({month}) to the store {store} would change its {name} "
        f"{_shown(row.get(name))} (the column is {target}, the value {source}); nothing was "
        "written: the store is left at its previous version"
    )


def _first_changed(frame: pl.DataFrame, name: str, target: pl.DataType) -> dict[str, Any]:
    column = frame.get_column(name)
    try:
        there = column.cast(target, strict=False)
        back = there.cast(column.dtype, strict=False)
        changed = column.is_not_null() & (back.is_null() | back.ne_missing(column))
        hits = changed.arg_true()
        if hits.len():
            return frame.row(int(hits[0]), named=True)
    except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError):
        pass
    rows = frame.filter(pl.col(name).is_not_null()).head(1)
    return rows.row(0, named=True) if rows.height else {"id": None, name: None}


def _shown(value: Any) -> str:
    text = str(value)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _clash(frame: pl.DataFrame, name: str, have: pl.DataType, store: Any, month: str) -> StoreError:
    rows = frame.filter(pl.col(name).is_not_null()).head(1)
    row = rows.row(0, named=True) if rows.height else {"id": None, name: None}
    return StoreError(
        f"record {row.get('id')} ({month}) has {name} = {_shown(row.get(name))} "
        f"({frame.schema[name]}), but the store {store} holds {name} as {have}: no type holds "
        "both without changing values; nothing was written (the store is left at its "
        f"previous version): sync this source into a new store (--store {new_store_beside(store)})"
    )


def _prepared(frame: pl.DataFrame, store: Any, month: str) -> pl.DataFrame:
    """Delta's types: null columns as text, unsigned as signed (proven), timestamps in
    microseconds."""
    columns = []
    for name, dtype in frame.schema.items():
        if dtype == pl.Null:
            columns.append(pl.col(name).cast(pl.String))
        elif dtype.is_unsigned_integer():
            columns.append(pl.lit(cast_exactly(frame, name, pl.Int64(), store=store, month=month)))
        elif isinstance(dtype, pl.Datetime) and dtype.time_unit == "ms":
            columns.append(pl.col(name).cast(pl.Datetime("us", dtype.time_zone)))
        else:
            continue
        columns[-1] = columns[-1].alias(name)
    return frame.with_columns(columns) if columns else frame


# --------------------------------------------------------------------------------------------
# Writing.


@dataclass
class _File:
    """A data file written by this sync (not yet committed)."""

    month: str
    rel: str
    digest: str
    action: Any
    schema: pl.Schema


@contextlib.contextmanager
def _store_errors(store: str | os.PathLike[str], version: int | None) -> Iterator[None]:
    try:
        yield
    except StoreError:
        raise
    except OSError as exc:
        raise StoreError(os_problem(store, exc)) from None
    except Exception as exc:
        from deltalake.exceptions import CommitFailedError

        if isinstance(exc, CommitFailedError) or (version is None and "exists" in str(exc)):
            raise StoreLockedError(_concurrent(store)) from None
        if is_io_error(exc) or isinstance(exc, pl.exceptions.ComputeError):
            raise StoreError(write_problem(store, exc)) from None
        raise


class MonthWriter:
    """The months of one sync, written as they are fetched and committed once.

    Each month's data file is written as soon as the month is added, on a thread of its own
    while the next month is fetched (so a sync holds two months in memory, not all of them),
    with its digest; the commit adds the files, removes the months' old ones and records every
    file's digest. Files of a sync that fails or is killed before its commit are referenced by
    no version.

    Args:
        store: the store folder or URI.
        version: the table version the sync read (None: no table yet).
        digests: the digests the store recorded for that version's files (by path).
    """

    def __init__(
        self,
        store: str | os.PathLike[str],
        version: int | None,
        digests: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.version = version
        self._digests = dict(digests or {})
        self._files = objects(store)
        self._written: list[_File] = []
        self._null: set[str] = set()  # undocumented columns null-typed in some month
        self._table_schema: pl.Schema | None = None
        self._target: dict[str, pl.DataType] | None = None
        self._committed = False
        self._writing: cf.Future[_File] | None = None  # the month added last, being written
        self._thread = cf.ThreadPoolExecutor(1, thread_name_prefix="txkit-store-write")

    def _types(self) -> dict[str, pl.DataType]:
        if self._target is None:
            self._target = {}
            if self.version is not None:
                table = open_table(self.store, self.version)
                schema = pl.scan_delta(table).collect_schema()
                self._table_schema = pl.Schema({k: v for k, v in schema.items() if k != "month"})
                self._target = dict(self._table_schema)
        return self._target

    def add(self, month: str, frame: pl.DataFrame) -> None:
        """Write one month's records (without a ``month`` column).

        Raises:
            StoreError: a value no column type holds unchanged (named), or the store cannot
                be written (full, read-only; named).
        """
        with _store_errors(self.store, self.version):
            # An undocumented field with no value this month has no type: it is left out of
            # this month's file (read back as null), so it cannot clash with its type in
            # another month.
            empty = [n for n, d in frame.schema.items() if d == pl.Null and n not in COLUMNS]
            self._null.update(empty)
            part = _prepared(frame.drop(empty), self.store, month)
            part, _ = scrub_frame(part, where=f"the store {self.store}")
            types = self._types()
            for name, dtype in part.schema.items():
                have = types.get(name)
                if have is None or have == dtype:
                    types.setdefault(name, dtype)
                    continue
                wide = wider_type(have, dtype)
                if wide is None:
                    raise _clash(part, name, have, self.store, month)
                types[name] = wide
            part = self._as_types(part, month)
            self._wait()
            if part.height:
                self._writing = self._thread.submit(self._write, month, part)

    def _wait(self) -> None:
        """The month being written, once written (its error, raised here)."""
        writing, self._writing = self._writing, None
        if writing is not None:
            self._written.append(writing.result())

    def _as_types(self, part: pl.DataFrame, month: str) -> pl.DataFrame:
        types = self._types()
        casts = [
            cast_exactly(part, name, types[name], store=self.store, month=month)
            for name, dtype in part.schema.items()
            if types.get(name, dtype) != dtype
        ]
        return part.with_columns(casts) if casts else part

    def _write(self, month: str, part: pl.DataFrame) -> _File:
        from deltalake.transaction import AddAction

        rel = f"month={month}/part-{uuid.uuid4().hex}.zstd.parquet"
        buffer = io.BytesIO()
        # zstd level 1, not polars' default 3: less CPU and, on these columns, smaller files;
        # reading costs the same (docs/benchmarks.md).
        part.write_parquet(buffer, compression="zstd", compression_level=1, statistics=True)
        data = buffer.getvalue()
        del buffer
        try:
            self._files.put(rel, data)
        except BaseException:
            self._files.delete(rel)  # a half-written file of no version
            raise
        action = AddAction(
            path=rel,
            size=len(data),
            partition_values={"month": month},
            modification_time=int(time.time() * 1000),
            data_change=True,
            stats=json.dumps(_stats(part)),
        )
        return _File(month, rel, digest_of(data), action, part.schema)

    def commit(self, months: list[str], meta: dict[str, Any]) -> int:
        """One commit: the months' new files replace their old ones (and files of other months
        holding a widened column are rewritten); returns the new version.

        Raises:
            StoreLockedError: another writer committed since the version read.
            StoreError: the store cannot be written (full, read-only; named), or a stored value
                does not fit the widened type (named).
        """
        with _store_errors(self.store, self.version):
            self._wait()
            types = self._types()
            for name in sorted(self._null - set(types)):
                types[name] = pl.String()  # null in every month: kept as a column
            if not types:
                types.update(_prepared(pl.DataFrame(schema=COLUMNS), self.store, "").schema)
            replaced = list(months)
            # This sync's files written before a later month widened a column.
            for written in list(self._written):
                if any(types[n] != d for n, d in written.schema.items()):
                    self._rewrite(written)
            replaced += self._widen_stored(months)
            schema = self._schema(types)
            kept = (
                {rel for rel, month, _ in table_files(open_table(self.store, self.version))
                 if month not in replaced}
                if self.version is not None
                else set()
            )  # fmt: skip
            digests = {rel: d for rel, d in self._digests.items() if rel in kept}
            digests.update({w.rel: w.digest for w in self._written})
            meta = {**meta, "files": dict(sorted(digests.items()))}
            _commit_actions(
                self.store,
                self.version,
                [w.action for w in self._written],
                schema,
                sorted(set(replaced)),
                meta,
            )
        self._committed = True
        version = _version(self.store)
        if version > 0:  # a table of one commit opens faster from it than from a checkpoint
            with _store_errors(self.store, version):
                # Every later version gets a checkpoint, so opening the newest reads it alone
                # (docs/benchmarks.md).
                write_checkpoint(self.store, version)
                drop_stale_checkpoints(self.store, version)
        return version

    def _rewrite(self, written: _File) -> None:
        data = read_verified(self._files, self.store, written.rel, written.month, written.digest)
        part = self._as_types(pl.read_parquet(io.BytesIO(data)), written.month)
        self._written.remove(written)
        self._files.delete(written.rel)
        self._written.append(self._write(written.month, part))

    def _widen_stored(self, months: list[str]) -> list[str]:
        if self.version is None or self._table_schema is None:
            return []
        types = self._types()
        widened = {n for n, d in self._table_schema.items() if types[n] != d}
        if not widened:
            return []
        by_month: dict[str, list[str]] = {}
        for rel, month, _ in table_files(open_table(self.store, self.version)):
            if month not in months:
                by_month.setdefault(month, []).append(rel)
        redone = []
        for month, rels in by_month.items():
            parts = [
                pl.read_parquet(
                    io.BytesIO(
                        read_verified(
                            self._files,
                            self.store,
                            rel,
                            month,
                            self._digests.get(rel),
                            self.version,
                        )
                    )
                )
                for rel in rels
            ]
            if not any(widened & set(part.columns) for part in parts):
                continue
            redone.append(month)
            for part in parts:
                self._written.append(self._write(month, self._as_types(part, month)))
        return redone

    def _schema(self, types: dict[str, pl.DataType]) -> pl.Schema:
        order = list(self._table_schema or {})
        order += [n for n in types if n not in order]
        return pl.Schema({**{n: types[n] for n in order}, "month": pl.String()})

    def close(self) -> None:
        """Remove the files written for a commit that was not made."""
        with contextlib.suppress(Exception):  # its error was raised, or another one was
            self._wait()
        self._thread.shutdown()
        if not self._committed:
            for written in self._written:
                self._files.delete(written.rel)
        self._written.clear()


def commit(
    store: str | os.PathLike[str],
    version: int | None,
    frames: list[pl.DataFrame],
    months: list[str],
    meta: dict[str, Any],
    digests: Mapping[str, str] | None = None,
) -> int:
    """Replace ``months`` with ``frames`` (each with a ``month`` column) and record ``meta``.

    Args:
        store: the store folder or URI.
        version: the table version the sync read (None: no table yet).
        frames: the months' records.
        months: the months replaced (those without records become empty).
        meta: txkit's metadata for this commit.
        digests: the digests recorded for ``version``'s files.

    Returns:
        The new table version.

    Raises:
        StoreLockedError: another writer committed since ``version``.
        StoreError: the store cannot be written (full, read-only; named).
    """
    writer = MonthWriter(store, version, digests)
    try:
        for frame in frames:
            for month in frame["month"].unique(maintain_order=True).to_list():
                writer.add(month, frame.filter(pl.col("month") == month).drop("month"))
        return writer.commit(months, meta)
    finally:
        writer.close()


def checkpoint_due(version: int, interval: int = config.STORE_CHECKPOINT_INTERVAL) -> bool:
    """Whether ``version`` gets a log checkpoint (every ``interval`` versions, never 0)."""
    return version > 0 and version % interval == 0


def drop_stale_checkpoints(store: str | os.PathLike[str], newest: int) -> list[int]:
    """Remove the checkpoints of older versions that only served to open the newest version
    quickly, keeping every one at the interval (:func:`checkpoint_due`), the last two, the one
    ``_last_checkpoint`` names, and any that a version needs because commits before it were
    removed (by the retention policy).

    Returns:
        The versions whose checkpoints were removed.
    """
    files = objects(store)
    names = [o.rel.rsplit("/", 1)[-1] for o in files.list("_delta_log")]
    try:  # the checkpoint readers are told to start from
        hinted = json.loads(files.get("_delta_log/_last_checkpoint"))["version"]
    except Exception:  # none, or unreadable: then only the rules below decide
        hinted = None
    commits = {int(n[:20]) for n in names if n.endswith(".json") and n[:20].isdigit()}
    checkpoints = sorted(int(n[:20]) for n in names if n.endswith(".checkpoint.parquet"))
    removed = []
    for version in list(checkpoints):
        # The newest two stay: a reader that opened the table just before this commit may
        # still be reading the previous one.
        if version >= newest - 1 or version == hinted or checkpoint_due(version):
            continue
        base = max((c for c in checkpoints if c < version), default=-1)
        if all(v in commits for v in range(base + 1, version + 1)):  # readable without it
            files.delete(f"_delta_log/{version:020d}.checkpoint.parquet")
            checkpoints.remove(version)
            removed.append(version)
    return removed


def write_checkpoint(store: str | os.PathLike[str], version: int) -> None:
    """Write the log checkpoint of ``version`` (see :mod:`txkit.store._compact`)."""
    from deltalake import DeltaTable

    DeltaTable(
        table_uri(store), version=version, storage_options=storage_options(store)
    ).create_checkpoint()


def _version(store: str | os.PathLike[str]) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(table_uri(store), storage_options=storage_options(store)).version())


def _properties(meta: dict[str, Any]) -> Any:
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={META_KEY: json.dumps(meta)}, max_commit_retries=0)


def _no_hooks() -> Any:
    """txkit keeps its own checkpoint interval, and the retention policy decides which log
    entries go."""
    from deltalake import PostCommitHookProperties

    return PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)


def _commit_actions(
    store: str | os.PathLike[str],
    version: int | None,
    actions: list[Any],
    schema: pl.Schema,
    months: list[str],
    meta: dict[str, Any],
) -> None:
    from deltalake import DeltaTable
    from deltalake import Schema as DeltaSchema
    from deltalake.transaction import create_table_with_add_actions

    delta_schema = DeltaSchema.from_arrow(_arrow_schema(pl.DataFrame(schema=schema)))
    options = storage_options(store)
    if version is None:
        create_table_with_add_actions(
            table_uri(store),
            delta_schema,
            actions,
            mode="error",
            partition_by=["month"],
            configuration=TABLE_CONFIGURATION,
            storage_options=options,
            commit_properties=_properties(meta),
            post_commithook_properties=_no_hooks(),
        )
        return
    table = DeltaTable(table_uri(store), version=version, storage_options=options)
    table.create_write_transaction(
        actions,
        mode="overwrite",
        schema=delta_schema,
        partition_by=["month"],
        partition_filters=[("month", "in", months)],
        commit_properties=_properties(meta),
        post_commithook_properties=_no_hooks(),
    )


def _arrow_schema(data: pl.DataFrame) -> Any:
    from arro3.core import Table

    return Table.from_arrow(data.head(0)).schema


def _stats(part: pl.DataFrame) -> dict[str, Any]:
    cols = [c for c in _STATS_COLUMNS if c in part.columns]
    row = part.select(
        *[pl.col(c).min().alias(f"min:{c}") for c in cols],
        *[pl.col(c).max().alias(f"max:{c}") for c in cols],
        *[pl.col(c).null_count().alias(f"nulls:{c}") for c in cols],
    ).row(0, named=True)

    def text(value: Any) -> Any:
        if hasattr(value, "isoformat"):
            return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return value

    return {
        "numRecords": part.height,
        "minValues": {c: text(row[f"min:{c}"]) for c in cols if row[f"min:{c}"] is not None},
        "maxValues": {c: text(row[f"max:{c}"]) for c in cols if row[f"max:{c}"] is not None},
        "nullCount": {c: row[f"nulls:{c}"] for c in cols},
    }


def _concurrent(store: str | os.PathLike[str]) -> str:
    return (
        f"another writer committed to the store {store} while this sync ran; nothing of this "
        "sync was kept: run it again (it fetches only what is still missing)"
    )
