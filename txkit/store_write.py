"""How a sync's months become one Delta commit (:func:`commit`).

The months a sync touched are replaced in one commit that also carries txkit's metadata (the
source and every month's coverage). For a folder, the data files are written by polars (its
Parquet writer is about twice as fast as delta-rs's here) and then committed with their add
actions; for object storage, delta-rs writes and commits (``write_deltalake``). Either way,
nothing is visible before the commit: a sync killed or failing earlier leaves files that no
version references, and the table at its previous version. The records never carry the secret
key into the table: a value a server echoed it into is stored with ``***`` in its place.

The commit is made against the version the sync read, with no retry: if another writer
committed meanwhile, this commit fails with :class:`~txkit.storage.StoreLockedError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from txkit._scrub import scrub_frame
from txkit.decode import combine
from txkit.schema import COLUMNS
from txkit.storage import (
    StoreError,
    StoreLockedError,
    is_io_error,
    is_remote,
    os_problem,
    storage_options,
    table_uri,
    write_problem,
)

__all__ = ["META_KEY", "TABLE_CONFIGURATION", "MonthWriter", "commit"]

#: The commit-metadata key of txkit's metadata.
META_KEY = "txkit.store"
#: Statistics (for data skipping by DuckDB, Spark, polars) on the columns analysts filter by,
#: not on every nested column: writing them costs more than they save.
TABLE_CONFIGURATION = {
    "delta.dataSkippingStatsColumns": "id,createdAt,updatedAt,status,transType,toCurrency"
}
_STATS_COLUMNS = ("id", "createdAt", "updatedAt")


def _prepared(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """One frame for Delta: types unified across months, null-typed columns as text, unsigned
    integers as signed, timestamps in microseconds (Delta's unit)."""
    frame = combine(frames) if len(frames) > 1 else frames[0]
    casts = []
    for name, dtype in frame.schema.items():
        if dtype == pl.Null:
            casts.append(pl.col(name).cast(pl.String))
        elif dtype.is_unsigned_integer():
            casts.append(pl.col(name).cast(pl.Int64))
        elif isinstance(dtype, pl.Datetime) and dtype.time_unit == "ms":
            casts.append(pl.col(name).cast(pl.Datetime("us", dtype.time_zone)))
    return frame.with_columns(casts) if casts else frame


def commit(
    store: str | os.PathLike[str],
    version: int | None,
    frames: list[pl.DataFrame],
    months: list[str],
    meta: dict[str, Any],
) -> int:
    """Replace ``months`` with ``frames`` (each with a ``month`` column) and record ``meta``.

    Args:
        store: the store folder or URI.
        version: the table version the sync read (None: no table yet).
        frames: the months' records.
        months: the months replaced (those without records become empty).
        meta: txkit's metadata for this commit.

    Returns:
        The new table version.

    Raises:
        StoreLockedError: another writer committed since ``version``.
        StoreError: the store cannot be written (full, read-only; named).
    """
    data = _prepared(frames) if frames else pl.DataFrame(schema={**COLUMNS, "month": pl.String})
    data, _ = scrub_frame(data, where=f"the store {store}")
    with _store_errors(store, version):
        if is_remote(store):
            _write_remote(store, version, data, months, meta)
        else:
            _write_local(Path(store), version, data, months, meta)
    return _version(store)


def _version(store: str | os.PathLike[str]) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(table_uri(store), storage_options=storage_options(store)).version())


