"""A proof that reuses earlier reads (issue 37): a sync proves a day the store already holds
by one new read that returns the same set (ids with ``updatedAt``); only days that differ are
read again. Requests are counted at the sandbox, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

import txkit
from tests.exports import served
from txkit import Client, RetryPolicy
from txkit.notebook import load_month
from txkit.sandbox import Sandbox
from txkit.store import scan_store, sync

OPEN = date(2026, 10, 31)  # October's last 8 days are inside the look-back
WINDOW = (date(2026, 10, 24), date(2026, 10, 31))
FAST = RetryPolicy(max_retries=5, backoff_base=0.01, backoff_cap=0.05)


@pytest.fixture(scope="module")
def ledger(ledgers):
    return ledgers(seed=21, records=3_000)


@pytest.fixture
def box(ledger) -> Iterator[Sandbox]:
    # Pages of 10: the look-back window is several pages, a day one or two.
    with Sandbox(ledger=ledger, faults="cap=10") as sandbox:
        yield sandbox


def client(box: Sandbox) -> Client:
    return Client(box.base_url, box.secret_key, env_file=None, retry=FAST)


def _requests(box: Sandbox, first: date, last: date) -> int:
    """What one unproven pass over ``first..last`` costs now (confirm=False)."""
    before = box.request_count
    with client(box) as c:
        txkit.load_transactions(c, start=first, end=last, confirm=False, progress=False)
    return box.request_count - before


def _stored(store: Path) -> dict[str, tuple[str, str, str]]:
    df = scan_store(store).collect()
    return {
        i: (
            c.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            s,
            u.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        )
        for i, c, s, u in df.select("id", "createdAt", "status", "updatedAt").iter_rows()
    }


def _served(box: Sandbox, month: str) -> dict[str, tuple[str, str, str]]:
    return {
        r.id: (r.createdAt, r.status, r.updatedAt) for r in served(box) if r.createdAt[:7] == month
    }


def _sync(box: Sandbox, store: Path):
    with client(box) as c:
        return sync(c, start="2026-10-01", end="2026-10-31", store=store, today=OPEN,
                    progress=False)  # fmt: skip


def _position(box: Sandbox, day: str, k: int = 0) -> int:
    store = box._store
    days = [i for i, b in enumerate(store.bodies) if b'"createdAt":"%s' % day.encode() in b]
    return days[k]


def test_a_quiet_service_s_daily_sync_costs_one_pass(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    _sync(box, store)
    one_pass = _requests(box, *WINDOW)
    before = box.request_count
    result = _sync(box, store)
    assert result.fetched == {"2026-10": "look-back"}
    assert box.request_count - before == one_pass
    assert "8 day(s) proven by the store's earlier read, 0 read again" in result.stats.notes
    assert _stored(store) == _served(box, "2026-10")


def test_one_day_changed_between_two_syncs_is_the_only_day_read_again(
    box: Sandbox, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    _sync(box, store)
    with box._store.lock:
        position = _position(box, "2026-10-27")
        box._store.set_status(
            position, "reversed", int(datetime(2026, 10, 30, tzinfo=UTC).timestamp() * 1000)
        )
    one_pass = _requests(box, *WINDOW)
    one_day = _requests(box, date(2026, 10, 27), date(2026, 10, 27))
    before = box.request_count
    result = _sync(box, store)
    assert box.request_count - before == one_pass + one_day
    assert "7 day(s) proven by the store's earlier read, 1 read again" in result.stats.notes
    assert _stored(store) == _served(box, "2026-10")


def test_a_record_that_left_a_day_and_another_that_entered_it_are_caught(
    box: Sandbox, tmp_path: Path
) -> None:
    """The day's count is the same, its set is not: the new read differs from the stored one,
    so the day is read again, and the store ends as the service lists it."""
    store = tmp_path / "store"
    _sync(box, store)
    with box._store.lock:
        x, y = _position(box, "2026-10-26"), _position(box, "2026-10-28")
        created = box._store.created
        box._store.set_created({x: created[y] + 1, y: created[x] - 1})
    result = _sync(box, store)
    assert "6 day(s) proven by the store's earlier read, 2 read again" in result.stats.notes
    assert _stored(store) == _served(box, "2026-10")


def test_a_daily_sync_while_records_settle_finishes(ledgers, tmp_path: Path) -> None:
    """Records settle between the syncs and during the second (two a request, on a ledger
    whose last week holds about 120 in flight): the days that differ are read again until
    two reads hold the same records, each in its newest version read, and the store holds
    every record of the month, each in a version it really had."""
    store = tmp_path / "store"
    with Sandbox(ledger=ledgers(seed=7, records=20_000), faults="cap=25") as box:
        _sync(box, store)
        box.faults = "cap=25,settle=2"
        with client(box) as c:
            for _ in range(20):
                c.get_transactions({"limit": 1, "startDate": "2026-10-24"})
        result = _sync(box, store)
        box.faults = "cap=25"
        changes = box._effects.settled
        now = _served(box, "2026-10")
    assert len(changes) > 40
    assert "read again" in "; ".join(result.stats.notes)
    versions: dict[str, set[tuple[str, str]]] = {}
    for change in changes:
        versions.setdefault(change.id, set()).update(
            {(change.old_status, change.old_updated), (change.new_status, change.new_updated)}
        )
    stored = _stored(store)
    assert set(stored) == set(now)  # every record of the month, none other
    for rid, (created, status, updated) in stored.items():
        assert created == now[rid][0]
        assert (status, updated) == now[rid][1:] or (status, updated) in versions[rid]


def test_reshuffled_ties_caps_and_429s_change_no_day(box: Sandbox, tmp_path: Path) -> None:
    """A day's set is a set: ties in another order on every request, pages capped and 429s
    make no day differ from the store's read, so none is read again."""
    box.faults = "cap=37,tie_groups=37,rate_limit=0.05,retry_after=0,fault_seed=3"
    store = tmp_path / "store"
    _sync(box, store)
    result = _sync(box, store)
    assert "8 day(s) proven by the store's earlier read, 0 read again" in result.stats.notes
    assert _stored(store) == _served(box, "2026-10")


