"""The store as a Delta table: incremental sync, coverage-exact planning, atomicity, the lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable

from tests.exports import served
from txkit import Client, RetryPolicy
from txkit.sandbox import Sandbox
from txkit.store import (
    StoreError,
    StoreLockedError,
    format_status,
    read_manifests,
    read_state,
    scan_store,
    sync,
    sync_needed,
)
from txkit.store._lock import locked

TODAY = date(2026, 11, 21)  # every month of the sandbox's calendar is past its look-back
OPEN = date(2026, 10, 31)  # October is still open: its last 7 days are within the look-back
FAST = RetryPolicy(max_retries=5, backoff_base=0.01, backoff_cap=0.05)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ledger(ledgers):
    # The run's cached ledger of the other store tests (S3, retention, readers): 3,000 records
    # hold every case here as 4,000 did, in three quarters of the sync time.
    return ledgers(seed=21, records=3_000)


@pytest.fixture
def box(ledger) -> Iterator[Sandbox]:
    with Sandbox(ledger=ledger) as sandbox:
        yield sandbox


def client(box: Sandbox) -> Client:
    return Client(box.base_url, box.secret_key, env_file=None, retry=FAST)


def served_months(box: Sandbox, months: set[str]) -> dict[str, str]:
    return {r.id: r.status for r in served(box) if r.createdAt[:7] in months}


def month_files(store: Path) -> dict[str, set[str]]:
    """The data files of the current version, by month partition."""
    out: dict[str, set[str]] = {}
    for uri in DeltaTable(str(store)).file_uris():
        month = next(p for p in uri.split("/") if p.startswith("month=")).removeprefix("month=")
        out.setdefault(month, set()).add(uri)
    return out


@pytest.mark.slow
def test_first_sync_stores_months_as_delta_partitions(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        result = sync(c, start="2026-08-01", end="2026-10-31", store=store, today=TODAY)
    assert result.fetched == {"2026-08": "full", "2026-09": "full", "2026-10": "full"}
    assert result.version == 0
    expected = served_months(box, {"2026-08", "2026-09", "2026-10"})
    df = scan_store(store).collect()
    assert sorted(df["id"]) == sorted(expected)
    assert df["id"].is_unique().all()
    assert df.schema["toAmount"] == pl.Decimal(38, 2)
    assert df.schema["createdAt"] == pl.Datetime("ms", "UTC")
    assert df.schema["meta.customerActivity.history"] == pl.List(
        pl.Struct({"type": pl.String, "message": pl.String, "time": pl.String})
    )
    # Exactly what the loader returns, value for value (money, timestamps, nested lists).
    with client(box) as c:
        from txkit import load_transactions

        loaded = load_transactions(c, start="2026-09-01", end="2026-09-30")
    stored = df.filter(pl.col("month") == "2026-09").drop("month").sort(["createdAt", "id"])
    assert stored.select(loaded.columns).equals(loaded)
    # Readable as a plain Delta table, without txkit.
    raw = pl.scan_delta(str(store))
    assert raw.select(pl.len()).collect().item() == len(expected)
    assert sorted(raw.select("month").unique().collect()["month"]) == [
        "2026-08",
        "2026-09",
        "2026-10",
    ]
    assert DeltaTable(str(store)).metadata().partition_columns == ["month"]
    manifests = read_manifests(store)
    assert manifests["2026-09"].rows == sum(1 for r in served(box) if r.createdAt[:7] == "2026-09")
    assert manifests["2026-09"].complete and manifests["2026-09"].source == box.base_url
    assert manifests["2026-09"].service_total >= manifests["2026-09"].rows
    assert manifests["2026-09"].table_version == 0


@pytest.mark.slow
def test_second_sync_fetches_only_the_look_back_window(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-06-01", end="2026-10-31", store=store, today=OPEN)
        before = month_files(store)
        requests = box.request_count
        result = sync(c, start="2026-06-01", end="2026-10-31", store=store, today=OPEN)
    assert result.fetched == {"2026-10": "look-back"}
    assert result.skipped == ["2026-06", "2026-07", "2026-08", "2026-09"]
    assert result.version == 1  # one commit per sync
    assert box.request_count - requests <= 4  # one small window: a page or two, and checks
    after = month_files(store)
    for month in ("2026-06", "2026-07", "2026-08", "2026-09"):
        assert before[month] == after[month]  # untouched months keep their files
    assert before["2026-10"] != after["2026-10"]
    window = read_manifests(store)["2026-10"].windows[-1]
    assert window == ["2026-10-24", "2026-10-31"]
    assert not sync_needed(store=store, start="2026-06-01", end="2026-09-30", today=OPEN)
    # Once the look-back has passed, those days are fetched a last time, then never again.
    assert not read_manifests(store)["2026-10"].complete
    with client(box) as c:
        final = sync(c, start="2026-06-01", end="2026-10-31", store=store, today=TODAY)
    assert final.fetched == {"2026-10": "look-back"}
    assert read_manifests(store)["2026-10"].complete
    assert not sync_needed(store=store, start="2026-06-01", end="2026-10-31", today=TODAY)


@pytest.mark.slow
def test_status_change_upstream_replaces_the_stored_row(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=OPEN, lookback_days=31)
        stored = dict(scan_store(store).select("id", "status").collect().iter_rows())
        box.faults = "status_changes=6"
        c.get_transactions({"limit": 5})  # each served page changes one in-flight record
        c.get_transactions({"limit": 5})
        box.faults = None
        now = served_months(box, {"2026-10"})
        changed = {i for i in now if now[i] != stored[i]}
        assert changed
        result = sync(c, start="2026-10-01", end="2026-10-31", store=store, today=OPEN,
                      lookback_days=31)  # fmt: skip
    assert result.fetched == {"2026-10": "look-back"}
    df = scan_store(store).collect()
    assert df["id"].is_unique().all()
    assert dict(df.select("id", "status").iter_rows()) == now
    # The version before still holds the old statuses (time travel).
    old = scan_store(store, version=0).collect()
    assert dict(old.select("id", "status").iter_rows()) == stored


@pytest.mark.slow
def test_refresh_forces_a_whole_month(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    march = date(2026, 3, 31)
    with client(box) as c:
        sync(c, start="2026-01-01", end="2026-03-31", store=store, today=march)
        result = sync(c, start="2026-01-01", end="2026-03-31", store=store, today=march,
                      refresh=["2026-02"])  # fmt: skip
        assert result.fetched == {"2026-02": "refresh", "2026-03": "look-back"}
        result = sync(c, start="2026-01-01", end="2026-03-31", store=store, today=TODAY,
                      refresh=["2026-01"])  # fmt: skip
    assert result.fetched == {"2026-01": "refresh", "2026-03": "look-back"}
    with pytest.raises(ValueError, match="YYYY-MM"):
        sync_needed(store=store, refresh=["2026-2"])


@pytest.mark.slow
def test_a_half_fetched_month_is_completed_by_the_next_sync(box: Sandbox, tmp_path: Path) -> None:
    """The issue's scenario: 1-10 September, then October, then September must be whole."""
    store = tmp_path / "store"
    september = served_months(box, {"2026-09"})
    with client(box) as c:
        first = sync(c, start="2026-09-01", end="2026-09-10", store=store, today=TODAY)
        assert first.fetched == {"2026-09": "full"}
        partial = read_manifests(store)["2026-09"]
        assert not partial.complete and partial.windows == [["2026-09-01", "2026-09-10"]]
        assert 0 < partial.rows < len(september)
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        assert not read_manifests(store)["2026-09"].complete  # October does not hide the gap
        # What `txkit report --month 2026-09` syncs: the month and the one before.
        assert sync_needed(store=store, start="2026-08-01", end="2026-09-30", today=TODAY)
        result = sync(c, start="2026-08-01", end="2026-09-30", store=store, today=TODAY)
    assert result.fetched == {"2026-08": "full", "2026-09": "gap"}
    manifest = read_manifests(store)["2026-09"]
    assert manifest.complete and manifest.rows == len(september)
    assert manifest.windows == [["2026-09-01", "2026-09-10"], ["2026-09-11", "2026-09-30"]]
    stored = scan_store(store).filter(pl.col("month") == "2026-09").collect()
    assert dict(stored.select("id", "status").iter_rows()) == september
    status = format_status(store)
    assert "2026-09: complete; " + f"{len(september):,} rows" in status
    assert "2026-09-11..2026-09-30 (gap at" in status and "last fetch" in status


