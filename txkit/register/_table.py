"""The register's Delta table: an append-only log of events beside the transactions.

``STORE/_register/`` is a second Delta table in the same store (a folder or ``s3://`` URI): it
has versions, works wherever the store works, and any Delta reader can read it. The leading
``_`` keeps it out of the transactions table's own files (Delta ignores such folders).

Every change is one appended commit of events, never an update in place, so:

* two analysts annotating at once both land: appends do not conflict in Delta; a commit that
  still fails (the log moved under it) is retried, and after :data:`_ATTEMPTS` refused with a
  message, never dropped silently;
* a killed command leaves the previous version: a commit is one atomic log entry, and data
  files it wrote without committing are ignored by every reader;
* who changed what when is the log itself.

Events (one row each; :data:`EVENT_SCHEMA`): ``reported`` (a report run of a month, its table
version), ``seen`` (an item listed by that run: section, kind, currency, amount, own date),
``annotated`` (status, category, owner, explanation set by someone), ``signed`` (a report
signed: role, name, the store's table version it cites).
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import polars as pl

from txkit.errors import RegisterFormatError, StoreDamagedError, StoreError, one_line
from txkit.register._model import FORMAT
from txkit.store import (
    DIGEST_ALGORITHM,
    digest_of,
    objects,
    storage_options,
    table_files,
    table_uri,
)

__all__ = [
    "EVENT_SCHEMA",
    "PartCheck",
    "RegisterFormatError",
    "append_events",
    "check_parts",
    "read_events",
    "register_uri",
    "repair_register",
]

#: The table's name; its description names the format (delta-rs accepts no custom table
#: properties: "Error parsing property").
TABLE_NAME: Final = "txkit_register"
_DESCRIBED = re.compile(r"format ([0-9]+)")
_ATTEMPTS: Final = 5
#: A register file's name records its digest: ``part-<uuid>-xxh3_128_<32 hex>.zstd.parquet``.
_NAMED = re.compile(r"-[a-z0-9]+_[0-9]+_([0-9a-f]{32})\.zstd\.parquet$")

EVENT_SCHEMA: Final = pl.Schema(
    {
        "event": pl.String,
        "run": pl.String,
        "month": pl.String,
        "key": pl.String,
        "section": pl.String,
        "kind": pl.String,
        "currency": pl.String,
        "amount": pl.Decimal(38, 6),
        "item_date": pl.Date,
        "status": pl.String,
        "category": pl.String,
        "owner": pl.String,
        "explanation": pl.String,
        "actor": pl.String,
        "at": pl.Datetime("us", "UTC"),
        "note": pl.String,
        "table_version": pl.Int64,
        "role": pl.String,
        "format": pl.Int32,
    }
)


def register_uri(store: str | os.PathLike[str]) -> str:
    """The register table's URI: ``STORE/_register``."""
    return f"{table_uri(store).rstrip('/')}/_register"


def now() -> datetime:
    """The time an event is recorded (UTC, microseconds)."""
    return datetime.now(UTC)