# -- days read once (issue 37, A): the newest day a sync reads for the first time is stored
#    after one verified read and proven by the next sync's read --------------------------------

NEW_DAY = date(2026, 10, 31)
WINDOW_NEW = (date(2026, 10, 23), date(2026, 10, 31))  # Oct 30's sync: 23..30 within look-back


def _daily(box: Sandbox, store: Path, today: date, **kwargs):
    with client(box) as c:
        return sync(c, start="2026-10-01", end=today, store=store, today=today,
                    progress=False, **kwargs)  # fmt: skip


def _one_new_day(box: Sandbox, store: Path):
    """A store synced up to Oct 30, then the daily sync of Oct 31 (one new day)."""
    _daily(box, store, date(2026, 10, 30))
    return _daily(box, store, NEW_DAY)


def test_a_daily_sync_with_one_new_day_costs_one_pass(box: Sandbox, tmp_path: Path) -> None:
    """Before: the new day was read twice (the one pass plus an export of the day)."""
    store = tmp_path / "store"
    _daily(box, store, date(2026, 10, 30))
    one_pass = _requests(box, *WINDOW_NEW)
    before = box.request_count
    result = _daily(box, store, NEW_DAY)
    assert box.request_count - before == one_pass
    assert (
        "8 day(s) proven by the store's earlier read, 0 read again, 1 new day(s) read once "
        "(count verified against the service's totals; the next sync proves the set)"
    ) in result.stats.notes
    assert _stored(store) == _served(box, "2026-10")
    status = txkit.store.format_status(store)
    assert "open (1 day(s) read once, not yet set-proven)" in status
    assert "2026-10-31 read once (count verified against the service's totals), not yet " in status
    # A notebook reading the month from the store is told, not given a silent success.
    _, info = load_month("2026-10", source="store", store=store)
    assert "NOT complete" in info.verified and "2026-10-31 read once" in info.verified


