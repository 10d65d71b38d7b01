"""Versions of the store: reproducible reports (``--as-of``) after statuses changed upstream."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from txkit import Client
from txkit.report import _summary_of, run_report
from txkit.sandbox import Sandbox, generate_ledger
from txkit.store import read_manifests, read_state, scan_store, sync

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def summary(out: Path) -> list[str]:
    return _summary_of(json.loads((out / "2026-10/01_explore.ipynb").read_text()))


@pytest.mark.report
def test_a_report_as_of_its_version_has_the_same_findings_after_a_status_change(
    tmp_path: Path,
) -> None:
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(NOTEBOOKS / "01_explore.ipynb", books)
    store = tmp_path / "store"
    with (
        Sandbox(ledger=generate_ledger(seed=21, records=4_000)) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sync(client, start="2026-07-01", end="2026-11-03", store=store)  # what the report reads
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
        assert doc["reproduce"].endswith(f"--as-of {version}")
        assert f"at table version {version}" in out.index.read_text()
    assert json.loads((again.index.parent / "report.json").read_text())["as_of"] == 0
    # The executed notebook read exactly that version.
    page = (tmp_path / "r3/2026-10/01_explore.html").read_text()
    assert "at table version 0" in page
    assert pl.Series(list(before.values())).len() == len(after)
