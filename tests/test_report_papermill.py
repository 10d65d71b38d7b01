"""papermill in the report: notebooks go to papermill and come back as objects, so that its
local files' shared state (a working folder kept in one attribute for every thread, which two
lanes' calls leave stale) is never used, and the process's working folder never changes."""

from __future__ import annotations

import json
import os
import shutil
from datetime import date
from pathlib import Path

import nbformat
import pytest
from papermill.iorw import papermill_io

from txkit.report._execute import run_notebook
from txkit.report._kernels import _kernel_folder, kernel_manager
from txkit.report._lanes import Lane
from txkit.report._plan import ReportPlan

pytestmark = pytest.mark.slow


def test_a_notebook_is_written_where_its_path_says_whatever_papermill_was_left_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone, work, staging = tmp_path / "gone", tmp_path / "work", tmp_path / "work" / "staging"
    gone.mkdir()
    staging.mkdir(parents=True)
    monkeypatch.chdir(work)
    # What two lanes' interleaved papermill calls leave: the local handler's folder, an
    # earlier report's, since removed (papermill's own reads and writes chdir there).
    handler = papermill_io.get_handler("x.ipynb")
    monkeypatch.setattr(handler, "_cwd", str(gone))  # undone after: later tests use paths
    gone.rmdir()
    source = tmp_path / "books" / "01_small.ipynb"
    source.parent.mkdir()
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_markdown_cell("# Small"), nbformat.v4.new_code_cell("1 + 1")]
    book.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "py"}
    nbformat.write(book, source)
    october = (date(2026, 10, 1), date(2026, 10, 31))
    plan = ReportPlan("2026-10", tmp_path, [source], "sandbox", None, *october)
    sockets = _kernel_folder()
    lane = Lane(lambda: kernel_manager(sockets, 0))
    try:
        section = run_notebook(source, plan=plan, parameters={}, staging=staging, lane=lane).page()
    finally:
        lane.close()
        shutil.rmtree(sockets, ignore_errors=True)
    written = json.loads((staging / source.name).read_text(encoding="utf-8"))
    assert written["cells"][1]["outputs"][0]["data"]["text/plain"] == ["2"]
    assert written["metadata"]["papermill"]["input_path"] == str(source)
    assert written["metadata"]["papermill"]["output_path"] == str(staging / source.name)
    assert section.href == "01_small.html" and (staging / "01_small.html").is_file()
    assert os.getcwd() == str(work)