def test_the_next_sync_proves_the_once_read_day_without_a_request_more(
    box: Sandbox, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    _one_new_day(box, store)
    one_pass = _requests(box, *WINDOW)  # Oct 23 is settled now
    before = box.request_count
    result = _daily(box, store, NEW_DAY)
    assert box.request_count - before == one_pass
    assert "8 day(s) proven by the store's earlier read, 0 read again" in result.stats.notes
    assert "read once" not in txkit.store.format_status(store)
    assert txkit.store.read_state(store).coverage["2026-10"].unproven == ()


def test_records_that_left_and_entered_the_once_read_day_are_caught(
    box: Sandbox, tmp_path: Path
) -> None:
    """Between the syncs a record of the once-read day moves to Oct 28 and one of Oct 28
    into it (the day's count unchanged): the next sync reads both days again and the store
    ends as the service lists them, every day proven."""
    store = tmp_path / "store"
    _one_new_day(box, store)
    with box._store.lock:
        x, y = _position(box, "2026-10-31"), _position(box, "2026-10-28")
        created = box._store.created
        box._store.set_created({x: created[y] + 1, y: created[x] - 1})
        # and a record created on the day after it was read (the newest day still filling)
        old_id, body = box._store.ids[0], box._store.bodies[0]
        new_id = "f" * len(old_id)
        newest = box._store.created[0] + 1
        assert body.count(old_id.encode()) == 2  # _id and id
        kind = [box._store.frame[c][0] for c in ("transType", "status", "toCurrency")]
        box._store.insert_newest(body.replace(old_id.encode(), new_id.encode()), new_id,
                                 newest, *kind)  # fmt: skip
        box._store.set_created({0: newest})
    assert _served(box, "2026-10")[new_id][0].startswith("2026-10-31")
    result = _daily(box, store, NEW_DAY)
    assert "6 day(s) proven by the store's earlier read, 2 read again" in result.stats.notes
    assert new_id in _stored(store)
    assert _stored(store) == _served(box, "2026-10")
    assert txkit.store.read_state(store).coverage["2026-10"].unproven == ()


def test_a_refresh_and_a_first_sync_read_no_day_once(box: Sandbox, tmp_path: Path) -> None:
    """So no month is ever left unproven in bulk: the export's confirming re-read."""
    store = tmp_path / "store"
    _daily(box, store, NEW_DAY)
    assert txkit.store.read_state(store).coverage["2026-10"].unproven == ()
    _daily(box, store, NEW_DAY, refresh=["2026-10"])
    assert txkit.store.read_state(store).coverage["2026-10"].unproven == ()


def test_a_report_of_a_month_with_an_unproven_day_proves_it_first(
    box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's sync (no pinned day: today, long after October) proves the once-read day
    by comparing its read with the stored one, and reads no new day once itself."""
    from txkit.report._plan import Notes, ReportPlan, ReportRequest, sync_for_report

    store = tmp_path / "store"
    _one_new_day(box, store)
    monkeypatch.setenv("TXKIT_BASE_URL", box.base_url)
    monkeypatch.setenv("TXKIT_SECRET_KEY", box.secret_key)
    request = ReportRequest(month="2026-10", out=tmp_path / "reports", notebooks=tmp_path,
                            store=store, progress=False)  # fmt: skip
    plan = ReportPlan(month="2026-10", store=store, notebooks=[], orders="sandbox", checked=None,
                      since=date(2026, 10, 1), until=NEW_DAY)  # fmt: skip
    result, _ = sync_for_report(plan, request, Notes())
    assert result is not None and result.fetched == {"2026-10": "look-back"}
    assert any("0 read again" in n for n in result.stats.notes), result.stats.notes
    state = txkit.store.read_state(store)
    assert state.coverage["2026-10"].unproven == ()
    assert state.coverage["2026-10"].complete(state.lookback_days)
    assert _stored(store) == _served(box, "2026-10")


@pytest.mark.parametrize(
    "faults",
    [
        "cap=10,bounds=exclusive,date_shift=-12",
        "cap=7,bounds=end_exclusive,date_shift=14,tie_groups=7,fault_seed=2",
        "cap=25,bounds=start_exclusive,date_shift=5,shuffle_ties,rate_limit=0.05,retry_after=0",
    ],
)
def test_a_day_read_once_under_other_bounds_caps_and_ties_is_proven_by_the_next_sync(
    ledger, faults: str, tmp_path: Path
) -> None:
    """The days read once under the services the interface document allows (date bounds
    exclusive or shifted, silent caps, ties in any order, 429s): the store holds what the
    service lists after the first read, and a record that moved between the once-read day and
    another before the next sync is caught there."""
    with Sandbox(ledger=ledger, faults=faults) as box:
        store = tmp_path / "store"
        notes = " ".join(_one_new_day(box, store).stats.notes)
        assert "1 new day(s) read once" in notes
        assert _stored(store) == _served(box, "2026-10")
        with box._store.lock:
            x, y = _position(box, "2026-10-31"), _position(box, "2026-10-27")
            created = box._store.created
            box._store.set_created({x: created[y] + 1, y: created[x] - 1})
        notes = " ".join(_daily(box, store, NEW_DAY).stats.notes)
        assert "2 read again" in notes and "read once" not in notes
        assert _stored(store) == _served(box, "2026-10")
        assert txkit.store.read_state(store).coverage["2026-10"].unproven == ()
