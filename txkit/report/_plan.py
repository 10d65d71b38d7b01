"""Step 1 of a report: the request checked, the merchant's files read, the days to sync chosen
(before anything is fetched or a kernel started); then the sync and the month's manifest."""

from __future__ import annotations

import concurrent.futures as cf
import contextvars
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from txkit import config
from txkit.calendar import month_bounds, no_records_line, parse_month, previous_months
from txkit.config import default_store, key_configured
from txkit.errors import NoRecordsError, TxkitError
from txkit.fetch.client import Client
from txkit.fetch.pages import current_total
from txkit.inputs import check_input, read_statements
from txkit.inputs.columns import BANK, ORDERS, column_setting, describe_columns
from txkit.notebook import LoadInfo, load_orders_file, resolve_bank_statements
from txkit.register import retention_policy
from txkit.store import (
    MonthManifest,
    SyncResult,
    check_version,
    is_remote,
    read_manifests,
    store_name,
    sync,
)

log = logging.getLogger("txkit")

__all__ = [
    "Notes",
    "OrdersCheck",
    "ReportPlan",
    "ReportRequest",
    "check_orders",
    "month_manifest",
    "plan_report",
    "resolved_store",
    "sandbox_calendar",
    "sync_for_report",
    "sync_range",
]


@dataclass(frozen=True)
class ReportRequest:
    """What ``txkit report`` was asked for (the arguments of :func:`txkit.report.run_report`).

    Attributes:
        month: ``YYYY-MM``.
        out: the reports folder (``out/YYYY-MM/``).
        notebooks: the folder of curated notebooks.
        store: the store folder or URI (None: :func:`txkit.config.default_store`).
        show_pii: render customer data unmasked (the pages say so).
        lookback_days: the store's look-back window.
        orders: the merchant's expected payments (None: ``data/orders.csv`` with a key, else
            the sandbox's).
        progress: progress bars (None: when interactive).
        as_of: re-render from this table version of the store (no sync).
        bank_statements: the merchant's bank statements (None: the sandbox's own without a
            key, none with one).
        bank_columns: a CSV statement's column mapping (None: ``TXKIT_BANK_COLUMNS``, else
            the ``[bank]`` section of ``txkit.toml``).
        orders_columns: the orders file's column mapping or preset (``shopify``,
            ``woocommerce``, ``stripe``; None: ``TXKIT_ORDERS_COLUMNS``, else the ``[orders]``
            section of ``txkit.toml``, else txkit's own column names).
        reopen: why a signed month is reported again (a revision beside the signed one).
        cache: reuse a notebook's executed result when nothing it reads changed (False:
            ``--no-cache``, every notebook executed; :mod:`txkit.report._cache`).
        key: with ``reopen``, the OpenSSH ed25519 key of who reopens (``allowed_signers``):
            the reopening is signed.
    """

    month: str
    out: Path
    notebooks: Path
    store: str | Path | None = None
    show_pii: bool = False
    lookback_days: int = config.LOOKBACK_DAYS
    orders: str | None = None
    progress: bool | None = None
    as_of: int | None = None
    bank_statements: list[str] | None = None
    bank_columns: str | None = None
    reopen: str | None = None
    orders_columns: str | None = None
    cache: bool = True
    key: str | None = None


class Notes:
    """The lines a report has to tell its user (the caller shows them; the library prints
    nothing): kept in order, and each passed to ``on_note`` as it comes."""

    def __init__(self, on_note: Callable[[str], None] | None = None) -> None:
        self.lines: list[str] = []
        self._on_note = on_note

    def add(self, line: str) -> None:
        self.lines.append(line)
        if self._on_note is not None:
            self._on_note(line)


@dataclass(frozen=True)
class OrdersCheck:
    """The orders file as the report checked it before running the notebooks.

    Attributes:
        info: :func:`txkit.notebook.load_orders`'s line (and warnings) for the month, with
            the days around it notebook 02 reads.
        in_month: orders dated in the month (or undated).
        dates: the first and last order date in the file (None without dates).
        path: the orders file (None for the sandbox's own orders).
        whole: every order of the file as read (the register's recomputation reads them all).
    """

    info: LoadInfo
    in_month: int
    dates: tuple[Any, Any] | None = None
    path: str | None = None
    whole: pl.DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def note(self) -> str:
        return f"orders: {self.info.note}"


