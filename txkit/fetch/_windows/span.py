"""Windows and what was fetched of them: the shared vocabulary of the window proofs."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import polars as pl

from txkit.decode import read_page
from txkit.errors import RecordsMovingError
from txkit.fetch.pages import SlotRead, describe_query

__all__ = ["DAY", "FetchMode", "Piece", "RecordsMovingError", "Span"]

DAY = timedelta(days=1)
#: The largest offset of a service's days from UTC considered plausible (UTC-14..UTC+14).
MAX_OFFSET = timedelta(hours=14)
#: A record updated at least this long after its creation tests which field dates filter.
LAG_TEST = timedelta(days=4)
#: The widest margin tried beyond an edge before the export fails.
MAX_MARGIN_DAYS = 64
_IDS_SCHEMA = {
    "data": pl.Struct({"transactions": pl.List(pl.Struct({"id": pl.String})), "total": pl.Int64})
}


class FetchMode(enum.Enum):
    """How a window's records are fetched."""

    #: Offset passes over the whole window (split into date windows past a maximum ``skip``).
    OFFSET = enum.auto()
    #: Date windows of one page each: offset passes did not converge (records moving).
    ONE_PAGE = enum.auto()


class Edge(enum.Enum):
    """An edge of the exported days."""

    FIRST = "first"
    LAST = "last"


@dataclass(frozen=True)
class Span:
    """A server-side window: the ``startDate`` and ``endDate`` sent (None: not sent)."""

    start: date | None
    end: date | None

    def params(self, filters: Mapping[str, str | int]) -> dict[str, str | int]:
        """The query parameters: ``filters`` plus the dates."""
        out = dict(filters)
        if self.start is not None:
            out["startDate"] = self.start.isoformat()
        if self.end is not None:
            out["endDate"] = self.end.isoformat()
        return out

    def __str__(self) -> str:
        return f"startDate={self.start or '(none)'}&endDate={self.end or '(none)'}"


@dataclass
class Piece:
    """One fetched window: its records, ids, total and the digests of its pages."""

    span: Span
    frames: list[pl.DataFrame]
    ids: set[str]
    total: int
    slots: dict[tuple[int, int], SlotRead]
    low: datetime | None = None
    high: datetime | None = None
    single: bool = False
    stride: int = 0

    def __post_init__(self) -> None:
        lows = [f["createdAt"].min() for f in self.frames if f.height and "createdAt" in f.columns]
        highs = [f["createdAt"].max() for f in self.frames if f.height and "createdAt" in f.columns]
        lows = [v for v in lows if v is not None]
        highs = [v for v in highs if v is not None]
        self.low = min(lows) if lows else None
        self.high = max(highs) if highs else None


def union_ids(pieces: list[Piece]) -> set[str]:
    """The unique ids of ``pieces`` (one window's own set, not a copy: read it, never add)."""
    return pieces[0].ids if len(pieces) == 1 else set().union(*(p.ids for p in pieces))


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def _ids_of(body: bytes) -> tuple[int, set[str]]:
    try:
        data = pl.read_json(body, schema=_IDS_SCHEMA)["data"][0]
        return int(data["total"]), {r["id"] for r in data["transactions"] or [] if r["id"]}
    except Exception:  # not the envelope we know: the full reader says what is wrong
        page = read_page(body)
        return page.total, set(page.ids.to_list()) if page.ids is not None else set()


@dataclass
class _First:
    total: int
    count: int
    stride: int
    piece: Piece


class _Hook:
    """A tqdm-like object for :func:`fetch_query` that forwards to ``on_page``."""

    def __init__(self, on_page: Callable[[int, int], None]) -> None:
        self._on_page = on_page
        self.total = 0

    def refresh(self) -> None:
        pass

    def update(self, done: int) -> None:
        self._on_page(done, 0)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "total" and "total" in self.__dict__:
            self._on_page(0, value - self.__dict__["total"])
        object.__setattr__(self, name, value)


def _describe(filters: Mapping[str, Any], span: Span) -> str:
    dates = {"startDate": span.start, "endDate": span.end}
    return describe_query({**filters, **{k: v for k, v in dates.items() if v is not None}})
