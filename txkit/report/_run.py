"""``txkit report --month YYYY-MM``: the monthly job.

1. Plan: check the arguments and the merchant's files; choose the days to sync (the months the
   trends show, up to twelve, and the days after the month; inside the sandbox's calendar).
2. Sync the local store for those days (only what is missing, plus the look-back window; a
   closed month already stored costs no request at all).
3. Execute every curated notebook (``notebooks/NN_*.ipynb``) for the month with papermill,
   reading from the store.
4. Write each executed notebook, a self-contained HTML rendering of it, the headlines and an
   index page to ``reports/YYYY-MM/`` (built aside, swapped in); print where the index is.

A failing notebook fails the command, naming the notebook and the cell; the previous report of
that month is then left untouched (the new one is built aside and swapped in at the end). A
report killed outright (SIGKILL, power loss) can leave its staging folder, or the previous
report moved aside mid-swap; the next report in the same folder removes the first and puts the
second back (:func:`clean_leftovers`).

The notebooks' kernels keep their connection files (which hold the key that signs their
messages) and Unix sockets in one private folder per run (``txkit-kernel-*``, mode 0700, in
the system temporary folder), removed when the run ends; a run killed outright leaves it, and
the next report removes it (:func:`clean_kernel_folders`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
import os
import shlex
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from txkit import config
from txkit.analysis.columns import BANK, ORDERS, column_setting, describe_columns
from txkit.analysis.trends import month_over_month, monthly_metrics
from txkit.bank import read_statements
from txkit.calendar import month_bounds, parse_month, previous_month, previous_months
from txkit.config import default_store, key_configured
from txkit.errors import (
    NotebookFailedError,
    RegisterFormatError,
    StoreError,
    TxkitError,
    one_line,
)
from txkit.notebook._downloads import read_downloads, report_folder
from txkit.notebook._load import LoadInfo, _load_orders
from txkit.notebook._recompute import read_all_orders, recomputer
from txkit.register import SECTIONS, load_materiality, read_events
from txkit.register._index import RegisterSummary, summarise
from txkit.register._sign import (
    Target,
    compare_reports,
    history_block,
    refuse_signed,
    revisions,
    signature_block,
)
from txkit.register._state import report_events
from txkit.register._table import append_events
from txkit.report._headlines import (
    exception_headlines,
    explore_headlines,
    orders_headline,
    underpayment_headlines,
)
from txkit.report._html import Headline, Section, index_html, page_html, summary_of, title_of
from txkit.report._imports import import_jsonschema
from txkit.report._kernel import ReportKernelManager
from txkit.report._lanes import KeptLanes, Lane, run_in_lanes
from txkit.store import RetentionPolicy, read_manifests, scan_store, sync
from txkit.store._location import check_version, store_name

log = logging.getLogger("txkit")

__all__ = [
    "NotebookFailedError",
    "OrdersCheck",
    "ReportResult",
    "check_orders",
    "clean_kernel_folders",
    "clean_leftovers",
    "keep_kernels",
    "reproduce_command",
    "run_report",
]

_OWNER = ".owner-pid"
_KERNELS = "txkit-kernel-"
#: A kernel folder without an owner file (made by an earlier txkit version, which wrote the
#: connection files loose in the temporary folder) is removed only when no running process
#: names one of its connection files and nothing was created in it for this long: such a run
#: starts a kernel (new sockets, a newer mtime) within seconds of the previous one ending, and
#: a kernel that runs long is named on its process's command line.
_UNOWNED_IDLE_SECONDS = 600


@dataclass
class ReportResult:
    """Where the report is and what it took.

    Attributes:
        index: the index page.
        notebooks: executed notebook -> seconds.
        sync: what the store sync did (None when nothing needed fetching).
        sync_seconds: time spent syncing (0 when the store was up to date).
    """

    index: Path
    notebooks: dict[str, float]
    sync: Any
    sync_seconds: float


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def clean_leftovers(out: Path) -> list[str]:
    """Remove what killed reports left in ``out``; returns a line per thing done.

    A staging folder (``.YYYY-MM.*``) whose owning process is gone is removed. A previous report
    moved aside for the swap (``.YYYY-MM.previous``) is put back when the month has no report
    (the kill came between the two renames), else removed. Staging folders of a report still
    running (its process is alive) are left alone.

    Args:
        out: the reports folder.

    Returns:
        What was cleaned, one line each (empty when nothing was left over).
    """
    done: list[str] = []
    if not out.is_dir():
        return done
    for path in sorted(out.glob(".[0-9][0-9][0-9][0-9]-[0-9][0-9].*")):
        if not path.is_dir():
            continue
        month = path.name[1:8]
        if path.name.endswith(".previous"):
            final = out / month
            if final.exists():
                shutil.rmtree(path, ignore_errors=True)
                done.append(f"removed {path.name} (left by a killed report; {month} is complete)")
            else:
                os.rename(path, final)
                done.append(f"restored the previous report of {month} (a killed report moved it)")
            continue
        try:
            owner = int((path / _OWNER).read_text().strip())
        except (OSError, ValueError):
            owner = None
        if owner is not None and _alive(owner):
            continue
        shutil.rmtree(path, ignore_errors=True)
        done.append(f"removed the staging folder {path.name} (left by a killed report)")
    return done


def _command_lines() -> set[str] | None:
    """Every argument of every running process (None where ``/proc`` cannot tell)."""
    proc = Path("/proc")
    if not (proc / "self" / "cmdline").exists():
        return None
    found: set[str] = set()
    for entry in proc.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                found.update((entry / "cmdline").read_bytes().decode(errors="replace").split("\0"))
    return found


def _loose_connection_files(temp: Path) -> dict[Path, Path]:
    """Kernel connection files earlier txkit versions wrote loose in ``temp`` (this user's
    small JSON files naming an ``ipc`` socket in a ``txkit-kernel-*`` folder of ``temp``),
    with that folder."""
    found = {}
    for path in sorted(temp.glob("tmp*.json")):
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_size > 4096:
                continue
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or "key" not in doc or doc.get("transport") != "ipc":
            continue
        folder = Path(str(doc.get("ip", ""))).parent
        if folder.name.startswith(_KERNELS) and folder.parent == temp:
            found[path] = folder
    return found


def clean_kernel_folders(temp: Path | None = None) -> list[str]:
    """Remove what killed reports' kernels left in the temporary folder; a line per item.

    Removed: this user's ``txkit-kernel-*`` folders whose report (its ``.owner-pid``) is no
    longer running, with the connection files (each holding the key that signs its kernel's
    messages) and sockets in them. Earlier txkit versions wrote no owner file and left the
    connection files loose in the temporary folder: those are removed when no running process
    names them, and their folder too once idle (see :data:`_UNOWNED_IDLE_SECONDS`).

    Args:
        temp: the temporary folder (default: :func:`tempfile.gettempdir`).
    """
    temp = Path(temp or tempfile.gettempdir())
    done: list[str] = []
    running = _command_lines()
    loose = _loose_connection_files(temp)
    busy = {folder for path, folder in loose.items() if running is None or str(path) in running}
    for path, folder in loose.items():
        if folder not in busy:
            with contextlib.suppress(OSError):
                path.unlink()
                done.append(f"removed the kernel connection file {path} (left by a killed report)")
    for folder in sorted(temp.glob(f"{_KERNELS}*")):
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        try:
            owner: int | None = int((folder / _OWNER).read_text().strip())
        except (OSError, ValueError):
            owner = None
        if owner is not None:
            if _alive(owner):
                continue
        elif (
            folder in busy
            or running is None
            or (time.time() - info.st_mtime < _UNOWNED_IDLE_SECONDS)
        ):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        done.append(f"removed the kernel folder {folder} (left by a killed report)")
    return done


# A Unix socket's path holds at most 107 bytes (``sockaddr_un.sun_path``); a kernel's sockets
# are ``<folder>/k<N>-<port index>``. pytest's temporary folders alone reach 70 characters, and
# with the notebooks' names in the socket path a report under them failed to start a kernel.
_SOCKET_PATH_MAX = 107
_SOCKET_NAME_MAX = len("/txkit-kernel-xxxxxxxx/k99-99")


def _kernel_base() -> Path:
    """The folder that holds the kernel folders: the temporary folder, or ``/tmp`` when the
    temporary folder's path is too long for a Unix socket path inside it."""
    temp = Path(tempfile.gettempdir())
    if len(os.fsencode(temp)) + _SOCKET_NAME_MAX <= _SOCKET_PATH_MAX:
        return temp
    fallback = Path("/tmp")
    if fallback.is_dir() and os.access(fallback, os.W_OK | os.X_OK):
        return fallback
    raise TxkitError(
        f"the temporary folder {temp} is too long for the kernels' sockets (at most "
        f"{_SOCKET_PATH_MAX - _SOCKET_NAME_MAX} characters): set TMPDIR to a shorter folder"
    )


