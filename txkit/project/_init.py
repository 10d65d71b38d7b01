"""``txkit init``: a merchant's close project, made from the package's template."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from txkit.config import NOTEBOOKS_DIR, PROJECT_MARK
from txkit.errors import ProjectError
from txkit.project._curated import curated_notebooks, write_project_copy

__all__ = ["INPUTS_DIR", "TEMPLATE_FILES", "init_project", "template_dir"]

#: The merchant's orders exports and bank statements.
INPUTS_DIR = Path("inputs")
#: The template's files and the names they get in the project (dot files are stored without
#: their dot: package data leaves hidden files out).
TEMPLATE_FILES = {
    "txkit.toml": PROJECT_MARK,
    "materiality.toml": "materiality.toml",
    "env.example": ".env.example",
    "gitignore": ".gitignore",
    "README.md": "README.md",
}


def template_dir() -> Path:
    """The project template this txkit ships."""
    return Path(__file__).resolve().parent / "template"


def _entries() -> list[str]:
    return [str(NOTEBOOKS_DIR), str(INPUTS_DIR), *TEMPLATE_FILES.values()]


def init_project(folder: str | os.PathLike[str] = ".") -> list[str]:
    """Make a close project in ``folder`` (created if need be): ``notebooks/`` (the curated
    notebooks, each with its record, trusted), ``inputs/``, ``txkit.toml``,
    ``materiality.toml``, ``.env.example``, ``.gitignore`` and ``README.md``.

    Everything is written in a staging folder inside ``folder`` and moved into place at the
    end: a failure leaves nothing behind.

    Returns:
        What was made, one entry per line (``notebooks/ (8 curated notebooks)``, ...).

    Raises:
        ProjectError: ``folder`` is a file, or already holds any of those entries (nothing is
            overwritten).
    """
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise ProjectError(f"{target} is a file, not a folder: give a new or empty folder")
    taken = [name for name in _entries() if (target / name).exists()]
    if taken:
        raise ProjectError(
            f"{target.absolute()} is already a project (it holds {', '.join(taken)}): nothing "
            "was written; run `txkit notebooks update` there to update its notebooks, or give "
            "a new folder"
        )
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target, prefix=".txkit-init."))
    try:
        notebooks = staging / NOTEBOOKS_DIR
        notebooks.mkdir()
        curated = curated_notebooks()
        for notebook in curated:
            write_project_copy(notebook, notebooks / notebook.name)
        (staging / INPUTS_DIR).mkdir()
        for source, name in TEMPLATE_FILES.items():
            shutil.copyfile(template_dir() / source, staging / name)
        for name in _entries():
            os.replace(staging / name, target / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [
        f"{NOTEBOOKS_DIR}/ ({len(curated)} curated notebooks, trusted in JupyterLab)",
        f"{INPUTS_DIR}/ (your orders exports and bank statements)",
        *TEMPLATE_FILES.values(),
    ]
