"""The report's notebooks, run by papermill in the lanes' kernels, each rendered as a page."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import copy
import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from txkit.errors import NotebookFailedError, one_line
from txkit.notebook import read_downloads
from txkit.project import run_order
from txkit.report._cache import NotebookCache, Reuse, cache_folder, notebook_inputs
from txkit.report._html import Section, page_html, summary_of, title_of
from txkit.report._kernels import (
    KERNEL_ARGUMENTS,
    keep_kernels,
    kept_lanes,
    kernel_manager,
    kernel_settings,
    kernel_setup,
    sockets_folder,
    start_kernels,
)
from txkit.report._lanes import Lane, run_in_lanes
from txkit.report._plan import ReportPlan, resolved_store
from txkit.store import MonthManifest

log = logging.getLogger("txkit")

__all__ = [
    "Executed",
    "Ran",
    "kernels_started_early",
    "run_notebook",
    "run_notebooks",
]

#: Notebooks at once: kernels start mostly on one core, and the sandbox's machine has two.
_LANES = 2


def _lanes_for(sources: list[Path]) -> int:
    return min(_LANES, os.cpu_count() or 1, len(sources))


@contextlib.contextmanager
def kernels_started_early(plan: ReportPlan, *, start: bool) -> Iterator[None]:
    """With ``start``, the report's lanes are kept for the block (unless :func:`keep_kernels`
    keeps them already) and their kernels started now, with the notebooks' imports, while the
    report syncs: a month's first report, or one that reuses nothing, executes every
    notebook. Without it, the notebooks start their kernels (a rerun may execute none)."""
    if not start or not plan.notebooks:
        yield
        return
    kept = kept_lanes()
    with contextlib.nullcontext(kept) if kept is not None else keep_kernels() as lanes:
        start_kernels(lanes, plan.notebooks[0].parent, plan.notebooks, _lanes_for(plan.notebooks))
        yield


def _schedule(sources: list[Path]) -> tuple[list[list[Path]], dict[Path, list[Path]]]:
    """The lanes' waves and what each notebook waits for, from the notebooks' metadata
    (``txkit``): ``after_others`` runs after every other notebook (the exceptions page reads
    every list); ``after: [stems]`` once those have run (the trends read two lists). A
    notebook that waits comes first in its wave, then those it waits for: a free lane takes it
    as soon as it can begin."""
    late: list[Path] = []
    needs: dict[Path, list[Path]] = {}
    by_stem = {nb.stem: nb for nb in sources}
    for source_nb in sources:
        txkit_meta = run_order(json.loads(source_nb.read_text(encoding="utf-8")), source_nb.name)
        if txkit_meta.get("after_others"):
            late.append(source_nb)
        elif txkit_meta.get("after"):
            needs[source_nb] = [by_stem[s] for s in txkit_meta["after"] if s in by_stem]
    first = [nb for nb in sources if nb not in late]
    needed = {nb for wait in needs.values() for nb in wait}
    first.sort(key=lambda nb: 0 if nb in needs else 1 if nb in needed else 2)  # stable
    return [w for w in (first, late) if w], needs


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


@dataclass
class Executed:
    """How the notebooks came to be: each one's seconds, and those taken from the execution
    cache (:mod:`txkit.report._cache`) with when they were executed."""

    seconds: dict[str, float]
    reused: dict[str, Reuse] = field(default_factory=dict)


def _artifacts(staging: Path, page: str) -> list[Path]:
    """The downloads the notebook of ``page`` wrote in ``staging`` (``NAME.*`` for each list
    whose record names the page)."""
    names = [name for name, entry in read_downloads(staging).items() if entry.get("page") == page]
    return sorted(p for name in names for p in staging.glob(f"{name}.*") if p.is_file())


@dataclass
class Ran:
    """A notebook executed (or reused) whose page is not written yet: :meth:`page` writes the
    executed notebook and its page into the staging folder (apart from the lane, whose kernel
    meanwhile runs the next notebook)."""

    executed: Any
    source: Path
    target: Path
    month: str
    seconds: float
    reused: Reuse | None

    def page(self) -> Section:
        """Write the executed notebook and its HTML page; the index's section for it."""
        import nbformat

        # Where papermill records the paths it read and wrote, as it does given paths.
        self.executed.metadata.papermill.update(
            input_path=str(self.source), output_path=str(self.target)
        )
        text = nbformat.writes(self.executed)
        self.target.write_text(text, encoding="utf-8")
        doc = json.loads(text)
        page = self.target.with_suffix(".html")
        title = title_of(doc, self.source.stem)
        page.write_text(
            page_html(self.target, doc, month=self.month, title=title), encoding="utf-8"
        )
        return Section(title, page.name, summary_of(doc))


