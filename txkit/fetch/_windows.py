"""Server-side date windows: one query's export proven complete whatever the service does.

The interface document says nothing about the date bounds' inclusivity, the timezone of the
service's days, a maximum ``skip`` or the order of ties. :class:`WindowedExport` exports one
set of filters over the UTC days ``first..last`` (``createdAt``, both included) and proves it:

* **Edges.** The server is asked for a window with a day more on each side; the records it
  returns must reach past each edge (one created before ``first`` 00:00Z, one at or after
  ``last + 1`` 00:00Z), or the service must hold nothing beyond (the same query without that
  bound has the same total). Otherwise the window is widened on that side (2, 4, 8... days) by
  an extension window overlapping it by two days, until one of the two holds. A service's
  window is ``[start + a, end + 1 day + b)`` for constants ``a`` and ``b`` (its offset and
  inclusivity), so a record past an edge proves that everything up to the edge is inside.
* **Tiling.** Windows split from a query (below) tile its server window: consecutive windows
  share ``o`` days, ``o`` being the number of exclusive bounds (0 to 2), measured once from
  four totals (or read from the service profile). Whatever ``o`` is, the windows are proven to
  cover the query: the unique ids of all windows must equal the query's own total.
* **Offset caps.** A 422 or empty pages past some ``skip`` (below the total) reveal a maximum
  offset, found exactly by bisection on one-record pages; the query is then split into date
  windows (bisecting down to one day), each fetched and verified against its own total. A day
  that still holds more records than the cap lets one query reach fails naming the day and the
  cap.
* **Unstable order.** When offset passes do not converge (ties reshuffled between requests,
  records moving), the window is split until each piece fits in one page: a single response
  is one snapshot, whatever the order. Only a one-day window that does not fit in one page
  and still disagrees fails.
* **The set, not the count.** Each window is read once more at the end (a confirming read):
  every page's body must be byte-identical to the one decoded (a digest; nothing is parsed),
  or, when the order changed, hold the same ids. A window whose set changed is fetched again
  until two reads agree, so records that entered or left the filter during the export (equal
  counts, different sets) end as the quiet service lists them, or the export fails loudly.

If the service's date filters turn out not to apply to ``createdAt`` (a record far outside the
window it was returned for), the query is fetched without dates and filtered locally.
"""

from __future__ import annotations

import concurrent.futures as cf
import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import polars as pl

from txkit.decode import PageSink, decode_page, read_page
from txkit.errors import BadRequestError, IncompleteExportError, SchemaError
from txkit.fetch._ties import cut_groups, mark_from_columns, mark_page
from txkit.fetch.client import Client
from txkit.fetch.pages import (
    ExportStats,
    OffsetCapped,
    QueryResult,
    SlotRead,
    digest,
    fetch_query,
    split_group,
)

__all__ = ["Span", "WindowedExport"]

log = logging.getLogger("txkit")

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
#: What the confirming read parses of a page whose bytes changed: the set's keys and the
#: timestamp that places ties.
_KEYS_SCHEMA = {
    "data": pl.Struct(
        {
            "transactions": pl.List(
                pl.Struct({"id": pl.String, "createdAt": pl.String, "updatedAt": pl.String})
            ),
            "total": pl.Int64,
        }
    )
}


class Verdict(enum.Enum):
    """What the confirming re-read of a window found."""

    #: The same records (ids with ``updatedAt``), whatever their order.
    SAME = "same"
    #: Another total, or a record not fetched before (or updated since): the set changed.
    MOVED = "moved"
    #: Only records fetched before, but fewer of them: the order moved under the pages.
    LOST = "lost"


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


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


