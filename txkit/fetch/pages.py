"""Offset pagination with verified completeness.

One query (one set of filters) is fetched in *passes*. A pass reads the first page, learns
``data.total`` and the page size the server really honours (it may cap ``limit`` silently),
then fetches the remaining pages concurrently, re-asking for the rest of any page that came
back short. A pass is accepted when the unique ids it and the pass before it returned add up to
the service's total, and the total did not move during the pass. Otherwise another pass runs
(records that arrived, changed status or shuffled between pages are then picked up), up to
``max_passes``; after that :class:`~txkit.errors.IncompleteExportError` says how many records
were expected and how many were got. Nothing is ever returned short without saying so.

Why the union of the last two passes and not of all: a record that leaves the filter during the
export (a status change) is still in the pass that saw it before the change, so it must be
allowed to drop out; a record that was only skipped by a shifted offset turns up again in the
next pass.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import polars as pl
import xxhash

from txkit.decode import PageSink, RawPage, read_page
from txkit.errors import BadRequestError, IncompleteExportError
from txkit.fetch._ties import Group, PageMark, cut_groups, mark_page
from txkit.fetch.client import Client
from txkit.schema import CURRENCIES, STATUSES, TRANS_TYPES

__all__ = [
    "DEFAULT_CONCURRENCY",
    "ExportStats",
    "OffsetCapped",
    "QueryResult",
    "SlotRead",
    "current_total",
    "fetch_query",
    "split_group",
]

log = logging.getLogger("txkit")

#: Pages fetched at once by default: enough to hide ~100 ms of network latency per page.
DEFAULT_CONCURRENCY = 8


@dataclass
class ExportStats:
    """What an export did: pages, requests, passes, time.

    Attributes:
        pages: page responses decoded (all passes).
        requests: HTTP requests sent, retries included.
        retries: requests that were retries.
        passes: full passes over the result (1 when nothing changed during the export).
        exact_pages: pages that needed the exact (slow) decoder.
        seconds: wall time.
        totals: the service's ``total`` per query.
        max_skip: the largest ``skip`` the service honours, when a cap was found (else None).
        windows: server-side date windows fetched (1 per query when nothing had to be split).
        proof_requests: requests spent on each completeness proof beyond the plain pages:
            ``edges`` (date edges), ``split`` (windows planned by their totals), ``confirm``
            (the re-read that proves the set), ``totals`` (totals re-checked across queries),
            ``ties`` (tie groups cut by page edges, read whole).
        largest_tie: the largest group of records sharing a ``createdAt`` seen at a page edge.
        notes: what the export had to do differently (shown in the one-line summary).
    """

    pages: int = 0
    requests: int = 0
    retries: int = 0
    passes: int = 0
    exact_pages: int = 0
    seconds: float = 0.0
    totals: dict[str, int] = field(default_factory=dict)
    max_skip: int | None = None
    windows: int = 0
    proof_requests: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    largest_tie: int = 0

    def note(self, text: str) -> None:
        """Add ``text`` to :attr:`notes` once."""
        if text not in self.notes:
            self.notes.append(text)

    def proof(self, name: str, requests: int = 1) -> None:
        """Count ``requests`` spent on the proof ``name``."""
        self.proof_requests[name] = self.proof_requests.get(name, 0) + requests

    def summary(self) -> str:
        """What the export did beyond plain pages, for the one-line summary (may be empty).

        Example: ``"; max skip 10,000: 24 date windows"``.
        """
        parts = []
        if self.max_skip is not None:
            parts.append(f"max skip {self.max_skip:,}")
        if self.windows > len(self.totals):
            parts.append(f"{self.windows:,} date windows")
        parts.extend(self.notes)
        return "; " + "; ".join(parts) if parts else ""


@dataclass(frozen=True, slots=True)
class SlotRead:
    """One page of a pass as the confirming re-read needs it: a digest of its body, its edge
    runs (:class:`~txkit.fetch._ties.PageMark`) and its record ids (set once decoded)."""

    digest: bytes
    mark: PageMark | None
    page: RawPage | None = None

    @property
    def ids(self) -> pl.Series | None:
        """The page's ids (None before it is decoded)."""
        return self.page.ids if self.page is not None else None


