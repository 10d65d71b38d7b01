"""Which timestamp ``startDate``/``endDate`` filter on, whether each bound is inclusive, and
where the service's days start, found by comparing date-filtered listings record by record.

The model: a query ``startDate=S&endDate=E`` returns the records whose timestamp field ``f``
lies in ``[L, H)`` with ``L = S 00:00 - h (+1 day if the start is exclusive)`` and
``H = E 24:00 - h (-1 day if the end is exclusive)``, ``h`` the service's UTC offset. Every
combination (a :data:`Candidate`) is checked against each listed window: the records of the
*reference* (the newest records, a complete run of the listing) must be in the window's listing
exactly when the candidate puts them inside, and every listed record must fall inside.
Windows are chosen to split the surviving candidates the most, which picks days with records
near the candidate boundaries (near midnight).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Final

from txkit.fetch.profile import DATE_FINDINGS, Finding, unknown

__all__ = [
    "Candidate",
    "DateModel",
    "all_candidates",
    "parse_ms",
    "record_id",
    "timestamp_fields",
]

DAY_MS: Final = 86_400_000
HOUR_MS: Final = 3_600_000
#: Whole-hour offsets of the world's time zones, and the fractional ones in use.
WHOLE_OFFSETS: Final = tuple(float(h) for h in range(-12, 15))
FRACTIONAL_OFFSETS: Final = (-9.5, -3.5, 3.5, 4.5, 5.5, 5.75, 6.5, 8.75, 9.5, 10.5, 12.75, 13.75)
_EPOCH: Final = date(1970, 1, 1).toordinal()
_EPOCH_DAY: Final = date(1970, 1, 1)

Candidate = tuple[str, bool, bool, float]  # (field, start_inclusive, end_inclusive, offset h)


def record_id(record: dict[str, Any]) -> str:
    """The record's identifier: ``id``, else ``_id`` (the document says they are the same)."""
    value = record.get("id")
    if value is None:
        value = record.get("_id")
    return str(value)


