"""The date edges: proving the service's window reaches past the first and the last day, and
that its date filters apply to ``createdAt`` (see :mod:`txkit.fetch._windows`)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import polars as pl

from txkit.decode import decode_page
from txkit.errors import BadRequestError, IncompleteExportError, SchemaError
from txkit.fetch._windows.span import (
    DAY,
    LAG_TEST,
    MAX_MARGIN_DAYS,
    MAX_OFFSET,
    Edge,
    Piece,
    Span,
    _describe,
    _ids_of,
    _midnight,
)

__all__ = ["EdgeProofs"]


class EdgeProofs:
    """The edge proofs of :class:`~txkit.fetch._windows.WindowedExport` (a mixin: the
    attributes are the export's)."""

    # Attributes of WindowedExport used here, for readers and type checkers.
    client: Any
    filters: dict[str, str | int]
    first: date | None
    last: date | None
    page_size: int
    max_skip: int | None
    margin: int
    open_dates: bool
    start_end: tuple[date, date] | None
    stats: Any
    pieces: list[Piece]

    def _initial_span(self) -> Span:
        if self.open_dates:
            return Span(None, None)
        if self.start_end is not None:
            start, end = self.start_end
            return Span(start if self.first else None, end if self.last else None)
        margin = self.margin * DAY
        return Span(
            self.first - margin if self.first else None, self.last + margin if self.last else None
        )

    def _lower_proven(self, outer: Span, pieces: list[Piece], total: int) -> bool:
        if self.first is None or outer.start is None:
            return True
        lows = [p.low for p in pieces if p.low is not None]
        if lows and min(lows) < _midnight(self.first):
            return True  # a record before the edge: the window reaches past it
        if self._count(Span(None, outer.end), "edges") == total:
            return True  # nothing there at all
        return self._unfiltered_reaches(outer.start, _midnight(self.first), before=True)

    def _upper_proven(self, outer: Span, pieces: list[Piece], total: int) -> bool:
        if self.last is None or outer.end is None:
            return True
        highs = [p.high for p in pieces if p.high is not None]
        if highs and max(highs) >= _midnight(self.last + DAY):
            return True
        if self._count(Span(outer.start, None), "edges") == total:
            return True
        return self._unfiltered_reaches(outer.end, _midnight(self.last + DAY), before=False)

    def _unfiltered_reaches(self, day: date, edge: datetime, *, before: bool) -> bool:
        """Whether the service's unfiltered window bounded at ``day`` reaches past ``edge``: the
        bounds are the service's, not the filters' (docs/completeness.md, date edges)."""
        if not self.filters:
            return False  # the same query as the filtered one: nothing new to learn
        # Three days ending (or starting) with the edge's day: the same bound as the query's
        # there, and not empty when both bounds exclude their day.
        span = Span(day, day + 2 * DAY) if before else Span(day - 2 * DAY, day)
        params = span.params({})

        def past(skip: int) -> tuple[bool, int, int]:
            self.stats.proof("edges")
            body, request = self.client.get_transactions(
                {**params, "skip": skip, "limit": self.page_size}
            )
            page = decode_page(body, request=request)
            created = page.frame["createdAt"].drop_nulls()
            found = bool(created.len()) and bool(
                created.min() < edge if before else created.max() >= edge
            )
            return found, page.total, page.frame.height

        try:
            found, total, height = past(0)
            if found or total <= height:
                return found
            # The listing's order is not documented: the edge may be on its last page.
            skip = total - self.page_size
            if self.max_skip is not None and skip > self.max_skip:
                return False
            return past(skip)[0]
        except (BadRequestError, SchemaError):
            return False  # not provable this way: the window is widened instead

    def _edge_error(self, which: Edge, outer: Span) -> IncompleteExportError:
        day = self.first if which is Edge.FIRST else self.last
        return IncompleteExportError(
            f"cannot prove that the service's date window reaches past the {which.value} day {day} "
            f"of {_describe(self.filters, outer)}, even {MAX_MARGIN_DAYS} days beyond it",
            expected=0,
            got=0,
            attempts=self.stats.passes,
        )

    def _date_field_mismatch(self, pieces: list[Piece]) -> bool:
        for p in pieces:
            start, end = p.span.start, p.span.end
            if start is not None and p.low is not None and p.low < _midnight(start) - MAX_OFFSET:
                return True
            if (
                end is not None
                and p.high is not None
                and p.high >= _midnight(end) + DAY + MAX_OFFSET
            ):
                return True
        return False

    def _on_created(self) -> bool:
        """Whether the record updated longest after its creation is found by its creation day
        (True when no record can tell; docs/completeness.md, dates not on ``createdAt``)."""
        best: tuple[Any, ...] | None = None
        for piece in self.pieces:
            for frame in piece.frames:
                if not frame.height or "updatedAt" not in frame.columns:
                    continue
                lag = (
                    frame.select(
                        "id",
                        "createdAt",
                        "status",
                        "transType",
                        "toCurrency",
                        (pl.col("updatedAt") - pl.col("createdAt")).alias("lag"),
                    )
                    .filter(pl.col("lag").is_not_null())
                    .sort("lag")
                    .tail(1)
                )
                if lag.height and (best is None or lag["lag"][0] > best[-1]):
                    best = lag.row(0)
        if best is None or best[-1] < LAG_TEST:
            return True
        record_id, created, status, trans_type, currency, _ = best
        day = created.date()
        params = Span(day - 2 * DAY, day + 2 * DAY).params(self.filters)
        for name, value in (("status", status), ("transType", trans_type), ("currency", currency)):
            if value is not None:
                params[name] = value
        self.stats.proof("edges")
        try:
            body, _ = self.client.get_transactions({**params, "skip": 0, "limit": self.page_size})
        except BadRequestError:
            return True  # a value the filter does not take: nothing to test
        total, ids = _ids_of(body)
        return record_id in ids or total > len(ids)

    def _note_open(self) -> None:
        self.stats.note("date filters not on createdAt: fetched without dates, filtered locally")

    def _outer_total(self, outer: Span, pieces: list[Piece]) -> int:
        if len(pieces) == 1 and pieces[0].span == outer:
            return pieces[0].total
        return self._count(outer, "split")