def _kernel_folder() -> Path:
    """This run's private folder for its kernels' connection files and sockets (0700)."""
    base = _kernel_base()
    for line in clean_kernel_folders(base):
        log.warning("report: %s", line)
    folder = Path(tempfile.mkdtemp(prefix=_KERNELS, dir=base))
    (folder / _OWNER).write_text(str(os.getpid()))
    return folder


def _notebooks(folder: Path) -> list[Path]:
    found = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if not found:
        raise ValueError(
            f"no curated notebooks (NN_topic.ipynb) in {folder}: run from the project folder "
            "or pass --notebooks DIR"
        )
    return found


@dataclass(frozen=True)
class OrdersCheck:
    """The orders file as the report checked it before running the notebooks.

    Attributes:
        info: :func:`txkit.notebook.load_orders`'s line (and warnings) for the month, with
            the days around it notebook 02 reads.
        in_month: orders dated in the month (or undated).
        dates: the first and last order date in the file (None without dates).
        path: the orders file (None for the sandbox's own orders).
        whole: every order of the file as read (the register's recomputation reads them all:
            read again, the sandbox's 48,125 orders cost 0.09 s of CPU).
    """

    info: LoadInfo
    in_month: int
    dates: tuple[Any, Any] | None = None
    path: str | None = None
    whole: pl.DataFrame | None = field(default=None, repr=False, compare=False)


