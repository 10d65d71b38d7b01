"""The execution cache's key holds txkit's code and the installed libraries' versions (issue
49): an edited txkit keeps its version under an editable install, and an upgraded library may
change a figure, so either executes the notebooks again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import txkit
from txkit.inputs import code_digest
from txkit.report import _cache


@pytest.fixture(autouse=True)
def _fresh_digest():
    code_digest.cache_clear()
    yield
    code_digest.cache_clear()


def test_an_edited_txkit_changes_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "txkit"
    shutil.copytree(Path(txkit.__file__).parent, copy, ignore=shutil.ignore_patterns("*.pyc"))
    monkeypatch.setattr(txkit, "__file__", str(copy / "__init__.py"))
    before = code_digest()
    code_digest.cache_clear()
    assert code_digest() == before  # the same code, the same key
    (copy / "money.py").write_text((copy / "money.py").read_text() + "\n# edited\n")
    code_digest.cache_clear()
    assert code_digest() != before


def test_an_upgraded_library_changes_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = code_digest()
    # Another polars installed ahead on the import path: its metadata folder names its version.
    (tmp_path / "polars-99.0.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    code_digest.cache_clear()
    assert code_digest() != before


def test_a_packs_pdf_made_does_not_change_the_registers_digest(tmp_path: Path) -> None:
    """``txkit report pdf`` records a ``printed`` event; no notebook reads it, so the exceptions
    page (which reads the register) is not executed again for it; a signature still is."""
    from datetime import UTC, datetime

    from txkit.register import record_report
    from txkit.register._table import append_events, events_frame

    store, folder = tmp_path / "store", tmp_path / "2026-10"
    folder.mkdir()
    (folder / "index.html").write_text("<html></html>")
    record_report(store, "2026-10", folder, table_version=1)
    before = _cache._register_digest(store, "2026-11")
    event = {"month": "2026-10", "at": datetime.now(UTC), "note": "0" * 64,
             "explanation": '{"revision": 1, "file": "pack.pdf"}'}  # fmt: skip
    append_events(store, events_frame([{**event, "event": "printed"}]))
    assert _cache._register_digest(store, "2026-11") == before
    append_events(store, events_frame([{**event, "event": "signed", "role": "preparer"}]))
    assert _cache._register_digest(store, "2026-11") != before
