"""The Parquet store: incremental sync, replacement of changed records, atomicity, the lock."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest

from txkit import Client, RetryPolicy
from txkit.sandbox import Sandbox, generate_ledger
from txkit.store import StoreLockedError, _locked, read_manifests, scan_store, sync, sync_needed

TODAY = date(2026, 11, 21)
FAST = RetryPolicy(max_retries=5, backoff_base=0.01, backoff_cap=0.05)


@pytest.fixture(scope="module")
def ledger():
    return generate_ledger(seed=21, records=4_000)


@pytest.fixture
def box(ledger) -> Iterator[Sandbox]:
    with Sandbox(ledger=ledger) as sandbox:
        yield sandbox


def client(box: Sandbox) -> Client:
    return Client(box.base_url, box.secret_key, env_file=None, retry=FAST)


def served_months(box: Sandbox, months: set[str]) -> dict[str, str]:
    return {r["id"]: r["status"] for r in box.served_records() if r["createdAt"][:7] in months}


def tree_digest(store: Path) -> dict[str, str]:
    current = (store / "current").resolve()
    return {
        str(p.relative_to(current)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(current.rglob("*"))
        if p.is_file()
    }


def test_first_sync_stores_months_as_hive_partitions(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        result = sync(c, start="2026-08-01", end="2026-10-31", store=store, today=TODAY)
    assert result.fetched == {"2026-08": "full", "2026-09": "full", "2026-10": "full"}
    expected = served_months(box, {"2026-08", "2026-09", "2026-10"})
    df = scan_store(store).collect()
    assert sorted(df["id"]) == sorted(expected)
    assert df["id"].is_unique().all()
    assert df.schema["toAmount"] == pl.Decimal(38, 2)
    # Readable as a plain Hive dataset, without txkit.
    raw = pl.scan_parquet(store / "current/transactions/**/*.parquet", hive_partitioning=True)
    assert raw.select(pl.len()).collect().item() == len(expected)
    assert sorted(raw.select("month").unique().collect()["month"].cast(pl.String)) == [
        "2026-08",
        "2026-09",
        "2026-10",
    ]
    manifests = read_manifests(store)
    assert manifests["2026-09"].rows == sum(
        1 for r in box.served_records() if r["createdAt"][:7] == "2026-09"
    )
    assert manifests["2026-09"].complete and manifests["2026-09"].source == box.base_url
    assert manifests["2026-09"].service_total >= manifests["2026-09"].rows


def test_second_sync_fetches_only_the_look_back_window(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-06-01", end="2026-10-31", store=store, today=TODAY)
        before = tree_digest(store)
        requests = box.request_count
        result = sync(c, start="2026-06-01", end="2026-10-31", store=store, today=TODAY)
    assert result.fetched == {"2026-10": "look-back"}
    assert result.skipped == ["2026-06", "2026-07", "2026-08", "2026-09"]
    assert box.request_count - requests <= 4  # one small window: a page or two, and checks
    after = tree_digest(store)
    for name in ("transactions/month=2026-06/part-0.parquet", "manifests/2026-07.json"):
        assert before[name] == after[name]
    window = read_manifests(store)["2026-10"].windows[-1]
    assert window == ["2026-10-24", "2026-10-31"]
    assert not sync_needed(store=store, start="2026-06-01", end="2026-09-30", today=TODAY)


def test_status_change_upstream_replaces_the_stored_row(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        stored = dict(scan_store(store).select("id", "status").collect().iter_rows())
        box.faults = "status_changes=6"
        c.get_transactions({"limit": 5})  # each served page changes one in-flight record
        c.get_transactions({"limit": 5})
        box.faults = None
        now = served_months(box, {"2026-10"})
        changed = {i for i in now if now[i] != stored[i]}
        assert changed
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    df = scan_store(store).collect()
    assert df["id"].is_unique().all()
    assert dict(df.select("id", "status").iter_rows()) == now


def test_refresh_forces_a_whole_month(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-01-01", end="2026-03-31", store=store, today=TODAY)
        result = sync(c, start="2026-01-01", end="2026-03-31", store=store, today=TODAY,
                      refresh=["2026-02"])  # fmt: skip
    assert result.fetched == {"2026-02": "refresh", "2026-03": "look-back"}
    with pytest.raises(ValueError, match="YYYY-MM"):
        sync_needed(store=store, refresh=["2026-2"])


def test_a_second_sync_on_the_same_store_is_refused(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with _locked(store), client(box) as c, pytest.raises(StoreLockedError, match="another sync"):
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)


def test_store_files_never_hold_the_key(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    for file in store.rglob("*"):
        if file.is_file():
            assert box.secret_key.encode() not in file.read_bytes(), file


KILLED_SYNC = textwrap.dedent(
    """
    import sys
    from datetime import date
    from txkit import Client
    from txkit.store import sync
    url, key, store = sys.argv[1:4]
    months = [f"2025-{m}" for m in (11, 12)] + [f"2026-{m:02d}" for m in range(1, 11)]
    with Client(url, key, env_file=None) as c:
        sync(c, start="2025-11-01", end="2026-10-31", store=store, today=date(2026, 11, 21),
             refresh=months)
    """
)


def test_a_sync_killed_mid_write_leaves_the_store_as_it_was(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-05-01", end="2026-10-31", store=store, today=TODAY)
    before = tree_digest(store)
    rows_before = scan_store(store).select(pl.len()).collect().item()
    box.faults = "latency=40"
    script = tmp_path / "killed.py"
    script.write_text(KILLED_SYNC)
    proc = subprocess.Popen(
        [sys.executable, str(script), box.base_url, box.secret_key, str(store)],
        env=os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    try:
        deadline = time.monotonic() + 60
        # Wait until it has written part of its new generation, then kill it hard.
        while time.monotonic() < deadline:
            partial = list((store / "generations").glob("*.tmp/manifests/*.json"))
            if len(partial) >= 2 or proc.poll() is not None:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the sync finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list((store / "generations").glob("*.tmp"))  # it died mid-write
    assert tree_digest(store) == before
    assert scan_store(store).select(pl.len()).collect().item() == rows_before
    box.faults = None
    with client(box) as c:  # the next sync cleans up and works
        sync(c, start="2026-05-01", end="2026-10-31", store=store, today=TODAY)
    assert not list((store / "generations").glob("*.tmp"))
    assert json.loads((store / "current/manifests/2026-10.json").read_text())["complete"]


def test_history_from_the_store_is_the_contiguous_months_before(
    box: Sandbox, tmp_path: Path
) -> None:
    from txkit.notebook import load_history

    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-06-01", end="2026-06-30", store=store, today=TODAY)
        sync(c, start="2026-08-01", end="2026-10-31", store=store, today=TODAY)
    df, info = load_history("2026-10", months=2, source="store", store=str(store))
    note = str(info)
    assert info.kind == "history" and info.rows == (df.height if df is not None else -1)
    assert info.first == date(2026, 8, 1) and info.last == date(2026, 9, 30)
    assert df is not None
    assert sorted(df["id"]) == sorted(served_months(box, {"2026-08", "2026-09"}))
    assert note.startswith(f"History: {df.height:,} transactions of 2026-08 to 2026-09")
    # 2026-07 is missing: only the months right before 2026-10 are used, never across a gap.
    df, info = load_history("2026-10", months=4, source="store", store=str(store))
    note = str(info)
    assert df is not None and "2026-08 to 2026-09" in note
    assert df["createdAt"].min() >= datetime(2026, 8, 1, tzinfo=UTC)
    df, info = load_history("2026-08", months=1, source="store", store=str(store))
    note = str(info)
    assert info.rows == 0 and info.first is None
    assert df is None and "does not hold 2026-07" in note and "checked alone" in note
    assert load_history("2026-10", months=0, source="store", store=str(store))[0] is None
    with pytest.raises(ValueError, match="months must be 0 or more, got -1"):
        load_history("2026-10", months=-1, source="store", store=str(store))