def check_orders(orders: str, month: str, columns: Any = None) -> OrdersCheck:
    """Read the orders as notebook 02 will, print their line and warn when the month has none.
    ``columns``: the file's column mapping (as :func:`txkit.notebook.load_orders` takes it).

    Raises:
        DataFileError: the file cannot be read as it is (its lines and what to do).
    """
    frame, info, read = _load_orders(orders, month, margin_days=config.MARGIN_DAYS, columns=columns)
    if "date" in frame.columns:
        first, last = month_bounds(month)
        dated = pl.col("date")
        frame = frame.filter(dated.is_between(first, last) | dated.is_null())
    print(f"orders: {info.note}")
    for warning in info.warnings:
        log.warning("report: %s", warning)
    return OrdersCheck(
        info, frame.height, read.dates, None if orders == "sandbox" else orders, read.frame
    )


def _waves(sources: list[Path]) -> list[list[Path]]:
    """The notebooks in two waves: the others, then those marked ``txkit.after_others``."""
    late = []
    for source_nb in sources:
        metadata = json.loads(source_nb.read_text(encoding="utf-8")).get("metadata", {})
        if metadata.get("txkit", {}).get("after_others"):
            late.append(source_nb)
    return [w for w in ([nb for nb in sources if nb not in late], late) if w]


def _table_version(manifest: Any) -> str | None:
    """The store's table version the report read, when the store records one."""
    for name in ("table_version", "version"):
        value = getattr(manifest, name, None)
        if value is not None:
            return str(value)
    return None


@dataclass(frozen=True)
class ReportPlan:
    """What a report will read and run, decided before anything is fetched (step 1).

    Attributes:
        month: ``YYYY-MM`` (parsed).
        store: the store folder or URI.
        notebooks: the curated notebooks, in order.
        orders: the orders file (absolute) or ``"sandbox"``.
        checked: the orders as checked up front (None for the sandbox's, read after the sync).
        since: the first day synced: the trends' first month (:data:`config.TREND_MONTHS`), at
            least the history months, inside the service's calendar when it is known.
        until: the last day synced (the month and :data:`config.MARGIN_DAYS` after it, inside
            the calendar).
        as_of: the table version to re-render from (no sync), or None.
        bank_statements: the bank statements (absolute paths), or None.
        bank_columns: a CSV statement's column mapping in effect (from the flag,
            ``TXKIT_BANK_COLUMNS`` or ``txkit.toml``), written as the flag takes it.
        orders_columns: the orders file's column mapping in effect, likewise.
        show_pii: render customer data unmasked.
    """

    month: str
    store: str | Path
    notebooks: list[Path]
    orders: str
    checked: OrdersCheck | None
    since: date
    until: date
    as_of: int | None = None
    bank_statements: list[str] | None = None
    bank_columns: str | None = None
    show_pii: bool = False
    orders_columns: str | None = None


def sync_range(month: str, calendar: tuple[date, date] | None = None) -> tuple[date, date]:
    """The days a report of ``month`` syncs: the :data:`config.HISTORY_MONTHS` the notebooks
    read as history, the month and :data:`config.MARGIN_DAYS` after it. With a ``calendar``
    (the first and last day the service holds data: the sandbox's) also every month the trends
    show (up to :data:`config.TREND_MONTHS`), clipped to it, so that no month outside it is
    planned. Without one (a service) only the history: a window before the service's first
    record cannot be proven complete (an empty month with nothing near its edges fails the
    sync), so the trends page says how many of its months the store holds instead.

    Raises:
        ValueError: the month lies outside ``calendar`` (names the calendar).
    """
    month = parse_month(month)
    back = config.HISTORY_MONTHS
    if calendar is not None:
        back = max(back, config.TREND_MONTHS - 1)
    since, _ = month_bounds(previous_months(month, back)[0])
    first, last = month_bounds(month)
    until = last + timedelta(days=config.MARGIN_DAYS)
    if calendar is not None:
        if last < calendar[0] or first > calendar[1]:
            raise ValueError(
                f"--month {month} is outside the sandbox's calendar ({calendar[0]:%Y-%m} to "
                f"{calendar[1]:%Y-%m}): pick a month in it"
            )
        since, until = max(since, calendar[0]), min(until, calendar[1])
    return since, until


def sandbox_calendar() -> tuple[date, date] | None:
    """The first and last day of the embedded sandbox's ledger when the report will read the
    sandbox (no key configured), else None (a service's calendar is not known up front)."""
    if key_configured():
        return None
    settings = config.SANDBOX
    first, _ = month_bounds(settings.start_month)
    year, month = divmod(first.year * 12 + first.month - 1 + settings.months - 1, 12)
    _, last = month_bounds(f"{year:04d}-{month + 1:02d}")
    return first, last


