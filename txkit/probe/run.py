"""The probe itself: the requests ``txkit probe`` sends, in order, and what each one shows.

Steps (each finding is ``unknown`` with the reason when its step could not run):

1. ``GET /transaction`` without parameters: ``default_limit``, the total, the envelope.
2. ``limit=5000``: ``max_limit`` (the page served when asked for more than it holds); this page
   starts the *reference*, the newest records as one complete run of the listing, extended
   with further pages until it spans about six days.
3. The reference: ``order`` and ``fields_beyond_document``.
4. Pages of the reference with ties in ``createdAt`` asked again: ``ties_stable``.
5. Date windows chosen to split the readings that still fit (:mod:`txkit.probe.dates`):
   ``date_field``, ``start_inclusive``, ``end_inclusive``, ``utc_offset_hours``; their full
   listings give ``total_counts_all_matching``.
6. ``skip`` doubling, then bisection, one record per page: ``max_skip`` and how it fails.

The budget (``max_requests``) counts every request, retries included, and is never exceeded;
about 14 requests are kept for step 6.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Final

from txkit.errors import scrub
from txkit.fetch.profile import DATE_FINDINGS, Finding, ServiceProfile, unknown
from txkit.probe.dates import DateModel, parse_ms, record_id, timestamp_fields
from txkit.probe.sample import beyond_document, order, tie_groups, totals
from txkit.probe.session import Page, ProbeSession, ProbeStopped
from txkit.schema import CURRENCIES, TRANS_TYPES

__all__ = ["DEFAULT_MAX_REQUESTS", "probe_service"]

DEFAULT_MAX_REQUESTS: Final = 60
#: The page size asked for to find the maximum: more than any service we know serves.
ASK_LIMIT: Final = 5000
_REFERENCE_DAYS: Final = 6
_SKIP_RESERVE: Final = 14
_MAX_WINDOWS: Final = 8
#: Older reference pages fetched at most when the windows stay ambiguous.
_MAX_GROWTH: Final = 4
_TIE_GROUPS_ENOUGH: Final = 8
_MAX_TIE_REASKS: Final = 8
_SKIP_STEPS: Final = (1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000)


class _Listing:
    """The union of the records of every page of one query, over up to two passes."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.total: int | None = None
        self.pages = 0
        self.error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error is None and self.total is not None and len(self.records) == self.total


@dataclass
class _TieCheck:
    """The tie check's state: the pages sampled (their query and ids), the records seen by id,
    the tie groups each page holds, and the re-asks' tally."""

    plain: list[tuple[dict[str, str | int], list[str]]]
    by_id: dict[str, Any]
    counts: list[int]
    compared: int = 0
    differed: int = 0
    refetched: int = 0
    short: bool = False

    def groups(self, ids: list[str]) -> dict[str, list[str]]:
        """The tie groups of a page's records as first seen."""
        return tie_groups([self.by_id[i] for i in ids if i in self.by_id])


@dataclass
class _DateWalk:
    """What the date-window step has asked and learnt so far."""

    fields: list[str]
    model: DateModel
    tried: set[tuple[date, date]] = field(default_factory=set)
    observed: list[tuple[date, date, list[dict[str, Any]]]] = field(default_factory=list)
    totals_ok: list[str] = field(default_factory=list)
    totals_bad: list[str] = field(default_factory=list)
    why_none: str | None = None
    cut: str | None = None
    short: bool = False

    def rebuild(self, reference: list[dict[str, Any]]) -> None:
        """A new model over a grown reference, fed the windows already observed."""
        self.model = DateModel(reference, self.fields)
        for start, end, listed in self.observed:
            self.model.observe(start, end, listed)


@dataclass
class _State:
    """What the probe has learned so far; every step reads and adds to it."""

    session: ProbeSession
    say: Callable[[str], None]
    # Requests kept for the last step (max_skip); a quarter of a small budget.
    reserve: int
    findings: dict[str, Finding] = field(default_factory=dict)
    stopped: str | None = None
    total: int = 0
    page_size: int = 0
    reference: list[dict[str, Any]] = field(default_factory=list)  # in listing order
    reference_pages: list[tuple[dict[str, str | int], list[str]]] = field(default_factory=list)
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    windows: list[dict[str, Any]] = field(default_factory=list)
    # A filter value the date windows and their reference share on a busy service.
    filter: dict[str, str] = field(default_factory=dict)
    reference_total: int | None = None
    first_page: tuple[dict[str, str | int], list[str]] = ({}, [])
    reference_pages_planned: int = 0


