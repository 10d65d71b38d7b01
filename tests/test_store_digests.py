"""Data files prove their content: each file's digest is recorded when it is committed, and
every read checks it. The issue's attacks: 2,000 bytes overwritten in the middle of a month's
file, one bit flipped at 40 random places in turn; each must give the named error, never
different data.
"""

from __future__ import annotations

import logging
import random
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from tests.factories import forget_digests, invoke_cli_all_stderr
from txkit import Client
from txkit.store import (
    StoreDamagedError,
    read_months,
    read_state,
    scan_store,
    sync,
    verify_store,
)

TODAY = date(2026, 11, 21)
OPEN = date(2026, 10, 31)


def month_file(store: Path, month: str) -> Path:
    (part,) = (store / f"month={month}").glob("*.parquet")
    return part


def assert_named(info: pytest.ExceptionInfo, store: Path, month: str) -> None:
    message = str(info.value)
    assert isinstance(info.value, StoreDamagedError) and info.value.months == [month]
    assert f"txkit sync --store {store} --refresh {month}" in message
    assert f"of {month}" in message and "\n" not in message


@pytest.mark.slow  # syncs a store of its own: seconds, out of the quick loop
def test_every_file_is_committed_with_its_digest(sync_client: Client, tmp_path: Path) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    state = read_state(store)
    files = {p.relative_to(store).as_posix() for p in store.glob("month=*/*.parquet")}
    assert set(state.files) == files and len(files) == 2
    assert all(d.startswith("xxh3_128:") and len(d) == 9 + 32 for d in state.files.values())
    checks = verify_store(store)
    assert [c.status for c in checks] == ["ok", "ok"]
    # Other Delta readers ignore the digests (they live in txkit's commit metadata).
    assert pl.scan_delta(str(store)).collect().height == scan_store(store).collect().height
    done = invoke_cli_all_stderr("store", "verify", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 data file(s), 2 verified, 0 damaged or missing" in done.stdout


@pytest.mark.slow  # syncs a store of its own: seconds, out of the quick loop
def test_2000_bytes_overwritten_in_a_months_file_are_a_named_error(
    sync_client: Client, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    good = read_months(["2026-09"], store=store)
    part = month_file(store, "2026-09")
    data = bytearray(part.read_bytes())
    middle = len(data) // 2 - 1000
    data[middle : middle + 2000] = random.Random(3).randbytes(2000)
    part.write_bytes(bytes(data))
    with pytest.raises(StoreDamagedError) as info:
        read_months(["2026-09"], store=store)
    assert_named(info, store, "2026-09")
    assert str(part) in str(info.value)
    with pytest.raises(StoreDamagedError) as info:  # a lazy scan: the named error, no panic
        scan_store(store).collect()
    assert_named(info, store, "2026-09")
    with pytest.raises(StoreDamagedError):
        scan_store(store).select(pl.col("toAmount").sum()).collect()
    # Other months still read, lazily too (a month filter reads only its month).
    assert read_months(["2026-10"], store=store).height > 0
    october = scan_store(store).filter(pl.col("month") == "2026-10").collect()
    assert october.height == read_months(["2026-10"], store=store).height
    # `store verify` lists the file and the repair; exit 1.
    done = invoke_cli_all_stderr("store", "verify", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 1
    assert f"damaged: month=2026-09/{part.name} (2026-09)" in done.stdout
    assert f"repair: txkit sync --store {store} --refresh 2026-09" in done.stdout
    # The repair (run as printed, on the same source) brings the month back, whole.
    sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY,
         refresh=["2026-09"])  # fmt: skip
    assert read_months(["2026-09"], store=store).equals(good)
    assert {c.status for c in verify_store(store)} == {"ok"}


def test_one_bit_flipped_at_40_places_is_always_a_named_error(
    sync_client: Client, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
    part = month_file(store, "2026-09")
    original = part.read_bytes()
    places = random.Random(40).sample(range(len(original) * 8), 40)
    for bit in places:
        flipped = bytearray(original)
        flipped[bit // 8] ^= 1 << (bit % 8)
        part.write_bytes(bytes(flipped))
        with pytest.raises(StoreDamagedError) as info:
            read_months(["2026-09"], store=store)
        assert_named(info, store, "2026-09")
        with pytest.raises(StoreDamagedError):
            scan_store(store).collect()
    part.write_bytes(original)
    assert read_months(["2026-09"], store=store).height > 0


def test_the_syncs_merge_read_checks_digests(sync_client: Client, tmp_path: Path) -> None:
    """A look-back sync reads the stored month to merge it: a damaged file stops it, named,
    and the table stays at its version."""
    store = tmp_path / "store"
    sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=OPEN)
    part = month_file(store, "2026-10")
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x10
    part.write_bytes(bytes(data))
    with pytest.raises(StoreDamagedError) as info:
        sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    assert_named(info, store, "2026-10")
    assert read_state(store).version == 0
    result = sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY,
                  refresh=["2026-10"])  # fmt: skip
    assert result.fetched == {"2026-10": "refresh"}
    assert {c.status for c in verify_store(store)} == {"ok"}


@pytest.mark.slow  # syncs a store of its own: seconds, out of the quick loop
def test_files_without_a_recorded_digest_still_read_and_are_reported(
    sync_client: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    good = read_months(["2026-09"], store=store)
    forget_digests(store)
    with caplog.at_level(logging.WARNING, logger="txkit"):
        assert read_months(["2026-09"], store=store).equals(good)
    assert "unverified (no digest recorded)" in caplog.text
    checks = verify_store(store)
    assert {c.status for c in checks} == {"unverified"}
    assert all("it reads" in c.detail for c in checks)
    done = invoke_cli_all_stderr("store", "verify", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stdout  # nothing damaged: unverified is not damage
    assert "0 verified, 0 damaged or missing, 2 unverified (no digest recorded" in done.stdout
    assert f"txkit sync --store {store} --refresh 2026-09 --refresh 2026-10" in done.stdout
    # The advice, run: the refreshed months get digests.
    sync(sync_client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY,
         refresh=["2026-09", "2026-10"])  # fmt: skip
    assert {c.status for c in verify_store(store)} == {"ok"}


@pytest.mark.slow  # syncs a store of its own: seconds, out of the quick loop
def test_verify_a_version_and_a_missing_file(sync_client: Client, tmp_path: Path) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
    sync(sync_client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
    month_file(store, "2026-10").unlink()
    assert [c.status for c in verify_store(store, version=0)] == ["ok"]
    assert [c.status for c in verify_store(store)] == ["ok", "missing"]
    with pytest.raises(StoreDamagedError) as info:
        read_months(["2026-10"], store=store)
    assert "is missing" in str(info.value)
    done = invoke_cli_all_stderr(
        "store", "verify", "--store", str(store), "--version", "0", cwd=tmp_path
    )
    assert done.returncode == 0 and "table version 0: 1 data file(s), 1 verified" in done.stdout
    bad = invoke_cli_all_stderr(
        "store", "verify", "--store", str(store), "--version", "-1", cwd=tmp_path
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
