"""tools/compare_reports.py: what differs between two runs of the same code is masked, a
changed digit is not."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import openpyxl
import polars as pl
import pytest

_TOOL = Path(__file__).resolve().parents[1] / "tools" / "compare_reports.py"
_spec = importlib.util.spec_from_file_location("compare_reports", _TOOL)
assert _spec is not None and _spec.loader is not None
compare_reports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_reports)


def _report(project: Path, *, run: str, seconds: str, cell_id: str, amount: str) -> Path:
    """A report folder as ``txkit report`` writes it, with the run's own moments and ids."""
    folder = project / "reports" / "2026-10"
    folder.mkdir(parents=True)
    today = compare_reports.datetime.now(compare_reports.UTC).date().isoformat()
    (folder / "flagged.csv").write_text(
        f"key,amount,changed_at\nk1,{amount},{today}T{run}.376772+0000\n", encoding="utf-8"
    )
    (folder / "index.html").write_text(
        f"<p>at stake {amount} NGN; done in {seconds} s; store {project}/data/store/sandbox;"
        f" staged in {project}/reports/.2026-10.{cell_id}; session "
        f"{cell_id}-1111-2222-3333-444455556666</p>\n",
        encoding="utf-8",
    )
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "id": cell_id,
                "metadata": {"tags": ["injected-parameters"], "papermill": {"duration": seconds}},
                "outputs": [{"text": f"{amount} NGN"}],
                "source": f'store = "{project}/data/store/sandbox"',
            }
        ],
        "metadata": {"papermill": {"start_time": f"{today}T{run}"}},
    }
    (folder / "02_reconciliation.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (folder / "report.json").write_text(
        json.dumps({"rendered_at": f"{today}T{run}Z", "table_id": cell_id, "rows": 6624}),
        encoding="utf-8",
    )
    book = openpyxl.Workbook()
    book.active.append(["amount", "changed_at"])
    book.active.append([float(amount), compare_reports.datetime.fromisoformat(f"{today}T{run}")])
    book.save(folder / "flagged.xlsx")
    pl.DataFrame({"amount": [amount]}).write_parquet(folder / "flagged.register.parquet")
    return folder


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = _report(tmp_path / "a", run="21:46:01", seconds="77.6", cell_id="077db2fb", amount="5.10")
    b = _report(tmp_path / "b", run="22:13:40", seconds="54.6", cell_id="0286696a", amount="5.10")
    return a, b


def test_two_runs_of_the_same_code_do_not_differ(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert compare_reports.main([str(p) for p in two_runs]) == 0
    assert capsys.readouterr().out == "6 files compared, 0 differ\n"


@pytest.mark.parametrize(
    "name", ["flagged.csv", "index.html", "02_reconciliation.ipynb", "flagged.xlsx", "parquet"]
)
def test_a_changed_digit_differs(
    two_runs: tuple[Path, Path], tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    shutil.rmtree(b.parents[1])
    b = _report(tmp_path / "b", run="22:13:40", seconds="54.6", cell_id="0286696a", amount="5.10")
    changed = _report(
        tmp_path / "c", run="22:13:40", seconds="54.6", cell_id="0286696a", amount="5.11"
    )
    target = "flagged.register.parquet" if name == "parquet" else name
    shutil.copy(changed / target, b / target)
    assert compare_reports.main([str(a), str(b)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{target}: differs at line {out[0].rsplit(' ', 1)[1]}"
    assert "5.1" in out[1] and "5.11" not in out[1] and "5.11" in out[2]
    assert out[-1] == "6 files compared, 1 differ"


def test_a_file_on_one_side_only_differs(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    (b / "flagged.csv").unlink()
    assert compare_reports.main([str(a), str(b)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == f"flagged.csv: only in {a}"


def test_a_changed_stable_field_of_report_json_differs(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    (b / "report.json").write_text(
        json.dumps({"rendered_at": "x", "table_id": "y", "rows": 6625}), encoding="utf-8"
    )
    assert compare_reports.main([str(a), str(b)]) == 1
    assert '"rows": 6625' in capsys.readouterr().out
