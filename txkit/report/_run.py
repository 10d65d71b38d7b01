"""``txkit report --month YYYY-MM``: the monthly job.

1. Sync the local store for the month (only what is missing, plus the look-back window; a
   closed month already stored costs no request at all).
2. Execute every curated notebook (``notebooks/NN_*.ipynb``) for the month with papermill,
   reading from the store.
3. Write each executed notebook, a self-contained HTML rendering of it, and an index page to
   ``reports/YYYY-MM/``; print where the index is.

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
import json
import logging
import os
import shutil
import stat
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl

from txkit import config
from txkit.analysis.trends import month_over_month, monthly_metrics
from txkit.bank import read_statements
from txkit.calendar import month_bounds, parse_month, previous_months
from txkit.config import bank_columns_setting, default_store, key_configured
from txkit.errors import (
    NotebookFailedError,
    RegisterFormatError,
    StoreError,
    TxkitError,
    one_line,
)
from txkit.fetch.source import connect
from txkit.notebook._downloads import read_downloads
from txkit.notebook._load import LoadInfo, _load_orders
from txkit.output import check_writable
from txkit.register import SECTIONS, load_materiality, read_events, record_report
from txkit.register._index import RegisterSummary, summarise
from txkit.register._sign import compare_reports, refuse_signed, signature_block
from txkit.report._headlines import (
    exception_headlines,
    explore_headlines,
    orders_headline,
    underpayment_headlines,
)
from txkit.report._html import Headline, Section, index_html, page_html, summary_of, title_of
from txkit.store import read_manifests, scan_store, sync, sync_needed
from txkit.store._location import check_version

log = logging.getLogger("txkit")

__all__ = [
    "NotebookFailedError",
    "OrdersCheck",
    "ReportResult",
    "check_orders",
    "clean_kernel_folders",
    "clean_leftovers",
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
    """

    info: LoadInfo
    in_month: int
    dates: tuple[Any, Any] | None = None
    path: str | None = None


def check_orders(orders: str, month: str) -> OrdersCheck:
    """Read the orders as notebook 02 will, print their line and warn when the month has none.

    Raises:
        DataFileError: the file cannot be read as it is (its lines and what to do).
    """
    frame, info, read = _load_orders(orders, month, margin_days=config.MARGIN_DAYS)
    if "date" in frame.columns:
        first, last = month_bounds(month)
        dated = pl.col("date")
        frame = frame.filter(dated.is_between(first, last) | dated.is_null())
    print(f"orders: {info.note}")
    for warning in info.warnings:
        log.warning("report: %s", warning)
    return OrdersCheck(info, frame.height, read.dates, None if orders == "sandbox" else orders)


