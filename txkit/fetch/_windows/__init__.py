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
* **Ties.** Records sharing a ``createdAt`` may come in another order on every request; tie
  groups cut by page edges are read whole (:mod:`txkit.fetch._ties`), so one pass is exact.
* **Unstable order.** When offset passes still do not converge (records moving), the window
  is split until each piece fits in one page: a single response is one snapshot, whatever
  the order. Only a one-day window that does not fit in one page and still disagrees fails.
* **The set, not the count.** Each window is read once more at the end (a confirming read):
  every page's body must be byte-identical to the one decoded (a digest; nothing is parsed),
  or the window must hold the same records (ids with ``updatedAt``), whatever their order. A
  window whose set changed is fetched again until two reads agree, so records that entered
  or left the filter during the export (equal counts, different sets) end as the quiet
  service lists them, or the export fails loudly.

One module per proof: :mod:`.span` (windows and pieces), :mod:`.edges`, :mod:`.split` (caps,
one-page windows, the tiling), :mod:`.confirm` (the set); this module runs them in order.

If the service's date filters turn out not to apply to ``createdAt`` (a record far outside the
window it was returned for), the query is fetched without dates and filtered locally.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from txkit.fetch._windows.confirm import SetConfirmation, Verdict
from txkit.fetch._windows.edges import EdgeProofs
from txkit.fetch._windows.span import (
    DAY,
    MAX_MARGIN_DAYS,
    Edge,
    FetchMode,
    Piece,
    RecordsMovingError,
    Span,
    _describe,
    union_ids,
)
from txkit.fetch._windows.split import WindowSplits
from txkit.fetch.client import Client
from txkit.fetch.pages import ExportStats, QueryResult

__all__ = ["FetchMode", "RecordsMovingError", "Span", "Step", "Verdict", "WindowedExport"]

log = logging.getLogger("txkit")


class Step(enum.Enum):
    """What :meth:`WindowedExport.run` does next, from the windows fetched so far."""

    #: The dates filter another field than ``createdAt``: fetch without dates.
    OPEN_DATES = enum.auto()
    #: The windows' unique records do not add up to the total: fetch them again.
    ADD_UP = enum.auto()
    #: An edge is not proven: fetch a window beyond it.
    WIDEN = enum.auto()
    #: Both edges proven, the windows add up: done.
    DONE = enum.auto()


@dataclass
class _EdgeState:
    """What the edge proofs have established so far (margins double while unproven)."""

    lo_margin: int
    hi_margin: int
    lower: bool = False
    upper: bool = False
    mismatches: int = 0
    total: int = 0
    unique: int = 0
    outer: Span = field(default=Span(None, None))
    extensions: list[Span] = field(default_factory=list)