def check_orders(orders: str, month: str, columns: Any = None) -> OrdersCheck:
    """Read the orders as notebook 02 will (its line is :attr:`OrdersCheck.note`); warn
    when the month has none. ``columns``: the file's column mapping (as
    :func:`txkit.notebook.load_orders` takes it).

    Raises:
        DataFileError: the file cannot be read as it is (its lines and what to do).
    """
    frame, info, read = load_orders_file(
        orders, month, margin_days=config.MARGIN_DAYS, columns=columns
    )
    if "date" in frame.columns:
        first, last = month_bounds(month)
        dated = pl.col("date")
        frame = frame.filter(dated.is_between(first, last) | dated.is_null())
    for warning in info.warnings:
        log.warning("report: %s", warning)
    return OrdersCheck(
        info, frame.height, read.dates, None if orders == "sandbox" else orders, read.frame
    )


@dataclass(frozen=True)
class ReportPlan:
    """What a report will read and run, decided before anything is fetched.

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
        show_pii: render customer data unmasked.
        orders_columns: the orders file's column mapping in effect, likewise.
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

    @property
    def bank_source(self) -> str | Sequence[str] | None:
        """What the settlements page and the close summary both read: the statements given,
        else ``auto`` resolved here (the kernels are given no key to resolve it themselves)."""
        return resolve_bank_statements(self.bank_statements or "auto")


def resolved_store(store: str | Path) -> str:
    """The store as the notebooks and ``report.json`` get it: a URI as given, a folder's
    resolved path."""
    return str(store) if is_remote(store) else str(Path(store).resolve())


def sync_range(month: str, calendar: tuple[date, date] | None = None) -> tuple[date, date]:
    """The days a report of ``month`` syncs: the :data:`config.HISTORY_MONTHS` the notebooks
    read as history, the month and :data:`config.MARGIN_DAYS` after it. With a ``calendar``
    (the first and last day the service holds data: the sandbox's) also every month the trends
    show (up to :data:`config.TREND_MONTHS`), clipped to it, so that no month outside it is
    planned. Without one (a service) only the history: a window before the service's first
    record cannot be proven complete (an empty month with nothing near its edges fails the
    sync), so the trends page says how many of its months the store holds instead.

    Raises:
        NoRecordsError: the month lies outside ``calendar`` (a ValueError; names the
            calendar: ``no records of 2026-11: the sandbox covers 2025-11 to 2026-10``).
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
            # The same line a notebook on that month stops with (txkit.notebook.load_month).
            raise NoRecordsError(
                no_records_line(month, (f"{calendar[0]:%Y-%m}", f"{calendar[1]:%Y-%m}"))
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


def _notebooks(folder: Path) -> list[Path]:
    # Not NN_topic.curated-0.2.0.ipynb: the new version `txkit notebooks update` wrote beside an
    # edited one, until the analyst carries the edits over.
    found = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if "." not in p.stem)
    if not found:
        raise ValueError(
            f"no curated notebooks (NN_topic.ipynb) in {folder.absolute()}: run in a close "
            "project (`txkit init DIR` makes one) or pass --notebooks DIR"
        )
    return found


def plan_report(request: ReportRequest, notes: Notes) -> ReportPlan:
    """Check the arguments and the merchant's files, and choose what to sync.

    Raises:
        ValueError: a bad month, version, missing notebooks or orders file.
        DataFileError: the orders or a bank statement cannot be read as they are.
    """
    month = parse_month(request.month)
    as_of = check_version(request.as_of)
    sources = _notebooks(request.notebooks)
    # The bank statements are read on a thread while the orders are checked (both before the
    # sync and the kernels); the orders' error, if any, is still the one raised.
    with cf.ThreadPoolExecutor(1, thread_name_prefix="txkit-plan") as pool:
        reading = pool.submit(contextvars.copy_context().run, _bank_statements, request)
        orders, checked, orders_mapping = _orders(request, month, notes)
        statements, bank_mapping, described = reading.result()
    if described:
        notes.add(described)
    since, until = sync_range(month, sandbox_calendar())
    return ReportPlan(
        month=month,
        store=request.store or default_store(),
        notebooks=sources,
        orders=orders,
        checked=checked,
        since=since,
        until=until,
        as_of=as_of,
        bank_statements=statements or None,
        bank_columns=(describe_columns(bank_mapping) or None) if bank_mapping else None,
        show_pii=request.show_pii,
        orders_columns=(describe_columns(orders_mapping) or None) if orders_mapping else None,
    )


def _orders(
    request: ReportRequest, month: str, notes: Notes
) -> tuple[str, OrdersCheck | None, Any]:
    """The orders file resolved, checked and its note added (the sandbox's: checked after
    the sync, which writes them), and its column mapping."""
    orders = config.resolve_orders(request.orders)
    if orders == "sandbox":
        return orders, None, None
    # Flag over TXKIT_ORDERS_COLUMNS over txkit.toml; the kernels get it as a parameter.
    mapping = column_setting(ORDERS, request.orders_columns)
    if Path(orders).is_symlink() or Path(orders).exists():
        check_input(orders, what="orders file")  # a folder, a device, a FIFO, a link loop
    if not Path(orders).is_file():
        raise ValueError(
            f"no orders file {orders!r} for the reconciliation ({config.not_found(orders)}): "
            "pass --orders PATH (CSV, "
            "Parquet or a spreadsheet with reference, amount, currency and optionally status, "
            "date; a shop's export with --orders-columns shopify, woocommerce or stripe)"
        )
    orders = str(Path(orders).resolve())
    # Read and checked now, before the sync and the kernels: a file that cannot be read
    # stops the report here, naming its lines, not in a notebook after the sync.
    checked = check_orders(orders, month, mapping)
    notes.add(checked.note)
    return orders, checked, mapping


def _bank_statements(request: ReportRequest) -> tuple[list[str] | None, Any, str | None]:
    """The merchant's bank statements read (absolute paths), their column mapping and what
    was read; none given: ``(None, None, None)``."""
    statements = request.bank_statements
    if not statements:
        return None, None, None
    mapping = column_setting(BANK, request.bank_columns)
    # read before resolving: a symbolic link loop is named as one, not a RuntimeError
    statements = [str(config.project_path(p)) for p in statements]
    described = read_statements(statements, columns=mapping).describe()
    return [str(Path(p).resolve()) for p in statements], mapping, described


def sync_for_report(
    plan: ReportPlan, request: ReportRequest, notes: Notes
) -> tuple[SyncResult | None, float]:
    """Sync the plan's days into the store (nothing when it holds them, or with ``as_of``),
    then apply the store's retention policy, keeping every version the reports in
    ``request.out`` cite; the sync's result (None when nothing was fetched) and its seconds.

    Every day the report reads is proven before a notebook runs: days an earlier sync read
    once (unproven) are planned and proven by this sync, and this sync reads none once
    (``read_once=False``; docs/completeness.md, "Days read once")."""
    if plan.as_of is not None:
        return None, 0.0
    refuse_a_month_without_records(plan)
    started = time.perf_counter()
    result = sync(  # it connects only when something is to be fetched
        start=plan.since,
        end=plan.until,
        store=plan.store,
        lookback_days=request.lookback_days,
        progress=request.progress,
        retention=retention_policy(reports=request.out),
        read_once=False,
    )
    for note in result.notes:
        notes.add(note)
    if not result.fetched:
        return None, 0.0
    return result, time.perf_counter() - started


def refuse_a_month_without_records(plan: ReportPlan) -> None:
    """On a service (a key configured), a month it holds no record of is said in the one line
    the sandbox gives (``no records of 2026-06: the service holds none of that month``,
    exit 2), before the sync and any notebook: the sync could only fail to prove the edges of
    an empty window. One request (a one-record page's total, a day of margin on each side, as
    the syncs read), and only when the store does not hold the month yet; a month the store
    holds with no record is said likewise. The sandbox's calendar is known up front
    (:func:`sync_range`).

    Raises:
        NoRecordsError: the month has no record.
    """
    if sandbox_calendar() is not None:
        return
    held = read_manifests(plan.store).get(plan.month)
    if held is not None and held.rows:
        return
    if held is not None and held.complete:
        where = f"the store {store_name(plan.store)}"
        raise NoRecordsError(no_records_line(plan.month, None, where))
    first, last = month_bounds(plan.month)
    window = {
        "startDate": (first - timedelta(days=1)).isoformat(),
        "endDate": (last + timedelta(days=1)).isoformat(),
    }
    with Client() as client:
        total = current_total(client, window)
    if total == 0:
        raise NoRecordsError(no_records_line(plan.month, None, "the service"))


def month_manifest(plan: ReportPlan) -> MonthManifest:
    """The store's record of the plan's month (at ``as_of``, else the newest).

    Raises:
        TxkitError: the store has no data for the month.
    """
    manifest = read_manifests(plan.store, version=plan.as_of).get(plan.month)
    if manifest is None:
        at = f" at version {plan.as_of}" if plan.as_of is not None else " after the sync"
        raise TxkitError(f"the store {store_name(plan.store)} has no data for {plan.month}{at}")
    return manifest
