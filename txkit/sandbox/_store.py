"""The sandbox's served data: records in export order, their filter index, and edits.

:class:`Store` holds the records the sandbox serves (rendered bytes, newest first, ties by
``id``), a small polars frame of the filterable fields, and the primitives that change them
(a new record arrives, a record changes status). It knows nothing about faults: the fault
layer (:mod:`txkit.sandbox._effects`) decides when and what to change and calls these
primitives. A filter is resolved once into row positions (contiguous for date ranges, via the
frame for the other filters) and cached until the data changes.
"""

from __future__ import annotations

import bisect
import re
import threading
from typing import Any

import polars as pl

from txkit.sandbox._render import iso_ms
from txkit.sandbox.ledger import Ledger
from txkit.schema import CURRENCIES, STATUSES, TRANS_TYPES

__all__ = ["Store"]

_UPDATED_RE = re.compile(rb'"updatedAt":"[^"]*"')
_UPDATED_VALUE = re.compile(rb'"updatedAt":"([^"]*)"')
_CREATED_RE = re.compile(rb'"createdAt":"[^"]*"')


class Store:
    """The served records in export order and their filter index (thread-safe via ``lock``)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.lock = threading.RLock()
        self._load()

    def _load(self) -> None:
        ledger = self.ledger
        rows = ledger.export_rows()
        self.bodies: list[bytes] = ledger.export_bodies()
        index = ledger.index[rows] if rows else ledger.index.clear()
        self.ids: list[str] = index.get_column("id").to_list()
        self.created: list[int] = index.get_column("createdAt").to_list()
        self.frame = pl.DataFrame(
            {
                "transType": index.get_column("transType").cast(pl.Enum(TRANS_TYPES)),
                "status": index.get_column("status").cast(pl.Enum(STATUSES)),
                "toCurrency": index.get_column("toCurrency").cast(pl.Enum(CURRENCIES)),
            }
        )
        self._updated: list[int] | None = None  # updatedAt (epoch ms), parsed when needed
        self.version = 0
        self.cache: dict[tuple[Any, ...], pl.Series] = {}
        #: Ids of the records whose status changed since the last reset, in order.
        self.changed: list[str] = []

    def reset(self) -> None:
        """Serve the ledger as generated again (undo every edit)."""
        with self.lock:
            self._load()

    def __len__(self) -> int:
        return len(self.bodies)

    # -- selection -------------------------------------------------------------------------

    def updated(self) -> list[int]:
        """Every record's ``updatedAt`` in epoch ms, in export order (parsed once)."""
        if self._updated is None:
            texts = [m.group(1).decode() for m in map(_UPDATED_VALUE.search, self.bodies)]
            self._updated = (
                pl.Series(texts, dtype=pl.String)
                .str.to_datetime("%Y-%m-%dT%H:%M:%S%.3fZ", time_unit="ms", time_zone="UTC")
                .dt.epoch("ms")
                .to_list()
            )
        return self._updated

    def select(
        self,
        low: int | None,
        high: int | None,
        trans_type: str | None = None,
        status: str | None = None,
        currency: str | None = None,
        *,
        field: str = "createdAt",
    ) -> range | pl.Series:
        """Positions (in export order) of the records matching the filters.

        Args:
            low, high: the date range ``[low, high)`` in epoch ms (None: open).
            trans_type, status, currency: equality filters (None: any).
            field: the timestamp the date range applies to, ``createdAt`` or ``updatedAt``.

        Returns:
            A ``range`` when only ``createdAt`` dates filter, else a series of positions
            (ascending).
        """
        if field == "updatedAt":
            return self._select_updated(low, high, trans_type, status, currency)
        created = self.created
        start = 0 if high is None else bisect.bisect_right(created, -high, key=_neg)
        stop = len(created) if low is None else bisect.bisect_right(created, -low, key=_neg)
        stop = max(start, stop)
        conditions = []
        if trans_type is not None:
            conditions.append(pl.col("transType") == trans_type)
        if status is not None:
            conditions.append(pl.col("status") == status)
        if currency is not None:
            conditions.append(pl.col("toCurrency") == currency)
        if not conditions:
            return range(start, stop)
        key = (self.version, start, stop, trans_type, status, currency)
        hit = self.cache.get(key)
        if hit is None:
            hit = (
                self.frame.slice(start, stop - start)
                .with_row_index("position", offset=start)
                .filter(*conditions)
                .get_column("position")
            )
            if len(self.cache) > 256:
                self.cache.clear()
            self.cache[key] = hit
        return hit

    def _select_updated(
        self,
        low: int | None,
        high: int | None,
        trans_type: str | None,
        status: str | None,
        currency: str | None,
    ) -> pl.Series:
        key = ("updatedAt", self.version, low, high, trans_type, status, currency)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        updated = pl.col("updated")
        conditions = [pl.lit(True)]
        if low is not None:
            conditions.append(updated >= low)
        if high is not None:
            conditions.append(updated < high)
        for name, value in (
            ("transType", trans_type),
            ("status", status),
            ("toCurrency", currency),
        ):
            if value is not None:
                conditions.append(pl.col(name) == value)
        hit = (
            self.frame.with_columns(updated=pl.Series(self.updated(), dtype=pl.Int64))
            .with_row_index("position")
            .filter(*conditions)
            .get_column("position")
        )
        if len(self.cache) > 256:
            self.cache.clear()
        self.cache[key] = hit
        return hit

    def chunk(self, selection: range | pl.Series, skip: int, limit: int) -> list[bytes]:
        """The bodies of ``selection[skip:skip + limit]``."""
        if isinstance(selection, range):
            first = selection.start + skip
            return self.bodies[first : min(selection.stop, first + limit)]
        bodies = self.bodies
        return [bodies[p] for p in selection.slice(skip, limit).to_list()]

    def statuses(self) -> list[str]:
        """Every record's status, in export order."""
        return self.frame.get_column("status").cast(pl.String).to_list()

    # -- edits -----------------------------------------------------------------------------

    def insert_newest(
        self, body: bytes, record_id: str, created: int, trans_type: str, status: str, cur: str
    ) -> None:
        """Add a record newer than every other (it becomes position 0)."""
        self.bodies.insert(0, body)
        self.ids.insert(0, record_id)
        self.created.insert(0, created)
        self._updated = None  # parsed again when needed
        row = pl.DataFrame(
            {
                "transType": pl.Series([trans_type], dtype=pl.Enum(TRANS_TYPES)),
                "status": pl.Series([status], dtype=pl.Enum(STATUSES)),
                "toCurrency": pl.Series([cur], dtype=pl.Enum(CURRENCIES)),
            }
        )
        self.frame = pl.concat([row, self.frame], rechunk=False)
        if self.frame.n_chunks() > 16:
            self.frame = self.frame.rechunk()
        self._changed_data()

    def set_status(self, position: int, new: str, updated_ms: int) -> None:
        """Change the status of the record at ``position`` and set its ``updatedAt``."""
        body = self.bodies[position]
        old = self.frame.get_column("status")[position]
        body = body.replace(b'"status":"%s"' % old.encode(), b'"status":"%s"' % new.encode(), 1)
        body = _UPDATED_RE.sub(b'"updatedAt":"%s"' % iso_ms(updated_ms).encode(), body, count=1)
        self.bodies[position] = body
        if self._updated is not None:
            self._updated[position] = updated_ms
        status = self.frame.get_column("status").clone().scatter(position, new)
        self.frame = self.frame.with_columns(status)
        self.changed.append(self.ids[position])
        self._changed_data()

    def set_created(self, stamps: dict[int, int]) -> None:
        """Give the records at some positions another ``createdAt`` (epoch ms), then put every
        record back in export order (newest first, ties by ``id``)."""
        text = {p: b'"createdAt":"%s"' % iso_ms(ms).encode() for p, ms in stamps.items()}
        for position, stamp in stamps.items():
            self.bodies[position] = _CREATED_RE.sub(text[position], self.bodies[position], count=1)
            self.created[position] = stamp
        created, ids = self.created, self.ids
        order = sorted(range(len(created)), key=lambda p: (-created[p], ids[p]))
        self.bodies = [self.bodies[p] for p in order]
        self.ids = [ids[p] for p in order]
        self.created = [created[p] for p in order]
        self.frame = self.frame[order]
        self._updated = None
        self._changed_data()

    def _changed_data(self) -> None:
        self.version += 1
        self.cache.clear()


def _neg(value: int) -> int:
    return -value