@pytest.mark.slow
def test_a_recent_fetch_is_not_complete_until_the_look_back_has_passed(
    box: Sandbox, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=OPEN)
    assert not read_manifests(store)["2026-10"].complete
    assert "2026-10: open (within the look-back)" in format_status(store)
    assert sync_needed(store=store, start="2026-10-01", end="2026-10-31", today=date(2026, 11, 5))


def test_a_second_sync_on_the_same_store_is_refused(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with locked(store), client(box) as c, pytest.raises(StoreLockedError, match="another sync"):
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)


def test_the_lock_file_goes_with_the_sync_and_still_excludes_while_held(
    box: Sandbox, tmp_path: Path
) -> None:
    """A lock file left after every run (``pid 6356 since ...``) read as a sync still running."""
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-10-01", end="2026-10-03", store=store, today=TODAY)
    assert not (store / "_txkit.lock").exists()
    with locked(store):
        held = (store / "_txkit.lock").read_text()
        assert held.startswith(f"pid {os.getpid()} since ")
        # Another process is refused, naming the holder.
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys\nfrom txkit.store._lock import locked\n"
                "try:\n    locked(sys.argv[1]).__enter__()\n"
                "except Exception as exc:\n    print(type(exc).__name__, exc)",
                str(store),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert other.stdout.startswith("StoreLockedError another sync is running"), other
        assert f"pid {os.getpid()}" in other.stdout
    assert not (store / "_txkit.lock").exists()
    with locked(store):  # and it can be taken again
        pass


