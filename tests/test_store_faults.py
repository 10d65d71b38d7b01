"""Faults of the store: a full disk, a read-only store, a damaged data file, a lost log entry.

Each ends with the table at its previous version, or one clear error that names the file and
the command that repairs it; nothing is ever read half. (Killed syncs: ``test_store.py``.)
"""

from __future__ import annotations

import errno
import glob
import os
import subprocess
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from txkit import Client
from txkit.store import StoreError, read_months, read_state, scan_store, sync

TODAY = date(2026, 11, 21)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of its own (4 MB), so the disk can really fill up or turn read-only."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def snapshot(store: Path) -> tuple[int | None, pl.DataFrame]:
    return read_state(store).version, scan_store(store).sort("id").collect()


@pytest.mark.slow
def test_a_full_disk_leaves_the_previous_version(sync_client: Client, tmpfs: Path) -> None:
    store = tmpfs / "store"
    sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
    before = snapshot(store)
    filler = tmpfs / "filler"
    with open(filler, "wb") as handle:  # fill the disk to the last block
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with pytest.raises(StoreError, match="disk is full.*previous version") as info:
        sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    assert "\n" not in str(info.value)
    filler.unlink()
    after = snapshot(store)
    assert after[0] == before[0] and after[1].equals(before[1])
    result = sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    assert result.version == before[0] + 1  # type: ignore[operator]


@pytest.mark.slow
def test_an_injected_enospc_leaves_the_previous_version(
    sync_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deltalake

    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
    before = snapshot(store)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(store / "month=2026-10"))

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    with pytest.raises(StoreError, match=r"the disk is full \(.*month=2026-10\)"):
        sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)

    def rust_full(*args: object, **kwargs: object) -> None:  # delta-rs's own error text
        raise deltalake.exceptions.DeltaError(
            "Generic LocalFileSystem error: No space left on device (os error 28)"
        )

    monkeypatch.undo()
    monkeypatch.setattr(deltalake.DeltaTable, "create_write_transaction", rust_full)
    with pytest.raises(StoreError, match="the disk is full; the store is left at its previous"):
        sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    after = snapshot(store)
    assert after[0] == before[0] and after[1].equals(before[1])


@pytest.mark.slow
def test_a_read_only_store_is_a_clear_error_and_still_readable(
    sync_client: Client, tmpfs: Path
) -> None:
    store = tmpfs / "store"
    sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
    before = snapshot(store)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    with pytest.raises(StoreError, match="read-only") as info:
        sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    assert str(store) in str(info.value) and "\n" not in str(info.value)
    after = snapshot(store)  # reading needs no write
    assert after[0] == before[0] and after[1].equals(before[1])
    assert read_months(["2026-09"], store=store).height == before[1].height


@pytest.mark.slow
def test_a_damaged_data_file_is_named_with_the_command_that_repairs_it(
    sync_client: Client, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    good = read_months(["2026-09"], store=store)
    (part,) = glob.glob(str(store / "month=2026-09" / "*.parquet"))
    Path(part).write_bytes(b"this is not parquet" * 20)
    with pytest.raises(StoreError) as info:
        read_months(["2026-09"], store=store)
    message = str(info.value)
    assert part in message and f"txkit sync --store {store} --refresh 2026-09" in message
    assert read_months(["2026-10"], store=store).height > 0  # other months still read
    with pytest.raises(StoreError) as info:  # only the damaged month is named for --refresh
        read_months(["2026-09", "2026-10"], store=store)
    assert str(info.value).endswith(
        f"run `txkit sync --store {store} --refresh 2026-09` to fetch the month again"
    )
    result = sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY,
                  refresh=["2026-09"])  # fmt: skip
    assert result.fetched == {"2026-09": "refresh"}
    assert read_months(["2026-09"], store=store).equals(good)


@pytest.mark.slow
def test_a_lost_log_entry_is_named_or_leaves_the_previous_version(
    sync_client: Client, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    for month in ("2026-08", "2026-09", "2026-10"):
        first = f"{month}-01"
        sync(sync_client, start=first, end=f"{month}-28", store=store, today=TODAY)
    log = store / "_delta_log"
    at_one = scan_store(store, version=1).sort("id").collect()
    newest = log / f"{2:020d}.json"
    kept = newest.read_bytes()
    newest.unlink()  # the newest commit lost: the table is its previous version, whole
    assert read_state(store).version == 1
    assert scan_store(store).sort("id").collect().equals(at_one)
    assert "2026-10" not in read_state(store).coverage  # coverage agrees with the data
    newest.write_bytes(kept)
    middle = log / f"{1:020d}.json"
    middle.unlink()
    # Each version has its checkpoint: the newest reads whole without the lost entry, and the
    # version whose txkit metadata it held is named when read.
    assert read_state(store).version == 2
    assert scan_store(store).collect().height > at_one.height
    for version in (1, None):
        if version is None:  # without the checkpoints, the log itself has the gap
            for checkpoint in log.glob("*.checkpoint.parquet"):
                checkpoint.unlink()
        with pytest.raises(StoreError) as info:
            read_state(store, version=version)
        message = str(info.value)
        assert f"missing its commit log entry {middle}" in message
        assert f"txkit sync --store {store}" in message and "\n" not in message
    assert os.path.exists(log / f"{0:020d}.json")