# -- helpers ---------------------------------------------------------------------------


def _get(st: _State, params: dict[str, str | int]) -> Page:
    page = st.session.get(params)
    for record in page.records:
        st.seen[record_id(record)] = record
    return page


def _list_all(st: _State, params: dict[str, str | int], max_pages: int) -> _Listing:
    listing = _Listing()
    for _ in range(2):
        skip = 0
        while True:
            if listing.pages >= max_pages:
                listing.error = f"more than {max_pages} pages"
                return listing
            page = _get(st, {**params, "skip": skip, "limit": st.page_size})
            listing.pages += 1
            if not page.ok:
                listing.error = f"HTTP {page.status}: {page.message}"
                return listing
            listing.total = page.total
            if (page.total or 0) > max_pages * st.page_size:
                listing.error = f"it holds {page.total:,} records, more than {max_pages} pages"
                return listing
            for record in page.records:
                listing.records[record_id(record)] = record
            skip += len(page.records)
            if not page.records or skip >= (page.total or 0):
                break
        if listing.complete:
            break
    return listing


def _unknown_rest(st: _State, names: Sequence[str], reason: str) -> None:
    for name in names:
        st.findings.setdefault(name, unknown(reason))


# -- steps -----------------------------------------------------------------------------


def _run_steps(st: _State) -> None:
    """A step the budget stops, and every later one, leaves its findings unknown with the reason."""
    for step, names in _STEPS:
        if st.stopped is not None:
            _unknown_rest(st, names, f"not measured: {st.stopped}")
            continue
        try:
            step(st)
        except ProbeStopped as exc:
            st.stopped = str(exc)
            _unknown_rest(st, names, f"not measured: {st.stopped}")
    _step_sample(st)


def _step_default(st: _State) -> None:
    st.say("default page")
    page = _get(st, {})
    if not page.ok:
        raise ProbeStopped(f"the plain listing was refused (HTTP {page.status}: {page.message})")
    st.total = page.total or 0
    n = len(page.records)
    if st.total == 0:
        raise ProbeStopped("the service lists no records for this key")
    if n < st.total:
        st.findings["default_limit"] = Finding(
            n, "measured", f"no limit sent: {n:,} records of a total of {st.total:,}"
        )
    else:
        st.findings["default_limit"] = unknown(
            f"no limit sent: the whole listing ({st.total:,} records) fit in one page"
        )


def _step_max_limit(st: _State) -> None:
    st.say("largest page")
    page = _get(st, {"limit": ASK_LIMIT})
    asked = ASK_LIMIT
    refused = ""
    if not page.ok:
        refused = f"limit={ASK_LIMIT:,} refused (HTTP {page.status}: {page.message}); "
        # A number the refusal names (e.g. "at most 500") first, then round sizes.
        named = sorted(
            {int(n) for n in re.findall(r"\d+", page.message or "") if 0 < int(n) < asked},
            reverse=True,
        )
        tries = [*named[:1], *(n for n in (1000, 500, 200, 100, 50) if n not in named[:1])]
        for asked in tries:
            page = _get(st, {"limit": asked})
            if page.ok:
                break
            refused += f"limit={asked:,} refused; "
        else:
            raise ProbeStopped(f"every limit asked was refused (last: HTTP {page.status})")
    n = len(page.records)
    expected = min(asked, page.total or 0)
    if n < expected:
        finding = Finding(
            n, "measured", f"{refused}asked for {asked:,} of {page.total:,}: got {n:,}"
        )
    elif (page.total or 0) <= asked:
        finding = Finding(
            n,
            "inferred",
            f"{refused}limit={asked:,} returned the whole listing ({n:,}); a larger "
            "maximum cannot be seen",
        )
    else:
        finding = Finding(
            n, "inferred", f"{refused}honoured limit={asked:,}; the maximum may be larger"
        )
    st.findings["max_limit"] = finding
    st.page_size = max(1, n)
    _add_reference(st, {"limit": asked}, page)


def _add_reference(st: _State, params: dict[str, str | int], page: Page) -> None:
    if not st.reference_pages and not st.filter:
        st.first_page = (params, [record_id(r) for r in page.records])
    st.reference.extend(page.records)
    st.reference_pages.append((params, [record_id(r) for r in page.records]))