@dataclass
class QueryResult:
    """The verified records of one query.

    Attributes:
        frames: the records, possibly in several frames with duplicates across them (dedupe by
            ``id``, in fetch order); see :func:`txkit.decode.assemble`.
        total: the service's total for the query.
        unique: the unique ids fetched.
        complete: ``unique == total`` and the total was stable.
        ids: the unique ids fetched.
        slots: the ``(skip, limit)`` of every page of the last pass, with a digest of its body,
            its edge runs and its ids (for the confirming re-read, :mod:`txkit.fetch._windows`).
        stride: the page size the service honoured.
    """

    frames: list[pl.DataFrame]
    total: int
    unique: int
    complete: bool
    ids: set[str] = field(default_factory=set)
    slots: dict[tuple[int, int], SlotRead] = field(default_factory=dict)
    stride: int = 0


class OffsetCapped(Exception):
    """The service refuses (422) or empties pages past a maximum ``skip`` (internal signal).

    Attributes:
        ok: the largest ``skip`` that returned records.
        bad: the smallest ``skip`` that was refused or came back empty below the total.
        total: the query's total.
        stride: the page size the service honoured.
    """

    def __init__(self, ok: int, bad: int, total: int, stride: int) -> None:
        self.ok, self.bad, self.total, self.stride = ok, bad, total, stride
        super().__init__(f"skip {bad} refused or empty (skip {ok} worked, total {total})")


def digest(body: bytes) -> bytes:
    """A digest of a response body, to tell whether a page changed between two reads.

    XXH3-128 (not for security: no one forges these pages), several times faster than
    hashlib's fastest (``benchmarks/bench_digest.py``); 128 bits make an accidental match of
    two different pages negligible.
    """
    return xxhash.xxh3_128_digest(body)


def _pages_needed(total: int, stride: int) -> int:
    return max(1, math.ceil(total / max(1, stride)))


