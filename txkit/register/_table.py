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

import os
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import polars as pl

from txkit.errors import RegisterFormatError, StoreError
from txkit.register._model import FORMAT
from txkit.store import storage_options, table_uri

__all__ = ["EVENT_SCHEMA", "RegisterFormatError", "append_events", "read_events", "register_uri"]

#: The table's name; its description names the format (delta-rs accepts no custom table
#: properties: "Error parsing property").
TABLE_NAME: Final = "txkit_register"
_DESCRIBED = re.compile(r"format ([0-9]+)")
_ATTEMPTS: Final = 5

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
    found = _DESCRIBED.search(table.metadata().description or "")
    written = int(found.group(1)) if found else FORMAT
    if written > FORMAT:
        raise RegisterFormatError(
            f"the exception register in {store} was written by a newer txkit (register format "
            f"{written}; this txkit reads up to {FORMAT}): upgrade txkit to read or change it"
        )
    return table


def read_events(
    store: str | os.PathLike[str], version: int | None = None
) -> tuple[pl.DataFrame, int | None]:
    """Every event of the register (empty without one) and the register's table version.

    Raises:
        RegisterFormatError: written by a newer txkit.
    """
    table = _table(store, version)
    if table is None:
        return pl.DataFrame(schema=EVENT_SCHEMA), None
    frame = pl.read_delta(table)
    if frame.height and int(frame["format"].max() or 0) > FORMAT:  # type: ignore[arg-type]
        raise RegisterFormatError(
            f"the exception register in {store} holds events of a newer txkit (format "
            f"{frame['format'].max()}; this txkit reads up to {FORMAT}): upgrade txkit"
        )
    return events_frame(frame), int(table.version())


def append_events(store: str | os.PathLike[str], events: pl.DataFrame) -> int:
    """Append ``events`` as one commit; returns the register's new table version.

    A commit that fails because another one landed first is retried (appends never conflict
    in content); after five failures nothing is written and a :class:`StoreError` says so.

    Raises:
        RegisterFormatError: the register was written by a newer txkit.
        StoreError: the commit kept failing, or the store cannot be written.
    """
    from deltalake import write_deltalake
    from deltalake.exceptions import CommitFailedError, DeltaError

    events = events_frame(events)
    uri, options = register_uri(store), storage_options(store)
    if not str(uri).startswith(("s3://", "gs://", "az://")):
        os.makedirs(uri, exist_ok=True)
    problem = ""
    for attempt in range(_ATTEMPTS):
        table = _table(store)
        try:
            write_deltalake(
                uri if table is None else table,
                events,
                mode="append",
                storage_options=options if table is None else None,
                name=TABLE_NAME if table is None else None,
                description=f"txkit exception register, format {FORMAT}" if table is None else None,
            )
        except CommitFailedError as exc:
            # Two first commits race to create the table, or the log moved under a commit.
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            time.sleep(0.05 * (attempt + 1))
            continue
        except DeltaError as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if "already exists" in text or "conflict" in text.lower():
                problem = text
                time.sleep(0.05 * (attempt + 1))
                continue
            raise StoreError(
                f"cannot write the exception register in {store} ({text}): nothing was written"
            ) from None
        done = _table(store)
        assert done is not None
        return int(done.version())
    raise StoreError(
        f"the exception register in {store} changed under this command {_ATTEMPTS} times "
        f"({problem}): nothing was written; run it again"
    )