def events_frame(rows: Sequence[dict[str, Any]] | pl.DataFrame) -> pl.DataFrame:
    """Rows (or a frame with some of the columns) as events in :data:`EVENT_SCHEMA`."""
    frame = (
        rows
        if isinstance(rows, pl.DataFrame)
        else pl.DataFrame(
            list(rows), schema={k: v for k, v in EVENT_SCHEMA.items() if any(k in r for r in rows)}
        )
    )
    return frame.select(
        [
            (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
            for name, dtype in EVENT_SCHEMA.items()
        ]
    ).with_columns(pl.lit(FORMAT, dtype=pl.Int32).alias("format"))


def _table(store: str | os.PathLike[str], version: int | None = None) -> Any:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(
            register_uri(store), version=version, storage_options=storage_options(store)
        )
    except TableNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # an unreadable log (DeltaError is an OSError... or not)
        raise StoreDamagedError(
            _damaged(store, "_delta_log", one_line(exc, 160)),
            months=[],
            path="_register/_delta_log",
        ) from None
    found = _DESCRIBED.search(table.metadata().description or "")
    written = int(found.group(1)) if found else FORMAT
    if written > FORMAT:
        raise RegisterFormatError(
            f"the exception register in {store} was written by a newer txkit (register format "
            f"{written}; this txkit reads up to {FORMAT}): upgrade txkit to read or change it"
        )
    return table


def repair_command(store: str | os.PathLike[str]) -> str:
    """The command that rebuilds a damaged register from its intact files."""
    return f"txkit exceptions repair --store {shlex.quote(str(store))}"


def _damaged(store: str | os.PathLike[str], rel: str, detail: str) -> str:
    return (
        f"the exception register in {store} is damaged: _register/{rel} ({detail}); repair: "
        f"{repair_command(store)}"
    )


@dataclass(frozen=True)
class PartCheck:
    """One file of the register's version, checked: ``ok`` (its digest matches),
    ``damaged``, ``missing``, or ``unverified`` (a file not named by its digest, which txkit
    does not write: another tool added it; ``detail`` says whether it reads)."""

    path: str
    size: int
    status: str
    detail: str = ""
    events: pl.DataFrame | None = None


def _recorded(rel: str) -> str | None:
    found = _NAMED.search(rel.rsplit("/", 1)[-1])
    return f"{DIGEST_ALGORITHM}:{found.group(1)}" if found else None


def _parse(data: bytes) -> pl.DataFrame:
    try:
        return pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # any parse failure of a damaged file
        raise ValueError(one_line(exc, 120)) from None
    except BaseException as exc:  # pyo3's PanicException is a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise ValueError(one_line(exc, 120)) from None


#: The files each commit of a register added, by (register URI and table id, version): a
#: commit's log entry never changes once written, so a process reads each once.
_ADDED: dict[tuple[str, int], tuple[str, ...]] = {}


def _commit_versions(uri: str, files: Any, version: int) -> dict[str, int]:
    """Each file of the register by the version whose commit added it (the Delta log's
    ``add`` actions); a commit folded into a checkpoint is left out (its files count as
    older than any listed)."""
    found: dict[str, int] = {}
    for number in range(version + 1):
        if (uri, number) not in _ADDED:
            try:
                data = files.get(f"_delta_log/{number:020d}.json")
            except Exception:  # no such log entry (a checkpoint holds it): older than the rest
                continue
            _ADDED[(uri, number)] = _added(bytes(data))
        for rel in _ADDED[(uri, number)]:
            found[rel] = number
    return found


def _added(entry: bytes) -> tuple[str, ...]:
    """The paths a commit's log entry adds."""
    from urllib.parse import unquote

    paths = []
    for line in entry.splitlines():
        try:
            add = json.loads(line).get("add")
        except (ValueError, AttributeError):
            continue
        if isinstance(add, dict) and isinstance(add.get("path"), str):
            paths.append(unquote(add["path"]))
    return tuple(paths)


def check_parts(store: str | os.PathLike[str], version: int | None = None) -> list[PartCheck]:
    """Every file of the register's version, its bytes checked against the digest its name
    records (:func:`append_events` names each file by its digest), and parsed.

    Raises:
        RegisterFormatError: written by a newer txkit.
        StoreDamagedError: the register's log cannot be read.
    """
    table = _table(store, version)
    if table is None:
        return []
    files = objects(register_uri(store))
    out = []
    # In commit order (delta-rs lists a version's files newest first): the register's order
    # is its own commit sequence, never a writer's clock.
    # Keyed by the table's id too: a register made anew at the same place is another log.
    where = f"{register_uri(store)}#{table.metadata().id}"
    listed = table_files(table)
    commits = _commit_versions(where, files, int(table.version()))
    if any(rel not in commits for rel, _, _ in listed):  # a commit written anew (removed ones)
        for key in [k for k in _ADDED if k[0] == where]:
            del _ADDED[key]
        commits = _commit_versions(where, files, int(table.version()))
    listed = sorted(listed, key=lambda f: commits.get(f[0], -1))
    for rel, _, size in listed:
        try:
            data = files.get(rel)
        except Exception as exc:  # a lost file (OSError, or obstore's not-found)
            out.append(PartCheck(rel, size, "missing", one_line(exc, 120)))
            continue
        expected = _recorded(rel)
        if expected is not None and digest_of(data) != expected:
            out.append(PartCheck(rel, size, "damaged", f"{len(data):,} bytes, digest differs"))
            continue
        try:
            frame = _parse(data)
        except ValueError as exc:
            out.append(PartCheck(rel, size, "damaged", f"does not read: {exc}"))
            continue
        status = "ok" if expected is not None else "unverified"
        detail = "" if expected is not None else "unverified (not named by its digest); it reads"
        out.append(PartCheck(rel, size, status, detail, frame))
    return out


def read_events(
    store: str | os.PathLike[str], version: int | None = None
) -> tuple[pl.DataFrame, int | None]:
    """Every event of the register (empty without one), in the register's commit order, and
    the register's table version. Each file's bytes are checked against the digest recorded
    when it was written.

    Raises:
        RegisterFormatError: written by a newer txkit.
        StoreDamagedError: a file of the register is missing or not the bytes written (one
            line naming it and the repair command).
    """
    table = _table(store, version)
    if table is None:
        return pl.DataFrame(schema=EVENT_SCHEMA), None
    parts = []
    for check in check_parts(store, int(table.version())):
        if check.events is None:
            raise StoreDamagedError(
                _damaged(store, check.path, f"{check.status}: {check.detail}"),
                months=[],
                path=f"_register/{check.path}",
            )
        parts.append(events_frame(check.events))
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=EVENT_SCHEMA)
    if frame.height and int(frame["format"].max() or 0) > FORMAT:  # type: ignore[arg-type]
        raise RegisterFormatError(
            f"the exception register in {store} holds events of a newer txkit (format "
            f"{frame['format'].max()}; this txkit reads up to {FORMAT}): upgrade txkit"
        )
    return frame, int(table.version())


