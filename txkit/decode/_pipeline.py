"""The page pipeline: response bodies in, verified typed frames out, in bounded memory.

One pipeline serves both the loader (:class:`txkit.fetch.pages._Pass`, which reads pages as they
arrive from the network) and :func:`decode_pages` (bodies saved elsewhere): each body is read by
:func:`~txkit.decode._fast.read_page` on a reading thread, and a :class:`PageSink` verifies and
converts them :data:`~txkit.decode._wire.BATCH_PAGES` at a time, in the order they were
accepted, keeping the ids, totals and path counts the loader's verification needs.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import polars as pl

from txkit.decode._assemble import assemble
from txkit.decode._combine import combine
from txkit.decode._exact import DecodedPage
from txkit.decode._fast import RawPage, build_frames, read_page
from txkit.decode._wire import BATCH_PAGES


class PageSink:
    """Collects read pages and turns them into frames a batch at a time, in acceptance order.

    Up to ``builders`` batches are verified and converted at once on a shared pool of
    threads (polars releases the GIL while it works), so converting keeps pace with reading
    instead of running on the calling thread alone; their frames are kept in the order the
    batches were accepted. ``builders=1`` converts in the calling thread.

    Attributes:
        frames: the decoded frames so far, in the order their pages were added (complete
            after :meth:`flush`).
        ids: the unique non-null ``id`` values of the pages decoded so far.
        totals: every ``data.total`` seen.
        pages: pages added.
        exact_pages: pages that needed the exact (slow) decoder, among those decoded.
        edges: set each page's :attr:`~txkit.decode.RawPage.edges` (for tie groups).
    """

    def __init__(
        self, batch_pages: int = BATCH_PAGES, builders: int | None = None, *, edges: bool = False
    ) -> None:
        self.batch_pages = batch_pages
        self.edges = edges
        self.builders = _builders() if builders is None else max(1, builders)
        self.frames: list[pl.DataFrame] = []
        self.ids: set[str] = set()
        self.totals: set[int] = set()
        self.pages = 0
        self.exact_pages = 0
        self._batch: list[RawPage] = []
        self._building: deque[tuple[list[RawPage], Future[list[pl.DataFrame]]]] = deque()

    def add(self, page: RawPage) -> None:
        """Accept one read page; a full batch is handed to a builder."""
        self.pages += 1
        self.totals.add(page.total)
        self._batch.append(page)
        if len(self._batch) >= self.batch_pages:
            self._submit()

    def flush(self) -> None:
        """Verify and convert every page accepted so far; returns when all are decoded.

        Raises:
            SchemaError: a value cannot be converted to its column's type without loss.
        """
        if self._batch:
            self._submit()
        while self._building:
            self._take_oldest()

    def _submit(self) -> None:
        batch, self._batch = self._batch, []
        if self.builders == 1:
            self._done(batch, build_frames(batch, edges=self.edges))
            return
        while len(self._building) >= self.builders:
            self._take_oldest()  # bounded: at most `builders` batches held while converting
        self._building.append((batch, _build_pool().submit(build_frames, batch, edges=self.edges)))

    def _take_oldest(self) -> None:
        batch, future = self._building.popleft()
        try:
            frames = future.result()
        except BaseException:
            for _, other in self._building:
                other.cancel()
            self._building.clear()
            raise
        self._done(batch, frames)

    def _done(self, batch: list[RawPage], frames: list[pl.DataFrame]) -> None:
        self.frames.extend(frames)
        for page in batch:
            if page.ids is not None:
                self.ids.update(page.ids.drop_nulls().to_list())
        self.exact_pages += sum(page.exact for page in batch)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _builders() -> int:
    return max(1, pl.thread_pool_size())


def _build_pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_builders(), thread_name_prefix="txkit-convert")
        return _POOL


def read_ahead(bodies: Iterable[bytes], threads: int, window: int) -> Iterator[RawPage]:
    """Read ``bodies`` on ``threads`` threads, yielding pages in order, ``window`` at most ahead."""
    if threads == 1:
        yield from (read_page(body) for body in bodies)
        return
    pending: deque[Future[RawPage]] = deque()
    with ThreadPoolExecutor(threads, thread_name_prefix="txkit-read") as pool:
        for body in bodies:
            pending.append(pool.submit(read_page, body))
            if len(pending) > window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def decode_page(body: bytes, *, request: Any = None) -> DecodedPage:
    """Decode one export response body into a flat, typed frame.

    Args:
        body: the raw response body.
        request: the :class:`httpx.Request` it answered, for error context.

    Returns:
        The page as a :class:`DecodedPage`.

    Raises:
        ResponseFormatError: the body is not JSON or not the documented envelope.
        ApiError: the envelope says ``success: false``.
        SchemaError: a value cannot be converted to its column's type without loss.
    """
    raw = read_page(body, request=request)
    frames = build_frames([raw])
    frame = combine(frames) if len(frames) != 1 else frames[0]
    return DecodedPage(frame=frame, total=raw.total, message=raw.message, exact=raw.exact)


def decode_pages(bodies: Iterable[bytes], *, threads: int | None = None) -> pl.DataFrame:
    """Decode the response bodies of one export into its final frame.

    The same pipeline :func:`txkit.load_transactions` runs after fetching, for bodies saved
    elsewhere: pages are read on ``threads`` threads (polars' reader releases the GIL when it
    is given bytes), verified and converted :data:`BATCH_PAGES` at a time on as many
    converting threads (:class:`PageSink`), then deduplicated by ``id`` (:func:`dedupe_latest`:
    newest ``updatedAt`` wins, on a tie the later body) and sorted by ``createdAt``, ``id``
    (:func:`assemble`). At most ``BATCH_PAGES + threads`` pages are read ahead and
    ``threads`` batches converted at once, so memory stays bounded for a long iterator.

    Args:
        bodies: raw ``GET /transaction`` response bodies, in the order they were fetched.
        threads: reading and converting threads; 1 does everything in the calling thread.
            Default: polars' thread pool size (the machine's cores).

    Returns:
        The flat, typed frame (see :data:`txkit.schema.COLUMNS`).

    Raises:
        ValueError: ``threads`` is below 1.
        ResponseFormatError: a body is not JSON or not the documented envelope.
        ApiError: an envelope says ``success: false``.
        SchemaError: a value cannot be converted to its column's type without loss.

    Example:
        >>> bodies = [path.read_bytes() for path in sorted(Path("pages").glob("*.json"))]
        >>> frame = decode_pages(bodies)  # doctest: +SKIP
    """
    threads = pl.thread_pool_size() if threads is None else threads
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    sink = PageSink(builders=threads)
    for page in read_ahead(bodies, threads, BATCH_PAGES + threads):
        sink.add(page)
    sink.flush()
    return assemble(sink.frames)
