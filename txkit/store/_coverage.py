"""What the store holds of each month: the windows fetched, when, with which query and totals.

A :class:`MonthCoverage` is kept per month inside the store's own commits (see
:mod:`txkit.store`), never in side files, so it always describes exactly the data of the same
table version. Planning reads it day by day:

* a day is **covered** when some fetched window contains it;
* a covered day is **settled** when its newest fetch happened at least ``lookback_days`` after
  the day ended (statuses change for a while after a record is created; after that the stored
  version is final);
* a month is **complete** when every day is covered and settled, i.e. its windows cover it
  whole and its newest fetch happened after the month ended plus the look-back.

A sync fetches, for each month, the span from its first uncovered or unsettled day to its last
one, whatever other months hold.

A covered day may be **unproven** (:attr:`MonthCoverage.unproven`): the newest days a sync read
for the first time are stored after one read verified by the service's totals, and the next
sync proves their set by comparing its read with the stored one (docs/completeness.md, "Days
read once"). An unproven day is never settled and its month never complete until then; a
coverage records them only when it has some (``unproven`` absent: every day proven).

A **complete** month's fetches are merged when a commit records them
(:meth:`MonthCoverage.merged`): its newest fetch is kept as it is, and the days it does not
cover (one contiguous run each side of it, every day covered and settled) become one ``merged``
window each, which records the least time any of its days was last fetched after that day
ended (``settled_lag``). That is what the fetches proved, never more: a day's newest fetch
time is read from it as that lower bound, so the month stays complete under the look-back it
was completed with, and a longer look-back fetches those days again. A month with a day never
fetched or not yet settled is never merged, so a gap is never merged away. Without merging,
a year of daily syncs keeps about thirty fetches per month in every commit, read on every open
(docs/store.md). Older commits keep the coverage they were written with, so a version read as
of then shows its own fetches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from txkit.calendar import month_bounds

__all__ = ["Fetch", "MonthCoverage", "needed_window"]


@dataclass(frozen=True)
class Fetch:
    """One verified fetch of a window of days.

    Attributes:
        first: the first UTC day fetched.
        last: the last UTC day fetched (included).
        fetched_at: when (UTC).
        kind: ``full``, ``refresh``, ``gap`` or ``look-back``.
        queries: the queries sent (each with a day of margin on both sides).
        service_total: the service's ``total`` for those queries, summed; every record of them
            was fetched and verified against it.
        rows: records of the window that were fetched.
        settled_lag: only for a ``merged`` window (several verified fetches, see
            :meth:`MonthCoverage.merged`): every day of it was last fetched at least this many
            seconds after it ended, and no earlier than ``fetched_at`` (the earliest of those
            fetches); None for a fetch.
        merged: how many verified fetches a ``merged`` window stands for (0 for a fetch).
    """

    first: date
    last: date
    fetched_at: datetime
    kind: str
    queries: list[str] = field(default_factory=list)
    service_total: int = 0
    rows: int = 0
    settled_lag: int | None = None
    merged: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (ISO dates; ``settled_lag`` and ``merged`` only for a merged
        window)."""
        out = asdict(self)
        out["first"], out["last"] = self.first.isoformat(), self.last.isoformat()
        out["fetched_at"] = self.fetched_at.isoformat(timespec="seconds")
        if self.settled_lag is None:
            del out["settled_lag"], out["merged"]
        return out

    def time_of(self, day: date) -> datetime:
        """When ``day`` (inside the window) was last fetched by this fetch, or for a merged
        window the latest time its fetches prove (a lower bound of the real one)."""
        if self.settled_lag is None:
            return self.fetched_at
        return max(self.fetched_at, _day_end(day) + timedelta(seconds=self.settled_lag))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fetch:
        """The inverse of :meth:`to_json`."""
        return cls(
            first=date.fromisoformat(data["first"]),
            last=date.fromisoformat(data["last"]),
            fetched_at=datetime.fromisoformat(data["fetched_at"]),
            kind=str(data["kind"]),
            queries=list(data["queries"]),
            service_total=int(data["service_total"]),
            rows=int(data["rows"]),
            settled_lag=None if data.get("settled_lag") is None else int(data["settled_lag"]),
            merged=int(data.get("merged", 0)),
        )


