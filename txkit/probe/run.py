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


class _Probe:
    def __init__(self, session: ProbeSession, say: Callable[[str], None]) -> None:
        self.s = session
        self.say = say
        self.findings: dict[str, Finding] = {}
        self.stopped: str | None = None
        self.total = 0
        self.page_size = 0
        self.reference: list[dict[str, Any]] = []  # in listing order
        self.reference_pages: list[tuple[dict[str, str | int], list[str]]] = []
        self.seen: dict[str, dict[str, Any]] = {}
        self.windows: list[dict[str, Any]] = []
        # A filter value the date windows and their reference share on a busy service.
        self.filter: dict[str, str] = {}
        self.reference_total: int | None = None
        self.first_page: tuple[dict[str, str | int], list[str]] = ({}, [])
        self.reference_pages_planned = 0
        # Requests kept for the last step (max_skip); a quarter of a small budget.
        self.reserve = min(_SKIP_RESERVE, session.max_requests // 4)

    # -- helpers ---------------------------------------------------------------------------

    def get(self, params: dict[str, str | int]) -> Page:
        page = self.s.get(params)
        for record in page.records:
            self.seen[record_id(record)] = record
        return page

    def list_all(self, params: dict[str, str | int], max_pages: int) -> _Listing:
        listing = _Listing()
        for _ in range(2):
            skip = 0
            while True:
                if listing.pages >= max_pages:
                    listing.error = f"more than {max_pages} pages"
                    return listing
                page = self.get({**params, "skip": skip, "limit": self.page_size})
                listing.pages += 1
                if not page.ok:
                    listing.error = f"HTTP {page.status}: {page.message}"
                    return listing
                listing.total = page.total
                if (page.total or 0) > max_pages * self.page_size:
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

    def unknown_rest(self, names: Sequence[str], reason: str) -> None:
        for name in names:
            self.findings.setdefault(name, unknown(reason))

    # -- steps -----------------------------------------------------------------------------

    def run(self) -> None:
        steps: list[tuple[Callable[[], None], tuple[str, ...]]] = [
            (self.step_default, ("default_limit",)),
            (self.step_max_limit, ("max_limit",)),
            (self.step_reference, ("order",)),
            (self.step_ties, ("ties_stable", "largest_tie_group")),
            (self.step_dates, (*DATE_FINDINGS, "total_counts_all_matching")),
            (self.step_max_skip, ("max_skip", "max_skip_mode")),
        ]
        for step, names in steps:
            if self.stopped is not None:
                self.unknown_rest(names, f"not measured: {self.stopped}")
                continue
            try:
                step()
            except ProbeStopped as exc:
                self.stopped = str(exc)
                self.unknown_rest(names, f"not measured: {self.stopped}")
        self.step_sample()

    def step_default(self) -> None:
        self.say("default page")
        page = self.get({})
        if not page.ok:
            raise ProbeStopped(
                f"the plain listing was refused (HTTP {page.status}: {page.message})"
            )
        self.total = page.total or 0
        n = len(page.records)
        if self.total == 0:
            raise ProbeStopped("the service lists no records for this key")
        if n < self.total:
            self.findings["default_limit"] = Finding(
                n, "measured", f"no limit sent: {n:,} records of a total of {self.total:,}"
            )
        else:
            self.findings["default_limit"] = unknown(
                f"no limit sent: the whole listing ({self.total:,} records) fit in one page"
            )

    def step_max_limit(self) -> None:
        self.say("largest page")
        page = self.get({"limit": ASK_LIMIT})
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
                page = self.get({"limit": asked})
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
        self.findings["max_limit"] = finding
        self.page_size = max(1, n)
        self._add_reference({"limit": asked}, page)

    def _add_reference(self, params: dict[str, str | int], page: Page) -> None:
        if not self.reference_pages and not self.filter:
            self.first_page = (params, [record_id(r) for r in page.records])
        self.reference.extend(page.records)
        self.reference_pages.append((params, [record_id(r) for r in page.records]))

    def step_reference(self) -> None:
        self.say("newest records")
        budget_pages = max(1, self.s.max_requests // 5)
        hours = _span_hours(self.reference)
        pages_needed = math.ceil(_REFERENCE_DAYS * 24 / hours) if hours > 0 else budget_pages + 1
        thin = None
        if pages_needed > budget_pages and len(self.reference) < self.total:
            thin = self._thinning_filter(budget_pages)
        self.findings["order"] = order(self.reference)
        if thin is None:
            self._extend_reference({}, budget_pages, first_page_done=True)
            self.findings["order"] = order(self.reference)
            return
        # A busy service: its newest pages span too little time for day windows. Compare
        # within one filter value instead (the service applies it to the reference and to
        # the windows alike, so what it matches need not be known).
        self.filter = thin
        self.reference, self.reference_pages = [], []
        self._extend_reference(thin, budget_pages, first_page_done=False)

    def _extend_reference(
        self, extra: dict[str, str], budget_pages: int, *, first_page_done: bool
    ) -> None:
        while len(self.reference_pages) < budget_pages and self.s.remaining > self.reserve:
            if _span_hours(self.reference) >= _REFERENCE_DAYS * 24:
                break
            skip = len(self.reference)
            if first_page_done and skip >= self.total:
                break
            params: dict[str, str | int] = {**extra, "skip": skip, "limit": self.page_size}
            page = self.get(params)
            if not page.ok or not page.records:
                break
            self._add_reference(params, page)
            self.reference_total = page.total
            if page.total is not None and len(self.reference) >= page.total:
                break
            if not first_page_done and len(self.reference_pages) == 1:
                first_page_done = True

    def _newer_than(self, end: date) -> bool:
        """Whether a reference record was created after every reading's end of ``endDate``
        (so no date filter on createdAt, updatedAt or paidAt can hold it)."""
        latest_end = (end.toordinal() - date(1970, 1, 1).toordinal() + 1) * 86_400_000
        latest_end += 14 * 3_600_000
        return any((parse_ms(r.get("createdAt")) or 0) >= latest_end for r in self.reference)

    def _grow_reference(self) -> bool:
        """One more (older) page of the reference, if the budget and the listing allow."""
        grown = len(self.reference_pages) - self.reference_pages_planned
        if grown >= _MAX_GROWTH or self.s.remaining <= self.reserve + 2:
            return False
        if self.reference_total is not None and len(self.reference) >= self.reference_total:
            return False
        params: dict[str, str | int] = {
            **self.filter,
            "skip": len(self.reference),
            "limit": self.page_size,
        }
        page = self.get(params)
        if not page.ok or not page.records:
            return False
        self._add_reference(params, page)
        self.reference_total = page.total
        return True

    def _thinning_filter(self, budget_pages: int) -> dict[str, str] | None:
        """The documented filter value whose records would span the reference's days in the
        pages the budget allows (the densest such value: denser brackets), or None."""
        hours = _span_hours(self.reference)
        if hours <= 0:
            return None
        per_day = len(self.reference) / (hours / 24)
        counts: dict[tuple[str, str], int] = {}
        for record in self.reference:
            for param, name, accepted in _THIN_BY:
                value = record.get(name)
                if isinstance(value, str) and value in accepted:
                    counts[(param, value)] = counts.get((param, value), 0) + 1
        room = budget_pages * self.page_size
        fitting = [
            (n, key)
            for key, n in counts.items()
            # twice the days wanted: the density of one page is a rough estimate
            if n >= 2 and 2 * per_day * _REFERENCE_DAYS * n / len(self.reference) <= room
        ]
        if not fitting:
            return None
        _, (param, value) = max(fitting)
        return {param: value}

    def step_ties(self) -> None:
        self.reference_pages_planned = len(self.reference_pages)
        self.say("ties")
        ties = self._tie_pages()
        self._reask_tie_pages(ties)
        self._record_tie_findings(ties)

    def _tie_pages(self) -> _TieCheck:
        """The pages to look for ties in: the reference pages, then further ones while they
        hold too few tie groups (a small page may hold none)."""
        # Unfiltered pages only: a thinning filter leaves few ties.
        plain = [(p, ids) for p, ids in self.reference_pages if not self.filter] or [
            self.first_page
        ]
        by_id = dict(self.seen)
        counts = [len(tie_groups([by_id[i] for i in ids if i in by_id])) for _, ids in plain]
        while (
            sum(counts) < _TIE_GROUPS_ENOUGH
            and len(plain) < 4
            and (self.s.remaining > self.reserve + 8)
        ):
            params: dict[str, str | int] = {
                "skip": sum(len(ids) for _, ids in plain),
                "limit": self.page_size,
            }
            page = self.get(params)
            if not page.ok or not page.records:
                break
            plain.append((params, [record_id(r) for r in page.records]))
            counts.append(len(tie_groups(page.records)))
            by_id.update((record_id(r), r) for r in page.records)
        return _TieCheck(plain, by_id, counts)

    def _reask_tie_pages(self, ties: _TieCheck) -> None:
        """Ask each page with ties again, in turn, until enough group comparisons were made:
        a shuffled pair keeps its order by chance half the time."""
        with_ties = sorted(
            (
                (n, params, ids)
                for n, (params, ids) in zip(ties.counts, ties.plain, strict=True)
                if n
            ),
            key=lambda item: -item[0],
        )
        while with_ties and ties.compared < _TIE_GROUPS_ENOUGH and not ties.differed:
            if ties.refetched >= _MAX_TIE_REASKS or self.s.remaining <= self.reserve + 6:
                ties.short = True
                break
            _, params, ids = with_ties[ties.refetched % len(with_ties)]
            page = self.get(params)
            ties.refetched += 1
            if not page.ok:
                continue
            before = ties.groups(ids)
            after = tie_groups(page.records)
            for stamp, group in before.items():
                if stamp in after:
                    ties.compared += 1
                    ties.differed += after[stamp] != group

    def _record_tie_findings(self, ties: _TieCheck) -> None:
        """``largest_tie_group`` and ``ties_stable`` from what the pages showed."""
        compared, differed, refetched = ties.compared, ties.differed, ties.refetched
        sampled = sum(len(ids) for _, ids in ties.plain)
        sizes = [len(g) for _, ids in ties.plain for g in ties.groups(ids).values()]
        self.findings["largest_tie_group"] = Finding(
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
        self.findings["ties_stable"] = finding

    def step_dates(self) -> None:
        """Ask date windows until the date reading is settled, the budget or windows run out."""
        self.say("date windows")
        fields = timestamp_fields(self.reference)
        walk = _DateWalk(fields, DateModel(self.reference, fields))
        try:
            while len(walk.model.observations) < _MAX_WINDOWS and self._date_walk_step(walk):
                pass
        except ProbeStopped as exc:
            walk.why_none = f"not measured: {exc}"
            walk.short = True
            raise
        finally:
            self._record_date_findings(walk)

    def _date_walk_step(self, walk: _DateWalk) -> bool:
        """Choose and list one date window; False when the walk is over."""
        model = walk.model
        if self.s.remaining <= self.reserve:
            walk.why_none = walk.why_none or "the request budget left no room for date windows"
            walk.short = True
            return False
        if model.settled and len(model.observations) >= 2:
            return False
        window = model.next_window(max_records=4 * self.page_size, skip=walk.tried)
        if window is None and len(model.candidates) > 1 and self._grow_reference():
            # Older records open more days to tell the readings apart.
            walk.rebuild(self.reference)
            return True
        if window is None:
            span = _span_hours(self.reference)
            if not model.observations:
                walk.why_none = (
                    f"the {len(self.reference):,} newest records span {span:.0f} h: too "
                    "few days to compare date windows within the budget"
                )
            else:
                walk.cut = (
                    f"no other window within the {len(self.reference):,} newest records "
                    f"({span:.0f} h) tells them apart"
                )
            return False
        walk.tried.add(window)
        return self._list_date_window(walk, *window)

    def _list_date_window(self, walk: _DateWalk, start: date, end: date) -> bool:
        """List one window and record what it says; False when the service ignores dates."""
        params: dict[str, str | int] = {
            **self.filter,
            "startDate": start.isoformat(),
            "endDate": end.isoformat(),
        }
        listing = self.list_all(params, max_pages=8)
        label = f"{start}..{end}"
        self.windows.append(
            {
                **self.filter,
                "startDate": start.isoformat(),
                "endDate": end.isoformat(),
                "total": listing.total,
                "listed": len(listing.records),
                "pages": listing.pages,
            }
        )
        if listing.total == self.total and not self.filter and self._newer_than(end):
            walk.why_none = (
                f"the window {label} returned the whole listing ({self.total:,}): the "
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

    def _record_date_findings(self, walk: _DateWalk) -> None:
        """Turn the walk into the date findings and the totals finding (also when stopped)."""
        cut = walk.cut
        if walk.short:
            cut = (
                f"the request budget ({self.s.max_requests}) allowed "
                f"{len(walk.model.observations)} window(s)"
            )
        found = walk.model.findings(walk.why_none, cut)
        if self.filter:
            ((param, value),) = self.filter.items()
            found = {
                name: Finding(f.value, f.certainty, f"{f.detail} (windows filtered on "
                              f"{param}={value}: the newest records span too few days)")
                for name, f in found.items()
            }  # fmt: skip
        self.findings.update(found)
        self.findings["total_counts_all_matching"] = totals(walk.totals_ok, walk.totals_bad)

    def step_max_skip(self) -> None:
        self.say("largest skip")
        last = self.total - 1
        steps = [s for s in _SKIP_STEPS if s < last] + [last]
        good, bad = 0, None
        mode = message = None
        status = 200
        for skip in steps:
            verdict, mode, status, message = self._skip_verdict(skip)
            if verdict:
                good = skip
            else:
                bad = skip
                break
        if bad is None:
            self.findings["max_skip"] = Finding(
                None, "measured", f"no limit: skip={last:,} (the last record) was served"
            )
            self.findings["max_skip_mode"] = Finding(None, "measured", "no skip limit found")
            return
        how = (
            f"refused with HTTP {status} ({message})"
            if mode == "reject"
            else "answered with an empty page and the real total"
        )
        self.findings["max_skip_mode"] = Finding(mode, "measured", f"skip={bad:,} was {how}")
        try:
            # A number the refusal names (e.g. "skip must be at most 10000") is tried first.
            for named in sorted({int(n) for n in re.findall(r"\d+", message or "")}):
                for guess in (named, named - 1):
                    if good < guess < bad:
                        if self._skip_verdict(guess)[0]:
                            good = guess
                        else:
                            bad = guess
            while bad - good > 1:
                middle = (good + bad) // 2
                if self._skip_verdict(middle)[0]:
                    good = middle
                else:
                    bad = middle
        except ProbeStopped:
            self.findings["max_skip"] = Finding(
                good,
                "inferred",
                f"served at skip={good:,}, not at skip={bad:,}; the budget ended the search "
                "(the true maximum lies between)",
            )
            raise
        self.findings["max_skip"] = Finding(
            good, "measured", f"skip={good:,} served one record, skip={bad:,} did not"
        )

    def _skip_verdict(self, skip: int) -> tuple[bool, str | None, int, str | None]:
        """(served?, how it failed: error/empty, HTTP status, the service's message)."""
        page = self.get({"skip": skip, "limit": 1})
        if not page.ok:
            return False, "reject", page.status, page.message
        if not page.records and (page.total or 0) > skip:
            return False, "empty", page.status, None
        return True, None, page.status, None

    def step_sample(self) -> None:
        records = list(self.seen.values())
        self.findings["fields_beyond_document"] = (
            Finding(
                beyond_document(records),
                "measured",
                f"{len(records):,} records sampled; shares are of those records",
            )
            if records
            else unknown("no records were received")
        )
        extras = sorted(self.s.envelope_extras)
        self.findings["envelope_extras"] = (
            Finding(extras, "measured", f"{self.s.responses} responses")
            if self.s.responses
            else unknown("no response was received")
        )
        if self.s.rate_limited:
            values = sorted({str(v) for v in self.s.retry_after_values})
            self.findings["rate_limit"] = Finding(
                {"responses_429": self.s.rate_limited, "retry_after": values},
                "measured",
                f"{self.s.rate_limited} of {self.s.requests} requests got 429 "
                f"(Retry-After: {', '.join(values)}); the probe waited and slowed down",
            )
        else:
            self.findings["rate_limit"] = Finding(
                None,
                "inferred",
                f"no 429 in {self.s.requests} requests; a longer or faster run may meet one",
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
        probe = _Probe(session, progress or (lambda _: None))
        probe.run()
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