@pytest.mark.slow
def test_store_files_never_hold_the_key(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    key = box.secret_key.encode()
    for file in store.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert key not in data, file
            assert key[:12] not in data and key[-12:] not in data, file  # nor a part of it
    source = read_state(store).source
    assert source is not None and source.fingerprint and source.salt


@pytest.mark.slow
def test_another_source_is_refused_naming_the_store_to_use(
    ledger, box: Sandbox, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    version = read_state(store).version
    # The same service with another key.
    with (
        Sandbox(ledger=ledger, port=0, secret_key="sk_sandbox_other_key_1234") as other,
        Client(other.base_url, "sk_sandbox_other_key_1234", env_file=None) as c2,
    ):
        with pytest.raises(StoreError, match=r"holds data from .*use --store"):
            sync(c2, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
        # The embedded sandbox's identity is its settings, not its port and key.
        with pytest.raises(StoreError, match="use --store .*data/store/sandbox"):
            sync(c2, start="2026-09-01", end="2026-09-30", store=store, today=TODAY,
                 source_url="sandbox:seed7")  # fmt: skip
    assert read_state(store).version == version


def test_an_earlier_version_that_does_not_exist_is_a_clear_error(
    box: Sandbox, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    with pytest.raises(StoreError, match="version 7"):
        scan_store(store, version=7)


KILLED_SYNC = textwrap.dedent(
    """
    import os, sys, time
    from datetime import date
    from txkit import Client
    import txkit.store
    url, key, store, point, marker = sys.argv[1:6]
    if point == "writing":
        import deltalake
        def stalled(self, actions, *args, **kwargs):
            # The data files are written; stall before the commit that would reference
            # them: the test kills the process here.
            open(marker, "w").close()
            time.sleep(60)
        deltalake.DeltaTable.create_write_transaction = stalled
    months = [f"2025-{m}" for m in (11, 12)] + [f"2026-{m:02d}" for m in range(1, 11)]
    with Client(url, key, env_file=None) as c:
        txkit.store.sync(c, start="2025-11-01", end="2026-10-31", store=store,
                         today=date(2026, 11, 21), refresh=months)
    """
)


# Not serial: it kills only its own process (after waiting for the moment: 10 requests
# served, or a marker file); no port, time, rate or memory is measured.
@pytest.mark.slow
@pytest.mark.parametrize("point", ["fetching", "writing"])
def test_a_sync_killed_leaves_the_previous_version(
    box: Sandbox, tmp_path: Path, point: str
) -> None:
    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-05-01", end="2026-10-31", store=store, today=TODAY)
    before = scan_store(store).sort("id").collect()
    state = read_state(store)
    box.faults = "latency=40" if point == "fetching" else None
    script = tmp_path / "killed.py"
    script.write_text(KILLED_SYNC)
    marker = tmp_path / "marker"
    requests = box.request_count
    proc = subprocess.Popen(
        [sys.executable, str(script), box.base_url, box.secret_key, str(store), point,
         str(marker)],
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if point == "fetching" and box.request_count - requests >= 10:
                break
            if point == "writing" and marker.exists():
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the sync finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    if point == "writing":  # it died mid-write: files on disk that no version references
        on_disk = {str(p) for p in store.glob("month=*/*.parquet")}
        referenced = {u.removeprefix("file://") for u in DeltaTable(str(store)).file_uris()}
        assert on_disk - referenced
    assert read_state(store).version == state.version
    assert scan_store(store).sort("id").collect().equals(before)
    box.faults = None
    with client(box) as c:  # the next sync works (the lock died with the process)
        result = sync(c, start="2026-05-01", end="2026-10-31", store=store, today=TODAY,
                      refresh=["2026-10"])  # fmt: skip
    assert result.version == state.version + 1
    df = scan_store(store).collect()
    assert df["id"].is_unique().all() and df.height == before.height
    assert read_manifests(store)["2026-10"].complete


@pytest.mark.slow
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


def _through_scan_delta(store: Path, months: list[str], version: int | None = None) -> pl.DataFrame:
    """The months as ``scan_delta`` reads them (statistics, protocol checks and all)."""
    from txkit.decode import finalize
    from txkit.store._read import _typed

    lf = pl.scan_delta(DeltaTable(str(store), version=version))
    lf = _typed(lf.filter(pl.col("month").is_in(months)).drop("month"))
    return finalize(lf.collect())


@pytest.mark.slow
@pytest.mark.parametrize("lazy_route", [False, True], ids=["direct-files", "scan_delta"])
def test_read_months_matches_scan_delta_with_a_column_added_later(
    box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lazy_route: bool
) -> None:
    from polars.testing import assert_frame_equal

    from txkit.store import _read as store_module
    from txkit.store import read_months

    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-08-01", end="2026-10-31", store=store, today=TODAY)
        box.faults = "drift=1"  # October's new file gains riskScore and device
        sync(c, start="2026-10-01", end="2026-10-31", store=store, today=TODAY,
             refresh=["2026-10"])  # fmt: skip
        box.faults = None
    if lazy_route:  # a table another writer upgraded (deletion vectors, column mapping)
        monkeypatch.setattr(store_module, "_plain_files", lambda table: False)
    months = ["2026-09", "2026-10"]
    got = read_months(months, store=store)
    assert "riskScore" in got.columns and any(c.startswith("device") for c in got.columns)
    assert got.filter(pl.col("createdAt").dt.month() == 9)["riskScore"].null_count() == (
        got.filter(pl.col("createdAt").dt.month() == 9).height
    )
    assert got.filter(pl.col("createdAt").dt.month() == 10)["riskScore"].null_count() == 0
    assert_frame_equal(got, _through_scan_delta(store, months))
    assert sorted(got["id"]) == sorted(served_months(box, set(months)))
    # An earlier version, before the columns existed, reads as it was.
    old = read_months(months, store=store, version=0)
    assert "riskScore" not in old.columns
    assert_frame_equal(old, _through_scan_delta(store, months, version=0))
    assert read_months(["2026-07"], store=store).height == 0
    assert_frame_equal(
        read_months(["2026-09"], store=store, currency="NGN"),
        got.filter((pl.col("createdAt").dt.month() == 9) & (pl.col("toCurrency") == "NGN")),
    )


def _two_months(box: Sandbox, tmp_path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    from txkit.store import read_months

    source = tmp_path / "source"
    with client(box) as c:
        sync(c, start="2026-09-01", end="2026-10-31", store=source, today=TODAY)
    return read_months(["2026-09"], store=source), read_months(["2026-10"], store=source)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sep", "oct_", "stored"),
    [
        # Null in one month, typed in the other: September's file leaves it out (null).
        (pl.Null(), pl.Decimal(38, 2), pl.Decimal(38, 2)),
        # Null in every month: kept as a text column, as one write of both would.
        (pl.Null(), pl.Null(), pl.String()),
        # Two types: the months' files are read back, aligned (combine) and written again.
        (pl.Int64(), pl.Decimal(38, 2), pl.Decimal(38, 2)),
    ],
    ids=["null-and-typed", "null-everywhere", "two-types"],
)
def test_months_written_one_at_a_time_keep_an_undocumented_column_s_type(
    box: Sandbox, tmp_path: Path, sep: pl.DataType, oct_: pl.DataType, stored: pl.DataType
) -> None:
    from txkit.store import read_months
    from txkit.store._write import MonthWriter

    september, october = _two_months(box, tmp_path)

    def with_score(frame: pl.DataFrame, dtype: pl.DataType) -> pl.DataFrame:
        if dtype == pl.Null:
            return frame.with_columns(pl.lit(None).alias("riskScore"))
        return frame.with_columns(pl.int_range(frame.height).cast(dtype).alias("riskScore"))

    store = tmp_path / "store"
    writer = MonthWriter(store, None)
    writer.add("2026-09", with_score(september, sep))
    writer.add("2026-10", with_score(october, oct_))
    assert writer.commit(["2026-09", "2026-10"], {"format": "test"}) == 0
    writer.close()
    back = read_months(["2026-09", "2026-10"], store=store)
    assert back.schema["riskScore"] == stored
    got = back.group_by(pl.col("createdAt").dt.month().alias("m")).agg(
        pl.col("riskScore").null_count().alias("nulls"), pl.len()
    )
    nulls = dict(zip(got["m"], got["nulls"], strict=True))
    assert (nulls[9] == september.height) == (sep == pl.Null)
    assert (nulls[10] == october.height) == (oct_ == pl.Null)
    if stored == pl.Decimal(38, 2) and oct_ != pl.Null:
        october_back = back.filter(pl.col("createdAt").dt.month() == 10)
        assert sorted(october_back["riskScore"].to_list()) == [
            Decimal(i) for i in range(october.height)
        ]
    # Only the committed version's files are on disk: the rewritten months left nothing.
    on_disk = {str(p) for p in store.glob("month=*/*.parquet")}
    assert on_disk == {u.removeprefix("file://") for u in DeltaTable(str(store)).file_uris()}


@pytest.mark.slow
def test_a_sync_that_fails_mid_way_removes_the_months_it_wrote(
    box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit import TxkitError
    from txkit.store._write import MonthWriter

    store = tmp_path / "store"
    with client(box) as c:
        sync(c, start="2026-04-01", end="2026-05-31", store=store, today=TODAY)
    before = {str(p) for p in store.glob("month=*/*.parquet")}
    written: list[str] = []
    add = MonthWriter.add

    def add_then_break(self: MonthWriter, month: str, frame: pl.DataFrame) -> None:
        add(self, month, frame)
        written.append(month)
        if len(written) == 2:  # a month's file is on disk, the next one's being written:
            # the next month's fetch fails
            assert len(set(store.glob("month=*/*.parquet")) - {Path(p) for p in before}) >= 1
            box.faults = "server_error=1"

    monkeypatch.setattr(MonthWriter, "add", add_then_break)
    try:
        with (
            Client(
                box.base_url, box.secret_key, env_file=None, retry=RetryPolicy(max_retries=0)
            ) as c,  # fmt: skip
            pytest.raises(TxkitError),
        ):
            sync(c, start="2026-06-01", end="2026-10-31", store=store, today=TODAY)
    finally:
        box.faults = None
    assert written == ["2026-06", "2026-07"]
    assert {str(p) for p in store.glob("month=*/*.parquet")} == before
    assert read_state(store).version == 0


def test_a_store_is_named_without_the_local_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit.store._location import store_name

    monkeypatch.chdir(tmp_path)
    assert store_name(tmp_path / "data" / "store" / "sandbox") == "data/store/sandbox"
    assert store_name("/srv/elsewhere/data/store/acme") == "data/store/acme"
    assert store_name("/mnt/share/ledger") == "ledger"
    assert store_name("s3://bucket/txkit") == "s3://bucket/txkit"