@dataclass(frozen=True)
class MonthCoverage:
    """What the store holds of one month.

    Attributes:
        month: ``YYYY-MM``.
        fetches: the fetches that still describe the data, oldest first (a fetch whose window
            a later one contains is dropped).
        rows: records stored for the month.
        newest_created_at: the newest ``createdAt`` stored (ISO 8601), or None.
        unproven: the days read once (their count verified against the service's totals,
            their set not yet proven by a second read), in order; the next sync proves them.
    """

    month: str
    fetches: tuple[Fetch, ...]
    rows: int
    newest_created_at: str | None = None
    unproven: tuple[date, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (without ``unproven`` when every day is proven)."""
        out: dict[str, Any] = {
            "month": self.month,
            "fetches": [f.to_json() for f in self.fetches],
            "rows": self.rows,
            "newest_created_at": self.newest_created_at,
        }
        if self.unproven:
            out["unproven"] = [d.isoformat() for d in self.unproven]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MonthCoverage:
        """The inverse of :meth:`to_json`."""
        return cls(
            month=str(data["month"]),
            fetches=tuple(Fetch.from_json(f) for f in data["fetches"]),
            rows=int(data["rows"]),
            newest_created_at=data.get("newest_created_at"),
            # Written only when there are some (to_json): absent, every day was proven.
            unproven=tuple(date.fromisoformat(d) for d in data.get("unproven", ())),
        )

    def with_fetch(
        self,
        fetch: Fetch,
        *,
        replace: bool,
        rows: int,
        newest: str | None,
        read_once: frozenset[date] = frozenset(),
    ) -> MonthCoverage:
        """The coverage after ``fetch`` (``replace``: it replaced the month's data). Every day
        of its window is proven by it except ``read_once`` (read once, now unproven)."""
        fetches = (fetch,) if replace else (*self.fetches, fetch)
        kept = () if replace else self.unproven
        unproven = {d for d in kept if not fetch.first <= d <= fetch.last} | set(read_once)
        return MonthCoverage(
            self.month, _shadowed_out(fetches), rows, newest, tuple(sorted(unproven))
        )

    @property
    def last_fetch(self) -> Fetch | None:
        """The newest fetch (a fetch before a merged window of the same time)."""
        return max(self.fetches, key=lambda f: (f.fetched_at, f.settled_lag is None), default=None)

    def newest_fetch_of(self, day: date) -> datetime | None:
        """When ``day`` was last fetched (for a merged window, the time it proves), or None
        when no window contains it."""
        times = [f.time_of(day) for f in self.fetches if f.first <= day <= f.last]
        return max(times, default=None)

    def merged(self, lookback_days: int) -> MonthCoverage:
        """The coverage with a complete month's fetches merged (see the module's docstring):
        the newest fetch kept as it is, each contiguous run of the other days one ``merged``
        window proving the least lag after its days' ends. Unchanged when the month is not
        complete under ``lookback_days`` (a gap or an unsettled day) or has nothing to merge.
        """
        newest = self.last_fetch
        if newest is None or not self.complete(lookback_days):
            return self
        rest = [d for d in _days(self.month, None, None) if not newest.first <= d <= newest.last]
        others = [f for f in self.fetches if f is not newest]
        if len(others) <= 1 or all(f.settled_lag is not None for f in others):
            return self  # nothing to merge (one fetch, or merged already)
        windows = []
        for first, last in day_runs(rest):
            times = {}
            for day in _days(self.month, first, last):
                seen = self.newest_fetch_of(day)
                # complete(): every day is covered and settled, so this cannot happen
                assert seen is not None and settled(day, seen, lookback_days), day
                times[day] = seen
            lag = min(int((t - _day_end(d)).total_seconds()) for d, t in times.items())
            parts = [f for f in others if f.first <= last and f.last >= first]
            count = sum(max(f.merged, 1) for f in parts)
            windows.append(
                Fetch(first, last, min(times.values()), "merged", settled_lag=lag, merged=count)
            )
        fetches = tuple(sorted((*windows, newest), key=lambda f: (f.fetched_at, f.first)))
        # complete(): no day is unproven
        return MonthCoverage(self.month, fetches, self.rows, self.newest_created_at)

    def uncovered(self, first: date | None = None, last: date | None = None) -> list[date]:
        """The days of the month (or of ``first``..``last``) that no window contains."""
        return [d for d in _days(self.month, first, last) if self.newest_fetch_of(d) is None]

    def complete(self, lookback_days: int) -> bool:
        """Covered whole, and newest fetch after the month's end plus the look-back."""
        return not needed_days(self, lookback_days, now=None)

    def describe_unproven(self) -> str:
        """``2026-10-31 read once, not yet set-proven (the next sync proves it)``, or ``""``."""
        if not self.unproven:
            return ""
        days = ", ".join(
            str(a) if a == b else f"{a}..{b}" for a, b in day_runs(list(self.unproven))
        )
        return (
            f"{days} read once (count verified against the service's totals), not yet "
            "set-proven: the next `txkit sync` proves them"
        )

    def describe_windows(self) -> str:
        """``2026-09-01..2026-09-10 (fetched ...), ...`` in day order, then the days read
        once (:meth:`describe_unproven`)."""
        parts = sorted(self.fetches, key=lambda f: (f.first, f.fetched_at))
        text = ", ".join(
            f"{f.first}..{f.last} ({f.kind} at {f.fetched_at:%Y-%m-%d %H:%M}Z)"
            if f.settled_lag is None
            else f"{f.first}..{f.last} ({f.merged} fetches merged, from "
            f"{f.fetched_at:%Y-%m-%d %H:%M}Z, each day at least {_lag_text(f.settled_lag)} "
            "after it ended)"
            for f in parts
        )
        unproven = self.describe_unproven()
        return f"{text}; {unproven}" if unproven else text


def _shadowed_out(fetches: tuple[Fetch, ...]) -> tuple[Fetch, ...]:
    """Drop fetches a newer one covers day by day (:meth:`Fetch.time_of`), so a month's record
    stays a few fetches long however often it is synced."""
    kept = []
    for fetch in fetches:
        days = [fetch.first + timedelta(days=i) for i in range((fetch.last - fetch.first).days + 1)]
        if not all(
            any(
                f is not fetch and f.first <= d <= f.last and f.time_of(d) > fetch.time_of(d)
                for f in fetches
            )
            for d in days
        ):
            kept.append(fetch)
    return tuple(kept)


def _day_end(day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)


def day_runs(days: list[date]) -> list[tuple[date, date]]:
    """Sorted days as ``(first, last)`` runs of consecutive days."""
    runs: list[tuple[date, date]] = []
    for day in days:
        if runs and runs[-1][1] + timedelta(days=1) == day:
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return runs


def _lag_text(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    return f"{days} day(s) {rest // 3600} h" if rest >= 3600 else f"{days} day(s)"


def _days(month: str, first: date | None, last: date | None) -> list[date]:
    m_first, m_last = month_bounds(month)
    a, b = max(m_first, first or m_first), min(m_last, last or m_last)
    return [a + timedelta(days=i) for i in range((b - a).days + 1)]


def settled(day: date, fetched_at: datetime, lookback_days: int) -> bool:
    """True when a fetch at ``fetched_at`` saw ``day``'s records after their look-back ended."""
    return fetched_at >= _day_end(day) + timedelta(days=lookback_days)


def needed_days(
    coverage: MonthCoverage | None,
    lookback_days: int,
    *,
    now: datetime | None,
    month: str | None = None,
    last: date | None = None,
) -> list[date]:
    """The days up to ``last`` that are uncovered, or covered but not settled or unproven.

    ``now`` is when the caller would fetch: an unsettled day is only worth fetching again when
    the new fetch could see something the last one did not (always, in practice); None means
    "judge the stored data alone" (for :meth:`MonthCoverage.complete`).
    """
    name = coverage.month if coverage is not None else month
    assert name is not None
    days = _days(name, None, last)
    if coverage is None:
        return days
    out = []
    for day in days:
        seen = coverage.newest_fetch_of(day)
        if seen is None or not settled(day, seen, lookback_days) or day in coverage.unproven:
            out.append(day)
    return out


def needed_window(
    month: str,
    coverage: MonthCoverage | None,
    *,
    last: date,
    lookback_days: int,
    now: datetime,
    refresh: bool = False,
) -> tuple[str, date, date] | None:
    """What a sync must fetch of ``month`` (days up to ``last``): (kind, first, last) or None.

    Kinds: ``full`` (nothing stored), ``refresh`` (forced), ``gap`` (some day was never
    fetched), ``look-back`` (every day was fetched, some before its look-back ended).
    """
    m_first, m_last = month_bounds(month)
    end = min(m_last, last)
    if end < m_first:
        return None
    if refresh:
        return "refresh", m_first, end
    if coverage is None or not coverage.fetches:
        return "full", m_first, end
    days = needed_days(coverage, lookback_days, now=now, last=end)
    if not days:
        return None
    kind = "gap" if coverage.uncovered(days[0], days[-1]) else "look-back"
    return kind, days[0], days[-1]
