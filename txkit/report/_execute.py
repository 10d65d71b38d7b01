"""The report's notebooks, run by papermill in the lanes' kernels, each rendered as a page."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from txkit.errors import NotebookFailedError
from txkit.report._html import Section, page_html, summary_of, title_of
from txkit.report._kernels import (
    kept_lanes,
    kernel_manager,
    kernel_settings,
    kernel_setup,
    sockets_folder,
)
from txkit.report._lanes import Lane, run_in_lanes
from txkit.report._plan import ReportPlan, resolved_store
from txkit.store import MonthManifest

__all__ = ["execute_notebook", "run_notebooks"]

#: Notebooks at once: kernels start mostly on one core, and the sandbox's machine has two.
_LANES = 2


def _waves(sources: list[Path]) -> list[list[Path]]:
    late = []
    for source_nb in sources:
        metadata = json.loads(source_nb.read_text(encoding="utf-8")).get("metadata", {})
        if metadata.get("txkit", {}).get("after_others"):
            late.append(source_nb)
    return [w for w in ([nb for nb in sources if nb not in late], late) if w]


def _parameters(plan: ReportPlan, manifest: MonthManifest, staging: Path) -> dict[str, Any]:
    return {
        "month": plan.month,
        "source": "store",
        "store": resolved_store(plan.store),
        # Every notebook reads the version the index names, whatever syncs run later.
        "version": manifest.table_version,
        "orders": plan.orders,
        "show_pii": plan.show_pii,
        "downloads": str(staging.resolve()),
        "bank_statements": plan.bank_source,
        "bank_columns": plan.bank_columns,
        "orders_columns": plan.orders_columns,
    }


def execute_notebook(
    source_nb: Path, *, plan: ReportPlan, parameters: dict[str, Any], staging: Path, lane: Lane
) -> tuple[Section, float]:
    """Run one notebook in ``lane``'s kernel into ``staging`` and render its page; its index
    section and seconds.

    The notebook goes to papermill and comes back as a ``NotebookNode``, read and written
    here: papermill's own local files are read and written in a working folder it keeps in
    one attribute shared by every thread, which two lanes' calls leave stale.

    Raises:
        NotebookFailedError: a cell failed (names the notebook and the cell).
    """
    import nbformat
    import papermill

    began = time.perf_counter()
    target = (staging / source_nb.name).absolute()
    notebook = nbformat.read(source_nb, as_version=4)
    declared = papermill.inspect_notebook(notebook)
    manager = lane.manager(kernel_settings(), kernel_setup(source_nb.parent))
    try:
        executed = papermill.execute_notebook(
            notebook,
            None,
            parameters={k: v for k, v in parameters.items() if k in declared},
            progress_bar=False,
            # The kernel starts in the notebooks' folder; papermill's own ``cwd`` would chdir
            # this whole process, which two threads cannot share.
            resources={"metadata": {"path": str(source_nb.parent.resolve())}},
            kernel_name="python3",
            km=manager,
            # jupyter_client interrupts a kernel before shutting it down, and the kernel may
            # log "KeyboardInterrupt caught in kernel" at ERROR on the report's stderr; a
            # failing cell is reported through papermill instead.
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
        )
    except papermill.PapermillExecutionError as exc:
        raise NotebookFailedError(
            f"notebook {source_nb.name} failed at cell {exc.exec_count or exc.cell_index}"
            f": {exc.ename}: {exc.evalue}"
        ) from None
    # Where papermill records the paths it read and wrote, as it does given paths.
    executed.metadata.papermill.update(input_path=str(source_nb), output_path=str(target))
    text = nbformat.writes(executed)
    target.write_text(text, encoding="utf-8")
    doc = json.loads(text)
    page = target.with_suffix(".html")
    title = title_of(doc, source_nb.stem)
    page.write_text(page_html(target, doc, month=plan.month, title=title), encoding="utf-8")
    return Section(title, page.name, summary_of(doc)), time.perf_counter() - began


def run_notebooks(
    plan: ReportPlan, manifest: MonthManifest, staging: Path, *, progress: bool | None
) -> tuple[list[Section], dict[str, float]]:
    """Every notebook, in two lanes of one kernel each (:mod:`txkit.report._lanes`); a notebook
    that reads the others' downloads (metadata ``txkit.after_others``, the trends) runs after
    them. The sections in notebook order and each notebook's seconds."""
    from tqdm.auto import tqdm

    parameters = _parameters(plan, manifest, staging)
    bar = tqdm(
        total=len(plan.notebooks),
        desc=f"report {plan.month}",
        unit="notebook",
        disable=not progress if progress is not None else None,
    )

    def advance(nb: Path, _result: tuple[Section, float]) -> None:
        bar.set_postfix_str(nb.stem)
        bar.update()

    try:
        with sockets_folder() as sockets:
            done, _lanes = run_in_lanes(
                _waves(plan.notebooks),
                lambda nb, lane: execute_notebook(
                    nb, plan=plan, parameters=parameters, staging=staging, lane=lane
                ),
                lambda index: kernel_manager(sockets, index),
                lanes=min(_LANES, os.cpu_count() or 1, len(plan.notebooks)),
                on_done=advance,
                kept=kept_lanes(),
            )
    finally:
        bar.close()
    sections = [done[nb][0] for nb in plan.notebooks]
    return sections, {nb.stem: done[nb][1] for nb in plan.notebooks}
