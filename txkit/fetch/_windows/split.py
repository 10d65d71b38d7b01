"""Fetching windows: offset passes, the maximum ``skip``, windows split by dates (bisecting
down to one day, tiling the query's window) and windows of one page (see
:mod:`txkit.fetch._windows`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date
from typing import Any

from txkit.decode import PageSink, read_page
from txkit.errors import BadRequestError, IncompleteExportError
from txkit.fetch._ties import mark_page
from txkit.fetch._windows.span import (
    DAY,
    FetchMode,
    Piece,
    RecordsMovingError,
    Span,
    _describe,
    _First,
    _Hook,
)
from txkit.fetch.pages import OffsetCapped, QueryResult, SlotRead, digest, fetch_query

__all__ = ["WindowSplits"]

log = logging.getLogger("txkit")


class WindowSplits:
    """How :class:`~txkit.fetch._windows.WindowedExport` fetches a window (a mixin)."""

    client: Any
    filters: dict[str, str | int]
    page_size: int
    concurrency: int
    max_passes: int
    max_skip: int | None
    overlap: int | None
    digests: bool
    ties: bool
    mode: FetchMode
    stats: Any
    on_page: Callable[[int, int], None]

    def _fetch_span(self, span: Span) -> list[Piece]:
        if self.max_skip is not None or self.mode is FetchMode.ONE_PAGE:
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
        self.mode = FetchMode.ONE_PAGE
        self.stats.note("unstable order: windows of one page")
        return self._split(span)

    def _piece(self, span: Span, result: QueryResult) -> Piece:
        return Piece(
            span, result.frames, result.ids, result.total, result.slots, stride=result.stride
        )

    def _fetch(self, span: Span) -> QueryResult:
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
        if self.mode is FetchMode.ONE_PAGE:
            return total <= stride
        assert self.max_skip is not None
        return total <= (self.max_skip // stride + 1) * stride

    def _split(self, span: Span) -> list[Piece]:
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
        try:
            result = self._fetch(span)
        except OffsetCapped as cap:
            self._learn_cap(span, cap)
            return self._split(span)
        if not result.complete:
            if self.mode is FetchMode.ONE_PAGE:
                # It fits in one page, yet its own pages disagree with its total.
                raise RecordsMovingError(
                    f"the window {_describe(self.filters, span)} fits in one page and still "
                    "does not add up",
                    expected=result.total,
                    got=result.unique,
                    attempts=self.stats.passes,
                )
            self.mode = FetchMode.ONE_PAGE
            self.stats.note("unstable order: windows of one page")
            return self._split(span)
        self.stats.windows += 1
        return [self._piece(span, result)]

    def _one_day(self, span: Span, total: int, stride: int) -> Piece:
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
            raise RecordsMovingError(
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
        self.on_page(page.count, page.count)
        sink = PageSink(edges=self.ties)
        self.stats.pages += 1
        sink.add(page)
        sink.flush()
        mark = mark_page(0, page) if self.ties else None
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
