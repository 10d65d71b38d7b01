"""The report's execution cache: a notebook is executed again only when something it reads
changed; otherwise its executed result (outputs and downloads) is reused.

The store of executed notebooks is jupyter-cache's (the cache Jupyter Book uses): it hashes a
notebook's code cells and keeps the executed notebook and its artifacts (here the downloads the
notebook wrote) under that hash, with a record per notebook in SQLite. The key is made a
notebook: the curated notebook with, in place of papermill's injected parameters, one code cell
holding the parameters (the staging folder left out: it changes every run) and the digests of
every input the notebook reads (:func:`notebook_inputs`). A changed notebook, parameter or
input changes that cell's text, so jupyter-cache's hash, and the notebook is executed.

It lives in the project's data folder (``data/cache/notebooks/``), never among the reports.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import xxhash

import txkit
from txkit import config
from txkit.errors import one_line
from txkit.inputs import code_digest, file_digest
from txkit.inputs.columns import SETTINGS_FILE, project_folder
from txkit.notebook import read_downloads, sandbox_statements
from txkit.register import CONFIG_FILE, ITEMS_SUFFIX, read_events
from txkit.report._plan import ReportPlan
from txkit.store import MonthManifest

log = logging.getLogger("txkit")

__all__ = ["NotebookCache", "Reuse", "cache_folder", "notebook_inputs", "reads_register"]

#: The key cell's first line (the cell is never executed: it only makes the hash).
_KEY_LINE = "# txkit report: what this notebook read (the execution cache's key)"
#: The staging folder in the key: it differs every run and no page shows it.
_STAGING = "<the report being built>"


def cache_folder() -> Path:
    """``data/cache/notebooks/`` in the project's data folder."""
    return config.data_dir() / "cache" / "notebooks"


def _digest(path: Path) -> str | None:
    """XXH3-128 of a file's bytes (None: no such file)."""
    return file_digest(path) if path.is_file() else None


def _files(paths: list[Path], *, by_name: bool = False) -> dict[str, str | None]:
    """Each file's digest by its path (two statements of one name in two folders are two),
    or by its name (the staging folder's own files: that folder differs every run)."""
    return {(p.name if by_name else str(p)): _digest(p) for p in sorted(paths)}


def _register_digest(store: str | Path, month: str) -> str:
    """The exception register's events as a digest, without what this month's own report runs
    recorded (``reported``, ``seen``, the earlier months' items they carried over: the report
    being built records them again, and its notebook reads the register with them) and without
    each event's run id and time (an event recorded again the same is the same state), and
    without a pack's PDF made (``printed``: no notebook reads it). An explanation, a
    signature or another month's report changes it."""
    import polars as pl

    events, _ = read_events(store)  # none yet: no event, as after this month's runs alone
    runs = events.filter((pl.col("event") == "reported") & (pl.col("month") == month))["run"]
    own = pl.col("run").is_in(runs.implode()).fill_null(False)  # an explanation has no run
    kept = events.filter(~own & (pl.col("event") != "printed")).drop("run", "at").unique()
    kept = kept.sort(kept.columns, nulls_last=True)
    return xxhash.xxh3_128_hexdigest(kept.write_csv().encode())


def reads_register(notebook: dict[str, Any]) -> bool:
    """A notebook reads the exception register (and ``materiality.toml``) when a code cell
    calls :func:`txkit.notebook.load_register` (07, the exceptions)."""
    return any(
        "load_register" in "".join(cell.get("source", ""))
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code"
    )


def _lists(folder: Path, pages: Collection[str] | None = None) -> str:
    """A digest of the lists recorded in a report folder (:func:`txkit.notebook.read_downloads`:
    the open items the next month's report reads, the figures the trends read); with
    ``pages``, only those of these notebooks (stems)."""
    lists = read_downloads(folder)
    if pages is not None:
        lists = {k: v for k, v in lists.items() if Path(str(v.get("page", ""))).stem in pages}
    text = json.dumps(lists, sort_keys=True)
    return xxhash.xxh3_128_hexdigest(text.encode())


