"""A merchant's close project: ``txkit init`` makes one from the package's template, and
``txkit notebooks status``/``update`` keep its curated notebooks current without losing edits.
See docs/project.md.
"""

from txkit.project._curated import (
    CuratedNotebook,
    cell_digest,
    curated_dir,
    curated_notebooks,
    is_curated_name,
    run_order,
)
from txkit.project._init import INPUTS_DIR, TEMPLATE_FILES, init_project, template_dir
from txkit.project._update import (
    NotebookState,
    notebook_states,
    project_notebooks,
    update_notebooks,
)

__all__ = [
    "INPUTS_DIR",
    "TEMPLATE_FILES",
    "CuratedNotebook",
    "NotebookState",
    "cell_digest",
    "curated_dir",
    "curated_notebooks",
    "init_project",
    "is_curated_name",
    "notebook_states",
    "project_notebooks",
    "run_order",
    "template_dir",
    "update_notebooks",
]