def run_notebook(
    source_nb: Path,
    *,
    plan: ReportPlan,
    parameters: dict[str, Any],
    staging: Path,
    lane: Lane,
    cache: NotebookCache | None = None,
    manifest: MonthManifest | None = None,
    out: Path | None = None,
    reuse: bool = True,
) -> Ran:
    """One notebook executed in ``lane``'s kernel into ``staging`` (its downloads written
    there), or reused from ``cache``, and kept in the cache; :meth:`Ran.page` writes it and
    its page.

    With a ``cache`` (and the ``manifest`` read and the reports folder ``out``, which the key
    digests), a notebook whose inputs are unchanged is taken from it when ``reuse``, else
    executed and kept there.

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
    given = {k: v for k, v in parameters.items() if k in declared}
    key, reused = None, None
    if cache is not None and manifest is not None and out is not None:
        inputs = notebook_inputs(
            notebook,
            set(declared),
            plan=plan,
            manifest=manifest,
            staging=staging,
            out=out,
            order=run_order(notebook, source_nb.name),
        )
        key = cache.key_notebook(notebook, given, inputs)
        if reuse:
            # The notebook as papermill would run it (parameters injected), not run.
            executed = papermill.execute_notebook(
                copy.deepcopy(notebook),
                None,
                parameters=given,
                prepare_only=True,
                progress_bar=False,
                kernel_name="python3",
            )
            reused = cache.lookup(key, executed, staging)
    if reused is None:
        executed = _execute(papermill, notebook, source_nb, given, lane)
        if cache is not None and key is not None:
            page_name = target.with_suffix(".html").name
            cache.store(key, executed, _artifacts(staging, page_name), report=plan.month)
    return Ran(executed, source_nb, target, plan.month, time.perf_counter() - began, reused)


def _execute(
    papermill: Any, notebook: Any, source_nb: Path, given: dict[str, Any], lane: Lane
) -> Any:
    manager = lane.manager(kernel_settings(), kernel_setup(source_nb.parent))
    try:
        return papermill.execute_notebook(
            notebook,
            None,
            parameters=given,
            progress_bar=False,
            # The kernel starts in the notebooks' folder; papermill's own ``cwd`` would chdir
            # this whole process, which two threads cannot share.
            resources={"metadata": {"path": str(source_nb.parent.resolve())}},
            kernel_name="python3",
            km=manager,
            extra_arguments=list(KERNEL_ARGUMENTS),
        )
    except papermill.PapermillExecutionError as exc:
        raise NotebookFailedError(
            f"notebook {source_nb.name} failed at cell {exc.exec_count or exc.cell_index}"
            f": {exc.ename}: {exc.evalue}"
        ) from None


def run_notebooks(
    plan: ReportPlan,
    manifest: MonthManifest,
    staging: Path,
    *,
    progress: bool | None,
    out: Path | None = None,
    cache: bool = True,
    reuse: bool = True,
) -> tuple[list[Section], Executed]:
    """Every notebook, in two lanes of one kernel each (:mod:`txkit.report._lanes`); a notebook
    that reads the others' downloads runs after them (metadata ``txkit.after_others``: the
    exceptions page), or after those it names (``txkit.after``: the trends). The sections in
    notebook order and how each came to be.

    With ``cache`` (and ``out``, the reports folder) each notebook goes through the execution
    cache (:mod:`txkit.report._cache`, in ``data/cache/notebooks/``): reused when nothing it
    reads changed (unless not ``reuse``: a revision of a signed month), else executed and kept.
    """
    from tqdm.auto import tqdm

    store = None
    if cache and out is not None:
        try:
            store = NotebookCache(cache_folder())
        except OSError as exc:  # an unwritable data folder: every notebook is executed
            log.warning("execution cache %s not used (%s)", cache_folder(), one_line(exc))

    parameters = _parameters(plan, manifest, staging)
    bar = tqdm(
        total=len(plan.notebooks),
        desc=f"report {plan.month}",
        unit="notebook",
        disable=not progress if progress is not None else None,
    )

    def advance(nb: Path, _result: tuple[cf.Future[Section], Ran]) -> None:
        bar.set_postfix_str(nb.stem)
        bar.update()

    # Each page is written on a thread of its own while the lane's kernel runs its next
    # notebook: the kernel would otherwise wait for the page.
    pages = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="txkit-pages")
    try:
        with sockets_folder() as sockets:
            waves, needs = _schedule(plan.notebooks)
            done, _lanes = run_in_lanes(
                waves,
                lambda nb, lane: _ran_and_paged(
                    pages,
                    run_notebook(
                        nb,
                        plan=plan,
                        parameters=parameters,
                        staging=staging,
                        lane=lane,
                        cache=store,
                        manifest=manifest,
                        out=out,
                        reuse=reuse,
                    ),
                ),
                lambda index: kernel_manager(sockets, index),
                lanes=_lanes_for(plan.notebooks),
                on_done=advance,
                kept=kept_lanes(),
                needs=needs,
            )
        sections = [done[nb][0].result() for nb in plan.notebooks]
    finally:
        pages.shutdown(wait=True, cancel_futures=True)
        bar.close()
    reused = {nb.stem: done[nb][1].reused for nb in plan.notebooks if done[nb][1].reused}
    return sections, Executed({nb.stem: done[nb][1].seconds for nb in plan.notebooks}, reused)


def _ran_and_paged(pages: cf.ThreadPoolExecutor, ran: Ran) -> tuple[cf.Future[Section], Ran]:
    return pages.submit(ran.page), ran