class _Pass:
    """One pass: the first page, then the rest through a bounded pipeline.

    Fetching threads (``concurrency``) only wait on the network; reading threads (one per
    core) run polars' reader, which releases the GIL when it is given bytes; the calling
    thread verifies and converts batches. Two pools because a reader per fetching thread
    oversubscribes the cores. At most ``concurrency + readers`` pages are in flight
    (being fetched, waiting to be read or being read), so a service that answers faster than
    pages are decoded cannot pile its bodies up in memory.
    """

    def __init__(
        self,
        client: Client,
        params: Mapping[str, str | int],
        *,
        page_size: int,
        fetchers: cf.ThreadPoolExecutor,
        readers: cf.ThreadPoolExecutor,
        window: int,
        stats: ExportStats,
        on_page: Callable[[int, int], None],
        digests: bool = True,
        ties: bool = True,
        split_dims: tuple[str, ...] = (),
    ) -> None:
        self.client = client
        self.params = dict(params)
        self.page_size = page_size
        self.fetchers = fetchers
        self.readers = readers
        self.window = window
        self.stats = stats
        self.on_page = on_page
        self.sink = PageSink(edges=ties)
        self.slots: dict[tuple[int, int], SlotRead] = {}
        self._digests: dict[tuple[int, int], bytes] = {}
        self._marks: dict[tuple[int, int], PageMark | None] = {}
        self._pages: dict[tuple[int, int], RawPage] = {}
        self.digests = digests
        self.ties = ties
        self.split_dims = split_dims
        self.stride = page_size
        self._refused: list[int] = []  # 422 past the first page
        self._empty: list[int] = []  # empty pages below the total
        self._worked: list[int] = [0]
        #: The skip from which every page of this pass came back empty below the total, if
        #: any (a silent offset cap, or records that moved: two passes must agree).
        self.empty_from: int | None = None
        self.worked = 0

    @property
    def frames(self) -> list[pl.DataFrame]:
        return self.sink.frames

    @property
    def ids(self) -> set[str]:
        return self.sink.ids

    @property
    def totals(self) -> set[int]:
        return self.sink.totals

    def _fetch(self, skip: int, limit: int) -> tuple[int, int, bytes | None, Any]:
        try:
            body, request = self.client.get_transactions(
                {**self.params, "skip": skip, "limit": limit}
            )
        except BadRequestError as exc:
            if skip > 0 and exc.status_code == 422:
                return skip, limit, None, exc.request  # past a maximum skip (checked at the end)
            raise
        self._digests[(skip, limit)] = digest(body) if self.digests else b""
        return skip, limit, body, request

    def _read(self, skip: int, limit: int, body: bytes, request: Any) -> tuple[int, int, RawPage]:
        return skip, limit, read_page(body, request=request)

    def _accept(self, page: RawPage, slot: tuple[int, int] | None = None) -> None:
        self.stats.pages += 1
        self.sink.add(page)
        if slot is not None:
            self._pages[slot] = page

    def run(self) -> int:
        """Fetch every page once; returns the total reported by the first page."""
        total, stride, first_count = self._first_page()
        self._other_pages(total, stride, first_count)
        # The pass's pages are converted first: their edge runs come with their frames
        # (build_frames marks a batch of pages in one vectorised pass).
        self.sink.flush()
        if self.ties:
            self._marks = {slot: mark_page(slot[0], page) for slot, page in self._pages.items()}
            self._read_cut_groups(stride)
            self.sink.flush()
        self.slots = {
            slot: SlotRead(self._digests[slot], self._marks.get(slot), self._pages.get(slot))
            for slot in self._digests
        }
        self.stats.exact_pages += self.sink.exact_pages
        self._conclude(total, stride)
        return total

    def _first_page(self) -> tuple[int, int, int]:
        """(total, stride, first count): a first page shorter than both the limit and the total
        reveals a silent cap."""
        _, _, body, request = self._fetch(0, self.page_size)
        assert body is not None
        _, _, first = self._read(0, self.page_size, body, request)
        del body
        self._accept(first, (0, self.page_size))
        total = first.total
        stride = first.count if 0 < first.count < min(self.page_size, total) else self.page_size
        self.stride = stride
        self.on_page(first.count, total)
        return total, stride, first.count

    def _other_pages(self, total: int, stride: int, first_count: int) -> None:
        guard = 2 * _pages_needed(total, stride) + 16
        slots = deque((skip, stride) for skip in range(first_count, total, stride))
        sent = 1 + len(slots)
        fetching: set[cf.Future[tuple[int, int, bytes, Any]]] = set()
        reading: set[cf.Future[tuple[int, int, RawPage]]] = set()
        while slots or fetching or reading:
            while slots and len(fetching) + len(reading) < self.window:
                skip, limit = slots.popleft()
                if self._refused and skip >= min(self._refused):
                    continue  # past a cap already seen: not asked
                fetching.add(self.fetchers.submit(self._fetch, skip, limit))
            if not fetching and not reading:
                continue
            done, _ = cf.wait(fetching | reading, return_when=cf.FIRST_COMPLETED)
            for future in done:
                if future in fetching:
                    fetching.discard(future)
                    skip, limit, fetched, request = future.result()
                    if fetched is None:
                        self._refused.append(skip)
                        continue
                    reading.add(self.readers.submit(self._read, skip, limit, fetched, request))
                    continue
                reading.discard(future)
                rest = self._on_read(*future.result(), total)
                if rest is not None and sent < guard:
                    slots.append(rest)
                    sent += 1

    def _on_read(self, skip: int, limit: int, page: RawPage, total: int) -> tuple[int, int] | None:
        """The rest of the slot to ask for when the page came back short (a lower cap, or data that
        moved), rather than assume the end."""
        self._accept(page, (skip, limit))
        self.on_page(page.count, 0)
        if page.count:
            self._worked.append(skip)
        elif skip < min(total, page.total):
            self._empty.append(skip)
        wanted = min(limit, max(0, total - skip))
        if 0 < page.count < wanted:
            return (skip + page.count, wanted - page.count)
        return None

    def _conclude(self, total: int, stride: int) -> None:
        self.worked = max(self._worked)
        if self._refused and min(self._refused) > self.worked:
            # Every page from some skip on was refused, every page before it was not: the
            # service stops at a maximum offset.
            raise OffsetCapped(self.worked, min(self._refused), total, stride)
        if self._empty and min(self._empty) > self.worked:
            self.empty_from = min(self._empty)

    def _read_cut_groups(self, stride: int) -> None:
        groups = cut_groups(m for m in self._marks.values() if m is not None)
        if groups:
            self.stats.largest_tie = max(self.stats.largest_tie, *(g.size for g in groups))
        cut = [g for g in groups if not g.whole]
        small = [g for g in cut if g.size <= stride]
        if small:
            self.stats.proof("ties", len(small))
        for future in [self.fetchers.submit(self._fetch_group, g) for g in small]:
            self._accept(future.result())
        for group in cut:
            if group.size > stride:
                frames = split_group(
                    self.client,
                    self.params,
                    group,
                    stride=stride,
                    page_size=self.page_size,
                    concurrency=max(1, self.window // 2),
                    stats=self.stats,
                    split_dims=self.split_dims,
                )
                self.sink.frames.extend(frames)
                self.sink.ids.update(i for f in frames for i in f["id"].to_list())

    def _fetch_group(self, group: Group) -> RawPage:
        body, request = self.client.get_transactions(
            {**self.params, "skip": group.start, "limit": group.size}
        )
        return read_page(body, request=request)


def fetch_query(
    client: Client,
    params: Mapping[str, str | int],
    *,
    page_size: int = 1000,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_passes: int = 4,
    stats: ExportStats | None = None,
    progress: Any = None,
    digests: bool = True,
    ties: bool = True,
    split_dims: tuple[str, ...] = (),
) -> QueryResult:
    """Fetch every record of one query, verified against the service's total.

    Args:
        client: the :class:`~txkit.fetch.client.Client`.
        params: the query's filters (``transType``, ``status``, ``currency``, ``startDate``,
            ``endDate``), already validated.
        page_size: the ``limit`` asked for (the server may cap it; that is detected).
        concurrency: pages fetched at once after the first.
        max_passes: full passes before giving up.
        stats: an :class:`ExportStats` to add to.
        digests: keep a digest of every page's body (for a confirming re-read).
        progress: a tqdm-like bar (``update``, ``total``) counting records, or None.
        ties: read whole the tie groups (equal ``createdAt``) that page edges cut (see
            :mod:`txkit.fetch._ties`); False when the service's tie order is known stable.
        split_dims: filters already added to split a tie group larger than a page (internal).

    Returns:
        A :class:`QueryResult`; ``complete`` is False only when every pass disagreed with the
        total (the caller decides whether that is an error).

    Raises:
        OffsetCapped: pages past some ``skip`` were refused (422) or empty below the total;
            the caller splits the query (:mod:`txkit.fetch._windows`).
        IncompleteExportError: a tie group larger than a page that no other filter splits
            into groups that fit (names its ``createdAt`` and size).
    """
    stats = stats if stats is not None else ExportStats()
    on_page = _progress_hook(progress)
    previous: _Pass | None = None
    current: _Pass | None = None
    fetching = max(1, concurrency)
    reading = max(1, min(fetching, pl.thread_pool_size()))
    with (
        cf.ThreadPoolExecutor(max_workers=fetching, thread_name_prefix="txkit-fetch") as fetchers,
        cf.ThreadPoolExecutor(max_workers=reading, thread_name_prefix="txkit-read") as readers,
    ):
        for attempt in range(1, max_passes + 1):
            current = _Pass(
                client,
                params,
                page_size=page_size,
                fetchers=fetchers,
                readers=readers,
                window=fetching + reading,
                stats=stats,
                on_page=on_page,
                digests=digests,
                ties=ties,
                split_dims=split_dims,
            )
            total = current.run()
            stats.passes += 1
            stable = current.totals == {total}
            union = current.ids if previous is None else current.ids | previous.ids
            if stable and len(union) == total:
                return _agreed(previous, current, total, union)
            _raise_if_capped(previous, current, total)
            log.warning(
                "pass %d of %s: %d unique records, the service reports %s%s; fetching again",
                attempt,
                describe_query(params),
                len(union),
                sorted(current.totals),
                "" if stable else " (the total changed during the pass)",
            )
            previous = current
    assert current is not None and previous is not None
    return _disagreed(previous, current)


def _agreed(previous: _Pass | None, current: _Pass, total: int, union: set[str]) -> QueryResult:
    # Fetch order (the earlier pass first): on equal updatedAt the later copy wins.
    frames = (previous.frames if previous is not None else []) + current.frames
    return QueryResult(
        frames=frames,
        total=total,
        unique=total,
        complete=True,
        ids=union,
        slots=current.slots,
        stride=current.stride,
    )


def _raise_if_capped(previous: _Pass | None, current: _Pass, total: int) -> None:
    if current.empty_from is not None and previous is not None and previous.empty_from is not None:
        raise OffsetCapped(
            min(current.worked, previous.worked),
            min(current.empty_from, previous.empty_from),
            total,
            current.stride,
        )


def _disagreed(previous: _Pass, current: _Pass) -> QueryResult:
    union = current.ids | previous.ids
    last_total = max(current.totals)
    return QueryResult(
        frames=previous.frames + current.frames,
        total=last_total,
        unique=len(union),
        complete=False,
        ids=union,
        slots=current.slots,
        stride=current.stride,
    )


def _progress_hook(progress: Any) -> Callable[[int, int], None]:

    def on_page(done: int, more: int) -> None:
        if progress is not None:
            if more:
                progress.total = (progress.total or 0) + more
                progress.refresh()
            if done:
                progress.update(done)

    return on_page


class _GroupTooLarge(Exception):
    """A tie group larger than a page that no further filter splits (internal signal)."""

    def __init__(self, group: Group, stride: int) -> None:
        self.group, self.stride = group, stride
        super().__init__(f"{group.size} records share createdAt {group.stamp}")


#: Filters that can split a tie group larger than a page, in the order tried.
_SPLIT_BY: dict[str, tuple[str, ...]] = {
    "transType": TRANS_TYPES,
    "currency": CURRENCIES,
    "status": STATUSES,
}


def split_group(
    client: Client,
    params: Mapping[str, str | int],
    group: Group,
    *,
    stride: int,
    page_size: int,
    concurrency: int,
    stats: ExportStats,
    split_dims: tuple[str, ...] = (),
) -> list[pl.DataFrame]:
    """A tie group larger than a page, read whole as the union of one query per value of
    another filter (``transType``, then ``currency``, then ``status``), each of whose part of
    the group fits in a page (a part still too large is split by the next filter).

    Each query is narrowed to two days either side of the group's day, then, if that missed
    some of the group (dates on another field than ``createdAt``), asked with the window's
    own dates. Cost: one offset pass per filter value over those days.

    Raises:
        IncompleteExportError: no filter splits the group into parts that fit (at the top
            level; nested splits signal their parent to try the next filter).
    """
    stamp = _instant(group.stamp)
    for dim, values in _SPLIT_BY.items():
        if dim in params or dim in split_dims:
            continue
        for narrowed in _narrowed(params, stamp):
            before = client.requests_sent
            try:
                frames = [
                    f.filter(pl.col("createdAt") == stamp)
                    for value in values
                    for f in fetch_query(
                        client,
                        {**narrowed, dim: value},
                        page_size=page_size,
                        concurrency=concurrency,
                        stats=stats,
                        digests=False,
                        split_dims=(*split_dims, dim),
                    ).frames
                    if f.height
                ]
            except _GroupTooLarge:
                break  # this filter leaves a part too large: try the next one
            finally:
                stats.proof("ties", client.requests_sent - before)
            if len({i for f in frames for i in f["id"].to_list()}) >= group.size:
                stats.note(f"{group.size} records sharing createdAt {group.stamp} read by {dim}")
                return frames
    if split_dims:
        raise _GroupTooLarge(group, stride)
    raise IncompleteExportError(
        f"{group.size} records of {describe_query(params)} share createdAt {group.stamp}: "
        f"more than one page ({stride}) holds, the service returns them in another order on "
        "every request, and no transType, currency or status filter splits them into groups "
        f"of at most {stride}, so no set of pages is sure to hold them all; ask with a larger "
        "page size if the service allows one",
        expected=group.size,
        got=len(group.ids),
        attempts=stats.passes,
    )


def _narrowed(params: Mapping[str, str | int], stamp: datetime) -> list[dict[str, str | int]]:
    day = stamp.date()
    low, high = day - timedelta(days=2), day + timedelta(days=2)
    if "startDate" in params:
        low = max(low, date.fromisoformat(str(params["startDate"])))
    if "endDate" in params:
        high = min(high, date.fromisoformat(str(params["endDate"])))
    narrow = {**params, "startDate": low.isoformat(), "endDate": high.isoformat()}
    return [narrow] if narrow == dict(params) else [narrow, dict(params)]


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def current_total(client: Client, params: Mapping[str, str | int]) -> int:
    """The service's total for one query now, from a one-record page.

    Raises:
        TxkitError: the subclasses of :mod:`txkit.errors` for HTTP and format failures.
    """
    body, request = client.get_transactions({**params, "skip": 0, "limit": 1})
    return read_page(body, request=request).total


def require_complete(result: QueryResult, params: Mapping[str, Any], passes: int) -> None:
    """Raise :class:`IncompleteExportError` for an incomplete :class:`QueryResult`."""
    if not result.complete:
        raise IncompleteExportError(
            f"the export of {describe_query(params)} does not add up",
            expected=result.total,
            got=result.unique,
            attempts=passes,
        )


def describe_query(params: Mapping[str, Any]) -> str:
    """A query as errors and notes name it: ``[transType=collection, startDate=2026-10-01]``,
    its paging left out; ``[all records]`` without a filter."""
    shown = ", ".join(f"{k}={v}" for k, v in params.items() if k not in ("skip", "limit"))
    return f"[{shown}]" if shown else "[all records]"


def timed() -> Callable[[], float]:
    """A stopwatch: call the returned function for the seconds since ``timed()``."""
    start = time.perf_counter()
    return lambda: time.perf_counter() - start