@dataclass
class WindowedExport(EdgeProofs, WindowSplits, SetConfirmation):
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
        versions_move: the status is applied locally: the confirming read proves the set of
            ids and keeps the newest version of each record it decodes.
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
    versions_move: bool = False
    mode: FetchMode = field(default=FetchMode.OFFSET, init=False)
    outer: Span = field(default=Span(None, None), init=False)
    pieces: list[Piece] = field(default_factory=list, init=False)

    # -- public --------------------------------------------------------------------------

    def run(self) -> QueryResult:
        """Fetch and prove; returns the records of every window (deduplicate by ``id``).

        The steps: fetch the first server window, then until both edges are proven and the
        windows add up: fetch without dates (they filter another field), fetch again (the
        windows do not add up) or widen (an edge not proven).

        Raises:
            IncompleteExportError: a day above the offset cap, a one-day window that does not
                converge, an edge that cannot be proven, or windows that never add up.
        """
        self._begin()
        state = _EdgeState(self.margin, self.margin)
        while (step := self._next_step(state)) is not Step.DONE:
            if step is Step.OPEN_DATES:
                self._fetch_open()
                state.lower = state.upper = True
            elif step is Step.ADD_UP:
                self._fetch_again(state)
            else:
                self._widen(state)
        return self.partial()

    def partial(self) -> QueryResult:
        """The records fetched so far (all of them after :meth:`run`)."""
        frames = [f for p in self.pieces for f in p.frames]
        ids = union_ids(self.pieces)
        return QueryResult(
            frames=frames, total=len(ids), unique=len(ids), complete=True, ids=ids, stride=0
        )

    def outer_params(self) -> dict[str, str | int]:
        """The parameters of the server window the export proved (filters and dates)."""
        return self.outer.params(self.filters)

    # -- the steps of run ----------------------------------------------------------------

    def _begin(self) -> None:
        if self.max_skip is not None:
            self.stats.max_skip = self.max_skip
        if self.open_dates:
            self._note_open()
        self.outer = self._initial_span()
        self.pieces = self._fetch_span(self.outer)

    def _next_step(self, state: _EdgeState) -> Step:
        pieces, outer = self.pieces, self.outer
        if not self.open_dates and self._date_field_mismatch(pieces):
            return Step.OPEN_DATES
        state.total = self._outer_total(outer, pieces)
        state.unique = len(union_ids(pieces))
        if state.unique != state.total:
            return Step.ADD_UP
        state.extensions = self._extensions(state)
        if state.extensions:
            return Step.WIDEN
        if self.open_dates or outer == Span(None, None) or self._on_created():
            return Step.DONE
        return Step.OPEN_DATES  # the dates filter another timestamp: the edges do not hold

    def _extensions(self, state: _EdgeState) -> list[Span]:
        """A proven edge stays proven (the other side's widening does not move it); sets
        ``state.outer`` to the widened window."""
        outer, pieces, out = self.outer, self.pieces, []
        state.lower = state.lower or self._lower_proven(outer, pieces, state.total)
        if not state.lower:
            state.lo_margin *= 2
            if state.lo_margin > MAX_MARGIN_DAYS:
                raise self._edge_error(Edge.FIRST, outer)
            assert self.first is not None and outer.start is not None
            start = min(self.first - state.lo_margin * DAY, outer.start - DAY)
            end = outer.start + 2 * DAY
            if outer.end is not None:
                end = min(end, outer.end)
            out.append(Span(start, end))
            outer = Span(start, outer.end)
        state.upper = state.upper or self._upper_proven(outer, pieces, state.total)
        if not state.upper:
            state.hi_margin *= 2
            if state.hi_margin > MAX_MARGIN_DAYS:
                raise self._edge_error(Edge.LAST, outer)
            assert self.last is not None and outer.end is not None
            end = max(self.last + state.hi_margin * DAY, outer.end + DAY)
            start = outer.end - 2 * DAY
            if outer.start is not None:
                start = max(start, outer.start)
            out.append(Span(start, end))
            outer = Span(outer.start, end)
        state.outer = outer
        return out

    def _fetch_open(self) -> None:
        self.open_dates = True
        self._note_open()
        self.outer = Span(None, None)
        self.pieces = self._fetch_span(self.outer)

    def _fetch_again(self, state: _EdgeState) -> None:
        state.mismatches += 1
        what = _describe(self.filters, self.outer)
        if state.mismatches > self.max_passes:
            raise RecordsMovingError(
                f"the date windows of {what} do not add up (records kept moving)",
                expected=state.total,
                got=state.unique,
                attempts=self.stats.passes,
            )
        log.warning(
            "windows of %s hold %d unique records, the service reports %d; again",
            what,
            state.unique,
            state.total,
        )
        self.overlap = 2  # whatever the bounds, windows sharing two days leave no gap
        self.pieces = self._fetch_span(self.outer)

    def _widen(self, state: _EdgeState) -> None:
        self.outer = state.outer
        for span in state.extensions:
            log.info("widening %s to prove an edge", span)
            self.pieces = self.pieces + self._fetch_span(span)
