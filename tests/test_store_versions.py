"""Versions of the store: reproducible reports (``--as-of``) after statuses changed upstream."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest

from tests.factories import invoke_cli, small_notebooks
from txkit import Client
from txkit.report import run_report
from txkit.report._html import summary_of
from txkit.report._plan import sandbox_calendar, sync_range
from txkit.sandbox import Sandbox, generate_ledger
from txkit.store import read_manifests, read_state, scan_store, sync

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def summary(out: Path) -> list[str]:
    """The findings of the report's notebook: the month's count per status."""
    return summary_of(json.loads((out / "2026-10/01_small.ipynb").read_text()))


@pytest.mark.report
def test_a_report_as_of_its_version_has_the_same_findings_after_a_status_change(
    tmp_path: Path,
) -> None:
    # A notebook that reads the month at the report's version and counts its statuses: the
    # findings a status change moves (the explore notebook costs 1.5 s of CPU more a report).
    books = small_notebooks(tmp_path / "books", reads_month=True)
    store = tmp_path / "store"
    with (
        Sandbox(ledger=generate_ledger(seed=21, records=4_000)) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        start, end = sync_range("2026-10", sandbox_calendar())  # what the report reads
        sync(client, start=start, end=end, store=store)
        assert read_manifests(store)["2026-10"].complete  # the report syncs nothing
        first = run_report("2026-10", store=store, out=tmp_path / "r1", notebooks=books,
                           progress=False)  # fmt: skip
        before = dict(scan_store(store).select("id", "status").collect().iter_rows())
        box.faults = "status_changes=40"
        for _ in range(30):  # each served page changes one in-flight record
            client.get_transactions({"limit": 5})
        box.faults = None
        sync(client, start="2026-10-01", end="2026-10-31", store=store, refresh=["2026-10"])
    after = dict(scan_store(store).select("id", "status").collect().iter_rows())
    assert after != before and read_state(store).version == 1
    assert first.sync is None
    latest = run_report("2026-10", store=store, out=tmp_path / "r2", notebooks=books,
                        progress=False)  # fmt: skip
    again = run_report("2026-10", store=store, out=tmp_path / "r3", notebooks=books,
                       progress=False, as_of=0)  # fmt: skip
    assert summary(tmp_path / "r3") == summary(tmp_path / "r1")
    assert summary(tmp_path / "r2") != summary(tmp_path / "r1")  # the change is visible
    for out, version in ((first, 0), (latest, 1), (again, 0)):
        doc = json.loads((out.index.parent / "report.json").read_text())
        assert doc["table_version"] == version and doc["month"] == "2026-10"
        assert doc["table_id"] == read_state(store).table_id  # what the retention policy keeps
        assert doc["reproduce"].endswith(f"--as-of {version}")
        assert f"at table version {version}" in out.index.read_text()
    assert json.loads((again.index.parent / "report.json").read_text())["as_of"] == 0
    # The executed notebook read exactly that version.
    page = (tmp_path / "r3/2026-10/01_small.html").read_text()
    assert "table version 0" in page and "table version 1" not in page
    assert pl.Series(list(before.values())).len() == len(after)


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with table versions 0 and 1 (October, then October refreshed)."""
    store = tmp_path_factory.mktemp("versions") / "store"
    with (
        Sandbox(ledger=generate_ledger(seed=21, records=2_000)) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sync(client, start="2026-10-01", end="2026-10-31", store=store)
        sync(client, start="2026-10-01", end="2026-10-31", store=store, refresh=["2026-10"])
    assert read_state(store).version == 1
    return store


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "aside" not in lines[0] and "damaged" not in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("version", ["-1", "1.5", "x", "99999999999999999999999", "\uff11", ""])
def test_a_bad_version_argument_is_exit_2_not_advice_to_move_the_store(
    version: str, two_versions: Path, tmp_path: Path
) -> None:
    """Before: ``--as-of -1`` or a huge version said the store could not be read and to move
    it aside (exit 1)."""
    args = ["report", "--month", "2026-10", "--as-of", version, "--store", str(two_versions)]
    line = _one_line(invoke_cli(*args, cwd=tmp_path), 2)
    assert "a table version is a whole number, 0 or more" in line
    assert not (tmp_path / "reports").exists()


@pytest.mark.slow
def test_a_version_the_store_does_not_have_names_those_it_has(
    two_versions: Path, tmp_path: Path
) -> None:
    args = ["report", "--month", "2026-10", "--as-of", "7", "--store", str(two_versions),
            "--notebooks", str(NOTEBOOKS)]  # fmt: skip
    line = _one_line(invoke_cli(*args, cwd=tmp_path), 2)
    assert f"the store {two_versions} has no table version 7: it has versions 0 to 1" in line
    assert not (tmp_path / "reports").exists()


def test_python_entries_validate_the_version(two_versions: Path) -> None:
    from txkit.errors import StoreError, StoreVersionError
    from txkit.notebook import load_month

    for bad in (-1, True, 1.5, "1"):
        with pytest.raises(ValueError, match="version must be a whole number, 0 or more"):
            scan_store(two_versions, version=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="version must be a whole number, 0 or more"):
            load_month("2026-10", source="store", store=two_versions, version=bad)  # type: ignore[arg-type]
    for missing in (2, 10**30):
        with pytest.raises(StoreVersionError, match="it has versions 0 to 1") as info:
            read_manifests(two_versions, version=missing)
        assert isinstance(info.value, StoreError) and isinstance(info.value, ValueError)
    assert read_manifests(two_versions, version=0)["2026-10"].table_version == 0
    with pytest.raises(StoreVersionError, match="has no table yet, so no version 0"):
        scan_store(two_versions.parent / "empty", version=0)
