"""The merchant's close project (issue 45): ``txkit --version``, ``txkit init`` and
``txkit notebooks status|update``, which never overwrite an edit."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import nbformat
import pytest
from nbformat.sign import NotebookNotary

import txkit
from tests.factories import ROOT, invoke_cli, run_cli
from txkit.inputs.columns import BANK, ORDERS
from txkit.project import cell_digest, curated_notebooks, run_order, template_dir

CURATED = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture
def jupyter_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The user's Jupyter data folder (its signature database) for this test alone."""
    folder = tmp_path / "jupyter-data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(folder))
    return {"JUPYTER_DATA_DIR": str(folder)}


@pytest.fixture
def acme(tmp_path: Path, jupyter_data: dict[str, str]) -> Path:
    done = invoke_cli("init", "acme", cwd=tmp_path, env=jupyter_data)
    assert done.returncode == 0, done.stderr
    return tmp_path / "acme"


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def test_the_version_is_written_once_and_printed() -> None:
    done = run_cli("--version", cwd=ROOT)
    assert done.returncode == 0 and done.stdout == f"txkit {txkit.__version__}\n"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "txkit.__version__"}


def test_the_package_ships_the_curated_notebooks_and_the_template() -> None:
    assert [c.name for c in curated_notebooks()] == CURATED and len(CURATED) == 8
    names = {p.name for p in template_dir().iterdir()}
    assert names == {"txkit.toml", "materiality.toml", "env.example", "gitignore", "README.md"}
    # The template's thresholds are the repository's own.
    assert (template_dir() / "materiality.toml").read_bytes() == (
        ROOT / "materiality.toml"
    ).read_bytes()


def test_the_template_settings_comment_every_key_and_read_as_no_settings() -> None:
    text = (template_dir() / "txkit.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text) == {"orders": {}, "bank": {}}
    for kind in (ORDERS, BANK):
        section = text.split(f"[{kind.section}]", 1)[1].split("\n[", 1)[0]
        commented = set(re.findall(r"^# \"?([a-z_.]+)\"? = ", section, re.M))
        assert set(kind.keys) <= commented, set(kind.keys) - commented


def test_init_makes_a_project_with_recorded_trusted_notebooks(acme: Path) -> None:
    assert sorted(p.name for p in acme.iterdir()) == sorted(
        [".env.example", ".gitignore", "README.md", "inputs", "materiality.toml", "notebooks",
         "txkit.toml"]
    )  # fmt: skip
    assert sorted(p.name for p in (acme / "notebooks").iterdir()) == CURATED
    notary = NotebookNotary()
    for curated in curated_notebooks():
        copy = _read(acme / "notebooks" / curated.name)
        # The record joins what the curated notebook waits for in a report (05, 07).
        shipped = _read(curated.path).metadata.get("txkit", {})
        record = {"version": txkit.__version__, "digest": curated.digest}
        assert copy.metadata["txkit"] == {**shipped, **record}
        assert run_order(copy, curated.name) == shipped
        assert cell_digest(copy) == curated.digest
        assert "jupytext" not in copy.metadata  # not paired with a .py file in a project
        assert notary.check_signature(copy), f"{curated.name} is not trusted"
    # The repository's notebooks carry no record: it is computed when a copy is written.
    assert "txkit" not in json.loads((ROOT / "notebooks" / CURATED[0]).read_text())["metadata"]
    gitignore = (acme / ".gitignore").read_text().splitlines()
    assert ".env" in gitignore and "data/" in gitignore and "reports/" not in gitignore


def test_a_copy_that_lost_what_it_waits_for_takes_the_shipped_notebooks(acme: Path) -> None:
    """Copies written before txkit kept those keys hold the record alone: a report ran the
    exceptions page beside the fees page, and its page missed the fee items."""
    books = acme / "notebooks"
    for name, expected in (
        ("05_trends.ipynb", {"after": ["02_reconciliation", "04_balance_checks"]}),
        ("07_exceptions.ipynb", {"after_others": True}),
        ("02_reconciliation.ipynb", {}),
    ):
        copy = _read(books / name)
        copy.metadata["txkit"] = {"version": "0.0.9", "digest": "0" * 64}
        assert run_order(copy, name) == expected
    edited = _read(books / "05_trends.ipynb")
    edited.metadata["txkit"] = {"version": "0.0.9", "digest": "0" * 64, "after_others": True}
    assert run_order(edited, "05_trends.ipynb") == {"after_others": True}  # its own, kept
    assert run_order(_read(books / "05_trends.ipynb"), "my_own.ipynb")["after"]  # its own
    assert run_order({"metadata": {}}, "05_trends.ipynb") == {}  # no record: not a copy


def test_init_prints_the_next_commands(tmp_path: Path, jupyter_data: dict[str, str]) -> None:
    done = invoke_cli("init", "acme", cwd=tmp_path, env=jupyter_data)
    assert "cd acme" in done.stdout and "txkit report --month" in done.stdout


@pytest.mark.parametrize("existing", ["txkit.toml", "README.md", "notebooks"])
def test_init_refuses_an_existing_project_and_writes_nothing(
    tmp_path: Path, jupyter_data: dict[str, str], existing: str
) -> None:
    folder = tmp_path / "acme"
    folder.mkdir()
    if existing == "notebooks":
        (folder / existing).mkdir()
    else:
        (folder / existing).write_text("ours\n")
    before = sorted(p.name for p in folder.rglob("*"))
    done = invoke_cli("init", "acme", cwd=tmp_path, env=jupyter_data)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "already a project" in done.stderr
    assert str(folder) in done.stderr and existing in done.stderr
    assert sorted(p.name for p in folder.rglob("*")) == before
    if existing != "notebooks":
        assert (folder / existing).read_text() == "ours\n"


def test_init_refuses_a_file(tmp_path: Path, jupyter_data: dict[str, str]) -> None:
    (tmp_path / "acme").write_text("x")
    done = invoke_cli("init", "acme", cwd=tmp_path, env=jupyter_data)
    assert done.returncode == 2 and "is a file" in done.stderr


def test_init_in_the_working_folder(tmp_path: Path, jupyter_data: dict[str, str]) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "orders.csv").write_text("kept\n")  # the merchant's file: left as is
    done = invoke_cli("init", cwd=tmp_path / "acme", env=jupyter_data)
    assert done.returncode == 0 and "cd " not in done.stdout
    assert (tmp_path / "acme" / "txkit.toml").is_file()
    assert not [p for p in (tmp_path / "acme").iterdir() if p.name.startswith(".txkit-init")]


