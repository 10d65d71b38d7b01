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
