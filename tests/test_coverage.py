"""Coverage-exact planning, day by day (pure functions; the store's tests run it over HTTP)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from txkit.store._coverage import Fetch, MonthCoverage, needed_window


def at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def need(cov: MonthCoverage | None, last: date, now: date, **kwargs: object) -> object:
    return needed_window("2026-09", cov, last=last, lookback_days=7, now=at(now), **kwargs)


def fetch(first: date, last: date, when: datetime, kind: str = "full") -> Fetch:
    return Fetch(first, last, when, kind, ["q"], 10, 5)


def test_a_month_is_complete_when_covered_whole_and_fetched_after_its_look_back() -> None:
    empty = MonthCoverage("2026-09", (), 0)
    sept_end, nov = date(2026, 9, 30), date(2026, 11, 2)
    assert need(None, sept_end, nov) == ("full", date(2026, 9, 1), sept_end)
    half = empty.with_fetch(fetch(date(2026, 9, 1), date(2026, 9, 10), at(date(2026, 11, 1))),
                            replace=True, rows=5, newest=None)  # fmt: skip
    assert not half.complete(7) and len(half.uncovered()) == 20
    assert need(half, sept_end, nov) == ("gap", date(2026, 9, 11), sept_end)
    rest = fetch(date(2026, 9, 11), sept_end, at(date(2026, 10, 7)), "gap")
    whole = half.with_fetch(rest, replace=False, rows=9, newest=None)
    # Covered whole, but the 30th was last fetched before its look-back ended (Oct 8).
    assert not whole.complete(7)
    assert need(whole, sept_end, nov) == ("look-back", sept_end, sept_end)
    assert whole.complete(6)
    # A request that ends before the unsettled days needs nothing.
    assert need(whole, date(2026, 9, 20), nov) is None
    refresh = need(whole, date(2026, 9, 20), nov, refresh=True)
    assert refresh == ("refresh", date(2026, 9, 1), date(2026, 9, 20))


def test_daily_syncs_keep_a_months_record_short() -> None:
    cov = MonthCoverage("2026-10", (), 0)
    cov = cov.with_fetch(fetch(date(2026, 10, 1), date(2026, 10, 1), at(date(2026, 10, 1))),
                         replace=True, rows=1, newest=None)  # fmt: skip
    for day in range(2, 32):  # a sync each day: the unsettled days up to today
        today = date(2026, 10, day)
        need = needed_window("2026-10", cov, last=today, lookback_days=7, now=at(today))
        assert need is not None
        kind, first, last = need
        assert last == today and (today - first).days <= 8
        cov = cov.with_fetch(fetch(first, last, at(today), kind), replace=False, rows=day,
                             newest=None)  # fmt: skip
    # Only fetches that are still the newest for some day are kept (a day's newest fetch
    # time is all planning needs): at most one per day, never an unbounded history.
    assert len(cov.fetches) <= 31
    for kept in cov.fetches:
        days = [kept.first + timedelta(days=i) for i in range((kept.last - kept.first).days + 1)]
        assert any(cov.newest_fetch_of(d) == kept.fetched_at for d in days)
    assert not cov.uncovered()
    # Every day is still covered by a kept fetch, with its newest time.
    for day in range(1, 32):
        d = date(2026, 10, day)
        assert cov.newest_fetch_of(d) is not None
    later = at(date(2026, 11, 9))
    need = needed_window("2026-10", cov, last=date(2026, 10, 31), lookback_days=7, now=later)
    assert need is not None and need[0] == "look-back"
    cov = cov.with_fetch(fetch(need[1], need[2], later, "look-back"), replace=False, rows=31,
                         newest=None)  # fmt: skip
    assert cov.complete(7)
    round_trip = MonthCoverage.from_json(cov.to_json())
    assert round_trip == cov and round_trip.complete(7)
    assert cov.last_fetch is not None and cov.last_fetch.fetched_at == later