def plan_report(
    month: str,
    *,
    store: str | Path | None,
    notebooks: Path,
    orders: str | None,
    as_of: int | None = None,
    bank_statements: list[str] | None = None,
    bank_columns: str | None = None,
    show_pii: bool = False,
    orders_columns: str | None = None,
) -> ReportPlan:
    """Step 1: check the arguments and the merchant's files, and choose what to sync.

    Raises:
        ValueError: a bad month, version, missing notebooks or orders file.
        DataFileError: the orders or a bank statement cannot be read as they are.
    """
    month = parse_month(month)  # the parsed value, from here on
    as_of = check_version(as_of)
    sources = _notebooks(notebooks)
    orders = config.resolve_orders(orders)
    checked = None
    orders_mapping = None
    if orders != "sandbox":
        # Flag over TXKIT_ORDERS_COLUMNS over txkit.toml; the kernels get it as a parameter.
        orders_mapping = column_setting(ORDERS, orders_columns)
        if not Path(orders).is_file():
            raise ValueError(
                f"no orders file {orders!r} for the reconciliation: pass --orders PATH (a CSV "
                "or Parquet file with reference, amount, currency and optionally status, date)"
            )
        orders = str(Path(orders).resolve())
        # Read and checked now, before the sync and the kernels: a file that cannot be read
        # stops the report here, naming its lines, not in a notebook after the sync.
        checked = check_orders(orders, month, orders_mapping)
    bank_mapping = None
    if bank_statements:
        bank_statements = [str(Path(p).resolve()) for p in bank_statements]
        bank_mapping = column_setting(BANK, bank_columns)
        statement = read_statements(bank_statements, columns=bank_mapping)
        print(statement.describe())
    since, until = sync_range(month, sandbox_calendar())
    return ReportPlan(
        month=month,
        store=store or default_store(),
        notebooks=sources,
        orders=orders,
        checked=checked,
        since=since,
        until=until,
        as_of=as_of,
        bank_statements=bank_statements or None,
        bank_columns=describe_columns(bank_mapping) or None if bank_mapping else None,
        orders_columns=describe_columns(orders_mapping) or None if orders_mapping else None,
        show_pii=show_pii,
    )


def sync_for_report(
    plan: ReportPlan, *, out: Path, lookback_days: int, progress: bool | None
) -> tuple[Any, float]:
    """Step 2: sync the plan's days into the store (nothing when it holds them, or with
    ``as_of``), then apply the store's retention policy, keeping every version the reports in
    ``out`` cite; returns the sync's result (None when nothing was fetched) and its seconds."""
    if plan.as_of is not None:
        return None, 0.0
    started = time.perf_counter()
    result = sync(  # it connects only when something is to be fetched
        start=plan.since,
        end=plan.until,
        store=plan.store,
        lookback_days=lookback_days,
        progress=progress,
        retention=RetentionPolicy.from_config(reports=out),
    )
    for note in result.notes:
        print(note)
    if not result.fetched:
        return None, 0.0
    return result, time.perf_counter() - started


def month_manifest(plan: ReportPlan) -> Any:
    """The store's record of the plan's month (at ``as_of``, else the newest).

    Raises:
        TxkitError: the store has no data for the month.
    """
    manifest = read_manifests(plan.store, version=plan.as_of).get(plan.month)
    if manifest is None:
        at = f" at version {plan.as_of}" if plan.as_of is not None else " after the sync"
        raise TxkitError(f"the store {store_name(plan.store)} has no data for {plan.month}{at}")
    return manifest


def stage(out: Path, month: str) -> Path:
    """Step 3: a staging folder beside the reports (what killed reports left is cleaned
    first); the report is built there and swapped in at the end."""
    out.mkdir(parents=True, exist_ok=True)
    for line in clean_leftovers(out):
        log.warning("report: %s", line)
    staging = Path(tempfile.mkdtemp(prefix=f".{month}.", dir=out))
    staging.chmod(0o755)
    (staging / _OWNER).write_text(str(os.getpid()))
    return staging


def kernel_environment(data: Path | None = None) -> dict[str, str]:
    """What the notebooks' kernels get beside this process's environment: no progress bars
    in executed pages, and this process's data folder (absolute), so that a kernel started in
    the notebooks' folder finds the same sandbox cache and store, not a second one under
    ``notebooks/data/``. Nothing of this process's environment is changed."""
    return {
        config.PROGRESS_VAR: "0",
        config.DATA_DIR_VAR: str((data or config.data_dir()).resolve()),
    }


