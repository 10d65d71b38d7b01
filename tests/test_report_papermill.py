"""papermill's files in the report: read and written where their paths say, whatever another
lane's or an earlier report's papermill call left in papermill's shared state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from papermill.iorw import papermill_io

from txkit.report._run import _papermill_files_in_place


def test_a_write_ignores_the_folder_an_earlier_run_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _papermill_files_in_place()
    earlier, work = tmp_path / "earlier", tmp_path / "work"
    earlier.mkdir()
    (work / "r2").mkdir(parents=True)
    monkeypatch.chdir(work)
    # What two lanes' interleaved execute_notebook calls left: papermill's own handler kept
    # the earlier report's folder and wrote there ("output folder r2/... doesn't exist").
    papermill_io.get_handler("r2/x.ipynb").cwd(str(earlier))
    papermill_io.write("{}", "r2/x.ipynb")
    assert (work / "r2" / "x.ipynb").read_text() == "{}"
    assert os.getcwd() == str(work)
    assert papermill_io.read("r2/x.ipynb") == "{}"