def _step_reference(st: _State) -> None:
    st.say("newest records")
    budget_pages = max(1, st.session.max_requests // 5)
    hours = _span_hours(st.reference)
    pages_needed = math.ceil(_REFERENCE_DAYS * 24 / hours) if hours > 0 else budget_pages + 1
    thin = None
    if pages_needed > budget_pages and len(st.reference) < st.total:
        thin = _thinning_filter(st, budget_pages)
    st.findings["order"] = order(st.reference)
    if thin is None:
        _extend_reference(st, {}, budget_pages, first_page_done=True)
        st.findings["order"] = order(st.reference)
        return
    # A busy service: its newest pages span too little time for day windows. Compare
    # within one filter value instead (the service applies it to the reference and to
    # the windows alike, so what it matches need not be known).
    st.filter = thin
    st.reference, st.reference_pages = [], []
    _extend_reference(st, thin, budget_pages, first_page_done=False)


def _extend_reference(
    st: _State, extra: dict[str, str], budget_pages: int, *, first_page_done: bool
) -> None:
    while len(st.reference_pages) < budget_pages and st.session.remaining > st.reserve:
        if _span_hours(st.reference) >= _REFERENCE_DAYS * 24:
            break
        skip = len(st.reference)
        if first_page_done and skip >= st.total:
            break
        params: dict[str, str | int] = {**extra, "skip": skip, "limit": st.page_size}
        page = _get(st, params)
        if not page.ok or not page.records:
            break
        _add_reference(st, params, page)
        st.reference_total = page.total
        if page.total is not None and len(st.reference) >= page.total:
            break
        if not first_page_done and len(st.reference_pages) == 1:
            first_page_done = True


def _newer_than(st: _State, end: date) -> bool:
    """Then no date filter on createdAt, updatedAt or paidAt can hold it."""
    latest_end = (end.toordinal() - date(1970, 1, 1).toordinal() + 1) * 86_400_000
    latest_end += 14 * 3_600_000
    return any((parse_ms(r.get("createdAt")) or 0) >= latest_end for r in st.reference)


def _grow_reference(st: _State) -> bool:
    grown = len(st.reference_pages) - st.reference_pages_planned
    if grown >= _MAX_GROWTH or st.session.remaining <= st.reserve + 2:
        return False
    if st.reference_total is not None and len(st.reference) >= st.reference_total:
        return False
    params: dict[str, str | int] = {
        **st.filter,
        "skip": len(st.reference),
        "limit": st.page_size,
    }
    page = _get(st, params)
    if not page.ok or not page.records:
        return False
    _add_reference(st, params, page)
    st.reference_total = page.total
    return True


def _thinning_filter(st: _State, budget_pages: int) -> dict[str, str] | None:
    """The densest value whose records span the reference's days within the budget's pages
    (denser brackets)."""
    hours = _span_hours(st.reference)
    if hours <= 0:
        return None
    per_day = len(st.reference) / (hours / 24)
    counts: dict[tuple[str, str], int] = {}
    for record in st.reference:
        for param, name, accepted in _THIN_BY:
            value = record.get(name)
            if isinstance(value, str) and value in accepted:
                counts[(param, value)] = counts.get((param, value), 0) + 1
    room = budget_pages * st.page_size
    fitting = [
        (n, key)
        for key, n in counts.items()
        # twice the days wanted: the density of one page is a rough estimate
        if n >= 2 and 2 * per_day * _REFERENCE_DAYS * n / len(st.reference) <= room
    ]
    if not fitting:
        return None
    _, (param, value) = max(fitting)
    return {param: value}


def _step_ties(st: _State) -> None:
    st.reference_pages_planned = len(st.reference_pages)
    st.say("ties")
    ties = _tie_pages(st)
    _reask_tie_pages(st, ties)
    _record_tie_findings(st, ties)


def _tie_pages(st: _State) -> _TieCheck:
    # Unfiltered pages only: a thinning filter leaves few ties.
    plain = [(p, ids) for p, ids in st.reference_pages if not st.filter] or [st.first_page]
    by_id = dict(st.seen)
    counts = [len(tie_groups([by_id[i] for i in ids if i in by_id])) for _, ids in plain]
    while (
        sum(counts) < _TIE_GROUPS_ENOUGH
        and len(plain) < 4
        and (st.session.remaining > st.reserve + 8)
    ):
        params: dict[str, str | int] = {
            "skip": sum(len(ids) for _, ids in plain),
            "limit": st.page_size,
        }
        page = _get(st, params)
        if not page.ok or not page.records:
            break
        plain.append((params, [record_id(r) for r in page.records]))
        counts.append(len(tie_groups(page.records)))
        by_id.update((record_id(r), r) for r in page.records)
    return _TieCheck(plain, by_id, counts)


def _reask_tie_pages(st: _State, ties: _TieCheck) -> None:
    """Until enough comparisons: a shuffled pair keeps its order by chance half the time."""
    with_ties = sorted(
        ((n, params, ids) for n, (params, ids) in zip(ties.counts, ties.plain, strict=True) if n),
        key=lambda item: -item[0],
    )
    while with_ties and ties.compared < _TIE_GROUPS_ENOUGH and not ties.differed:
        if ties.refetched >= _MAX_TIE_REASKS or st.session.remaining <= st.reserve + 6:
            ties.short = True
            break
        _, params, ids = with_ties[ties.refetched % len(with_ties)]
        page = _get(st, params)
        ties.refetched += 1
        if not page.ok:
            continue
        before = ties.groups(ids)
        after = tie_groups(page.records)
        for stamp, group in before.items():
            if stamp in after:
                ties.compared += 1
                ties.differed += after[stamp] != group


def _record_tie_findings(st: _State, ties: _TieCheck) -> None:
    compared, differed, refetched = ties.compared, ties.differed, ties.refetched
    sampled = sum(len(ids) for _, ids in ties.plain)
    sizes = [len(g) for _, ids in ties.plain for g in ties.groups(ids).values()]
    st.findings["largest_tie_group"] = Finding(
        max(sizes, default=1),
        "measured",
        f"the largest group of records sharing a createdAt among the {sampled:,} newest "
        f"records ({len(sizes)} group(s) of 2 or more); older records may hold larger ones",
    )
    if differed:
        finding = Finding(
            False,
            "measured",
            f"{differed} of {compared} groups of records with equal createdAt came back "
            f"in another order when pages were asked again ({refetched} re-asks)",
        )
    elif compared >= _TIE_GROUPS_ENOUGH:
        finding = Finding(
            True, "measured", f"{compared} tie groups kept their order over {refetched} re-asks"
        )
    elif compared:
        finding = Finding(
            True,
            "inferred",
            f"only {compared} tie group comparison(s) over {refetched} re-ask(s), all in the "
            "same order (a shuffled pair keeps its order half the time)",
        )
    elif ties.short:
        finding = unknown("the request budget left no room to ask a page with ties again")
    else:
        finding = unknown(f"no two of the {sampled:,} newest records share a createdAt")
    st.findings["ties_stable"] = finding


def _step_dates(st: _State) -> None:
    st.say("date windows")
    fields = timestamp_fields(st.reference)
    walk = _DateWalk(fields, DateModel(st.reference, fields))
    try:
        while len(walk.model.observations) < _MAX_WINDOWS and _date_walk_step(st, walk):
            pass
    except ProbeStopped as exc:
        walk.why_none = f"not measured: {exc}"
        walk.short = True
        raise
    finally:
        _record_date_findings(st, walk)


def _date_walk_step(st: _State, walk: _DateWalk) -> bool:
    model = walk.model
    if st.session.remaining <= st.reserve:
        walk.why_none = walk.why_none or "the request budget left no room for date windows"
        walk.short = True
        return False
    if model.settled and len(model.observations) >= 2:
        return False
    window = model.next_window(max_records=4 * st.page_size, skip=walk.tried)
    if window is None and len(model.candidates) > 1 and _grow_reference(st):
        # Older records open more days to tell the readings apart.
        walk.rebuild(st.reference)
        return True
    if window is None:
        span = _span_hours(st.reference)
        if not model.observations:
            walk.why_none = (
                f"the {len(st.reference):,} newest records span {span:.0f} h: too "
                "few days to compare date windows within the budget"
            )
        else:
            walk.cut = (
                f"no other window within the {len(st.reference):,} newest records "
                f"({span:.0f} h) tells them apart"
            )
        return False
    walk.tried.add(window)
    return _list_date_window(st, walk, *window)


def _list_date_window(st: _State, walk: _DateWalk, start: date, end: date) -> bool:
    params: dict[str, str | int] = {
        **st.filter,
        "startDate": start.isoformat(),
        "endDate": end.isoformat(),
    }
    listing = _list_all(st, params, max_pages=8)
    label = f"{start}..{end}"
    st.windows.append(
        {
            **st.filter,
            "startDate": start.isoformat(),
            "endDate": end.isoformat(),
            "total": listing.total,
            "listed": len(listing.records),
            "pages": listing.pages,
        }
    )
    if listing.total == st.total and not st.filter and _newer_than(st, end):
        walk.why_none = (
            f"the window {label} returned the whole listing ({st.total:,}): the "
            "service seems to ignore startDate/endDate"
        )
        return False
    if listing.error is not None:
        walk.why_none = f"the window {label} could not be listed ({listing.error})"
    elif listing.complete:
        walk.totals_ok.append(f"{label}: {listing.total}")
        walk.observed.append((start, end, list(listing.records.values())))
        walk.model.observe(*walk.observed[-1])
    elif listing.pages == 1 and listing.total is not None:
        walk.totals_bad.append(
            f"{label}: total {listing.total}, one page listed {len(listing.records)}"
        )
    else:
        walk.totals_bad.append(
            f"{label}: total {listing.total}, {listing.pages} pages listed "
            f"{len(listing.records)} unique"
        )
    return True


def _record_date_findings(st: _State, walk: _DateWalk) -> None:
    cut = walk.cut
    if walk.short:
        cut = (
            f"the request budget ({st.session.max_requests}) allowed "
            f"{len(walk.model.observations)} window(s)"
        )
    found = walk.model.findings(walk.why_none, cut)
    if st.filter:
        ((param, value),) = st.filter.items()
        found = {
            name: Finding(f.value, f.certainty, f"{f.detail} (windows filtered on "
                          f"{param}={value}: the newest records span too few days)")
            for name, f in found.items()
        }  # fmt: skip
    st.findings.update(found)
    st.findings["total_counts_all_matching"] = totals(walk.totals_ok, walk.totals_bad)


def _step_max_skip(st: _State) -> None:
    st.say("largest skip")
    last = st.total - 1
    steps = [s for s in _SKIP_STEPS if s < last] + [last]
    good, bad = 0, None
    mode = message = None
    status = 200
    for skip in steps:
        verdict, mode, status, message = _skip_verdict(st, skip)
        if verdict:
            good = skip
        else:
            bad = skip
            break
    if bad is None:
        st.findings["max_skip"] = Finding(
            None, "measured", f"no limit: skip={last:,} (the last record) was served"
        )
        st.findings["max_skip_mode"] = Finding(None, "measured", "no skip limit found")
        return
    how = (
        f"refused with HTTP {status} ({message})"
        if mode == "reject"
        else "answered with an empty page and the real total"
    )
    st.findings["max_skip_mode"] = Finding(mode, "measured", f"skip={bad:,} was {how}")
    try:
        # A number the refusal names (e.g. "skip must be at most 10000") is tried first.
        for named in sorted({int(n) for n in re.findall(r"\d+", message or "")}):
            for guess in (named, named - 1):
                if good < guess < bad:
                    if _skip_verdict(st, guess)[0]:
                        good = guess
                    else:
                        bad = guess
        while bad - good > 1:
            middle = (good + bad) // 2
            if _skip_verdict(st, middle)[0]:
                good = middle
            else:
                bad = middle
    except ProbeStopped:
        st.findings["max_skip"] = Finding(
            good,
            "inferred",
            f"served at skip={good:,}, not at skip={bad:,}; the budget ended the search "
            "(the true maximum lies between)",
        )
        raise
    st.findings["max_skip"] = Finding(
        good, "measured", f"skip={good:,} served one record, skip={bad:,} did not"
    )


def _skip_verdict(st: _State, skip: int) -> tuple[bool, str | None, int, str | None]:
    """(served?, how it failed: error/empty, HTTP status, the service's message)."""
    page = _get(st, {"skip": skip, "limit": 1})
    if not page.ok:
        return False, "reject", page.status, page.message
    if not page.records and (page.total or 0) > skip:
        return False, "empty", page.status, None
    return True, None, page.status, None


def _step_sample(st: _State) -> None:
    records = list(st.seen.values())
    st.findings["fields_beyond_document"] = (
        Finding(
            beyond_document(records),
            "measured",
            f"{len(records):,} records sampled; shares are of those records",
        )
        if records
        else unknown("no records were received")
    )
    extras = sorted(st.session.envelope_extras)
    st.findings["envelope_extras"] = (
        Finding(extras, "measured", f"{st.session.responses} responses")
        if st.session.responses
        else unknown("no response was received")
    )
    if st.session.rate_limited:
        values = sorted({str(v) for v in st.session.retry_after_values})
        st.findings["rate_limit"] = Finding(
            {"responses_429": st.session.rate_limited, "retry_after": values},
            "measured",
            f"{st.session.rate_limited} of {st.session.requests} requests got 429 "
            f"(Retry-After: {', '.join(values)}); the probe waited and slowed down",
        )
    else:
        st.findings["rate_limit"] = Finding(
            None,
            "inferred",
            f"no 429 in {st.session.requests} requests; a longer or faster run may meet one",
        )


#: The probe's steps in order, each with the findings it gives (names as in ``FINDINGS``).
_STEPS: Final[tuple[tuple[Callable[[_State], None], tuple[str, ...]], ...]] = (
    (_step_default, ("default_limit",)),
    (_step_max_limit, ("max_limit",)),
    (_step_reference, ("order",)),
    (_step_ties, ("ties_stable", "largest_tie_group")),
    (_step_dates, (*DATE_FINDINGS, "total_counts_all_matching")),
    (_step_max_skip, ("max_skip", "max_skip_mode")),
)


def _span_hours(records: Sequence[dict[str, Any]]) -> float:
    times = [t for r in records if (t := parse_ms(r.get("createdAt")))]
    return (max(times) - min(times)) / 3_600_000 if times else 0.0


#: Filters that may thin the date windows: (parameter, record field, documented values).
#: Not status: statuses change after a record is seen and cluster in time (in-flight ones
#: among the newest records).
_THIN_BY: Final = (
    ("transType", "transType", TRANS_TYPES),
    ("currency", "toCurrency", CURRENCIES),
)


def probe_service(
    base_url: str | None = None,
    secret_key: str | None = None,
    *,
    max_requests: int = DEFAULT_MAX_REQUESTS,
    env_file: str | os.PathLike[str] | None = ".env",
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> ServiceProfile:
    """Measure what the interface document leaves out, with at most ``max_requests`` GETs.

    Args:
        base_url, secret_key: the service; default ``TXKIT_BASE_URL``/``TXKIT_SECRET_KEY``
            (environment, then ``env_file``).
        max_requests: the request budget (every attempt counts, retries included).
        env_file: the ``.env`` file consulted for missing settings.
        timeout: seconds per request.
        progress: called with the name of each step (e.g. to print it).

    Returns:
        The :class:`ServiceProfile` (not saved: call :meth:`ServiceProfile.save`).

    Raises:
        ValueError: ``max_requests`` below 2.
        ConfigError: no base URL or key.
        AuthError: the key was rejected (401) or access refused (403).
        ResponseFormatError: a 200 that is not the documented envelope.

    Example:
        >>> profile = probe_service(max_requests=60)
        >>> print(profile.table()); profile.save("data/service-profile.json")
    """
    if isinstance(max_requests, bool) or not isinstance(max_requests, int) or max_requests < 2:
        raise ValueError(f"max_requests must be an integer of at least 2, got {max_requests!r}")
    began = time.monotonic()
    measured_at = datetime.now(UTC)
    with ProbeSession(
        base_url, secret_key, max_requests=max_requests, env_file=env_file, timeout=timeout
    ) as session:
        probe = _State(
            session, progress or (lambda _: None), min(_SKIP_RESERVE, session.max_requests // 4)
        )
        _run_steps(probe)
        profile = ServiceProfile(
            base_url=session.base_url,
            measured_at=measured_at,
            findings=probe.findings,
            requests=session.requests,
            max_requests=max_requests,
            seconds=time.monotonic() - began,
            records_sampled=len(probe.seen),
            windows=probe.windows,
        )
        # Server text (messages in details) never carries the key out of the probe.
        clean = scrub(json.dumps(profile.to_json()), session.secret)
        return ServiceProfile.from_json(json.loads(clean))
