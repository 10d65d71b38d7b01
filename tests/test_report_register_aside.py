"""The register's record made while the last wave of notebooks runs (txkit.report._run):
taken as made when no later notebook touched the lists, made again when one did."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import txkit.report._run as report_run
from txkit.report._plan import Notes


def _aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[list[str]], threading.Event]:
    seen: list[list[str]] = []
    started = threading.Event()

    def record(plan: Any, manifest: Any, staging: Path, materiality: Any, notes: Notes,
               *, orders: Any) -> tuple[str, None]:  # fmt: skip
        lists = sorted(p.name for p in staging.glob("*.register.parquet"))
        seen.append(lists)
        notes.add(f"recorded {len(lists)} lists")
        started.set()
        return f"register of {len(lists)}", None

    monkeypatch.setattr(report_run, "record_register", record)
    (tmp_path / "a.register.parquet").write_bytes(b"a")
    checked = SimpleNamespace(whole=None)
    aside = report_run._RegisterAside(None, None, tmp_path, None, checked)
    return aside, seen, started


def test_the_record_made_during_the_last_wave_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aside, seen, _made = _aside(tmp_path, monkeypatch)
    aside.begin(0)
    aside.begin(1)  # the end of the last wave starts nothing more
    notes = Notes()
    assert aside.result(notes) == ("register of 1", None)
    assert seen == [["a.register.parquet"]] and notes.lines == ["recorded 1 lists"]


def test_a_list_written_by_a_later_notebook_makes_the_record_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aside, seen, made = _aside(tmp_path, monkeypatch)
    aside.begin(0)
    assert made.wait(30)  # the first record read the first wave's lists
    (tmp_path / "b.register.parquet").write_bytes(b"b")  # an edited trends notebook's list
    notes = Notes()
    assert aside.result(notes) == ("register of 2", None)
    assert seen == [["a.register.parquet"], ["a.register.parquet", "b.register.parquet"]]
    assert notes.lines == ["recorded 2 lists"]  # the discarded record says nothing


def test_without_a_wave_ended_the_record_is_made_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aside, seen, _made = _aside(tmp_path, monkeypatch)
    assert aside.result(Notes()) == ("register of 1", None)
    assert seen == [["a.register.parquet"]]