def kernel_settings(notebooks: Path) -> tuple[object, ...]:
    """What a notebook's kernel is started with besides its code: this process's environment,
    :func:`kernel_environment` and the working folder (the notebooks' folder). A kept kernel
    (:func:`keep_kernels`) started with other settings is started again."""
    return (
        tuple(sorted(os.environ.items())),
        tuple(sorted(kernel_environment().items())),
        str(notebooks.resolve()),
    )


_KEPT: contextvars.ContextVar[KeptLanes | None] = contextvars.ContextVar(
    "txkit_report_kept_lanes", default=None
)


@contextlib.contextmanager
def keep_kernels() -> Iterator[KeptLanes]:
    """Reports run inside this block, in this thread, keep the notebooks' kernels from one to
    the next (each reset between two notebooks as within a report; see
    :mod:`txkit.report._lanes`) and shut them down at its end: two kernel starts and their
    imports, about 3 s of CPU and a few seconds, saved per report after the first (42 s over
    the thirteen reports of tests/test_register_months.py).

    A kernel started with other settings than the next report's (:func:`kernel_settings`: the
    environment, the data folder, the notebooks' folder) is started again.
    """
    kept = KeptLanes()
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)
        kept.close()


def _kernel_manager(sockets: Path, index: int) -> ReportKernelManager:
    """Lane ``index``'s kernel manager: Unix sockets in the private folder (short names: see
    :data:`_SOCKET_PATH_MAX`), its connection file there, and :func:`kernel_environment`."""
    return ReportKernelManager(
        kernel_name="python3",
        transport="ipc",
        ip=str(sockets / f"k{index}"),
        connection_file=str(sockets / f"lane{index}.json"),
        extra_env=kernel_environment(),
    )


def _parameters(plan: ReportPlan, manifest: Any, staging: Path) -> dict[str, Any]:
    return {
        "month": plan.month,
        "source": "store",
        "store": _absolute(plan.store),
        # Every notebook reads the version the index names, whatever syncs run later.
        "version": manifest.table_version,
        "orders": plan.orders,
        "show_pii": plan.show_pii,
        "downloads": str(staging.resolve()),
        "bank_statements": plan.bank_statements or "auto",
        "bank_columns": plan.bank_columns,
        "orders_columns": plan.orders_columns,
    }


@functools.cache
def _papermill_files_in_place() -> None:
    """Make papermill read and write local files where their paths say.

    Its own handler changes the process's working folder around every read and write, to a
    folder kept in one attribute shared by every thread, which each ``execute_notebook`` sets
    to the working folder and puts back after. With two lanes the put-backs interleave: a
    lane's write ran in the folder an earlier report had worked in, and a relative reports
    folder "did not exist" (seen when reports of two folders ran in one process). The report
    passes absolute paths, so no working folder is needed.
    """
    from papermill.iorw import papermill_io

    handler = papermill_io.get_handler("notebook.ipynb")  # the one for local paths
    # Never set (papermill's chdir(None) changes nothing); a handler registered beside it
    # would not be used: papermill takes the first registered for local paths.
    handler._cwd = None
    handler.cwd = lambda _new_path: None