def _other_reports(out: Path, month: str) -> dict[str, str]:
    """The lists of the other months' reports in ``out`` (the previous month's open items, the
    trends' months), by folder; not this month's own folders (a rerun would otherwise read its
    own last run) nor staging folders (hidden)."""
    if not out.is_dir():
        return {}
    return {
        folder.name: _lists(folder)
        for folder in sorted(out.glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]*"))
        if folder.is_dir() and folder.name.split(".")[0] != month
    }


def notebook_inputs(
    notebook: dict[str, Any],
    declared: set[str],
    *,
    plan: ReportPlan,
    manifest: MonthManifest,
    staging: Path,
    out: Path,
    order: dict[str, Any],
) -> dict[str, Any]:
    """What ``notebook`` reads besides its code and parameters, as digests: txkit's version
    and code with the installed libraries' versions (:func:`txkit.inputs.code_digest`),
    the store's table (id and version), the orders file and ``txkit.toml`` (notebooks with an
    ``orders`` parameter), the bank statements and ``txkit.toml`` (``bank_statements``), the
    register's events (:func:`_register_digest`) and ``materiality.toml``
    (:func:`reads_register`), the other months' reports (every notebook with ``downloads``:
    their open items), and for a notebook run after the others (``order``, its
    :func:`txkit.project.run_order`: ``after_others``) the lists they wrote in ``staging``;
    after some of them (``after``), the lists those wrote."""
    inputs: dict[str, Any] = {
        "txkit": txkit.__version__,
        "code": code_digest(),
        "table": [manifest.table_id, manifest.table_version],
    }
    settings = project_folder() / SETTINGS_FILE
    register = reads_register(notebook)
    if "orders" in declared or register:
        orders = plan.orders
        inputs["orders"] = orders if orders == "sandbox" else _files([Path(orders)])
        inputs["txkit.toml"] = _digest(settings)
    if "bank_statements" in declared:
        bank = plan.bank_source
        if bank == "sandbox":
            bank = sandbox_statements(plan.month)
        if isinstance(bank, str) or bank is None:
            inputs["bank"] = bank
        else:
            inputs["bank"] = _files([Path(p) for p in bank])
        inputs["txkit.toml"] = _digest(settings)
    if register:
        inputs["register"] = _register_digest(plan.store, plan.month)
        inputs["materiality.toml"] = _digest(config.project_dir() / CONFIG_FILE)
    if "downloads" in declared:
        inputs["reports"] = _other_reports(out, plan.month)
        if order.get("after_others"):
            items = _files(list(staging.glob(f"*{ITEMS_SUFFIX}")), by_name=True)
            inputs["this report"] = {"lists": _lists(staging), "items": items}
        elif order.get("after"):
            inputs["this report"] = {"lists": _lists(staging, order["after"])}
    return inputs


def _injected(notebook: Any) -> Any:
    """The cell papermill injected the parameters in (None: no parameters given)."""
    return next(
        (c for c in notebook.cells if "injected-parameters" in c.metadata.get("tags", [])), None
    )


@dataclass(frozen=True)
class Reuse:
    """A notebook's executed result taken from the cache: when it was executed, and in which
    report."""

    executed: str
    report: str

    def line(self) -> str:
        return (
            f"reused from the execution cache: executed {self.executed} for {self.report}; "
            "nothing it reads has changed since"
        )


