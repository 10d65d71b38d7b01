"""The execution cache's key holds txkit's code and the installed libraries' versions (issue
49): an edited txkit keeps its version under an editable install, and an upgraded library may
change a figure, so either executes the notebooks again."""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

import txkit
from txkit.report import _cache


@pytest.fixture(autouse=True)
def _fresh_digest():
    _cache._code_digest.cache_clear()
    yield
    _cache._code_digest.cache_clear()


def test_an_edited_txkit_changes_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "txkit"
    shutil.copytree(Path(txkit.__file__).parent, copy, ignore=shutil.ignore_patterns("*.pyc"))
    monkeypatch.setattr(txkit, "__file__", str(copy / "__init__.py"))
    before = _cache._code_digest()
    _cache._code_digest.cache_clear()
    assert _cache._code_digest() == before  # the same code, the same key
    (copy / "money.py").write_text((copy / "money.py").read_text() + "\n# edited\n")
    _cache._code_digest.cache_clear()
    assert _cache._code_digest() != before


def test_an_upgraded_library_changes_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _cache._code_digest()
    real = list(importlib.metadata.distributions())

    upgraded = SimpleNamespace(metadata={"Name": "polars"}, version="99.0.0")
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: [*real, upgraded])
    _cache._code_digest.cache_clear()
    assert _cache._code_digest() != before
