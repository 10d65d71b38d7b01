"""The notebooks as an analyst runs them in JupyterLab: a kernel started in ``notebooks/``
(not the report's), no ``TXKIT_PROGRESS``, the result saved.

* a bad parameter is the CLI's one line, and Run All stops there;
* a load's progress leaves nothing in the saved notebook (no widget, no progress text);
* 05, run in ``notebooks/`` of a project before and after ``txkit report``, finds that
  project's data and reports (05's match rates and breaks) and saves the committed file
  (every notebook's run in a project's ``notebooks/`` is nbval's, in ``make test``).
"""

from __future__ import annotations

import configparser
import json
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests.factories import SessionReport
from tools.clean_notebooks import clean

ROOT = Path(__file__).resolve().parent.parent
TRENDS = ROOT / "notebooks" / "05_trends.ipynb"


@pytest.fixture
def as_in_jupyterlab(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment JupyterLab gives a kernel: none of the test run's txkit settings."""
    for name in ("TXKIT_PROGRESS", "TXKIT_DATA_DIR", "TXKIT_SECRET_KEY", "TXKIT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def execute(nb: Any, folder: Path, *, allow_errors: bool = False) -> Any:
    """Run ``nb`` in a fresh kernel started in ``folder``, as JupyterLab's Run All does (outputs
    kept as the browser keeps them, display updates applied), and return it."""
    for cell in nb.cells:  # Restart Kernel and Run All: the stored outputs go first
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return nb


def test_a_bad_month_is_the_clis_one_line_and_run_all_stops(
    tmp_path: Path, as_in_jupyterlab: None
) -> None:
    nb = nbformat.read(ROOT / "notebooks" / "08_fees.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = params.source.replace('month = "2026-10"', 'month = "2026-5"')
    assert 'month = "2026-5"' in params.source
    with pytest.raises(CellExecutionError):
        execute(nb, tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    failed = [c for c in code if any(o.output_type == "error" for o in c.outputs)]
    assert len(failed) == 1
    (error,) = [o for o in failed[0].outputs if o.output_type == "error"]
    # The CLI's message for `txkit report --month 2026-5`, as txkit's own errors print it.
    assert error.traceback == ["txkit: error: month must be YYYY-MM (e.g. 2026-10), got '2026-5'"]
    assert error.ename == "ParameterError"
    after = code[code.index(failed[0]) + 1 :]
    assert after and all(c.execution_count is None for c in after)


def test_the_jupyter_line_does_what_the_terminal_bar_does() -> None:
    from txkit.fetch.progress import ExportBar, JupyterLine

    asked = {name for name in vars(ExportBar) if not name.startswith("_")}
    assert asked <= {name for name in dir(JupyterLine) if not name.startswith("_")}


LOADING = """
import logging, warnings
import txkit.notebook
{before}
df, info = txkit.notebook.load_month("2026-10", source="sandbox")
{after}
print(len(df))
"""


@pytest.mark.slow
def test_a_loads_progress_leaves_nothing_in_the_saved_notebook(
    tmp_path: Path, as_in_jupyterlab: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXKIT_PROGRESS", "1")  # shown in a kernel even if not by default
    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(LOADING.format(before="", after="")),
        # Something shown before the load: the line is emptied, never the cell cleared.
        nbformat.v4.new_code_cell(LOADING.format(before="print('kept')", after="")),
    ]
    execute(nb, tmp_path)
    first, second = (c.outputs for c in nb.cells)
    assert [o.output_type for o in first] == ["stream"], first
    assert first[0].text.strip().isdigit()
    assert "kept" in second[0].text
    text = json.dumps([first, second])
    assert "txkit export" not in text and "widget" not in text and "model_id" not in text


# -- every notebook in notebooks/ of a project, after a report ---------------------------------


def _sanitizers() -> list[tuple[re.Pattern[str], str]]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "notebooks" / "nbval_sanitize.cfg")
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def comparable(path: Path) -> dict[str, Any]:
    """A notebook as ``make notebooks`` leaves it (:func:`tools.clean_notebooks.clean`), with
    what nbval ignores left out: the outputs of cells tagged ``nbval-ignore-output`` (figures,
    compared by type only) and the run-dependent texts of ``nbval_sanitize.cfg``."""
    clean(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    text = json.dumps(nb)
    for pattern, replace in _sanitizers():
        text = pattern.sub(replace, text)
    nb = json.loads(text)
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        # 05's table and findings are tagged for nbval (a checkout may hold reports), but a
        # project as cloned has none: compared here.
        if "nbval-ignore-output" in tags and "txkit-reads-reports" not in tags:
            cell["outputs"] = [
                sorted(o.get("data", {}) or [o["output_type"]]) for o in cell["outputs"]
            ]
    nb["metadata"].get("language_info", {}).pop("version", None)
    return nb


def _match_rates(nb: dict[str, Any]) -> list[str]:
    """The 2026-10 rows of 05's table (plain text), with their match rate and breaks."""
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            plain = "".join(output.get("data", {}).get("text/plain", ""))
            if "match_rate" in plain:
                return [line for line in plain.splitlines() if line.startswith("2026-10")]
    return []


@pytest.fixture(scope="module")
def jupyterlab_runs(
    session_report: SessionReport, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """A project as cloned, with the store a report synced: 05 (the notebook that reads
    ``reports/``) run in its ``notebooks/`` folder and saved in place; then the report's
    ``reports/`` copied in and 05 run again (``05_after_report``). Every notebook's run in a
    project's ``notebooks/`` is nbval's (``make test`` validates the notebooks of a project
    ``txkit init`` made); 05's cells that read ``reports/`` are left out there and compared
    here. The project, and seconds per run."""
    import os
    import time

    project = tmp_path_factory.mktemp("project")
    session_report.copy_data(project)
    (project / "notebooks").mkdir()
    shutil.copy(TRENDS, project / "notebooks")
    shutil.copy(ROOT / "materiality.toml", project)
    saved = dict(os.environ)
    for name in ("TXKIT_PROGRESS", "TXKIT_DATA_DIR", "TXKIT_SECRET_KEY", "TXKIT_BASE_URL"):
        os.environ.pop(name, None)
    seconds: dict[str, float] = {}

    def run(path: Path, name: str) -> None:
        nb = nbformat.read(path, as_version=4)
        began = time.perf_counter()
        execute(nb, path.parent)
        seconds[name] = time.perf_counter() - began
        nbformat.write(nb, path.with_name(f"{name}.ipynb"))

    try:
        run(project / "notebooks" / TRENDS.name, TRENDS.stem)
        shutil.copytree(session_report.workdir / "reports", project / "reports")
        run(project / "notebooks" / TRENDS.name, "05_after_report")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {"project": project, "seconds": seconds}


@pytest.mark.slow
def test_05_in_jupyterlab_reads_the_projects_data_and_reports(
    jupyterlab_runs: dict[str, Any], session_report: SessionReport
) -> None:
    project = jupyterlab_runs["project"]
    assert sorted(jupyterlab_runs["seconds"]) == ["05_after_report", TRENDS.stem]
    # No second data folder or reports folder beside the notebooks.
    assert [p.name for p in (project / "notebooks").iterdir() if p.is_dir()] == []
    ran = json.loads((project / "notebooks" / "05_after_report.ipynb").read_text())
    in_report = json.loads((session_report.folder / "05_trends.ipynb").read_text())
    rows = _match_rates(ran)
    assert rows and all("%" in row for row in rows), rows
    assert rows == _match_rates(in_report)
    before = _match_rates(json.loads((project / "notebooks" / "05_trends.ipynb").read_text()))
    assert before and before != rows  # without reports the rate and breaks are blank


@pytest.mark.slow
def test_05_saved_in_jupyterlab_is_the_committed_file(
    jupyterlab_runs: dict[str, Any], tmp_path: Path
) -> None:
    project, path = jupyterlab_runs["project"], TRENDS
    committed = comparable(Path(shutil.copy(path, tmp_path / "committed.ipynb")))
    saved = comparable(
        Path(shutil.copy(project / "notebooks" / path.name, tmp_path / "saved.ipynb"))
    )
    assert json.dumps(saved, indent=1).splitlines() == json.dumps(committed, indent=1).splitlines()
    assert "application/vnd.jupyter.widget" not in json.dumps(saved)