def _write_part(store: str | os.PathLike[str], events: pl.DataFrame) -> Any:
    from deltalake.transaction import AddAction

    buffer = io.BytesIO()
    events.write_parquet(buffer, compression="zstd", statistics=True)
    data = buffer.getvalue()
    digest = digest_of(data).split(":", 1)[1]
    rel = f"part-{uuid.uuid4().hex}-{DIGEST_ALGORITHM}_{digest}.zstd.parquet"
    files = objects(register_uri(store))
    try:
        files.put(rel, data)
    except BaseException:
        files.delete(rel)  # a half-written file of no version
        raise
    return AddAction(
        path=rel,
        size=len(data),
        partition_values={},
        modification_time=int(time.time() * 1000),
        data_change=True,
        stats=json.dumps({"numRecords": events.height}),
    )


def _delta_schema() -> Any:
    from arro3.core import Table
    from deltalake import Schema as DeltaSchema

    return DeltaSchema.from_arrow(Table.from_arrow(pl.DataFrame(schema=EVENT_SCHEMA)).schema)


def _commit(store: str | os.PathLike[str], table: Any, actions: list[Any], mode: str) -> None:
    from deltalake import CommitProperties, PostCommitHookProperties
    from deltalake.transaction import create_table_with_add_actions

    hooks = PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)
    if table is None:
        create_table_with_add_actions(
            register_uri(store),
            _delta_schema(),
            actions,
            mode="error",
            name=TABLE_NAME,
            description=f"txkit exception register, format {FORMAT}",
            storage_options=storage_options(store),
            post_commithook_properties=hooks,
        )
        return
    table.create_write_transaction(
        actions,
        mode=mode,
        schema=_delta_schema(),
        commit_properties=CommitProperties(max_commit_retries=0),
        post_commithook_properties=hooks,
    )


def append_events(store: str | os.PathLike[str], events: pl.DataFrame) -> int:
    """Append ``events`` as one commit; returns the register's new table version.

    The events are written as one Parquet file named by its digest (checked by every read),
    then committed. A commit that fails because another one landed first is retried
    (appends never conflict in content); after five failures nothing is written and a
    :class:`StoreError` says so.

    Raises:
        RegisterFormatError: the register was written by a newer txkit.
        StoreError: the commit kept failing, or the store cannot be written.
    """
    return _write(store, events_frame(events), "append")


def _write(store: str | os.PathLike[str], events: pl.DataFrame, mode: str) -> int:
    from deltalake.exceptions import CommitFailedError, DeltaError

    uri = register_uri(store)
    if not str(uri).startswith(("s3://", "gs://", "az://", "abfss://")):
        try:
            os.makedirs(uri, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot write the exception register in {store} ({one_line(exc)}): nothing "
                "was written"
            ) from None
    problem = ""
    try:
        action = _write_part(store, events)
    except Exception as exc:  # OSError, obstore's errors: a read-only or full store
        raise StoreError(
            f"cannot write the exception register in {store} ({one_line(exc, 160)}): nothing "
            "was written"
        ) from None
    for attempt in range(_ATTEMPTS):
        table = _table(store)
        try:
            _commit(store, table, [action], mode)
        except CommitFailedError as exc:
            # Two first commits race to create the table, or the log moved under a commit.
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            time.sleep(0.05 * (attempt + 1))
            continue
        except (DeltaError, OSError) as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if "already exists" in text or "conflict" in text.lower():
                problem = text
                time.sleep(0.05 * (attempt + 1))
                continue
            objects(uri).delete(action.path)
            raise StoreError(
                f"cannot write the exception register in {store} ({text}): nothing was written"
            ) from None
        done = _table(store)
        assert done is not None
        return int(done.version())
    objects(uri).delete(action.path)
    raise StoreError(
        f"the exception register in {store} changed under this command {_ATTEMPTS} times "
        f"({problem}): nothing was written; run it again"
    )


def repair_register(store: str | os.PathLike[str]) -> tuple[list[PartCheck], int | None]:
    """Rebuild a damaged register from its intact files: one commit replaces every file by
    one holding every event that still reads and verifies. Returns the files that were
    dropped (damaged or missing) and the new version (None when nothing was damaged).

    Raises:
        StoreError: the register cannot be written (nothing changed).
    """
    checks = check_parts(store)
    lost = [c for c in checks if c.events is None]
    if not lost:
        return [], None
    kept = [events_frame(c.events) for c in checks if c.events is not None]
    frame = pl.concat(kept) if kept else pl.DataFrame(schema=EVENT_SCHEMA)
    return lost, _write(store, frame, "overwrite")
