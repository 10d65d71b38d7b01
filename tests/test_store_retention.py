"""The store after many syncs: old versions read with their own metadata, the retention policy
(kept versions read back identically after a vacuum, on a folder and on S3), checkpoints and
compaction, ``txkit store vacuum``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from tests.factories import invoke_cli
from txkit import Client
from txkit.errors import ConfigError
from txkit.store import (
    StoreDamagedError,
    StoreVersionError,
    read_state,
    scan_store,
    sync,
    sync_needed,
)
from txkit.store._compact import compact_months, crowded_months
from txkit.store._coverage import settled
from txkit.store._location import objects
from txkit.store._retention import RetentionPolicy, vacuum_store
from txkit.store._table import log_versions, open_table, table_files
from txkit.store._write import commit, drop_stale_checkpoints

FIRST_DAY = date(2026, 8, 20)
DAYS = 24  # daily syncs: two checkpoints (versions 10, 20) and three months touched


def snapshot(store: str | Path, version: int) -> pl.DataFrame:
    """Every record of a version, in one order (the month column included)."""
    return scan_store(store, version=version).collect().sort("id")


def daily_syncs(
    client: Client, store: str | Path, days: int = DAYS, first_day: date = FIRST_DAY
) -> list[date]:
    """One look-back sync a day from ``first_day``, keeping every version (retention off)."""
    dates = [first_day + timedelta(days=i) for i in range(days)]
    for day in dates:
        sync(client, start="2026-08-01", end=day, store=store, today=day, retention=False,
             progress=False)  # fmt: skip
    return dates


@pytest.fixture(scope="module")
def year_store(tmp_path_factory: pytest.TempPathFactory, sandboxes) -> Iterator[Path]:
    """A folder store after DAYS daily syncs, every version kept (copied by each test)."""
    store = tmp_path_factory.mktemp("daily") / "store"
    box = sandboxes.get(seed=21, records=3_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        daily_syncs(client, store)
    yield store


def copy_store(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_an_old_version_is_read_with_its_own_metadata_and_digests(
    tmp_path: Path, sandboxes
) -> None:
    """Before: read_state(version=0) took the newest commit's metadata (delta-rs's history()
    of a table opened at an old version labels the newest commits with that version), so an
    old version's coverage was the newest one's and its own files had no digest: read
    unchecked."""
    store = tmp_path / "store"
    box = sandboxes.get(seed=21, records=2_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        sync(client, start="2026-09-01", end="2026-09-30", store=store, retention=False)
        sync(client, start="2026-10-01", end="2026-10-31", store=store, retention=False)
        sync(client, start="2026-10-01", end="2026-10-31", store=store, refresh=["2026-10"],
             retention=False)  # fmt: skip
    for version, months in ((0, ["2026-09"]), (1, ["2026-09", "2026-10"]), (2, None)):
        state = read_state(store, version=version)
        files = {rel for rel, _, _ in table_files(open_table(store, version))}
        assert state.version == version and set(state.files) == files
        if months is not None:
            assert sorted(state.coverage) == months
    october_v1 = next(r for r, m, _ in table_files(open_table(store, 1)) if m == "2026-10")
    assert october_v1 not in read_state(store).files  # refreshed in version 2
    # Version 1's own October file is checked against its own digest.
    path = store / october_v1
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(StoreDamagedError, match="does not match the digest"):
        scan_store(store, version=1).filter(pl.col("month") == "2026-10").collect()
    assert scan_store(store).collect().height > 0  # the newest version does not hold it


@pytest.mark.slow
def test_checkpoints_every_ten_commits_and_at_the_newest(year_store: Path) -> None:
    """Each commit writes its checkpoint (opening the newest version reads it alone) and drops
    the ones before the last two that only did that; those at the interval stay."""
    names = sorted(p.name for p in (year_store / "_delta_log").iterdir())
    assert [n for n in names if "checkpoint.parquet" in n] == [
        f"{v:020d}.checkpoint.parquet" for v in (10, 20, DAYS - 2, DAYS - 1)
    ]
    assert len([n for n in names if n.endswith(".json")]) == DAYS  # no commit is removed
    hint = json.loads((year_store / "_delta_log/_last_checkpoint").read_text())
    assert hint["version"] == DAYS - 1


@pytest.mark.slow
def test_a_complete_months_coverage_is_merged_and_old_versions_keep_their_own(
    year_store: Path,
) -> None:
    """August completes at the sync of September 8 (its 31st settled 7 days on): from that
    commit on its daily fetches are merged windows that still prove it complete; a version
    read as of before keeps its own fetches, and reads back as it was."""
    states = [read_state(year_store, version=v) for v in range(DAYS)]
    done = [s.coverage["2026-08"].complete(7) for s in states]
    first_done = done.index(True)
    assert FIRST_DAY + timedelta(days=first_done) == date(2026, 9, 8)
    assert done == [False] * first_done + [True] * (DAYS - first_done)
    for state in states:
        kinds = [f.kind for f in state.coverage["2026-08"].fetches]
        assert ("merged" in kinds) == (state.version >= first_done)
        september = state.coverage.get("2026-09")  # open: never merged
        assert september is None or "merged" not in [f.kind for f in september.fetches]
    before = states[first_done - 1].coverage["2026-08"]
    after = states[-1].coverage["2026-08"]
    assert len(before.fetches) > 10 and len(after.fetches) <= 3
    # The fetches unmerged: those of the version before, plus the one that completed it.
    assert after.last_fetch is not None and after.last_fetch not in before.fetches
    unmerged = before.with_fetch(after.last_fetch, replace=False, rows=after.rows, newest=None)
    for day in [date(2026, 8, d) for d in range(1, 32)]:
        seen, real = after.newest_fetch_of(day), unmerged.newest_fetch_of(day)
        assert seen is not None and real is not None
        assert settled(day, seen, 7) and seen <= real  # settled, and no later than it was
    # The merged month needs nothing under the look-back it was completed with; a longer one
    # fetches its days again (the merged windows prove 7 days, no more).
    later = date(2026, 10, 1)
    assert not sync_needed(store=year_store, start="2026-08-01", end="2026-08-31", today=later)
    assert sync_needed(store=year_store, start="2026-08-01", end="2026-08-31", today=later,
                       lookback_days=12)  # fmt: skip
    old = scan_store(year_store, version=first_done - 1).filter(pl.col("month") == "2026-08")
    assert old.collect().height == before.rows
    assert read_state(year_store, version=first_done - 1).coverage["2026-08"] == before


def vacuum_keeps_what_it_must(
    store: str | Path,
    tmp_path: Path,
    *,
    days: int = DAYS,
    first_day: date = FIRST_DAY,
    keep_days: int = 5,
    **vacuum: object,
) -> None:
    """Vacuum ``store`` (``days`` daily versions from ``first_day``) with ``keep_days`` days
    kept, a report citing version 2, another table's report citing version 4, and a source
    keeping version 7; every kept version then reads back identically and nothing else can
    be read."""
    newest = read_state(store).version
    assert newest == days - 1
    assert newest - keep_days - 1 > 7  # version 7 is kept by its source alone
    before = {v: snapshot(store, v) for v in range(newest + 1)}
    # Each version's own coverage (August merged from the sync of September 8 on, not before).
    coverage = {v: read_state(store, version=v).coverage for v in range(newest + 1)}
    table_id = read_state(store).table_id
    reports = tmp_path / "reports"
    for name, version, of in (("2026-08", 2, table_id), ("other", 4, "another-table")):
        (reports / name).mkdir(parents=True)
        doc = {"month": name, "table_version": version, "table_id": of, "store": "elsewhere"}
        (reports / name / "report.json").write_text(json.dumps(doc))
    policy = RetentionPolicy(keep_days=keep_days, reports=reports, sources=(lambda s, t: [7],))
    now = datetime.combine(first_day + timedelta(days=days - 1), datetime.min.time(), UTC)
    dry = vacuum_store(store, policy=policy, dry_run=True, now=now, **vacuum)
    assert dry.files and log_versions(store) == list(range(newest + 1))  # nothing removed
    done = vacuum_store(store, policy=policy, now=now, **vacuum)
    assert (done.files, done.log_entries) == (dry.files, dry.log_entries)
    # Within 5 days of 24: versions 18..23 (synced on days 18..23), 17 was newest at the cutoff.
    expected = {2, 7, *range(newest - keep_days - 1, newest + 1)}
    assert set(done.kept) == expected
    assert "cited by" in done.kept[2] and "reports/2026-08/report.json" in done.kept[2]
    assert log_versions(store) == sorted(expected)
    for version in sorted(expected):
        after = snapshot(store, version)
        assert after.equals(before[version]), version
        assert read_state(store, version=version).coverage == coverage[version], version
    for version in sorted(set(range(newest + 1)) - expected):
        with pytest.raises(StoreVersionError, match="removed by the retention policy"):
            scan_store(store, version=version)
    # Every data file left is one a kept version reads; the rest were removed.
    needed = {rel for v in expected for rel, _, _ in table_files(open_table(store, v))}
    left = {o.rel for o in objects(store).list() if o.rel.endswith(".parquet")
            and not o.rel.startswith(("_delta_log/", "_register/"))}  # fmt: skip
    assert left == needed
    assert {rel for rel, _ in done.files}.isdisjoint(needed) and done.bytes > 0
    # Applied again, nothing more goes.
    again = vacuum_store(store, policy=policy, now=now, **vacuum)
    assert not again.files and not again.log_entries
    # Later commits drop the checkpoint of 22 (of 24 versions: readable from 20 and the commits
    # after it), never those of 2, 7 and 17, whose earlier commits are gone, nor the one the
    # `_last_checkpoint` hint names (23, until a newer one is written).
    assert drop_stale_checkpoints(store, newest + 5) == [newest - 1]
    for version in sorted(expected):
        assert snapshot(store, version).equals(before[version]), version


@pytest.mark.slow
def test_vacuum_on_a_folder_keeps_every_kept_version_identical(
    year_store: Path, tmp_path: Path
) -> None:
    store = copy_store(year_store, tmp_path / "store")
    # The exception register lives in the store's folder (`_register/`, a table of its own):
    # none of its files is the policy's to remove, however old.
    register = store / "_register" / "part-00000-old.snappy.parquet"
    register.parent.mkdir()
    pl.DataFrame({"event": ["reported"]}).write_parquet(register)
    os.utime(register, (0, 0))
    vacuum_keeps_what_it_must(store, tmp_path)
    assert register.is_file()


@pytest.mark.slow
def test_a_sync_applies_the_policy_after_its_commit(year_store: Path, tmp_path: Path, sandboxes):
    store = copy_store(year_store, tmp_path / "store")
    day = FIRST_DAY + timedelta(days=DAYS)
    box = sandboxes.get(seed=21, records=3_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        result = sync(client, start="2026-08-01", end=day, store=store, today=day,
                      retention=RetentionPolicy(keep_days=3, reports=None))  # fmt: skip
    assert result.version == DAYS and result.vacuum is not None
    # Synced later in the day than the sync 3 days before: versions 22..24 within 3 days, 21
    # the newest at the cutoff.
    assert sorted(result.vacuum.kept) == list(range(DAYS - 3, DAYS + 1))
    assert log_versions(store) == sorted(result.vacuum.kept) and result.vacuum.files


@pytest.mark.slow
def test_a_month_in_several_files_is_compacted_into_one(year_store: Path, tmp_path: Path) -> None:
    store = copy_store(year_store, tmp_path / "store")
    state = read_state(store)
    august = scan_store(store).filter(pl.col("month") == "2026-08").collect()
    halves = [august.head(august.height // 2), august.tail(august.height - august.height // 2)]
    from txkit.store._state import commit_metadata

    meta = commit_metadata(state.source, state.lookback_days, state.coverage)
    commit(store, state.version, halves, ["2026-08"], meta, state.files)
    assert crowded_months(store) == ["2026-08"]
    before = snapshot(store, DAYS)
    version = compact_months(store)
    assert version == DAYS + 1 and crowded_months(store) == []
    assert snapshot(store, version).equals(before)
    assert compact_months(store) is None  # nothing left to compact


@pytest.mark.slow
def test_cli_vacuum_lists_what_it_removes(year_store: Path, tmp_path: Path) -> None:
    store = copy_store(year_store, tmp_path / "store")
    dry = invoke_cli("store", "vacuum", "--store", str(store), "--dry-run", "--keep-days", "0",
                     cwd=tmp_path)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "would remove" in dry.stdout and "keep version 23: the newest version" in dry.stdout
    assert log_versions(store) == list(range(DAYS))
    done = invoke_cli("store", "vacuum", "--store", str(store), "--keep-days", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    removed = [line.split(": ", 1)[1].split(" (")[0] for line in done.stdout.splitlines()
               if line.startswith("  removed: month=")]  # fmt: skip
    assert removed and not any((store / rel).exists() for rel in removed)
    assert log_versions(store) == [DAYS - 1]  # the sync clock is in the past: only the newest
    bad = invoke_cli("store", "vacuum", "--store", str(store), "--keep-days", "x", cwd=tmp_path)
    assert bad.returncode == 2 and "a number of days is a whole number" in bad.stderr


def test_keep_days_from_the_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TXKIT_STORE_KEEP_DAYS", raising=False)
    assert RetentionPolicy.from_config().keep_days == 30
    monkeypatch.setenv("TXKIT_STORE_KEEP_DAYS", "90")
    assert RetentionPolicy.from_config().keep_days == 90
    assert RetentionPolicy.from_config(keep_days=2).keep_days == 2
    monkeypatch.setenv("TXKIT_STORE_KEEP_DAYS", "30d")
    with pytest.raises(ConfigError, match="TXKIT_STORE_KEEP_DAYS .* whole number of days"):
        RetentionPolicy.from_config()


@pytest.mark.slow
def test_an_unreadable_report_stops_the_removal(year_store: Path, tmp_path: Path) -> None:
    store = copy_store(year_store, tmp_path / "store")
    (tmp_path / "reports/2026-08").mkdir(parents=True)
    (tmp_path / "reports/2026-08/report.json").write_text("{not json")
    policy = RetentionPolicy(keep_days=0, reports=tmp_path / "reports")
    from txkit.errors import StoreError

    with pytest.raises(StoreError, match="report.json .* removes nothing"):
        vacuum_store(store, policy=policy)
    assert log_versions(store) == list(range(DAYS))


@pytest.mark.s3
def test_vacuum_on_s3_keeps_every_kept_version_identical(
    aws: dict[str, str],
    tmp_path: Path,
    sandboxes,
) -> None:
    """The folder twin's case on S3 in 13 daily syncs instead of 24 (the long run is the
    folder's; 24 syncs and the reads of every version cost 30 s of CPU, mostly moto's): still
    a checkpoint at the interval (10) and at the newest two, August merged on the way (the
    sync of September 8 is version 11), and versions kept by a report, by a source and by age
    (2 days: 9..12), the others removed."""
    store = "s3://txkit/retention"
    days, first_day = 13, date(2026, 8, 28)
    box = sandboxes.get(seed=21, records=3_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        daily_syncs(client, store, days, first_day)
    states = [read_state(store, version=v) for v in (10, 11)]
    assert [s.coverage["2026-08"].complete(7) for s in states] == [False, True]
    names = {o.rel.rsplit("/", 1)[-1] for o in objects(store).list()}
    assert {n for n in names if "checkpoint.parquet" in n} == {
        f"{v:020d}.checkpoint.parquet" for v in (10, 11, 12)
    }
    # No lock on object storage: files younger than an hour are kept unless told otherwise.
    young = vacuum_store(store, policy=RetentionPolicy(keep_days=0, reports=None), dry_run=True)
    assert not young.files and young.log_entries
    vacuum_keeps_what_it_must(
        store, tmp_path, days=days, first_day=first_day, keep_days=2, grace=timedelta(0)
    )
