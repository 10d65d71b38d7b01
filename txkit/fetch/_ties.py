"""Equal ``createdAt`` at page edges: which tie groups offset pages may have cut, and how big.

A service that sorts on a millisecond timestamp without a tie-breaker returns records created
in the same millisecond (a settlement batch, a bulk transfer) in another order on every
request. A tie group keeps its range of positions in the listing; only the order inside it
changes. So a page either holds a whole group or cuts it, and two pages that cut the same group
each get a random part of it: together they may miss some of its records, and no count says so
(the total still matches whatever the pages return).

What makes this exact by construction: positions are fixed, so the timestamps by position are
the same in every response. Each page tells its two edge runs (the records at its start and at
its end sharing one ``createdAt``), with their positions. A group that crosses a page boundary
is an edge run of every page it touches, so its first and last positions, hence its size, are
known exactly; the ids those pages returned for it either number its size (whole: nothing to
do, whatever the order was) or fewer (cut: one request at ``skip`` = its first position with
``limit`` = its size returns it whole). Groups inside a page are whole by definition. Cost: one
request per cut group whose parts missed a record (for a group of 2 cut 1|1, half the time);
nothing when the order of ties is stable. A group larger than a page cannot be read whole by
any request: the loader splits it by another filter (:func:`txkit.fetch.pages.fetch_query`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from txkit.decode import RawPage

__all__ = ["Group", "PageMark", "Run", "cut_groups", "mark_from_columns", "mark_page"]

#: How ``createdAt`` values of exactly decoded pages are written to compare with wire text.
_ISO_MS = "%Y-%m-%dT%H:%M:%S%.3fZ"


@dataclass(frozen=True, slots=True)
class Run:
    """Records at one edge of a page sharing one ``createdAt`` (``stamp``, as sent)."""

    stamp: str
    start: int
    size: int
    ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class PageMark:
    """A page's position and its edge runs (``lead`` at its start, ``trail`` at its end; the
    same run when the whole page shares one timestamp)."""

    skip: int
    count: int
    lead: Run
    trail: Run


@dataclass(frozen=True, slots=True)
class Group:
    """A tie group at page edges: its first position, its size and the ids seen of it."""

    stamp: str
    start: int
    size: int
    ids: frozenset[str]

    @property
    def whole(self) -> bool:
        """Whether every record of the group was seen."""
        return len(self.ids) >= self.size


def mark_from_columns(skip: int, ids: pl.Series, created: pl.Series) -> PageMark | None:
    """The :class:`PageMark` of a page whose records start at ``skip``, from its ``id`` and
    ``createdAt`` columns in page order (None for an empty page or one without ids)."""
    count = ids.len()
    if not count or ids.null_count() or created.null_count():
        return None
    if created.dtype != pl.String:
        created = created.dt.strftime(_ISO_MS)
    runs = created.rle()
    lead_size = int(runs[0]["len"])
    trail_size = int(runs[-1]["len"])
    lead = Run(
        str(created[0]), skip, lead_size, frozenset(ids.head(lead_size).cast(pl.String).to_list())
    )
    if runs.len() == 1:
        return PageMark(skip, count, lead, lead)
    trail = Run(
        str(created[-1]),
        skip + count - trail_size,
        trail_size,
        frozenset(ids.tail(trail_size).cast(pl.String).to_list()),
    )
    return PageMark(skip, count, lead, trail)


def mark_page(skip: int, page: RawPage) -> PageMark | None:
    """The :class:`PageMark` of a page whose records start at ``skip``, from the edge runs
    :func:`~txkit.decode.build_frames` set (``edges=True``; None without them)."""
    if page.edges is None:
        return None
    (stamp, size, ids), trail = page.edges
    lead = Run(stamp, skip, size, ids)
    if trail is page.edges[0]:
        return PageMark(skip, page.count, lead, lead)
    stamp, size, ids = trail
    return PageMark(skip, page.count, lead, Run(stamp, skip + page.count - size, size, ids))


def cut_groups(marks: Iterable[PageMark]) -> list[Group]:
    """The tie groups that touch a page edge, from pages that tile a listing.

    Only runs of two or more positions, contiguous across pages, count: a timestamp seen in
    runs that leave a gap between them is not one group of a listing sorted on ``createdAt``
    (the service sorts otherwise, or records moved), and nothing is assumed about it.
    """
    spans: dict[str, tuple[int, int, int, set[str]]] = {}
    for mark in marks:
        runs = (mark.lead,) if mark.lead is mark.trail else (mark.lead, mark.trail)
        for run in runs:
            low, high, covered, ids = spans.get(run.stamp, (run.start, run.start, 0, set()))
            spans[run.stamp] = (
                min(low, run.start),
                max(high, run.start + run.size),
                covered + run.size,
                ids | run.ids,
            )
    return [
        Group(stamp, low, high - low, frozenset(ids))
        for stamp, (low, high, covered, ids) in spans.items()
        if high - low >= 2 and covered == high - low
    ]