@dataclass
class WindowedExport:
    """Export one set of filters over UTC days ``first..last``, proven complete.

    Args:
        client: the :class:`~txkit.fetch.client.Client`.
        filters: ``transType``/``status``/``currency`` parameters, validated.
        first, last: UTC days (None: unbounded on that side).
        page_size, concurrency, max_passes: as for :func:`txkit.fetch.pages.fetch_query`.
        stats: the :class:`~txkit.fetch.pages.ExportStats` to fill in.
        on_page: progress hook ``(pages done, pages more)``.
        start_end: the server window to start from (from a measured profile); default one
            day more on each side.
        overlap: days shared by consecutive split windows (from a profile); default measured.
        open_dates: the service's date filters are known not to apply to ``createdAt``: send
            no dates and filter locally.
        max_skip: a known maximum ``skip`` (from a profile).
        margin: days asked for beyond each edge at first (widened until each is proven).
        digests: keep page digests for the confirming read (the caller runs it, round after
            round over every query's windows, with :meth:`confirm_round`).
        ties: read whole the tie groups page edges cut (False: the service's tie order was
            measured stable).
    """

    client: Client
    filters: dict[str, str | int]
    first: date | None
    last: date | None
    page_size: int
    concurrency: int
    max_passes: int
    stats: ExportStats
    on_page: Callable[[int, int], None]
    start_end: tuple[date, date] | None = None
    overlap: int | None = None
    open_dates: bool = False
    max_skip: int | None = None
    margin: int = 1
    digests: bool = True
    ties: bool = True
    _page_mode: bool = field(default=False, init=False)
    outer: Span = field(default=Span(None, None), init=False)
    pieces: list[Piece] = field(default_factory=list, init=False)

    # -- public --------------------------------------------------------------------------

    def run(self) -> QueryResult:
        """Fetch and prove; returns the records of every window (deduplicate by ``id``).

        Raises:
            IncompleteExportError: a day above the offset cap, a one-day window that does not
                converge, an edge that cannot be proven, or windows that never add up.
        """
        if self.max_skip is not None:
            self.stats.max_skip = self.max_skip
        if self.open_dates:
            self._note_open()
        self.outer = self._initial_span()
        self.pieces = self._fetch_span(self.outer)
        lo_margin, hi_margin = self.margin, self.margin
        lower = upper = False
        mismatches = 0
        while True:
            pieces, outer = self.pieces, self.outer
            if not self.open_dates and self._date_field_mismatch(pieces):
                self.open_dates = True
                self._note_open()
                self.outer = Span(None, None)
                self.pieces = self._fetch_span(self.outer)
                lower = upper = True
                continue
            total = self._outer_total(outer, pieces)
            ids = set().union(*(p.ids for p in pieces))
            if len(ids) != total:
                mismatches += 1
                if mismatches > self.max_passes:
                    raise IncompleteExportError(
                        f"the date windows of {_describe(self.filters, outer)} do not add up "
                        "(records kept moving)",
                        expected=total,
                        got=len(ids),
                        attempts=self.stats.passes,
                    )
                log.warning(
                    "windows of %s hold %d unique records, the service reports %d; again",
                    _describe(self.filters, outer),
                    len(ids),
                    total,
                )
                self.overlap = 2  # whatever the bounds, windows sharing two days leave no gap
                self.pieces = self._fetch_span(outer)
                continue
            extensions = []
            # A proven edge stays proven: the other side's widening does not move it.
            lower = lower or self._lower_proven(outer, pieces, total)
            if not lower:
                lo_margin *= 2
                if lo_margin > MAX_MARGIN_DAYS:
                    raise self._edge_error("first", outer)
                assert self.first is not None and outer.start is not None
                start = min(self.first - lo_margin * DAY, outer.start - DAY)
                end = outer.start + 2 * DAY
                if outer.end is not None:
                    end = min(end, outer.end)
                extensions.append(Span(start, end))
                outer = Span(start, outer.end)
            upper = upper or self._upper_proven(outer, pieces, total)
            if not upper:
                hi_margin *= 2
                if hi_margin > MAX_MARGIN_DAYS:
                    raise self._edge_error("last", outer)
                assert self.last is not None and outer.end is not None
                end = max(self.last + hi_margin * DAY, outer.end + DAY)
                start = outer.end - 2 * DAY
                if outer.start is not None:
                    start = max(start, outer.start)
                extensions.append(Span(start, end))
                outer = Span(outer.start, end)
            if not extensions:
                if self.open_dates or outer == Span(None, None) or self._on_created():
                    break
                # The dates filter another timestamp: the edge proofs do not hold.
                self.open_dates = True
                self._note_open()
                self.outer = Span(None, None)
                self.pieces = self._fetch_span(self.outer)
                continue
            self.outer = outer
            for span in extensions:
                log.info("widening %s to prove an edge", span)
                self.pieces = self.pieces + self._fetch_span(span)
        return self.partial()

    def partial(self) -> QueryResult:
        """The records fetched so far (all of them after :meth:`run`)."""
        frames = [f for p in self.pieces for f in p.frames]
        ids = set().union(*(p.ids for p in self.pieces))
        return QueryResult(
            frames=frames, total=len(ids), unique=len(ids), complete=True, ids=ids, stride=0
        )

    def outer_params(self) -> dict[str, str | int]:
        """The parameters of the server window the export proved (filters and dates)."""
        return self.outer.params(self.filters)

    # -- edges -----------------------------------------------------------------------------

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
        """Whether a server window with the query's ``startDate`` (``before``) or ``endDate``
        (``day``) reaches past ``edge`` (before it, or at or after it), shown by any record of
        any status, type or currency: the bounds' offset and inclusivity are the service's,
        not the filters'.

        A filtered query can hold nothing near its edges (``verified`` in a month long
        settled) while records matching it exist months later: its own records and totals
        then prove nothing, but the service's other records at the edge do. One request, two
        when the window spans pages (the order is not documented: its last page too).
        """
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
            skip = total - self.page_size
            if self.max_skip is not None and skip > self.max_skip:
                return False
            return past(skip)[0]
        except (BadRequestError, SchemaError):
            return False  # not provable this way: the window is widened instead

    def _edge_error(self, which: str, outer: Span) -> IncompleteExportError:
        day = self.first if which == "first" else self.last
        return IncompleteExportError(
            f"cannot prove that the service's date window reaches past the {which} day {day} "
            f"of {_describe(self.filters, outer)}, even {MAX_MARGIN_DAYS} days beyond it",
            expected=0,
            got=0,
            attempts=self.stats.passes,
        )

    def _date_field_mismatch(self, pieces: list[Piece]) -> bool:
        """A record far outside the window it came from: the dates are not on createdAt."""
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
        """Whether a record updated days after its creation is found by its creation day.

        The edge proofs assume the date filters apply to ``createdAt``. Records whose
        ``updatedAt`` is days later tell the two apart: the one with the longest gap is asked
        for with dates two days either side of its ``createdAt`` (and its own status, type
        and currency, so that one page holds the answer). Missing: the dates filter another
        timestamp. No such record fetched, or a window too full to tell: nothing to test.
        """
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

    # -- fetching windows ------------------------------------------------------------------

    def _fetch_span(self, span: Span) -> list[Piece]:
        if self.max_skip is not None or self._page_mode:
            return self._split(span)
        try:
            result = self._fetch(span)
        except OffsetCapped as cap:
            self._learn_cap(span, cap)
            return self._split(span)
        if result.complete:
            self.stats.windows += 1
            return [self._piece(span, result)]
        log.warning(
            "offset pages of %s do not converge; splitting it into windows of one page",
            _describe(self.filters, span),
        )
        self._page_mode = True
        self.stats.note("unstable order: windows of one page")
        return self._split(span)

    def _piece(self, span: Span, result: QueryResult) -> Piece:
        return Piece(
            span, result.frames, result.ids, result.total, result.slots, stride=result.stride
        )

    def _fetch(self, span: Span) -> QueryResult:
        """One verified server query over ``span`` (raises ``OffsetCapped`` past a cap)."""
        return fetch_query(
            self.client,
            span.params(self.filters),
            page_size=self.page_size,
            concurrency=self.concurrency,
            max_passes=self.max_passes,
            stats=self.stats,
            progress=_Hook(self.on_page),
            digests=self.digests,
            ties=self.ties,
        )

    def _learn_cap(self, span: Span, cap: OffsetCapped) -> None:
        """Find the largest skip that works, exactly, on one-record pages."""
        ok, bad = cap.ok, cap.bad
        params = span.params(self.filters)
        while bad - ok > 1:
            mid = (ok + bad) // 2
            self.stats.proof("split")
            try:
                body, request = self.client.get_transactions({**params, "skip": mid, "limit": 1})
            except BadRequestError as exc:
                if exc.status_code != 422:
                    raise
                bad = mid
                continue
            page = read_page(body, request=request)
            if page.count or mid >= page.total:
                ok = mid
            else:
                bad = mid
        self.max_skip = ok
        self.stats.max_skip = ok
        log.warning("the service refuses or empties pages past skip %d: splitting by dates", ok)

    def _fits(self, total: int, stride: int) -> bool:
        if self._page_mode:
            return total <= stride
        assert self.max_skip is not None
        return total <= (self.max_skip // stride + 1) * stride

    def _split(self, span: Span) -> list[Piece]:
        """Fetch ``span`` as date windows that each fit (bisecting down to one day)."""
        out: list[Piece] = []
        work = [span]
        while work:
            part = work.pop()
            first = self._first_page(part)
            total, count, stride = first.total, first.count, first.stride
            if self._fits(total, stride):
                if count >= total:
                    self.stats.windows += 1
                    out.append(first.piece)
                    continue
                self.stats.proof("split")  # the first page is fetched again with the rest
                out += self._offset_pieces(part)
                continue
            self.stats.proof("split")
            if part.start is None or part.end is None:
                work.extend(self._anchor(part, first.piece))
                continue
            overlap = self._overlap(part, total)
            if (part.end - part.start).days <= overlap:
                out.append(self._one_day(part, total, stride))
                continue
            # Both halves strictly smaller: start + overlap <= mid <= end - 1 day.
            mid = part.start + ((part.end - part.start).days + overlap - 1) // 2 * DAY
            work.append(Span(mid + DAY - overlap * DAY, part.end))
            work.append(Span(part.start, mid))
        return out

    def _offset_pieces(self, span: Span) -> list[Piece]:
        """A window that fits under the offset cap: offset passes (split further if they do
        not converge, or if the cap is lower than known)."""
        try:
            result = self._fetch(span)
        except OffsetCapped as cap:
            self._learn_cap(span, cap)
            return self._split(span)
        if not result.complete:
            if self._page_mode:
                # It fits in one page, yet its own pages disagree with its total.
                raise IncompleteExportError(
                    f"the window {_describe(self.filters, span)} fits in one page and still "
                    "does not add up",
                    expected=result.total,
                    got=result.unique,
                    attempts=self.stats.passes,
                )
            self._page_mode = True
            self.stats.note("unstable order: windows of one page")
            return self._split(span)
        self.stats.windows += 1
        return [self._piece(span, result)]

    def _one_day(self, span: Span, total: int, stride: int) -> Piece:
        """A one-day window that does not fit: offset passes, or a loud failure."""
        what = f"the one-day window {_describe(self.filters, span)}"
        if self.max_skip is not None and not self._skip_fits(total, stride):
            raise IncompleteExportError(
                f"{what} holds {total:,} records, more than one query can reach: the service "
                f"refuses or empties pages past skip {self.max_skip:,} (its maximum offset), "
                "and a day cannot be split further",
                expected=total,
                got=(self.max_skip or 0) + stride,
                attempts=self.stats.passes,
            )
        result = self._fetch(span)
        if not result.complete:
            raise IncompleteExportError(
                f"{what} holds more records than one page ({stride}) and its pages do not "
                "converge (unstable order or records moving)",
                expected=result.total,
                got=result.unique,
                attempts=self.stats.passes,
            )
        self.stats.windows += 1
        return self._piece(span, result)

    def _skip_fits(self, total: int, stride: int) -> bool:
        assert self.max_skip is not None
        return total <= (self.max_skip // stride + 1) * stride

    def _first_page(self, span: Span) -> _First:
        params = span.params(self.filters)
        body, request = self.client.get_transactions({**params, "skip": 0, "limit": self.page_size})
        page = read_page(body, request=request)
        mark = mark_page(0, page) if self.ties else None
        self.on_page(page.count, page.count)
        sink = PageSink()
        self.stats.pages += 1
        sink.add(page)
        sink.flush()
        self.stats.exact_pages += sink.exact_pages
        stride = page.count if 0 < page.count < min(self.page_size, page.total) else self.page_size
        piece = Piece(
            span,
            sink.frames,
            sink.ids,
            page.total,
            {(0, self.page_size): SlotRead(digest(body), mark, page)},
            single=True,
            stride=stride,
        )
        return _First(page.total, page.count, stride, piece)

    def _anchor(self, span: Span, first: Piece) -> list[Span]:
        """Replace an open end by a date beyond which the service holds nothing now."""
        overlap = self.overlap if self.overlap is not None else 2
        if span.start is None:
            known = first.low.date() if first.low is not None else span.end
            if known is None:
                raise IncompleteExportError(
                    f"cannot split {_describe(self.filters, span)}: its first page is empty",
                    expected=first.total,
                    got=0,
                    attempts=self.stats.passes,
                )
            if span.end is not None:
                known = min(known, span.end)
            edge = self._search(known, -1, lambda d: Span(None, d))
            return [Span(None, edge), Span(edge + DAY - overlap * DAY, span.end)]
        known = first.high.date() if first.high is not None else span.start
        known = max(known, span.start)
        edge = self._search(known, 1, lambda d: Span(d, None))
        return [Span(span.start, edge - DAY + overlap * DAY), Span(edge, None)]

    def _search(self, known: date, direction: int, make: Callable[[date], Span]) -> date:
        step = 1
        for _ in range(20):
            day = known + direction * step * DAY
            if self._count(make(day), "split") == 0:
                return day
            step *= 2
        raise IncompleteExportError(
            f"cannot find where the records of {_describe(self.filters, make(known))} end",
            expected=0,
            got=0,
            attempts=self.stats.passes,
        )

    def _overlap(self, span: Span, total: int) -> int:
        """Days shared by consecutive windows: measured once from four totals."""
        if self.overlap is not None:
            return self.overlap
        assert span.start is not None and span.end is not None
        if (span.end - span.start).days < 4:
            return 2
        mid = span.start + (span.end - span.start) // 2
        left = self._count(Span(span.start, mid), "split")
        fits = [
            o
            for o in (2, 1, 0)
            if left + self._count(Span(mid + DAY - o * DAY, span.end), "split") == total
        ]
        # The largest that adds up: a day shared needlessly costs records fetched twice, a
        # day missing loses them (and then the union check fetches everything again).
        self.overlap = fits[0] if fits else 2
        return self.overlap

    def _count(self, span: Span, proof: str) -> int:
        self.stats.proof(proof)
        body, request = self.client.get_transactions(
            {**span.params(self.filters), "skip": 0, "limit": 1}
        )
        return read_page(body, request=request).total

    # -- the set -----------------------------------------------------------------------------

    def confirm_round(self) -> bool:
        """Re-read every window once; fetch again those whose set changed.

        Returns:
            True when every window read the same as it was fetched. After False, call again:
            a change found in one window may have touched windows already re-read.
        """
        verdicts = [(p, self._same_set(p)) for p in self.pieces]
        changed = [p for p, verdict in verdicts if verdict is not Verdict.SAME]
        if not changed:
            return True
        if any(v is Verdict.LOST for _, v in verdicts) and not self._page_mode:
            # Fewer of the same records, every tie group whole: the order moved otherwise
            # than inside tie groups, so offset pages cannot be confirmed.
            self._page_mode = True
            self.stats.note("unstable order: windows of one page")
        log.warning(
            "%d window(s) of %s changed while exported; fetching them again",
            len(changed),
            _describe(self.filters, self.outer),
        )
        same = [p for p, verdict in verdicts if verdict is Verdict.SAME]
        self.pieces = same + [q for p in changed for q in self._fetch_span(p.span)]
        return False

    def unquiet(self) -> IncompleteExportError:
        """The error for records that never held still long enough to be confirmed."""
        return IncompleteExportError(
            f"the records of {_describe(self.filters, self.outer)} kept changing: no two reads "
            "of the same windows agreed",
            expected=sum(p.total for p in self.pieces),
            got=len(set().union(*(p.ids for p in self.pieces))),
            attempts=self.stats.passes,
        )

    def final_check(self) -> None:
        """The confirmed windows' unique ids against the query's total (a count when split)."""
        total = self._outer_total(self.outer, self.pieces)
        ids = set().union(*(p.ids for p in self.pieces))
        if len(ids) != total:
            raise IncompleteExportError(
                f"the windows of {_describe(self.filters, self.outer)} do not add up after "
                "confirming them",
                expected=total,
                got=len(ids),
                attempts=self.stats.passes,
            )

    def _same_set(self, piece: Piece) -> Verdict:
        """Re-read the piece's pages: identical bodies (a digest each, nothing parsed), or the
        same set of records (ids with ``updatedAt``) whatever their order.

        Pages whose bytes changed are parsed for their keys; the re-read's tie groups cut by
        page edges are read whole as in the first read (:mod:`txkit.fetch._ties`), so a
        group cut differently is no change, while a record that entered or left is.
        """
        slots = list(piece.slots)
        params = piece.span.params(self.filters)

        def get(slot: tuple[int, int]) -> bytes:
            body, _ = self.client.get_transactions({**params, "skip": slot[0], "limit": slot[1]})
            return body

        self.stats.proof("confirm", len(slots))
        workers = max(1, min(self.concurrency, len(slots)))
        with cf.ThreadPoolExecutor(workers, thread_name_prefix="txkit-confirm") as pool:
            bodies = list(pool.map(get, slots))
        changed = {
            slot: body
            for slot, body in zip(slots, bodies, strict=True)
            if digest(body) != piece.slots[slot].digest
        }
        del bodies
        if not changed:
            return Verdict.SAME
        return self._same_records(piece, params, changed)

    def _same_records(
        self, piece: Piece, params: dict[str, str | int], changed: dict[tuple[int, int], bytes]
    ) -> Verdict:
        """The verdict on a re-read whose ``changed`` pages differ in bytes."""
        marks = {s: r.mark for s, r in piece.slots.items() if s not in changed}
        ids: set[str] = set()
        for slot, read in piece.slots.items():
            if slot not in changed:
                if read.ids is None:
                    return Verdict.MOVED  # not decoded: nothing to compare with
                ids.update(read.ids.drop_nulls().to_list())
        keys = []
        for slot, body in changed.items():
            total, frame = _keys_of(body)
            if total != piece.total:
                return Verdict.MOVED
            marks[slot] = mark_from_columns(slot[0], frame["id"], frame["createdAt"])
            keys.append(frame)
        seen = pl.concat(keys)
        ids.update(seen["id"].to_list())
        for group in cut_groups(m for m in marks.values() if m is not None):
            if group.whole:
                continue
            whole = self._whole_group(params, group, piece)
            if whole is None:
                return Verdict.MOVED
            ids.update(whole["id"].to_list())
            seen = pl.concat([seen, whole], how="diagonal_relaxed")
        if _unknown(seen, piece.frames):
            return Verdict.MOVED
        return Verdict.SAME if len(ids) == piece.total else Verdict.LOST

    def _whole_group(self, params: dict[str, str | int], group: Any, piece: Piece) -> Any:
        """The keys of a cut tie group read whole again (None: the total moved)."""
        stride, total = piece.stride or self.page_size, piece.total
        if group.size <= stride:
            self.stats.proof("ties")
            body, _ = self.client.get_transactions(
                {**params, "skip": group.start, "limit": group.size}
            )
            got, frame = _keys_of(body)
            return frame if got == total else None
        frames = split_group(
            self.client,
            params,
            group,
            stride=stride,
            page_size=self.page_size,
            concurrency=self.concurrency,
            stats=self.stats,
        )
        return pl.concat(
            [f.select("id", "updatedAt") for f in frames], how="vertical_relaxed"
        ).with_columns(pl.col("updatedAt").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"))


def _keys_of(body: bytes) -> tuple[int, pl.DataFrame]:
    """The total and the ``id``, ``createdAt`` and ``updatedAt`` text of a page's records."""
    try:
        data = pl.read_json(body, schema=_KEYS_SCHEMA)["data"]
        total = int(data.struct.field("total")[0])
        frame = data.struct.field("transactions").explode().struct.unnest().drop_nulls("id")
        return total, frame
    except Exception:  # not the envelope we know: the full reader says what is wrong
        page = read_page(body)
        frame = decode_page(body).frame.select("id", "createdAt", "updatedAt")
        return page.total, frame.with_columns(
            pl.col("createdAt", "updatedAt").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        )


def _unknown(seen: pl.DataFrame, frames: list[pl.DataFrame]) -> bool:
    """Whether a record re-read (id, ``updatedAt`` text) was not among those fetched."""
    fetched = (
        pl.concat([f.select("id", "updatedAt") for f in frames if f.height], how="vertical_relaxed")
        if any(f.height for f in frames)
        else pl.DataFrame(
            {"id": [], "updatedAt": []},
            schema={"id": pl.String, "updatedAt": pl.Datetime("ms", "UTC")},
        )
    )
    stamped = seen.select(
        "id",
        pl.col("updatedAt")
        .str.to_datetime("%Y-%m-%dT%H:%M:%S%.3fZ", time_unit="ms", time_zone="UTC", strict=False)
        .alias("updatedAt"),
    )
    if stamped["updatedAt"].null_count() > seen["updatedAt"].null_count():
        return True  # a timestamp written otherwise: not provably the same record
    fetched = fetched.with_columns(pl.col("updatedAt").cast(pl.Datetime("ms", "UTC")))
    return stamped.join(fetched, on=["id", "updatedAt"], how="anti", nulls_equal=True).height > 0


def _ids_of(body: bytes) -> tuple[int, set[str]]:
    """The total and the record ids of a page, reading nothing else."""
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
    shown = ", ".join(f"{k}={v}" for k, v in filters.items())
    dates = []
    if span.start is not None:
        dates.append(f"startDate={span.start}")
    if span.end is not None:
        dates.append(f"endDate={span.end}")
    return "[" + ", ".join(x for x in (shown, *dates) if x) + "]" if shown or dates else "[all]"
