"""A running report holds its table version against the retention policy (issue 48, Why 5):
``txkit store vacuum`` with ``TXKIT_STORE_KEEP_DAYS=0`` keeps it and says who holds it; a
version that vanished anyway (its lease ignored) is named with what removed it, exit 1.

Real processes: the report (its notebook waits for a file before it reads the month at its
version), the sync that makes a newer version, the vacuums; and a process killed while it
holds a lease."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from datetime import date
from pathlib import Path

import nbformat
import pytest

from tests.factories import cli_env, run_cli, small_notebooks
from txkit import Client
from txkit.store import objects, sync
from txkit.store._lease import LEASES_DIR
from txkit.store._table import log_versions

MONTH = "2025-12"


def _waiting_books(folder: Path, waiting: Path, go: Path) -> Path:
    """The small notebook that reads the month at its version, after waiting for ``go``."""
    small_notebooks(folder, reads_month=True)
    path = folder / "01_small.ipynb"
    book = nbformat.read(path, as_version=4)
    cell = textwrap.dedent(f"""\
        import pathlib, time
        pathlib.Path({str(waiting)!r}).touch()
        until = time.monotonic() + 300
        while not pathlib.Path({str(go)!r}).exists() and time.monotonic() < until:
            time.sleep(0.1)""")
    book.cells.insert(2, nbformat.v4.new_code_cell(cell))
    nbformat.write(book, path)
    return folder


def _leases(store: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((store / LEASES_DIR).glob("lease-*.json"))]


@pytest.mark.slow
@pytest.mark.report
def test_a_vacuum_keeps_a_running_reports_version_and_a_removed_one_is_named(
    tmp_path: Path,
) -> None:
    """Before: the vacuum removed the version the report was reading; the report died with
    "no table version N", exit 2 (which means "your arguments"), the vacuum not named."""
    store, waiting, go = tmp_path / "store", tmp_path / "waiting", tmp_path / "go"
    books = _waiting_books(tmp_path / "books", waiting, go)
    argv = [sys.executable, "-m", "txkit.cli", "report", "--month", MONTH, "--store", str(store),
            "--notebooks", str(books), "--no-progress"]  # fmt: skip
    report = subprocess.Popen(argv, cwd=tmp_path, env=cli_env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not waiting.exists():
            assert report.poll() is None, report.communicate()
            assert time.monotonic() < deadline, "the notebook never started"
            time.sleep(0.2)
        read = log_versions(store)[-1]  # the report read the newest version
        refresh = run_cli("sync", "--store", str(store), "--refresh", MONTH, "--start",
                          "2025-12-01", "--end", "2025-12-31", "--no-progress",
                          cwd=tmp_path)  # fmt: skip
        assert refresh.returncode == 0, refresh.stderr
        assert log_versions(store)[-1] > read, "the sync made a newer version"
        keep0 = {"TXKIT_STORE_KEEP_DAYS": "0"}
        vacuum = run_cli("store", "vacuum", "--store", str(store), cwd=tmp_path, env=keep0)
        assert vacuum.returncode == 0, vacuum.stderr
        held = f"keep version {read}: held by a running txkit report --month {MONTH} (pid "
        assert held in vacuum.stdout, vacuum.stdout
        assert read in log_versions(store)
        assert [lease["version"] for lease in _leases(store)] == [read]
        # A vacuum that does not see the lease (another tool's; the lease deleted by hand)
        # removes the version under the report anyway: the report says what removed it.
        for lease in (store / LEASES_DIR).glob("lease-*.json"):
            lease.unlink()
        again = run_cli("store", "vacuum", "--store", str(store), cwd=tmp_path, env=keep0)
        assert again.returncode == 0, again.stderr
        assert read not in log_versions(store)
        go.touch()
        err = report.communicate(timeout=240)[1]
    finally:
        if report.poll() is None:
            report.kill()
            report.communicate()
    line = err.strip().splitlines()[-1]
    assert report.returncode == 1, err
    assert line.startswith(f"txkit: error: StoreError: table version {read} of the store "), line
    assert f"which this report (txkit report --month {MONTH}) was reading, was removed while it " \
        "ran, by txkit store vacuum (pid " in line  # fmt: skip
    assert "run the report again" in line and not (tmp_path / "reports" / MONTH).exists()


@pytest.mark.slow
def test_a_killed_holders_lease_holds_nothing(tmp_path: Path, sandboxes) -> None:
    """A lease is live while its holder runs: the vacuum after a killed report removes its
    version and its lease; while the holder runs, the version is kept."""
    store = tmp_path / "store"
    box = sandboxes.get(seed=21, records=2_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        for day in (date(2026, 8, 20), date(2026, 8, 21), date(2026, 8, 22)):
            sync(client, start="2026-08-01", end=day, store=store, today=day, retention=False,
                 progress=False)  # fmt: skip
    versions = log_versions(store)
    assert len(versions) >= 3
    holder_code = textwrap.dedent(f"""\
        import sys, time
        from txkit.store import Lease
        lease = Lease({str(store)!r}, "a test holder")
        lease.hold(lambda: {versions[0]}, lambda v: v)
        print("held", flush=True)
        time.sleep(300)""")
    holder = subprocess.Popen([sys.executable, "-c", holder_code], env=cli_env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        keep0 = {"TXKIT_STORE_KEEP_DAYS": "0"}
        dry = run_cli("store", "vacuum", "--store", str(store), "--dry-run", cwd=tmp_path,
                      env=keep0)  # fmt: skip
        assert f"keep version {versions[0]}: held by a running a test holder" in dry.stdout
        kept = run_cli("store", "vacuum", "--store", str(store), cwd=tmp_path, env=keep0)
        assert kept.returncode == 0, kept.stderr
        assert versions[0] in log_versions(store) and versions[1] not in log_versions(store)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    assert len(_leases(store)) == 1  # left by the killed holder
    gone = run_cli("store", "vacuum", "--store", str(store), cwd=tmp_path, env=keep0)
    assert gone.returncode == 0, gone.stderr
    assert versions[0] not in log_versions(store) and _leases(store) == []
    removed = json.loads((store / LEASES_DIR / "removed.json").read_text())
    assert removed[-1]["by"] == "txkit store vacuum" and versions[0] in removed[-1]["dropped"]


@pytest.mark.s3
def test_leases_on_object_storage_are_objects_that_age_out(
    aws: dict[str, str], sandboxes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No lock on S3: a lease is an object, live for LEASE_MAX_AGE; removals are recorded
    there too, and a vanished version names what removed it."""
    from datetime import timedelta

    from txkit.store import Lease, RetentionPolicy, _lease, vacuum_store

    store = "s3://txkit/leases"
    box = sandboxes.get(seed=21, records=2_000)
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        for day in (date(2026, 8, 20), date(2026, 8, 21), date(2026, 8, 22)):
            sync(client, start="2026-08-01", end=day, store=store, today=day, retention=False,
                 progress=False)  # fmt: skip
    policy = RetentionPolicy(keep_days=0, reports=None)
    first, second = log_versions(store)[:2]
    with Lease(store, "a test holder") as lease:
        assert lease.hold(lambda: first, lambda v: v) == first
        kept = vacuum_store(store, policy=policy, grace=timedelta(0))
        assert kept.kept[first].startswith("held by a running a test holder (pid ")
        assert first in log_versions(store) and second not in log_versions(store)
        assert lease.vanished() is None
        monkeypatch.setattr(_lease, "LEASE_MAX_AGE", timedelta(0))  # as if 12 hours old
        vacuum_store(store, policy=policy, grace=timedelta(0))
        assert first not in log_versions(store)
        gone = lease.vanished()
        assert gone is not None and f"table version {first} of the store {store}" in str(gone)
        assert "by txkit store vacuum (pid " in str(gone)
    assert not [o for o in objects(store).list(LEASES_DIR) if "lease-" in o.rel]