def _edit(path: Path, old: str, new: str) -> None:
    notebook = _read(path)
    cells = [c for c in notebook.cells if old in c.source]
    assert cells, f"{old!r} not in {path.name}"
    cells[0].source = cells[0].source.replace(old, new, 1)
    nbformat.write(notebook, path)


def _as_if_older(path: Path) -> None:
    """The copy as an older txkit wrote it: other curated cells, and its record of them."""
    notebook = _read(path)
    notebook.cells[0].source += "\n(as txkit 0.0.9 wrote it)"
    notebook.metadata["txkit"] = {"version": "0.0.9", "digest": cell_digest(notebook)}
    nbformat.write(notebook, path)


def test_status_and_update_never_overwrite_an_edit(acme: Path, jupyter_data: dict) -> None:
    books = acme / "notebooks"
    _edit(books / "02_reconciliation.ipynb", "date_tolerance = ", "date_tolerance_days = ")
    _as_if_older(books / "03_underpayments.ipynb")
    (books / "04_balance_checks.ipynb").unlink()
    _as_if_older(books / "05_trends.ipynb")
    _edit(books / "05_trends.ipynb", "month = ", "period = ")
    edited = {n: (books / n).read_bytes() for n in ("02_reconciliation.ipynb", "05_trends.ipynb")}

    status = invoke_cli("notebooks", "status", cwd=acme / "inputs", env=jupyter_data)
    assert status.returncode == 0, status.stderr
    lines = dict(line.split(": ", 1) for line in status.stdout.splitlines())
    assert lines["01_explore.ipynb"].startswith("curated (from txkit")
    assert lines["02_reconciliation.ipynb"].startswith("edited (from txkit")
    assert "newer" not in lines["02_reconciliation.ipynb"]
    assert lines["03_underpayments.ipynb"].startswith("outdated (from txkit 0.0.9")
    assert lines["04_balance_checks.ipynb"].startswith("missing")
    assert lines["05_trends.ipynb"].startswith("edited (from txkit 0.0.9")
    assert "ships a newer version" in lines["05_trends.ipynb"]

    update = invoke_cli("notebooks", "update", cwd=acme, env=jupyter_data)
    assert update.returncode == 0, update.stderr
    said = dict(line.split(": ", 1) for line in update.stdout.splitlines())
    beside = f"05_trends.curated-{txkit.__version__}.ipynb"
    assert said["05_trends.ipynb"].startswith(f"edited, kept as it is; the new curated version is "
                                              f"{beside}")  # fmt: skip
    assert "parameter period renamed month" in said["05_trends.ipynb"]
    assert said["03_underpayments.ipynb"].startswith("updated")
    assert said["04_balance_checks.ipynb"].startswith("restored")
    assert said["02_reconciliation.ipynb"].startswith("edited, kept")
    for name, content in edited.items():
        assert (books / name).read_bytes() == content, f"{name}: an edit was overwritten"
    digests = {c.name: c.digest for c in curated_notebooks()}
    assert cell_digest(_read(books / beside)) == digests["05_trends.ipynb"]
    assert NotebookNotary().check_signature(_read(books / beside))
    for name in ("03_underpayments.ipynb", "04_balance_checks.ipynb"):
        assert _read(books / name).metadata["txkit"]["digest"] == digests[name]

    again = invoke_cli("notebooks", "status", cwd=acme, env=jupyter_data)
    states = [line.split(": ", 1)[1].split(" ")[0] for line in again.stdout.splitlines()]
    assert states == ["curated", "edited", "curated", "curated", "edited", "curated", "curated",
                      "curated"]  # fmt: skip


def test_notebooks_outside_a_project_names_where_it_looked(
    tmp_path: Path, jupyter_data: dict[str, str]
) -> None:
    done = invoke_cli("notebooks", "status", cwd=tmp_path, env=jupyter_data)
    assert done.returncode == 2 and f"no notebooks/ folder in {tmp_path}" in done.stderr


def test_the_report_leaves_out_a_curated_version_written_beside(tmp_path: Path) -> None:
    from txkit.report._plan import _notebooks

    for name in ("01_explore.ipynb", "01_explore.curated-0.2.0.ipynb", "02_x.ipynb"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in _notebooks(tmp_path)] == ["01_explore.ipynb", "02_x.ipynb"]


def test_init_that_fails_leaves_nothing_behind(
    tmp_path: Path, jupyter_data: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import txkit.project._curated as curated

    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(curated, "curated_dir", lambda: tmp_path / "empty")  # a broken install
    (tmp_path / "acme").mkdir()
    done = invoke_cli("init", "acme", cwd=tmp_path, env=jupyter_data)
    assert done.returncode == 2 and "no curated notebooks in" in done.stderr
    assert list((tmp_path / "acme").iterdir()) == []
