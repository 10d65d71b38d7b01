"""The curated notebooks as txkit ships them, and the record each project copy keeps of its own.

The package holds the eight notebooks (``txkit/_curated``: in a checkout, a link to the
repository's ``notebooks/``; in the wheel, the files). A copy in a merchant's project carries
``metadata.txkit = {version, digest}``: the txkit version and the digest of the curated cell
sources it was written from, computed when ``txkit init`` or ``txkit notebooks update`` writes
it (never stored in the repository's notebooks, so the curated files stay as they are), beside
the curated notebook's own keys there (what it waits for in a report: :func:`run_order`).
"""

from __future__ import annotations

import ast
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import txkit
from txkit.errors import ProjectError

__all__ = [
    "RECORD_KEY",
    "RUN_ORDER_KEYS",
    "CuratedNotebook",
    "cell_digest",
    "curated_dir",
    "curated_notebooks",
    "is_curated_name",
    "parameters",
    "read_notebook",
    "run_order",
    "write_project_copy",
]

#: The metadata key of a project copy's record.
RECORD_KEY = "txkit"


#: The metadata keys (under ``txkit``) that say which pages a notebook waits for in a report.
RUN_ORDER_KEYS = ("after_others", "after")


def run_order(notebook: Any, name: str) -> dict[str, Any]:
    """What ``notebook`` (named ``name``) waits for in a report: its ``txkit`` metadata's
    ``after_others`` (every other page) and ``after`` (those pages' stems). A project copy
    written before the copies kept them (it holds a record, not the keys) takes those of the
    curated notebook of its name, when one ships."""
    meta = dict(notebook.get("metadata", {}).get(RECORD_KEY) or {})
    own = {k: meta[k] for k in RUN_ORDER_KEYS if k in meta}
    if own or "digest" not in meta:
        return own
    shipped = curated_dir() / name
    if not is_curated_name(shipped) or not shipped.is_file():
        return {}
    curated = read_notebook(shipped).metadata.get(RECORD_KEY) or {}
    return {k: curated[k] for k in RUN_ORDER_KEYS if k in curated}


def curated_dir() -> Path:
    """The folder of the curated notebooks the installed txkit ships."""
    return Path(txkit.__file__).resolve().parent / "_curated"


def is_curated_name(path: Path) -> bool:
    """``NN_topic.ipynb``: a curated notebook's name (not ``NN_topic.curated-0.2.0.ipynb``,
    the new version written beside an edited one)."""
    return path.suffix == ".ipynb" and "." not in path.stem and path.name[:2].isdigit()


def read_notebook(path: Path) -> Any:
    """The notebook at ``path`` (nbformat 4).

    Raises:
        ProjectError: it cannot be read as a notebook (names the file).
    """
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as exc:
        raise ProjectError(
            f"notebook {path} cannot be read ({exc}): restore it or delete it"
        ) from None


def cell_digest(notebook: Any) -> str:
    """SHA-256 of the notebook's cell types and sources (outputs, execution counts and metadata
    left out: a run or a save changes none of it)."""
    digest = hashlib.sha256()
    for cell in notebook.cells:
        digest.update(cell.cell_type.encode() + b"\0" + cell.source.encode() + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class CuratedNotebook:
    """One curated notebook as this txkit ships it."""

    name: str
    path: Path
    digest: str


def curated_notebooks() -> list[CuratedNotebook]:
    """The curated notebooks this txkit ships, in order.

    Raises:
        ProjectError: the package holds none (a broken install).
    """
    folder = curated_dir()
    paths = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if is_curated_name(p))
    if not paths:
        raise ProjectError(f"no curated notebooks in {folder}: reinstall txkit")
    return [CuratedNotebook(p.name, p, cell_digest(read_notebook(p))) for p in paths]


def parameters(notebook: Any) -> dict[str, str]:
    """The notebook's parameters (its cell tagged ``parameters``): name to value as written."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                return {}
            return {
                target.id: ast.get_source_segment(cell.source, node.value) or ""
                for node in tree.body
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Name)
            }
    return {}


def write_project_copy(curated: CuratedNotebook, target: Path) -> None:
    """Write ``curated`` to ``target`` with its record (version, digest), trusted in this user's
    Jupyter signature database (so JupyterLab shows its stored tables with their styles).

    Written to a temporary file beside ``target`` and renamed: never a half-written notebook.
    """
    import nbformat
    from nbformat.sign import NotebookNotary

    notebook = read_notebook(curated.path)
    # The repository pairs its notebooks with .py files; a merchant's copy is not paired.
    notebook.metadata.pop("jupytext", None)
    # The record joins the curated keys (what the notebook waits for in a report), not them.
    notebook.metadata[RECORD_KEY] = {
        **notebook.metadata.get(RECORD_KEY, {}),
        "version": txkit.__version__,
        "digest": curated.digest,
    }
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "x", encoding="utf-8") as stream:  # the user's usual permissions
            nbformat.write(notebook, stream)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    NotebookNotary().sign(notebook)
