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

import itertools
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from txkit.errors import scrub
from txkit.probe.dates import DAY_MS, DateModel, parse_ms, timestamp_fields
from txkit.probe.profile import Finding, ServiceProfile, unknown
from txkit.probe.session import Page, ProbeSession, ProbeStopped
from txkit.schema import COLUMNS

__all__ = ["DEFAULT_MAX_REQUESTS", "probe_service"]

DEFAULT_MAX_REQUESTS: Final = 60
#: The page size asked for to find the maximum: more than any service we know serves.
ASK_LIMIT: Final = 5000
_REFERENCE_DAYS: Final = 6
_SKIP_RESERVE: Final = 14
_MAX_WINDOWS: Final = 8
_TIE_GROUPS_ENOUGH: Final = 8
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
        # Requests kept for the last step (max_skip); a quarter of a small budget.
        self.reserve = min(_SKIP_RESERVE, session.max_requests // 4)

    # -- helpers ---------------------------------------------------------------------------

    def get(self, params: dict[str, str | int]) -> Page:
        page = self.s.get(params)
        for record in page.records:
            self.seen[str(record.get("id"))] = record
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
                for record in page.records:
                    listing.records[str(record.get("id"))] = record
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
            (self.step_ties, ("ties_stable",)),
            (
                self.step_dates,
                (
                    "date_field",
                    "start_inclusive",
                    "end_inclusive",
                    "utc_offset_hours",
                    "total_counts_all_matching",
                ),
            ),
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
        self.reference.extend(page.records)
        self.reference_pages.append((params, [str(r.get("id")) for r in page.records]))

    def step_reference(self) -> None:
        self.say("newest records")
        budget_pages = max(1, self.s.max_requests // 5)
        while len(self.reference_pages) < budget_pages and self.s.remaining > self.reserve:
            times = [t for r in self.reference if (t := parse_ms(r.get("createdAt")))]
            if times and max(times) - min(times) >= _REFERENCE_DAYS * DAY_MS:
                break
            skip = len(self.reference)
            if skip >= self.total:
                break
            params: dict[str, str | int] = {"skip": skip, "limit": self.page_size}
            page = self.get(params)
            if not page.ok or not page.records:
                break
            self._add_reference(params, page)
        self.findings["order"] = _order(self.reference)

    def step_ties(self) -> None:
        self.say("ties")
        by_id = {str(r.get("id")): r for r in self.reference}
        pages = [
            (len(_tie_groups([by_id[i] for i in ids if i in by_id])), params, ids)
            for params, ids in self.reference_pages
        ]
        pages.sort(key=lambda item: -item[0])
        compared = differed = 0
        refetched = 0
        short = False
        for count, params, ids in pages:
            if count == 0 or compared >= _TIE_GROUPS_ENOUGH or differed:
                break
            if self.s.remaining <= self.reserve + 6:
                short = True
                break
            page = self.get(params)
            refetched += 1
            if not page.ok:
                continue
            before = _tie_groups([by_id[i] for i in ids if i in by_id])
            after = _tie_groups(page.records)
            for stamp, ids in before.items():
                if stamp in after:
                    compared += 1
                    differed += after[stamp] != ids
        if differed:
            self.findings["ties_stable"] = Finding(
                False,
                "measured",
                f"{differed} of {compared} groups of records with equal createdAt came back "
                f"in another order when {refetched} page(s) were asked again",
            )
        elif compared >= _TIE_GROUPS_ENOUGH:
            self.findings["ties_stable"] = Finding(
                True, "measured", f"{compared} tie groups kept their order over {refetched} re-asks"
            )
        elif compared:
            self.findings["ties_stable"] = Finding(
                True,
                "inferred",
                f"only {compared} tie group(s) compared over {refetched} re-ask(s), all in the "
                "same order",
            )
        elif short:
            self.findings["ties_stable"] = unknown(
                "the request budget left no room to ask a page with ties again"
            )
        else:
            self.findings["ties_stable"] = unknown(
                f"no two of the {len(self.reference):,} newest records share a createdAt"
            )

    def step_dates(self) -> None:
        self.say("date windows")
        fields = timestamp_fields(self.reference)
        model = DateModel(self.reference, fields)
        totals_ok: list[str] = []
        totals_bad: list[str] = []
        why_none: str | None = None
        cut: str | None = None
        short = False
        try:
            while len(model.observations) < _MAX_WINDOWS:
                if self.s.remaining <= self.reserve:
                    why_none = why_none or "the request budget left no room for date windows"
                    short = True
                    break
                decided = (
                    all(f.certainty == "measured" for f in model.findings().values())
                    and len(model.observations) >= 2
                )
                if decided:
                    break
                window = model.next_window(max_records=4 * self.page_size)
                if window is None:
                    span = _span_hours(self.reference)
                    if not model.observations:
                        why_none = (
                            f"the {len(self.reference):,} newest records span {span:.0f} h: too "
                            "few days to compare date windows within the budget"
                        )
                    else:
                        cut = (
                            f"no other window within the {len(self.reference):,} newest records "
                            f"({span:.0f} h) tells them apart"
                        )
                    break
                start, end = window
                params: dict[str, str | int] = {
                    "startDate": start.isoformat(),
                    "endDate": end.isoformat(),
                }
                listing = self.list_all(params, max_pages=8)
                label = f"{start}..{end}"
                self.windows.append(
                    {
                        "startDate": start.isoformat(),
                        "endDate": end.isoformat(),
                        "total": listing.total,
                        "listed": len(listing.records),
                        "pages": listing.pages,
                    }
                )
                if listing.error is not None:
                    why_none = f"the window {label} could not be listed ({listing.error})"
                    continue
                if listing.complete:
                    totals_ok.append(f"{label}: {listing.total}")
                    model.observe(start, end, list(listing.records.values()))
                elif listing.pages == 1 and listing.total is not None:
                    totals_bad.append(
                        f"{label}: total {listing.total}, one page listed {len(listing.records)}"
                    )
                else:
                    totals_bad.append(
                        f"{label}: total {listing.total}, {listing.pages} pages listed "
                        f"{len(listing.records)} unique"
                    )
        except ProbeStopped as exc:
            why_none = f"not measured: {exc}"
            raise
        finally:
            if short or why_none:
                cut = (
                    f"the request budget ({self.s.max_requests}) allowed "
                    f"{len(model.observations)} window(s)"
                )
            self.findings.update(model.findings(why_none, cut))
            self.findings["total_counts_all_matching"] = _totals(totals_ok, totals_bad)

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
            if mode == "error"
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
            return False, "error", page.status, page.message
        if not page.records and (page.total or 0) > skip:
            return False, "empty", page.status, None
        return True, None, page.status, None

    def step_sample(self) -> None:
        records = list(self.seen.values())
        self.findings["fields_beyond_document"] = (
            Finding(
                _beyond_document(records),
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


def _order(records: Sequence[dict[str, Any]]) -> Finding:
    fields = timestamp_fields(records)
    if len(records) < 2:
        return unknown(f"only {len(records)} record(s) listed")
    for name in fields:
        values = [parse_ms(r.get(name)) for r in records]
        if any(v is None for v in values) or len(set(values)) < 2:
            continue
        pairs = list(itertools.pairwise(values))
        descending = all(a >= b for a, b in pairs)  # type: ignore[operator]
        ascending = all(a <= b for a, b in pairs)  # type: ignore[operator]
        for direction, ok in (("desc", descending), ("asc", ascending)):
            if ok:
                ties = _tie_groups(records, name)
                by_id = sum(ids == sorted(ids) for ids in ties.values())
                tie_note = f"; {by_id} of {len(ties)} tie groups by id ascending" if ties else ""
                return Finding(
                    f"{name} {direction}",
                    "measured",
                    f"{len(records):,} consecutive records{tie_note}",
                )
    return unknown(
        f"the {len(records):,} newest records are not sorted by any timestamp "
        f"({', '.join(fields) or 'none found'})"
    )


def _tie_groups(records: Sequence[dict[str, Any]], name: str = "createdAt") -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for record in records:
        groups.setdefault(str(record.get(name)), []).append(str(record.get("id")))
    return {k: v for k, v in groups.items() if len(v) > 1}


def _totals(ok: list[str], bad: list[str]) -> Finding:
    if bad:
        return Finding(False, "measured", "; ".join(bad))
    if ok:
        return Finding(
            True,
            "measured",
            f"total equalled the full listing of {len(ok)} window(s): " + ", ".join(ok),
        )
    return unknown("no filtered query was listed in full")


def _span_hours(records: Sequence[dict[str, Any]]) -> float:
    times = [t for r in records if (t := parse_ms(r.get("createdAt")))]
    return (max(times) - min(times)) / 3_600_000 if times else 0.0


_DOCUMENTED: Final = frozenset(COLUMNS)
_DOCUMENTED_PARENTS: Final = frozenset(
    ".".join(name.split(".")[:k]) for name in COLUMNS for k in range(1, name.count(".") + 1)
)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _beyond_document(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each undocumented field (flattened with ``.``): JSON types and share of records."""
    seen: dict[str, tuple[set[str], int]] = {}

    def walk(obj: dict[str, Any], prefix: str, found: dict[str, str]) -> None:
        for key, value in obj.items():
            path = prefix + key
            if path in _DOCUMENTED:
                continue
            if isinstance(value, dict) and value:
                walk(value, path + ".", found)
            elif path not in _DOCUMENTED_PARENTS:
                found[path] = _json_type(value)

    for record in records:
        found: dict[str, str] = {}
        walk(record, "", found)
        for path, kind in found.items():
            types, count = seen.get(path, (set(), 0))
            types.add(kind)
            seen[path] = (types, count + 1)
    return {
        path: {
            "types": sorted(types),
            "share": round(count / len(records), 4),
            "records": count,
        }
        for path, (types, count) in sorted(seen.items())
    }


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
