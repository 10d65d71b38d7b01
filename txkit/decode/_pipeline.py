"""The page pipeline: response bodies in, verified typed frames out, in bounded memory.

One pipeline serves both the loader (:class:`txkit.pages._Pass`, which reads pages as they
arrive from the network) and :func:`decode_pages` (bodies saved elsewhere): each body is read by
:func:`~txkit.decode._fast.read_page` on a reading thread, and a :class:`PageSink` verifies and
converts them :data:`~txkit.decode._wire.BATCH_PAGES` at a time, in the order they were
accepted, keeping the ids, totals and path counts the loader's verification needs.
"""

from __future__ import annotations

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

    Attributes:
        frames: the decoded frames so far, in the order their pages were added.
        ids: the unique non-null ``id`` values of the pages decoded so far.
        totals: every ``data.total`` seen.
        pages: pages added.
        exact_pages: pages that needed the exact (slow) decoder, among those decoded.
    """

    def __init__(self, batch_pages: int = BATCH_PAGES) -> None:
        self.batch_pages = batch_pages
        self.frames: list[pl.DataFrame] = []
        self.ids: set[str] = set()
        self.totals: set[int] = set()
        self.pages = 0
        self.exact_pages = 0
        self._batch: list[RawPage] = []

    def add(self, page: RawPage) -> None:
        """Accept one read page; a full batch is verified and converted at once."""
        self.pages += 1
        self.totals.add(page.total)
        self._batch.append(page)
        if len(self._batch) >= self.batch_pages:
            self.flush()

    def flush(self) -> None:
        """Verify and convert the pages not yet decoded.

        Raises:
            SchemaError: a value cannot be converted to its column's type without loss.
        """
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        self.frames.extend(build_frames(batch))
        for page in batch:
            if page.ids is not None:
                self.ids.update(page.ids.drop_nulls().to_list())
        self.exact_pages += sum(page.exact for page in batch)


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
    is given bytes), verified and converted :data:`BATCH_PAGES` at a time in the calling
    thread, then deduplicated by ``id`` (:func:`dedupe_latest`: newest ``updatedAt`` wins, on
    a tie the later body) and sorted by ``createdAt``, ``id`` (:func:`assemble`). At most
    ``BATCH_PAGES + threads`` pages are read ahead, so memory stays bounded for a long
    iterator.

    Args:
        bodies: raw ``GET /transaction`` response bodies, in the order they were fetched.
        threads: reading threads; 1 reads in the calling thread. Default: polars' thread
            pool size (the machine's cores).

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
    sink = PageSink()
    for page in read_ahead(bodies, threads, BATCH_PAGES + threads):
        sink.add(page)
    sink.flush()
    return assemble(sink.frames)