def execute_notebook(
    source_nb: Path, *, plan: ReportPlan, parameters: dict[str, Any], staging: Path, lane: Lane
) -> tuple[Section, float]:
    """Run one notebook in ``lane``'s kernel into ``staging`` and render its page; its index
    section and seconds.

    Raises:
        NotebookFailedError: a cell failed (names the notebook and the cell).
    """
    import papermill

    _papermill_files_in_place()
    began = time.perf_counter()
    target = (staging / source_nb.name).absolute()
    declared = papermill.inspect_notebook(str(source_nb))
    manager = lane.manager(kernel_settings(source_nb.parent))
    try:
        papermill.execute_notebook(
            str(source_nb),
            str(target),
            parameters={k: v for k, v in parameters.items() if k in declared},
            progress_bar=False,
            # Written once at the end (or at the failing cell), not twice a cell: nobody
            # watches the staging copy, and the saves cost 0.1 s of CPU a notebook.
            request_save_on_cell_execute=False,
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
    executed = json.loads(target.read_text(encoding="utf-8"))
    page = target.with_suffix(".html")
    title = title_of(executed, source_nb.stem)
    page.write_text(page_html(target, executed, month=plan.month, title=title), encoding="utf-8")
    return Section(title, page.name, summary_of(executed)), time.perf_counter() - began


#: Notebooks at once: kernels start mostly on one core, and the sandbox's machine has two.
_LANES = 2


def run_notebooks(
    plan: ReportPlan, manifest: Any, staging: Path, *, progress: bool | None
) -> tuple[list[Section], dict[str, float]]:
    """Step 4: every notebook, in two lanes of one kernel each (:mod:`txkit.report._lanes`);
    a notebook that reads the others' downloads (metadata ``txkit.after_others``, the trends)
    runs after them. Returns the sections in notebook order and each notebook's seconds."""
    from tqdm.auto import tqdm

    import_jsonschema()  # before papermill and nbconvert import it (see _imports)
    parameters = _parameters(plan, manifest, staging)
    kept = _KEPT.get()
    # Kernels talk over Unix sockets in a private directory (0700), not unencrypted loopback
    # TCP, which any local user could reach; their connection files go there too.
    if kept is None:
        sockets = _kernel_folder()
    else:
        sockets = kept.folder = kept.folder or _kernel_folder()
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
        done, _lanes = run_in_lanes(
            _waves(plan.notebooks),
            lambda nb, lane: execute_notebook(
                nb, plan=plan, parameters=parameters, staging=staging, lane=lane
            ),
            lambda index: _kernel_manager(sockets, index),
            lanes=min(_LANES, os.cpu_count() or 1, len(plan.notebooks)),
            on_done=advance,
            kept=kept,
        )
    finally:
        bar.close()
        if kept is None:
            shutil.rmtree(sockets, ignore_errors=True)
    sections = [done[nb][0] for nb in plan.notebooks]
    return sections, {nb.stem: done[nb][1] for nb in plan.notebooks}


def attach_downloads(sections: list[Section], staging: Path) -> None:
    """Step 5: each section's downloads (the lists and tables its notebook wrote)."""
    published = read_downloads(staging)
    for section in sections:
        section.downloads = [d for d in published.values() if d.get("page") == section.href]


def add_headlines(
    sections: list[Section],
    plan: ReportPlan,
    manifest: Any,
    *,
    out: Path,
    orders: OrdersCheck | None = None,
    material: dict[str, int] | None = None,
) -> None:
    """Step 6: each section's headline figures (this month against the one before, from the
    table version the notebooks read): the store's figures, the orders' count, and one per
    download (after :func:`attach_downloads`); ``out`` holds last month's report. With
    ``material`` (open material items per register section), an exception list's headline
    looks at this only when its section has material items.
    """
    month = plan.month
    before = previous_month(month)
    scan = scan_store(plan.store, version=manifest.table_version)
    metrics = monthly_metrics(scan.filter(pl.col("month").is_in([before, month])))
    mom = month_over_month(metrics, month)
    previous = read_downloads(report_folder(out, before))  # a reopened month: its newest
    by_topic = {"explore": explore_headlines, "underpayments": underpayment_headlines}
    for section in sections:
        topic = Path(section.href).stem.split("_", 1)[-1]
        if topic in by_topic:
            section.headlines += by_topic[topic](mom)
        if topic == "reconciliation" and orders is not None:
            section.headlines.append(orders_headline(orders.in_month, orders.dates))
        for entry in section.downloads:
            if entry.get("kind") == "table":  # a whole table: its own headline figures
                section.headlines += [Headline(**h) for h in entry.get("headlines", [])]
                continue
            section.headlines += exception_headlines(
                entry,
                previous.get(entry["name"]),
                material=None
                if material is None
                else material.get(SECTIONS.get(entry["name"], entry["name"]), 0),
            )


def write_index(
    staging: Path,
    plan: ReportPlan,
    sections: list[Section],
    manifest: Any,
    checked: OrdersCheck,
    *,
    register: RegisterSummary | None = None,
    revision: dict[str, Any] | None = None,
    history: str = "",
) -> None:
    """Step 7: the index page, "what needs action" first, the exception register's block and
    the notes on what was read in its footer; a revision of a signed month says so first."""
    warnings = list(checked.info.warnings)
    if revision:
        warnings.append(
            f"revision {revision['number']} of {plan.month}, beside the signed report "
            f"{revision['of']} (reopened: {revision['reason']}); what changed: "
            + "; ".join(revision["changes"])
        )
    (staging / "index.html").write_text(
        index_html(
            plan.month,
            sections,
            show_pii=plan.show_pii,
            freshness=_freshness(plan.month, plan.store, manifest),
            source=str(manifest.source),
            # Filled when the store exposes table versions (the Delta store does).
            table_version=_table_version(manifest),
            warnings=warnings,
            register=history + (register.html if register else "") + signature_block([]),
        ),
        encoding="utf-8",
    )


def swap(staging: Path, out: Path, name: str) -> Path:
    """Step 8: put the finished report in place of the previous one of that name (the month,
    or a revision ``YYYY-MM.rN`` of a signed month); its folder."""
    final = out / name
    previous = out / f".{name}.previous"
    shutil.rmtree(previous, ignore_errors=True)
    if final.exists():
        os.rename(final, previous)
    (staging / _OWNER).unlink()
    os.rename(staging, final)
    shutil.rmtree(previous, ignore_errors=True)
    return final


def run_report(
    month: str,
    *,
    store: str | Path | None = None,
    out: Path,
    notebooks: Path,
    show_pii: bool = False,
    lookback_days: int = config.LOOKBACK_DAYS,
    orders: str | None = None,
    progress: bool | None = None,
    as_of: int | None = None,
    bank_statements: list[str] | None = None,
    bank_columns: str | None = None,
    reopen: str | None = None,
    orders_columns: str | None = None,
) -> ReportResult:
    """Sync the month into the store, execute the notebooks, write HTML and an index: the
    steps :func:`plan_report`, :func:`sync_for_report`, :func:`stage`, :func:`run_notebooks`,
    :func:`attach_downloads`, :func:`add_headlines`, :func:`write_index`, :func:`swap`.

    Args:
        month: ``YYYY-MM``.
        store: the store folder or URI (default: the source's, see
            :func:`txkit.config.default_store`).
        out: the reports folder (``out/YYYY-MM/``).
        notebooks: the folder of curated notebooks.
        show_pii: render customer data unmasked (the pages say so).
        lookback_days: the store's look-back window.
        orders: the merchant's expected payments for the reconciliation (CSV or Parquet);
            default: ``data/orders.csv`` when a key is configured, else the sandbox's.
        progress: progress bars (default: when interactive).
        as_of: re-render from this table version of the store (no sync): the same data, so
            the same findings, as the report that read it first.
        bank_statements: the merchant's bank statements for the settlements (CSV, MT940,
            camt.053; the month's and the next month's); default: none with a key (the
            settlements are then not checked), the sandbox's own without.
        bank_columns: a CSV statement's column mapping (default ``TXKIT_BANK_COLUMNS``, else
            the ``[bank]`` section of ``txkit.toml``).
        orders_columns: the orders file's column mapping or preset (``shopify``,
            ``woocommerce``, ``stripe``; default ``TXKIT_ORDERS_COLUMNS``, else the
            ``[orders]`` section of ``txkit.toml``, else txkit's own column names).
        reopen: why a signed month is reported again: the new report is a revision beside the
            signed one (``YYYY-MM.rN``), which is never overwritten.

    Returns:
        A :class:`ReportResult`.

    Raises:
        NotebookFailedError: a notebook failed (named, with its cell); the previous report of
            the month is left as it was.
        ValueError: a bad month or missing notebooks.
        DataFileError: the orders file cannot be read as it is (raised before the sync).
        TxkitError: the sync failed (the store is left as it was).
        ReportSignedError: the month is signed and ``reopen`` not given (nothing is done).
        RegisterFormatError: the store's exception register was written by a newer txkit.
    """
    # A signed month is locked: refused before anything else is read, fetched or run.
    target = refuse_signed(out, parse_month(month), reopen)
    plan = plan_report(month, store=store, notebooks=notebooks, orders=orders, as_of=as_of,
                       bank_statements=bank_statements, bank_columns=bank_columns,
                       show_pii=show_pii, orders_columns=orders_columns)  # fmt: skip
    # A register this txkit cannot read stops the report before anything is fetched or run.
    read_events(plan.store)
    materiality = load_materiality()
    sync_result, sync_seconds = sync_for_report(
        plan, out=out, lookback_days=lookback_days, progress=progress
    )
    # The sandbox's orders are written by its first start: checked after the sync.
    checked = plan.checked or check_orders(plan.orders, plan.month)
    manifest = month_manifest(plan)
    staging = stage(out, plan.month)
    try:
        sections, timings = run_notebooks(plan, manifest, staging, progress=progress)
        attach_downloads(sections, staging)
        register = record_register(plan, manifest, staging, materiality, orders=checked.whole)
        material = register.material if register else None
        add_headlines(sections, plan, manifest, out=out, orders=checked, material=material)
        revision = write_manifest(
            staging, plan, manifest, sorted(timings), checked, register, target
        )
        history = (
            history_block(revisions(out, plan.month, pending=(target.name, staging)))
            if revision
            else ""
        )
        write_index(
            staging, plan, sections, manifest, checked, register=register, revision=revision,
            history=history,
        )  # fmt: skip
        final = swap(staging, out, target.name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ReportResult(
        index=final / "index.html", notebooks=timings, sync=sync_result, sync_seconds=sync_seconds
    )


def record_register(
    plan: ReportPlan,
    manifest: Any,
    staging: Path,
    materiality: Any,
    *,
    orders: pl.DataFrame | None = None,
) -> RegisterSummary | None:
    """Step 5b: record the month's exception lists in the store's register and summarise it
    for the index; None (with a warning) when the register cannot be written (a read-only
    store). ``orders``: the whole orders file as the report read it (default: read again)."""
    version = None if manifest.table_version is None else int(manifest.table_version)
    try:
        if orders is None:
            orders = read_all_orders(plan.orders, plan.orders_columns)
        events, carried = report_events(
            plan.store,
            plan.month,
            staging,
            table_version=version,
            orders=orders,
            recompute=recomputer(plan.store, version=version, orders=orders),
        )
        written = append_events(plan.store, events)  # what record_report does, in one commit
        if carried is not None:
            print(carried.describe())
        return summarise(
            plan.store, plan.month, version=written, materiality=materiality, folder=staging,
            carry=carried,
        )  # fmt: skip
    except (StoreError, OSError) as exc:
        if isinstance(exc, RegisterFormatError):
            raise
        # A read-only store (a report re-rendered from a mounted copy) still gets its report.
        log.warning("report: the exception register was not updated: %s", one_line(exc))
        return None


def write_manifest(
    staging: Path,
    plan: ReportPlan,
    manifest: Any,
    notebooks: list[str],
    orders: OrdersCheck,
    register: RegisterSummary | None,
    target: Target,
) -> dict[str, Any] | None:
    """Step 6b: ``report.json`` (what the report read and rendered, the register's summary,
    and for a revision of a signed month what changed); returns the revision, if any."""
    _write_manifest(staging / "report.json", plan, manifest, notebooks, orders)
    revision = describe_revision(target, staging, plan.month)
    _extend_manifest(
        staging / "report.json", register=register.doc if register else None, revision=revision
    )
    return revision


def describe_revision(target: Target, staging: Path, month: str) -> dict[str, Any] | None:
    """A revision of a signed month: its number, the signed report it revises, why, and what
    changed against it (printed too); None for a month not signed."""
    if target.signed is None:
        return None
    changes = compare_reports(target.signed, staging)
    print(f"revision {target.number} of {month} (reopened: {target.reason}); changes against "
          f"{target.signed.name}:")  # fmt: skip
    for line in changes:
        print(f"  {line}")
    return {
        "number": target.number,
        "of": target.signed.name,
        "reason": target.reason,
        "changes": changes,
    }


def _extend_manifest(path: Path, **entries: Any) -> None:
    """Add entries (those not None) to ``report.json``."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update({k: v for k, v in entries.items() if v is not None})
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _write_manifest(
    path: Path,
    plan: ReportPlan,
    manifest: Any,
    notebooks: list[str],
    orders: OrdersCheck | None = None,
) -> None:
    """``report.json``: what the report read (store, table version, source, orders) and
    rendered."""
    doc = {
        "month": plan.month,
        "store": _absolute(plan.store),
        "table_version": manifest.table_version,
        # The table's id: the retention policy keeps this version of this table only (a store
        # moved aside and synced again is another table, whose versions start at 0 again).
        "table_id": manifest.table_id,
        "as_of": plan.as_of,
        "source": manifest.source,
        "rows": manifest.rows,
        "complete": manifest.complete,
        "show_pii": plan.show_pii,
        "rendered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "notebooks": notebooks,
        "synced": [plan.since.isoformat(), plan.until.isoformat()],
        "orders": None
        if orders is None
        else {
            "read": orders.info.note,
            "in_month": orders.in_month,
            "warnings": list(orders.info.warnings),
        },
        "reproduce": reproduce_command(
            plan.month,
            plan.store,
            manifest.table_version,
            orders=orders.path if orders is not None else None,
            bank_statements=plan.bank_statements,
            bank_columns=plan.bank_columns if plan.bank_statements else None,
            orders_columns=plan.orders_columns,
        ),
    }
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def reproduce_command(
    month: str,
    store: str | Path,
    version: int,
    *,
    orders: str | Path | None = None,
    bank_statements: Sequence[str | Path] | None = None,
    bank_columns: str | None = None,
    orders_columns: str | None = None,
) -> str:
    """The shell command that renders the same report again: the month, store and table
    version it read, and the orders file, bank statements and CSV column mapping it was
    given (each argument quoted for a POSIX shell: a mapping holds spaces).

    Args:
        month: ``YYYY-MM``.
        store: the store read.
        version: its table version.
        orders: the orders file (None: the sandbox's own).
        bank_statements: the statements given (None: the sandbox's own, or none).
        bank_columns: the CSV mapping in effect, from the flag, ``TXKIT_BANK_COLUMNS`` or
            ``txkit.toml`` (written as a flag, so the command does not depend on the
            environment or the settings file).
        orders_columns: the orders file's mapping in effect, likewise.

    Returns:
        One line, e.g. ``txkit report --month 2026-10 --store data/store/sandbox --as-of 3``.
    """
    argv = ["txkit", "report", "--month", month, "--store", str(store), "--as-of", str(version)]
    if orders:
        argv += ["--orders", str(orders)]
        if orders_columns:
            argv += ["--orders-columns", orders_columns]
    for path in bank_statements or ():
        argv += ["--bank-statement", str(path)]
    if bank_statements and bank_columns:
        argv += ["--bank-columns", bank_columns]
    return shlex.join(argv)


def _absolute(store: str | Path) -> str:
    return str(store) if "://" in str(store) else str(Path(store).resolve())


def _freshness(month: str, store: str | Path, manifest: Any) -> str:
    """The index page's line on what was read: source, version, coverage, verification."""
    state = "complete" if manifest.complete else "NOT complete"
    return (
        f"Data: {manifest.rows:,} transactions of {month} from {manifest.source}, read from the "
        f"store {store_name(store)} at table version {manifest.table_version}; the month is "
        f"{state} (windows {manifest.coverage.describe_windows()}); every fetch was verified "
        f"against the service's total for its query (last: {manifest.service_total:,} records, "
        "with a day of margin on each side)."
    )