def parse_ms(value: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp string with a zone, else None."""
    if not isinstance(value, str) or len(value) < 20 or value[4:5] != "-" or value[10:11] != "T":
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return round(parsed.timestamp() * 1000)


def timestamp_fields(records: Sequence[dict[str, Any]]) -> list[str]:
    """Top-level fields holding ISO timestamps in most records (``createdAt`` first)."""
    counts: dict[str, int] = {}
    for record in records:
        for key, value in record.items():
            if isinstance(value, str) and parse_ms(value) is not None:
                counts[key] = counts.get(key, 0) + 1
    found = [k for k, n in counts.items() if n >= 0.5 * len(records)]
    return sorted(found, key=lambda k: (k != "createdAt", k != "updatedAt", k))


def all_candidates(fields: Iterable[str]) -> list[Candidate]:
    """Every (field, start inclusive, end inclusive, offset) combination considered."""
    return [
        (f, si, ei, h)
        for f in fields
        for si in (True, False)
        for ei in (True, False)
        for h in WHOLE_OFFSETS + FRACTIONAL_OFFSETS
    ]


def day_ms(day: date) -> int:
    return (day.toordinal() - _EPOCH) * DAY_MS


def window_range(candidate: Candidate, start: date, end: date) -> tuple[int, int]:
    """The ``[L, H)`` a candidate gives ``startDate=start&endDate=end``, in epoch ms."""
    _, si, ei, h = candidate
    shift = round(h * HOUR_MS)
    low = day_ms(start) - shift + (0 if si else DAY_MS)
    high = day_ms(end) + DAY_MS - shift - (0 if ei else DAY_MS)
    return low, high


@dataclass
class _Axis:
    """The reference's records sorted by one field."""

    values: list[int]
    position: dict[str, int]
    prefix: list[int]  # xor of record hashes, for comparing predicted sets cheaply


@dataclass
class _Observation:
    start: date
    end: date
    members: dict[str, list[int]]  # field -> sorted reference positions of listed records
    low: dict[str, int | None]  # field -> smallest value among listed records
    high: dict[str, int | None]
    missing: dict[str, int]  # field -> listed records without it
    size: int


@dataclass
class DateModel:
    """The surviving candidates and the evidence that narrowed them.

    Args:
        reference: the newest records of the unfiltered listing (a complete run).
        fields: the timestamp fields to consider.
    """

    reference: Sequence[dict[str, Any]]
    fields: Sequence[str]
    candidates: list[Candidate] = field(default_factory=list)
    observations: list[_Observation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.candidates = all_candidates(self.fields)
        rng = random.Random(0)
        self._hash = {record_id(r): rng.getrandbits(64) for r in self.reference}
        self._axes: dict[str, _Axis] = {}
        for f in self.fields:
            pairs = sorted((ms, record_id(r)) for r in self.reference if (ms := parse_ms(r.get(f))))
            prefix = [0]
            for _, rid in pairs:
                prefix.append(prefix[-1] ^ self._hash[rid])
            self._axes[f] = _Axis(
                [ms for ms, _ in pairs], {rid: k for k, (_, rid) in enumerate(pairs)}, prefix
            )
        created = [ms for r in self.reference if (ms := parse_ms(r.get("createdAt")))]
        self.oldest = min(created) if created else None
        self.newest = max(created) if created else None

    @property
    def settled(self) -> bool:
        """True when the surviving readings all give the same window for every query."""
        return len({(c[0], *_shifts(c)) for c in self.candidates}) == 1

    # -- evidence --------------------------------------------------------------------------

    def observe(self, start: date, end: date, listed: Sequence[dict[str, Any]]) -> int:
        """Narrow the candidates with the complete listing of ``startDate=start&endDate=end``.

        Returns:
            How many candidates were ruled out.
        """
        members: dict[str, list[int]] = {}
        low: dict[str, int | None] = {}
        high: dict[str, int | None] = {}
        missing: dict[str, int] = {}
        for f in self.fields:
            axis = self._axes[f]
            values = [parse_ms(r.get(f)) for r in listed]
            present = [v for v in values if v is not None]
            missing[f] = len(values) - len(present)
            low[f] = min(present) if present else None
            high[f] = max(present) if present else None
            members[f] = sorted(
                axis.position[rid] for r in listed if (rid := record_id(r)) in axis.position
            )
        obs = _Observation(start, end, members, low, high, missing, len(listed))
        self.observations.append(obs)
        before = len(self.candidates)
        self.candidates = [c for c in self.candidates if self._fits(c, obs)]
        return before - len(self.candidates)

    def _fits(self, c: Candidate, obs: _Observation) -> bool:
        f = c[0]
        if obs.missing[f]:
            return False
        lo, hi = window_range(c, obs.start, obs.end)
        low, high = obs.low[f], obs.high[f]
        if low is not None and (low < lo or high is None or high >= hi):
            return False
        axis = self._axes[f]
        i_lo = bisect.bisect_left(axis.values, lo)
        i_hi = max(i_lo, bisect.bisect_left(axis.values, hi))
        members = obs.members[f]
        if len(members) != i_hi - i_lo:
            return False
        return not members or (members[0] >= i_lo and members[-1] < i_hi)

    # -- choosing the next window ----------------------------------------------------------

    def _predict(self, c: Candidate, start: date, end: date) -> tuple[int, int]:
        axis = self._axes[c[0]]
        lo, hi = window_range(c, start, end)
        i_lo = bisect.bisect_left(axis.values, lo)
        i_hi = max(i_lo, bisect.bisect_left(axis.values, hi))
        return axis.prefix[i_hi] ^ axis.prefix[i_lo], i_hi - i_lo

    def next_window(
        self, max_records: int, skip: set[tuple[date, date]] | None = None
    ) -> tuple[date, date] | None:
        """The window that splits the surviving candidates the most (None if none does).

        Only windows inside the reference (at least 14 h above its oldest record) whose
        predicted listing holds at most ``max_records`` records, and not in ``skip`` (already
        tried), are considered.
        """
        if self.oldest is None or self.newest is None or not self.candidates:
            return None
        first = _day(self.oldest + 15 * HOUR_MS) + timedelta(days=1)
        last = _day(self.newest)
        done = {(o.start, o.end) for o in self.observations} | (skip or set())
        if len({(c[0], *_shifts(c)) for c in self.candidates}) == 1:
            # One reading, or readings that agree on every window: confirm, do not split.
            return self._confirming_window(first, last, done, max_records)
        # The predictions are most of a probe's CPU (day x span x reading), so they are inlined
        # here: per reading its axis and its window's ends as offsets from the days' midnights
        # (window_range of day 0), and readings with the same field and shifts (the same
        # listing for every window) predicted once and counted as many times as they stand for.
        kinds: dict[tuple[str, float, float], list[Any]] = {}
        for c in self.candidates:
            kind = (c[0], *_shifts(c))
            if kind in kinds:
                kinds[kind][4] += 1
            else:
                axis = self._axes[c[0]]
                lo_offset, hi_offset = window_range(c, _EPOCH_DAY, _EPOCH_DAY)
                kinds[kind] = [axis.values, axis.prefix, lo_offset, hi_offset, 1]
        plans = [tuple(plan) for plan in kinds.values()]
        best: tuple[tuple[int, int, int], tuple[date, date]] | None = None
        day = first
        while day <= last:
            start_ms = day_ms(day)
            for span in (0, 1, 2):
                window = (day, day + timedelta(days=span))
                if window in done:
                    continue
                end_ms = start_ms + span * DAY_MS
                classes: dict[int, int] = {}
                largest = 0
                for values, prefix, lo_offset, hi_offset, weight in plans:
                    i_lo = bisect.bisect_left(values, start_ms + lo_offset)
                    i_hi = max(i_lo, bisect.bisect_left(values, end_ms + hi_offset))
                    key = prefix[i_hi] ^ prefix[i_lo]
                    largest = max(largest, i_hi - i_lo)
                    classes[key] = classes.get(key, 0) + weight
                if largest > max_records or len(classes) < 2:
                    continue
                # Fewest candidates left in the worst case; then the cheaper, the newer.
                score = (max(classes.values()), largest, -day.toordinal())
                if best is None or score < best[0]:
                    best = (score, window)
            day += timedelta(days=1)
        return None if best is None else best[1]

    def _confirming_window(
        self, first: date, last: date, done: set[tuple[date, date]], max_records: int
    ) -> tuple[date, date] | None:
        """Within an hour of the predicted boundaries: the sharpest test of the surviving
        reading."""
        c = self.candidates[0]
        axis = self._axes[c[0]]
        best: tuple[int, tuple[date, date]] | None = None
        day = first
        while day + timedelta(days=2) <= last:
            window = (day, day + timedelta(days=2))
            day += timedelta(days=1)
            if window in done or self._predict(c, *window)[1] > max_records:
                continue
            near = 0
            for edge in window_range(c, *window):
                near += bisect.bisect_left(axis.values, edge + HOUR_MS) - bisect.bisect_left(
                    axis.values, edge - HOUR_MS
                )
            if best is None or near > best[0]:
                best = (near, window)
        return None if best is None else best[1]

    # -- conclusions -----------------------------------------------------------------------

    def findings(
        self, why_none: str | None = None, cut_short: str | None = None
    ) -> dict[str, Finding]:
        """``date_field``, ``start_inclusive``, ``end_inclusive`` and ``utc_offset_hours``.

        Args:
            why_none: the reason no window was listed (when none was).
            cut_short: why no more windows were listed (added to ambiguous findings).
        """
        names = DATE_FINDINGS
        listed = len(self.observations)
        if why_none is not None and not listed:
            return {n: unknown(why_none) for n in names}
        if not listed:
            return {n: unknown("no date window could be listed") for n in names}
        days = ", ".join(_describe(o) for o in self.observations)
        if not self.candidates:
            reason = (
                f"no timestamp field ({', '.join(self.fields) or 'none found'}), bound and "
                f"UTC offset explains the listings of {days}"
            )
            return {n: unknown(reason) for n in names}
        whole = [c for c in self.candidates if c[3] == int(c[3])]
        pool = whole or self.candidates
        # Readings that give the same window for every query (e.g. an exclusive start at
        # UTC+12 and an inclusive one at UTC-12) cannot be told apart, and need not be: any
        # of them computes the service's windows exactly.
        same = len({(c[0], *_shifts(c)) for c in pool}) == 1
        canonical = min(pool, key=lambda c: (not c[1], not c[2], abs(c[3]), c[3]))
        return {
            name: _finding(k, self.candidates, whole, same, canonical, days, cut_short)
            for k, name in enumerate(names)
        }


def _finding(
    k: int,
    candidates: list[Candidate],
    whole: list[Candidate],
    same: bool,
    canonical: Candidate,
    days: str,
    cut_short: str | None,
) -> Finding:
    values = sorted({c[k] for c in candidates}, key=str)
    if len(values) == 1:
        return Finding(_jsonable(values[0]), "measured", f"listings of {days}")
    whole_values = sorted({c[k] for c in whole}, key=str)
    if len(whole_values) == 1:
        return Finding(
            _jsonable(whole_values[0]),
            "inferred",
            f"listings of {days}, assuming days start on a whole hour (also fits: "
            f"{', '.join(_show(v) for v in values if v != whole_values[0])})",
        )
    if same:
        pool = whole or candidates
        readings = "; ".join(_reading(c) for c in sorted(pool, key=str)[:4])
        return Finding(
            _jsonable(canonical[k]),
            "inferred",
            f"listings of {days}: the readings {readings} give the same window for "
            "every query, so either computes it exactly; this one is "
            f"{_reading(canonical)}",
        )
    why = (
        cut_short or "no sampled record lies between the boundaries these readings put at midnight"
    )
    return unknown(
        f"the listings of {days} fit {', '.join(_show(v) for v in values[:6])}"
        f"{' ...' if len(values) > 6 else ''} equally: {why}"
    )


def _shifts(c: Candidate) -> tuple[float, float]:
    """In hours after startDate/endDate 00:00 UTC."""
    _, si, ei, h = c
    return (0 if si else 24) - h, (24 if ei else 0) - h


def _reading(c: Candidate) -> str:
    return f"{_show(c[1])} start/{_show(c[2])} end at {_show(c[3])}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and value == int(value):
        return int(value)
    return value


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "inclusive" if value else "exclusive"
    if isinstance(value, float):
        return f"UTC{value:+g}"
    return str(value)


def _describe(obs: _Observation) -> str:
    return f"{obs.start}..{obs.end} ({obs.size})"


def _day(ms: int) -> date:
    return date.fromordinal(_EPOCH + ms // DAY_MS)