def _add_headlines(
    sections: list[Section],
    *,
    month: str,
    store: str | Path,
    version: int | None,
    staging: Path,
    out: Path,
    orders: OrdersCheck | None = None,
    material: dict[str, int] | None = None,
) -> None:
    """Each section's downloads and headline figures (this month against the one before);
    with ``material`` (open material items per register section), an exception list's
    headline looks at this only when its section has material items."""
    before = previous_months(month, 1)[0]
    scan = scan_store(store, version=version)
    metrics = monthly_metrics(scan.filter(pl.col("month").is_in([before, month])))
    mom = month_over_month(metrics, month)
    published = read_downloads(staging)
    previous = read_downloads(out / before)
    by_topic = {"explore": explore_headlines, "underpayments": underpayment_headlines}
    for section in sections:
        topic = Path(section.href).stem.split("_", 1)[-1]
        if topic in by_topic:
            section.headlines += by_topic[topic](mom)
        if topic == "reconciliation" and orders is not None:
            section.headlines.append(orders_headline(orders.in_month, orders.dates))
        section.downloads = [d for d in published.values() if d.get("page") == section.href]
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
) -> ReportResult:
    """Sync the month into the store, execute the notebooks, write HTML and an index.

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
        bank_columns: a CSV statement's column mapping (default ``TXKIT_BANK_COLUMNS``).
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
    import papermill
    from tqdm.auto import tqdm
    from traitlets.config import Config

    month = parse_month(month)  # the parsed value, from here on
    target = refuse_signed(out, month, reopen)  # a signed month is locked: first of all
    as_of = check_version(as_of)
    _, last = month_bounds(month)
    sources = _notebooks(notebooks)
    store = store or default_store()
    # A register this txkit cannot read stops the report before anything is fetched or run.
    read_events(store)
    materiality = load_materiality()
    if orders is None:
        orders = str(config.orders_path()) if key_configured() else "sandbox"
    checked = None
    if orders != "sandbox":
        if not Path(orders).is_file():
            raise ValueError(
                f"no orders file {orders!r} for the reconciliation: pass --orders PATH (a CSV "
                "or Parquet file with reference, amount, currency and optionally status, date)"
            )
        orders = str(Path(orders).resolve())
        # Read and checked now, before the sync and the kernels: a file that cannot be read
        # stops the report here, naming its lines, not in a notebook after the sync.
        checked = check_orders(orders, month)
    if bank_statements:
        bank_statements = [str(Path(p).resolve()) for p in bank_statements]
        # Read and checked now, like the orders: a statement that cannot be read stops the
        # report here, naming its line, before the sync and the kernels.
        statement = read_statements(bank_statements, columns=bank_columns or bank_columns_setting())
        print(statement.describe())
    # The months before are synced too: the notebooks read them as history (the balance checks'
    # chains and reserves, the underpayments' original references), and so are the days just
    # after the month, where reconciliation looks for payments of orders placed at its end.
    since, _ = month_bounds(previous_months(month, config.HISTORY_MONTHS)[0])
    until = last + timedelta(days=config.MARGIN_DAYS)
    started = time.perf_counter()
    sync_result = None
    if as_of is None and sync_needed(
        store=store, start=since, end=until, lookback_days=lookback_days
    ):
        if "://" not in str(store):  # only when it will be written: it may be read-only
            check_writable(Path(store), is_file=False, flag="--store")
        with connect() as source:
            print(f"source: {source.description}")
            sync_result = sync(
                client=source.client,
                start=since,
                end=until,
                store=store,
                lookback_days=lookback_days,
                progress=progress,
                source=source.label,
                source_url=source.url,
            )
        for note in sync_result.notes:
            print(note)
    sync_seconds = time.perf_counter() - started if sync_result else 0.0
    if checked is None:  # the sandbox's orders, written by its first start
        checked = check_orders(orders, month)
    manifest = read_manifests(store, version=as_of).get(month)
    if manifest is None:
        at = f" at version {as_of}" if as_of is not None else " after the sync"
        raise TxkitError(f"the store {store} has no data for {month}{at}")
    freshness = _freshness(month, store, manifest)

    out.mkdir(parents=True, exist_ok=True)
    for line in clean_leftovers(out):
        log.warning("report: %s", line)
    staging = Path(tempfile.mkdtemp(prefix=f".{month}.", dir=out))
    staging.chmod(0o755)
    (staging / _OWNER).write_text(str(os.getpid()))
    timings: dict[str, float] = {}
    entries: list[Section] = []
    # Kernels talk over Unix sockets in a private directory (0700), not unencrypted loopback
    # TCP, which any local user could reach (ipykernel warns about it on every start). Their
    # connection files go there too (jupyter_client would write them to the temporary folder
    # itself, where a killed run leaves them with their signing key).
    sockets = _kernel_folder()
    # Executed reports hold no progress output: the kernels inherit TXKIT_PROGRESS=0.
    progress_env = os.environ.get(config.PROGRESS_VAR)
    os.environ[config.PROGRESS_VAR] = "0"
    try:
        bar = tqdm(
            total=len(sources),
            desc=f"report {month}",
            unit="notebook",
            disable=not progress if progress is not None else None,
        )
        offered = {
            "month": month,
            "source": "store",
            "store": _absolute(store),
            # Every notebook reads the version the index names, whatever syncs run later.
            "version": manifest.table_version,
            "orders": orders,
            "show_pii": show_pii,
            "downloads": str(staging.resolve()),
            "bank_statements": bank_statements or "auto",
            "bank_columns": bank_columns,
        }

        def execute(source_nb: Path) -> Section:
            target = staging / source_nb.name
            began = time.perf_counter()
            declared = papermill.inspect_notebook(str(source_nb))
            # Each kernel has its own socket names: two start at once. Short names: see
            # _SOCKET_PATH_MAX.
            config = Config(
                {
                    "KernelManager": {
                        "transport": "ipc",
                        "ip": str(sockets / f"k{sources.index(source_nb)}"),
                        "connection_file": str(sockets / f"{source_nb.stem}.json"),
                    }
                }
            )
            try:
                papermill.execute_notebook(
                    str(source_nb),
                    str(target),
                    parameters={k: v for k, v in offered.items() if k in declared},
                    progress_bar=False,
                    # The kernel starts in the notebooks' folder; papermill's own ``cwd``
                    # would chdir this whole process, which two threads cannot share.
                    resources={"metadata": {"path": str(notebooks.resolve())}},
                    kernel_name="python3",
                    config=config,
                    # jupyter_client interrupts a kernel before shutting it down, and the
                    # kernel may log "KeyboardInterrupt caught in kernel" at ERROR on the
                    # report's stderr; a failing cell is reported through papermill instead.
                    extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
                )
            except papermill.PapermillExecutionError as exc:
                raise NotebookFailedError(
                    f"notebook {source_nb.name} failed at cell {exc.exec_count or exc.cell_index}"
                    f": {exc.ename}: {exc.evalue}"
                ) from None
            timings[source_nb.stem] = time.perf_counter() - began
            executed = json.loads(target.read_text(encoding="utf-8"))
            page = target.with_suffix(".html")
            title = title_of(executed, source_nb.stem)
            page.write_text(page_html(target, executed, month=month, title=title), encoding="utf-8")
            return Section(title, page.name, summary_of(executed))

        # Two notebooks at a time (kernels start mostly on one core); a notebook that reads
        # the others' downloads (metadata ``txkit.after_others``, the trends) runs after them.
        done: dict[Path, Section] = {}
        with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
            for wave in _waves(sources):
                futures = {pool.submit(execute, nb): nb for nb in wave}
                try:
                    for future in as_completed(futures):
                        done[futures[future]] = future.result()
                        bar.set_postfix_str(futures[future].stem)
                        bar.update()
                except BaseException:
                    for future in futures:
                        future.cancel()
                    raise
        bar.close()
        entries.extend(done[nb] for nb in sources)
        ordered = {nb.stem: timings[nb.stem] for nb in sources}
        timings.clear()
        timings.update(ordered)
        register = _record_register(store, month, staging, manifest.table_version, materiality)
        _add_headlines(
            entries,
            month=month,
            store=store,
            version=manifest.table_version,
            staging=staging,
            out=out,
            orders=checked,
            material=register.material if register else None,
        )
        _write_manifest(
            staging / "report.json", month, store, manifest, as_of, show_pii, timings, checked
        )
        revision = None
        if target.signed is not None:
            signed, number = target.signed, target.number
            changes = compare_reports(signed, staging)
            revision = {
                "number": number,
                "of": signed.name,
                "reason": target.reason,
                "changes": changes,
            }
            print(
                f"revision {number} of {month} (reopened: {target.reason}); changes against "
                f"{signed.name}:"
            )
            for line in changes:
                print(f"  {line}")
        _extend_manifest(
            staging / "report.json", register=register.doc if register else None, revision=revision
        )
        (staging / "index.html").write_text(
            index_html(
                month,
                entries,
                show_pii=show_pii,
                freshness=freshness,
                source=str(manifest.source),
                # Filled when the store exposes table versions (the Delta store does).
                table_version=_table_version(manifest),
                warnings=[
                    *checked.info.warnings,
                    *(
                        [
                            f"revision {revision['number']} of {month}, beside the signed report "
                            f"{revision['of']} (reopened: {revision['reason']}); what changed: "
                            + "; ".join(revision["changes"])
                        ]
                        if revision
                        else []
                    ),
                ],
                register=(register.html if register else "") + signature_block([]),
            ),
            encoding="utf-8",
        )
        final = out / target.name
        previous = out / f".{month}.previous"
        shutil.rmtree(previous, ignore_errors=True)
        if final.exists():
            os.rename(final, previous)
        (staging / _OWNER).unlink()
        os.rename(staging, final)
        shutil.rmtree(previous, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
        if progress_env is None:
            os.environ.pop(config.PROGRESS_VAR, None)
        else:
            os.environ[config.PROGRESS_VAR] = progress_env
    return ReportResult(
        index=final / "index.html",
        notebooks=timings,
        sync=sync_result,
        sync_seconds=sync_seconds,
    )


def _record_register(
    store: str | Path, month: str, staging: Path, version: Any, materiality: Any
) -> RegisterSummary | None:
    """Record the month's exception lists in the store's register and summarise it for the
    index; None (with a warning) when the register cannot be written (a read-only store)."""
    try:
        written = record_report(
            store, month, staging, table_version=None if version is None else int(version)
        )
        return summarise(store, month, version=written, materiality=materiality, folder=staging)
    except (StoreError, OSError) as exc:
        if isinstance(exc, RegisterFormatError):
            raise
        # A read-only store (a report re-rendered from a mounted copy) still gets its report.
        log.warning("report: the exception register was not updated: %s", one_line(exc))
        return None


def _extend_manifest(path: Path, **entries: Any) -> None:
    """Add entries (those not None) to ``report.json``."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update({k: v for k, v in entries.items() if v is not None})
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _write_manifest(
    path: Path,
    month: str,
    store: str | Path,
    manifest: Any,
    as_of: int | None,
    show_pii: bool,
    timings: dict[str, float],
    orders: OrdersCheck | None = None,
) -> None:
    """``report.json``: what the report read (store, table version, source, orders) and
    rendered."""
    doc = {
        "month": month,
        "store": _absolute(store),
        "table_version": manifest.table_version,
        "as_of": as_of,
        "source": manifest.source,
        "rows": manifest.rows,
        "complete": manifest.complete,
        "show_pii": show_pii,
        "rendered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "notebooks": sorted(timings),
        "orders": None
        if orders is None
        else {
            "read": orders.info.note,
            "in_month": orders.in_month,
            "warnings": list(orders.info.warnings),
        },
        "reproduce": f"txkit report --month {month} --store {store} "
        f"--as-of {manifest.table_version}"
        + (f" --orders {orders.path}" if orders is not None and orders.path else ""),
    }
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _absolute(store: str | Path) -> str:
    return str(store) if "://" in str(store) else str(Path(store).resolve())


def _freshness(month: str, store: str | Path, manifest: Any) -> str:
    """The index page's line on what was read: source, version, coverage, verification."""
    state = "complete" if manifest.complete else "NOT complete"
    return (
        f"Data: {manifest.rows:,} transactions of {month} from {manifest.source}, read from the "
        f"store {store} at table version {manifest.table_version}; the month is {state} "
        f"(windows {manifest.coverage.describe_windows()}); every fetch was verified against "
        f"the service's total for its query (last: {manifest.service_total:,} records, with a "
        "day of margin on each side)."
    )