@contextlib.contextmanager
def _store_errors(store: str | os.PathLike[str], version: int | None) -> Iterator[None]:
    """Writing failures as one-line :class:`StoreError` (or :class:`StoreLockedError`)."""
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

    For a folder, each month's data file is written as soon as the month is added (so a sync
    holds one month in memory, not all of them) and the commit only adds the files and
    removes the months' old ones; files of a sync that fails or is killed before its commit
    are referenced by no version. Object storage keeps the months for one ``write_deltalake``
    (:func:`commit`).

    Args:
        store: the store folder or URI.
        version: the table version the sync read (None: no table yet).
    """

    def __init__(self, store: str | os.PathLike[str], version: int | None) -> None:
        self.store = store
        self.version = version
        self._frames: list[pl.DataFrame] = []  # object storage
        self._actions: list[Any] = []
        self._schemas: list[pl.Schema] = []
        self._null: set[str] = set()  # undocumented columns null-typed in some month
        self._written: list[Path] = []
        self._table: pl.Schema | None = None
        self._committed = False

    def add(self, month: str, frame: pl.DataFrame) -> None:
        """Write (or keep) one month's records (without a ``month`` column).

        Raises:
            StoreError: the store cannot be written (full, read-only; named).
        """
        if is_remote(self.store):
            self._frames.append(frame.with_columns(pl.lit(month).alias("month")))
            return
        store = Path(self.store)
        with _store_errors(store, self.version):
            # An undocumented field with no value this month has no type: it is left out of
            # this month's file (read back as null), so it cannot clash with its type in
            # another month.
            empty = [n for n, d in frame.schema.items() if d == pl.Null and n not in COLUMNS]
            self._null.update(empty)
            part = _prepared([frame.drop(empty)])
            part, _ = scrub_frame(part, where=f"the store {store}")
            if self.version is not None:
                if self._table is None:
                    from deltalake import DeltaTable

                    table = DeltaTable(str(store.absolute()), version=self.version)
                    self._table = pl.scan_delta(table).collect_schema()
                part = _to_table_types(part, self._table, store)
            self._schemas.append(part.schema)
            if part.height:
                self._actions.append(_write_file(store, month, part, self._written))

    def commit(self, months: list[str], meta: dict[str, Any]) -> int:
        """One commit: the months' new files replace their old ones; returns the new version.

        Raises:
            StoreLockedError: another writer committed since the version read.
            StoreError: the store cannot be written (full, read-only; named).
        """
        if is_remote(self.store):
            version = commit(self.store, self.version, self._frames, months, meta)
            self._frames.clear()
            return version
        store = Path(self.store)
        with _store_errors(store, self.version):
            schema = _union(self._schemas, self._null)
            if schema is None:  # a column typed differently in two months: aligned once
                self._rewrite(store, months, meta)
            else:
                _commit_actions(store, self.version, self._actions, schema, months, meta)
        self._committed = True
        return _version(store)

    def _rewrite(self, store: Path, months: list[str], meta: dict[str, Any]) -> None:
        """The months' files read back, aligned by :func:`combine` and written again."""
        parts = [pl.read_parquet(path).with_columns(pl.lit(path.parent.name[6:]).alias("month"))
                 for path in self._written]  # fmt: skip
        data = _prepared(parts) if parts else pl.DataFrame(schema={**COLUMNS, "month": pl.String})
        _write_local(store, self.version, data, months, meta)
        for path in self._written:  # replaced by the files just committed
            with contextlib.suppress(OSError):
                path.unlink()

    def close(self) -> None:
        """Remove the files written for a commit that was not made."""
        if not self._committed:
            for path in self._written:
                with contextlib.suppress(OSError):
                    path.unlink()
        self._written.clear()


def _union(schemas: list[pl.Schema], null: set[str]) -> pl.Schema | None:
    """The months' columns in order of appearance (``month`` last), or None when a column has
    two types."""
    out: dict[str, pl.DataType] = {}
    for schema in schemas:
        for name, dtype in schema.items():
            if out.setdefault(name, dtype) != dtype:
                return None
    for name in sorted(null - set(out)):
        out[name] = pl.String()  # null in every month: kept as a column, as one write would
    if not out:
        out = {**COLUMNS}
    return pl.Schema({**_prepared([pl.DataFrame(schema=out)]).schema, "month": pl.String()})


def _properties(meta: dict[str, Any]) -> Any:
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={META_KEY: json.dumps(meta)}, max_commit_retries=0)


