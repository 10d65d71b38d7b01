"""The installed product (issue 45): the wheel built from the checkout, installed in a fresh
virtual environment outside it, makes a close project and runs the month's close there, as a
merchant's analyst would: `txkit init acme`, `cd acme && txkit report`, a notebook run from
`acme/notebooks` as JupyterLab runs it, an edited notebook kept by `txkit notebooks update`."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import nbformat
import pytest

import txkit
from tests.conftest import Installed
from tests.factories import ROOT
from txkit.project import cell_digest

pytestmark = pytest.mark.slow

CURATED = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TEMPLATE = ["README.md", "env.example", "gitignore", "materiality.toml", "txkit.toml"]


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("txkit-*.whl")
    return wheel


def test_the_wheel_and_sdist_carry_the_notebooks_and_template_and_pass_twine(dist: Path) -> None:
    wheel = _wheel(dist)
    assert wheel.name == f"txkit-{txkit.__version__}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in CURATED:
        assert f"txkit/_curated/{name}" in names
    for name in TEMPLATE:
        assert f"txkit/project/template/{name}" in names
    assert f"txkit-{txkit.__version__}.dist-info/licenses/LICENSE" in names
    assert not [n for n in names if n.startswith("txkit/_curated/") and n.endswith(".py")]
    (sdist,) = dist.glob("txkit-*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
    assert {"CHANGELOG.md", "LICENSE", *(f"txkit/_curated/{n}" for n in CURATED)} <= members
    twine = Path(sys.executable).parent / "twine"
    done = subprocess.run(
        [str(twine), "check", "--strict", str(wheel), str(sdist)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done


# Run by the installed Python in acme/notebooks, as JupyterLab runs a notebook: its kernel's
# working folder is the notebook's.
_EXECUTE = """
import sys, nbformat, nbclient
notebook = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(notebook, timeout=600, resources={"metadata": {"path": "."}}).execute()
nbformat.write(notebook, sys.argv[2])
"""


def test_the_installed_wheel_makes_a_project_outside_the_checkout_and_keeps_edits(
    installed: Installed, tmp_path: Path
) -> None:
    """The first report of a project from the installed wheel is the tutorial's (run with this
    install); here a notebook runs from ``acme/notebooks`` and an edit survives an update."""
    env, txkit_bin, python = installed.env, installed.bin("txkit"), installed.bin("python")
    where = _run([python, "-c", "import txkit; print(txkit.__file__)"], tmp_path, env)
    assert Path(where.stdout.strip()).is_relative_to(installed.venv)  # not the checkout

    assert _run([txkit_bin, "--version"], tmp_path, env).stdout == f"txkit {txkit.__version__}\n"
    _run([txkit_bin, "init", "acme"], tmp_path, env)
    acme = tmp_path / "acme"
    books = acme / "notebooks"
    _run([python, "-c", _EXECUTE, "06_settlements.ipynb", str(tmp_path / "run.ipynb")], books, env)
    outputs = json.dumps(nbformat.read(tmp_path / "run.ipynb", as_version=4).cells)
    assert "the embedded sandbox's bank account (data/sandbox/" in outputs
    assert not (books / "data").exists() and not (books / "reports").exists()

    # An edited notebook, from an older txkit: update writes the new version beside it.
    target = books / "02_reconciliation.ipynb"
    notebook = nbformat.read(target, as_version=4)
    notebook.cells[0].source += "\n(as txkit 0.0.9 wrote it)"
    notebook.metadata["txkit"] = {"version": "0.0.9", "digest": cell_digest(notebook)}
    notebook.cells[1].source = notebook.cells[1].source.replace("date_tolerance = ", "days = ")
    nbformat.write(notebook, target)
    edited = target.read_bytes()
    status = _run([txkit_bin, "notebooks", "status"], acme, env).stdout
    assert "02_reconciliation.ipynb: edited (from txkit 0.0.9)" in status
    update = _run([txkit_bin, "notebooks", "update"], acme / "inputs", env).stdout
    beside = books / f"02_reconciliation.curated-{txkit.__version__}.ipynb"
    assert f"the new curated version is {beside.name}" in update
    assert "parameter days renamed date_tolerance" in update
    assert target.read_bytes() == edited and beside.is_file()
