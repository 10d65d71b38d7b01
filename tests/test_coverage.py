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


def daily_october(lookback: int = 7) -> MonthCoverage:
    """October after a sync each day and one after its look-back ended: complete."""
    cov = MonthCoverage("2026-10", (), 0)
    for day in [date(2026, 10, d) for d in range(1, 32)] + [date(2026, 11, 8)]:
        need = needed_window("2026-10", cov, last=min(day, date(2026, 10, 31)),
                             lookback_days=lookback, now=at(day))  # fmt: skip
        assert need is not None
        kind, first, last = need
        cov = cov.with_fetch(fetch(first, last, at(day), kind), replace=not cov.fetches,
                             rows=day.day, newest=None)  # fmt: skip
    assert cov.complete(lookback)
    return cov


def test_a_complete_months_fetches_merge_into_windows_that_keep_its_proof() -> None:
    cov = daily_october()
    merged = cov.merged(7)
    assert len(cov.fetches) > 20 and len(merged.fetches) == 2
    window, newest = merged.fetches
    # The newest fetch is kept whole (its queries and total are what status shows); the other
    # days are one contiguous merged window, next to it.
    assert newest == cov.last_fetch == merged.last_fetch
    assert window.kind == "merged" and window.settled_lag is not None
    assert (window.first, window.last + timedelta(days=1)) == (date(2026, 10, 1), newest.first)
    assert window.merged == len(cov.fetches) - 1
    for day in range(1, 32):
        d = date(2026, 10, day)
        # Never later than the day's real newest fetch: a merged window proves no more.
        assert merged.newest_fetch_of(d) <= cov.newest_fetch_of(d)  # type: ignore[operator]
    assert merged.complete(7) and not merged.uncovered()
    assert needed_window("2026-10", merged, last=date(2026, 10, 31), lookback_days=7,
                         now=at(date(2026, 12, 1))) is None  # fmt: skip
    # Under any look-back, the merged month is complete only if the fetches were.
    for lookback in range(15):
        assert not merged.complete(lookback) or cov.complete(lookback)
    # A longer look-back than the month was completed with fetches its days again.
    longer = needed_window("2026-10", merged, last=date(2026, 10, 31), lookback_days=9,
                           now=at(date(2026, 12, 1)))  # fmt: skip
    assert longer is not None and longer[0] == "look-back"
    assert merged.merged(7) == merged  # merged once
    assert MonthCoverage.from_json(merged.to_json()) == merged
    assert "settled_lag" not in newest.to_json()  # a fetch is written as before
    assert "fetches merged" in merged.describe_windows()
    # A refresh of the whole month still replaces everything.
    whole = merged.with_fetch(fetch(date(2026, 10, 1), date(2026, 10, 31),
                                    at(date(2026, 12, 2)), "refresh"),
                              replace=True, rows=31, newest=None)  # fmt: skip
    assert [f.kind for f in whole.fetches] == ["refresh"]
    # A newer fetch of part of it shadows the merged window only where it is newer.
    part = merged.with_fetch(fetch(date(2026, 10, 1), date(2026, 10, 5), at(date(2026, 12, 2)),
                                   "look-back"), replace=False, rows=31, newest=None)  # fmt: skip
    assert window in part.fetches and part.complete(7)


def test_a_fetch_in_the_middle_leaves_two_merged_runs() -> None:
    cov = daily_october()
    middle = fetch(date(2026, 10, 10), date(2026, 10, 15), at(date(2026, 12, 1)), "look-back")
    cov = cov.with_fetch(middle, replace=False, rows=31, newest=None)
    merged = cov.merged(7)
    runs = sorted((f.first, f.last) for f in merged.fetches if f.kind == "merged")
    oct_ = date(2026, 10, 1)
    assert runs == [(oct_, date(2026, 10, 9)), (date(2026, 10, 16), date(2026, 10, 31))]
    assert merged.last_fetch == middle and merged.complete(7)


def test_a_gap_or_an_unsettled_day_is_never_merged_away() -> None:
    late = at(date(2026, 12, 1))
    gap = MonthCoverage("2026-10", (), 0)
    for first, last in ((1, 10), (11, 12), (15, 31)):  # the 13th and 14th never fetched
        gap = gap.with_fetch(fetch(date(2026, 10, first), date(2026, 10, last), late),
                             replace=False, rows=1, newest=None)  # fmt: skip
    assert len(gap.fetches) == 3 and gap.merged(7) == gap
    assert gap.merged(7).uncovered() == [date(2026, 10, 13), date(2026, 10, 14)]
    need = needed_window("2026-10", gap.merged(7), last=date(2026, 10, 31), lookback_days=7,
                         now=late)  # fmt: skip
    assert need == ("gap", date(2026, 10, 13), date(2026, 10, 14))
    # Every day fetched, the last ones before their look-back ended: not merged either.
    open_month = daily_october().with_fetch(
        fetch(date(2026, 10, 31), date(2026, 10, 31), at(date(2026, 11, 8)), "look-back"),
        replace=False,
        rows=31,
        newest=None,
    )
    assert open_month.complete(7) and not open_month.complete(8)
    assert open_month.merged(8) == open_month


def test_days_read_once_are_needed_until_proven_and_a_coverage_without_them_has_none() -> None:
    """A coverage without the ``unproven`` key (written so when there are none) has every day
    proven; a day read once is needed by the next sync even when it is settled, the month is
    not complete, and the next fetch of that day proves it."""
    at = datetime(2026, 11, 1, 12, tzinfo=UTC)  # every day settled under a look-back of 0
    whole = Fetch(date(2026, 10, 1), date(2026, 10, 31), at, "full")
    old = MonthCoverage.from_json({"month": "2026-10", "fetches": [whole.to_json()], "rows": 5})
    assert old.unproven == () and "unproven" not in old.to_json()
    once = MonthCoverage("2026-10", (whole,), 5).with_fetch(
        whole, replace=True, rows=5, newest=None, read_once=frozenset({date(2026, 10, 31)})
    )
    assert MonthCoverage.from_json(once.to_json()) == once
    assert not once.complete(0) and old.complete(0)
    later = datetime(2026, 11, 20, tzinfo=UTC)
    assert needed_window("2026-10", once, last=date(2026, 10, 31), lookback_days=0, now=later) == (
        "look-back", date(2026, 10, 31), date(2026, 10, 31))  # fmt: skip
    again = Fetch(date(2026, 10, 31), date(2026, 10, 31), later, "look-back")
    assert once.with_fetch(again, replace=False, rows=5, newest=None).unproven == ()