def _write_remote(
    store: str | os.PathLike[str],
    version: int | None,
    data: pl.DataFrame,
    months: list[str],
    meta: dict[str, Any],
) -> None:
    from deltalake import DeltaTable, WriterProperties, write_deltalake

    kwargs: dict[str, Any] = {
        "partition_by": ["month"],
        "schema_mode": "merge",
        "storage_options": storage_options(store),
        "writer_properties": WriterProperties(compression="ZSTD"),
        "commit_properties": _properties(meta),
    }
    if version is None:
        target: Any = table_uri(store)
        kwargs |= {"mode": "error", "configuration": TABLE_CONFIGURATION}
    else:
        target = DeltaTable(table_uri(store), version=version,
                            storage_options=storage_options(store))  # fmt: skip
        months_sql = ", ".join(f"'{m}'" for m in months)
        kwargs |= {"mode": "overwrite", "predicate": f"month IN ({months_sql})"}
    write_deltalake(target, data, **kwargs)


def _write_local(
    store: Path, version: int | None, data: pl.DataFrame, months: list[str], meta: dict[str, Any]
) -> None:
    """polars writes each month's file; one Delta transaction adds them and removes the old."""
    from deltalake import DeltaTable

    table = DeltaTable(str(store.absolute()), version=version) if version is not None else None
    if table is not None:
        data = _to_table_types(data, pl.scan_delta(table).collect_schema(), store)
    written: list[Path] = []
    try:
        actions = []
        for month in months:
            part = data.filter(pl.col("month") == month).drop("month")
            if part.height:
                actions.append(_write_file(store, month, part, written))
        _commit_actions(store, version, actions, data.schema, months, meta)
    except BaseException:
        for path in written:  # not referenced by any version: leave nothing behind
            with contextlib.suppress(OSError):
                path.unlink()
        raise


def _commit_actions(
    store: Path,
    version: int | None,
    actions: list[Any],
    schema: pl.Schema,
    months: list[str],
    meta: dict[str, Any],
) -> None:
    """One Delta transaction: add the written files, remove the months' old ones."""
    from deltalake import DeltaTable, Field
    from deltalake import Schema as DeltaSchema
    from deltalake.transaction import create_table_with_add_actions

    arrow = _arrow_schema(pl.DataFrame(schema=schema))
    if version is None:
        create_table_with_add_actions(
            str(store.absolute()),
            DeltaSchema.from_arrow(arrow),
            actions,
            mode="error",
            partition_by=["month"],
            configuration=TABLE_CONFIGURATION,
            commit_properties=_properties(meta),
        )
        return
    table = DeltaTable(str(store.absolute()), version=version)
    fields = list(table.schema().fields)
    known = {f.name for f in fields}
    extra: list[Field] = [f for f in DeltaSchema.from_arrow(arrow).fields if f.name not in known]
    table.create_write_transaction(
        actions,
        mode="overwrite",
        schema=DeltaSchema(fields + extra),
        partition_by=["month"],
        partition_filters=[("month", "in", months)],
        commit_properties=_properties(meta),
    )


def _to_table_types(data: pl.DataFrame, table: pl.Schema, store: Path) -> pl.DataFrame:
    """Cast the new records' columns to the types the table already has for them."""
    casts = []
    for name, dtype in data.schema.items():
        have = table.get(name)
        if have is None or have == dtype:
            continue
        try:
            data.select(pl.col(name).cast(have, strict=True))
        except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError):
            raise StoreError(
                f"the store {store} holds column {name!r} as {have}, but the service now sends "
                f"{dtype}; write this source to a new store (--store)"
            ) from None
        casts.append(pl.col(name).cast(have))
    return data.with_columns(casts) if casts else data


def _arrow_schema(data: pl.DataFrame) -> Any:
    from arro3.core import Table

    return Table.from_arrow(data.head(0)).schema


def _write_file(store: Path, month: str, part: pl.DataFrame, written: list[Path]) -> Any:
    from deltalake.transaction import AddAction

    rel = f"month={month}/part-{uuid.uuid4().hex}.zstd.parquet"
    path = store / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    written.append(path)
    part.write_parquet(path, compression="zstd", statistics=True)
    with open(path, "rb") as handle:  # on disk before the commit that references it
        os.fsync(handle.fileno())
    return AddAction(
        path=rel,
        size=path.stat().st_size,
        partition_values={"month": month},
        modification_time=int(time.time() * 1000),
        data_change=True,
        stats=json.dumps(_stats(part)),
    )


def _stats(part: pl.DataFrame) -> dict[str, Any]:
    """Delta file statistics: rows, and min/max/null counts of the key columns."""
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