class NotebookCache:
    """jupyter-cache's store of executed notebooks in ``folder``, for one report (the lanes'
    threads share it: one lock around its SQLite records)."""

    def __init__(self, folder: Path) -> None:
        from jupyter_cache import get_cache

        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._cache = get_cache(folder)
        self._lock = threading.Lock()

    @staticmethod
    def key_notebook(notebook: Any, parameters: dict[str, Any], inputs: dict[str, Any]) -> Any:
        """``notebook`` with the key cell where papermill injects the parameters (after the
        cell tagged ``parameters``)."""
        import nbformat

        key = copy.deepcopy(notebook)
        shown = {k: (_STAGING if k == "downloads" else v) for k, v in parameters.items()}
        text = json.dumps({"parameters": shown, "inputs": inputs}, sort_keys=True, indent=1)
        cell = nbformat.v4.new_code_cell(f"{_KEY_LINE}\n{text}")
        cell.metadata["tags"] = ["injected-parameters"]
        at = next(
            (
                i + 1
                for i, c in enumerate(key.cells)
                if "parameters" in c.get("metadata", {}).get("tags", [])
            ),
            0,
        )
        key.cells.insert(at, cell)
        for each in key.cells:  # the hash reads cell metadata too: only the tags count
            each.metadata = {"tags": each.metadata["tags"]} if "tags" in each.metadata else {}
        return key

    def lookup(self, key: Any, executed_into: Any, staging: Path) -> Reuse | None:
        """The cached executed notebook matching ``key``: its outputs are copied into
        ``executed_into`` (the parameterised notebook, code cell by code cell) and its
        downloads into ``staging``; None when nothing matches, or when the cache cannot be
        read (a warning says why: the notebook is executed)."""
        try:
            return self._lookup(key, executed_into, staging)
        except Exception as exc:  # a cache that fails costs an execution, never the report
            log.warning("execution cache %s not read (%s): executing", self.folder, one_line(exc))
            return None

    def _lookup(self, key: Any, executed_into: Any, staging: Path) -> Reuse | None:
        with self._lock:
            try:
                record = self._cache.match_cache_notebook(key)
            except KeyError:
                return None
            bundle = self._cache.get_cache_bundle(record.pk)
            cached = [c for c in bundle.nb.cells if c.cell_type == "code"]
            target = [c for c in executed_into.cells if c.cell_type == "code"]
            if len(cached) != len(target):  # pragma: no cover - the hash covers the cells
                return None
            for into, cell in zip(target, cached, strict=True):
                into.outputs = cell.outputs
                into.execution_count = cell.execution_count
            for relative, handle in bundle.artifacts:
                (staging / relative).write_bytes(handle.read())
        data = record.data or {}
        injected = _injected(executed_into)
        if injected is not None and data.get("injected_id"):
            # papermill draws the injected cell's id anew each run; the page shows it
            injected["id"] = data["injected_id"]
        return Reuse(str(data.get("executed", "?")), str(data.get("report", "?")))

    def store(self, key: Any, executed: Any, artifacts: list[Path], *, report: str) -> None:
        """Keep ``executed``'s outputs under ``key`` with its downloads (``artifacts``, in the
        staging folder); a cache that cannot be written is a warning (the report goes on)."""
        try:
            self._store(key, executed, artifacts, report=report)
        except Exception as exc:
            log.warning("execution cache %s not written (%s)", self.folder, one_line(exc))

    def _store(self, key: Any, executed: Any, artifacts: list[Path], *, report: str) -> None:
        from jupyter_cache.base import CacheBundleIn
        from jupyter_cache.cache.main import NbArtifacts

        kept = copy.deepcopy(key)
        code = [c for c in executed.cells if c.cell_type == "code"]
        for into, cell in zip([c for c in kept.cells if c.cell_type == "code"], code, strict=True):
            into.outputs = cell.outputs
            into.execution_count = cell.execution_count
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        injected = _injected(executed)
        folder = artifacts[0].parent if artifacts else Path(".")
        bundle = CacheBundleIn(
            kept,
            report,
            artifacts=NbArtifacts([str(p) for p in artifacts], in_folder=folder),
            data={
                "executed": when,
                "report": report,
                "injected_id": None if injected is None else injected.get("id"),
            },
        )
        with self._lock:
            self._cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
