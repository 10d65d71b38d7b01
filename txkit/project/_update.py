"""``txkit notebooks status`` and ``update``: curated notebooks that upgrade without losing edits.

Each notebook of a project is, against the curated notebook of the same name this txkit ships:

* ``curated``: its cell sources are those its record names, and no newer curated version ships;
* ``outdated``: not edited, and a newer curated version ships (update replaces it);
* ``edited``: its cell sources differ from the ones its record names (or it has no record):
  update never overwrites it, and writes the newer curated version beside it, if one ships;
* ``missing``: not in the project (update restores it).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import txkit
from txkit.config import NOTEBOOKS_DIR, project_dir
from txkit.errors import ProjectError
from txkit.project._curated import (
    RECORD_KEY,
    CuratedNotebook,
    cell_digest,
    curated_notebooks,
    parameters,
    read_notebook,
    write_project_copy,
)

__all__ = ["NotebookState", "notebook_states", "project_notebooks", "update_notebooks"]

CURATED, OUTDATED, EDITED, MISSING = "curated", "outdated", "edited", "missing"


@dataclass(frozen=True)
class NotebookState:
    """One curated notebook's state in a project.

    Attributes:
        curated: the notebook this txkit ships.
        path: the project's copy (it may not exist: ``missing``).
        state: ``curated``, ``outdated``, ``edited`` or ``missing``.
        newer: a curated version other than the one the copy was written from ships.
        recorded: the txkit version the copy was written by (``""``: no record).
    """

    curated: CuratedNotebook
    path: Path
    state: str
    newer: bool
    recorded: str

    def describe(self) -> str:
        """One line for ``txkit notebooks status``."""
        where = f"from txkit {self.recorded}" if self.recorded else "no txkit record"
        text = {
            CURATED: f"curated ({where})",
            OUTDATED: f"outdated ({where}; txkit {txkit.__version__} ships a newer version)",
            EDITED: f"edited ({where})",
            MISSING: "missing (update restores it)",
        }[self.state]
        if self.state == EDITED and self.newer:
            text += f"; txkit {txkit.__version__} ships a newer version"
        return f"{self.curated.name}: {text}"


def project_notebooks(folder: str | Path | None = None) -> Path:
    """The ``notebooks/`` folder of the project ``folder`` (default: :func:`project_dir`).

    Raises:
        ProjectError: no such folder (names where it looked).
    """
    notebooks = Path(folder if folder is not None else project_dir()) / NOTEBOOKS_DIR
    if not notebooks.is_dir():
        raise ProjectError(
            f"no notebooks/ folder in {notebooks.parent.absolute()}: run this in a close project "
            "(`txkit init DIR` makes one)"
        )
    return notebooks


def _state(curated: CuratedNotebook, path: Path) -> NotebookState:
    if not path.exists():
        return NotebookState(curated, path, MISSING, True, "")
    notebook = read_notebook(path)
    record = notebook.metadata.get(RECORD_KEY) or {}
    recorded_digest = str(record.get("digest", ""))
    recorded = str(record.get("version", ""))
    newer = recorded_digest != curated.digest
    digest = cell_digest(notebook)
    if not recorded_digest and digest == curated.digest:  # copied by hand, not changed
        return NotebookState(curated, path, CURATED, False, recorded)
    if not recorded_digest or digest != recorded_digest:
        return NotebookState(curated, path, EDITED, newer, recorded)
    return NotebookState(curated, path, OUTDATED if newer else CURATED, newer, recorded)


def notebook_states(folder: str | Path | None = None) -> list[NotebookState]:
    """Every curated notebook's state in the project ``folder`` (see the module).

    Raises:
        ProjectError: no ``notebooks/`` folder there, or a notebook cannot be read.
    """
    notebooks = project_notebooks(folder)
    return [_state(curated, notebooks / curated.name) for curated in curated_notebooks()]


def _first_line(source: str) -> str:
    line = next((x for x in source.splitlines() if x.strip()), "(empty)")
    return line if len(line) <= 60 else line[:57] + "..."


def _what_changed(mine: Any, new: Any) -> str:
    """The cells and parameters the new curated version changes against the edited copy."""
    old_cells = [c.source for c in mine.cells]
    new_cells = [c.source for c in new.cells]
    changed: list[str] = []
    matcher = difflib.SequenceMatcher(a=old_cells, b=new_cells, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed += [f"cell {j + 1} ({_first_line(new_cells[j])})" for j in range(j1, j2)]
        if tag == "delete":
            changed += [f"cell {i + 1} of yours gone" for i in range(i1, i2)]
    parts = [f"{len(changed)} cell(s) differ: {'; '.join(changed[:5])}"]
    if len(changed) > 5:
        parts[0] += f"; ... ({len(changed)} in all)"
    old_params, new_params = parameters(mine), parameters(new)
    removed = sorted(set(old_params) - set(new_params))
    added = sorted(set(new_params) - set(old_params))
    default = sorted(k for k in set(old_params) & set(new_params) if old_params[k] != new_params[k])
    if removed and added and len(removed) == len(added) == 1:
        parts.append(f"parameter {removed[0]} renamed {added[0]} (set {added[0]} instead)")
    else:
        parts += [f"parameter {name} removed" for name in removed]
        parts += [f"parameter {name} added ({new_params[name]})" for name in added]
    parts += [f"parameter {k}: {old_params[k]} -> {new_params[k]}" for k in default]
    return "; ".join(parts)


def _beside(path: Path) -> Path:
    return path.with_name(f"{path.stem}.curated-{txkit.__version__}{path.suffix}")


def update_notebooks(folder: str | Path | None = None) -> list[str]:
    """Bring the project's notebooks to this txkit's curated versions, never over an edit:
    a missing one is restored, an outdated one replaced; for an edited one with a newer curated
    version, that version is written beside it (``NN_topic.curated-VERSION.ipynb``) and what
    changed is said.

    Returns:
        One line per notebook: what was done.

    Raises:
        ProjectError: no ``notebooks/`` folder there, or a notebook cannot be read.
    """
    lines = []
    for state in notebook_states(folder):
        name = state.curated.name
        if state.state == MISSING:
            write_project_copy(state.curated, state.path)
            lines.append(f"{name}: restored (txkit {txkit.__version__})")
        elif state.state == OUTDATED:
            write_project_copy(state.curated, state.path)
            lines.append(f"{name}: updated to txkit {txkit.__version__}'s version")
        elif state.state == EDITED and state.newer:
            beside = _beside(state.path)
            write_project_copy(state.curated, beside)
            changes = _what_changed(read_notebook(state.path), read_notebook(state.curated.path))
            lines.append(
                f"{name}: edited, kept as it is; the new curated version is {beside.name} "
                f"({changes}): carry your edits over, then replace {name} with it"
            )
        elif state.state == EDITED:
            lines.append(f"{name}: edited, kept (no newer curated version)")
        else:
            lines.append(f"{name}: curated, up to date")
    return lines
