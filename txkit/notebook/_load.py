"""Small helpers that keep notebook cells short: load a month, show a table, list findings.

Everything shown is deterministic for a given source and month (no timings, ports or
request ids), so the committed notebook outputs can be compared by nbval.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from txkit import config
from txkit.calendar import month_bounds, next_month, no_records_line, parse_month, previous_months
from txkit.config import default_store, key_configured, resolve_orders, shown_path
from txkit.errors import NoRecordsError, ParameterError
from txkit.fetch.client import Client
from txkit.fetch.load import load_transactions
from txkit.fetch.pages import ExportStats
from txkit.fetch.source import connect, sandbox_files
from txkit.inputs import orders_around
from txkit.inputs.columns import ORDERS, column_setting
from txkit.inputs.orders import read_orders_file
from txkit.store import read_manifests, read_months, scan_store, store_name

__all__ = [
    "LoadInfo",
    "load_history",
    "load_margin",
    "load_month",
    "load_orders",
    "load_orders_file",
    "trend_records",
]

_SOURCES = ("auto", "sandbox", "service", "store")


@dataclass(frozen=True)
class LoadInfo:
    """What a notebook helper loaded, from where, and how it was verified.

    :func:`load_month`, :func:`load_history` and :func:`load_orders` each return a frame and
    one of these; displayed (or printed), it says what the frame holds.

    Attributes:
        kind: ``"month"``, ``"history"``, ``"margin"`` or ``"orders"``.
        month: the month the notebook is about (``YYYY-MM``).
        first: the first UTC day loaded (None when nothing was loaded).
        last: the last UTC day loaded (None when nothing was loaded).
        source: where the rows came from (no secret in it).
        rows: rows loaded.
        queries: the service's total per query (fetched months).
        pages: pages fetched (0 when read from the store or a file).
        passes: passes of the verified export.
        verified: how the rows were verified, when not by the fetch just made.
        note: the one line that describes a history or orders load.
        warnings: what makes the loaded rows unfit to be read as usual (an orders file with
            no order in the month), one sentence each; shown after the note.
    """

    month: str
    first: date | None
    last: date | None
    source: str
    rows: int
    queries: dict[str, int] = field(default_factory=dict)
    pages: int = 0
    passes: int = 0
    verified: str | None = None
    kind: str = "month"
    note: str = ""
    warnings: tuple[str, ...] = ()
    store: str = ""
    version: int | None = None

    def as_run(self) -> str:
        """This load in a few words for the page's one "as run" line: what was read and
        from where (the store's name and table version; never a local path)."""
        if self.kind != "month":
            note = self.note.removeprefix("History: ")
            if self.source.startswith("the store "):  # named once, on the month's line
                note = note.removesuffix(f" from {self.source}")
            return note[:1].lower() + note[1:] if note.startswith("Days ") else note
        if self.store:
            where = f"the store {self.store}, table version {self.version}"
        else:
            where = f"{self.source}, verified against the service's total"
        return f"{self.rows:,} transactions of {self.month} from {where}"

    def _lines(self) -> list[str]:
        if self.kind != "month":
            return [self.note, *(f"WARNING: {w}" for w in self.warnings)]
        totals = ", ".join(f"{q}: {t:,}" for q, t in self.queries.items())
        verified = self.verified or (
            f"Verified: the service's total for the query (a day of margin each side) was "
            f"{totals}; every record was fetched ({self.pages:,} pages, {self.passes} pass(es))"
        )
        return [
            f"Month {self.month} ({self.first} to {self.last}, UTC days on createdAt)",
            f"Source: {self.source}",
            f"Rows: {self.rows:,} transactions in the month",
            verified,
        ]

    def __repr__(self) -> str:
        return "\n".join(self._lines())

    def _repr_markdown_(self) -> str:
        lines = [line for line in self._lines() if not line.startswith("WARNING: ")]
        return "\n".join(
            [*(f"* {line}" for line in lines), *(f"* **Warning:** {w}" for w in self.warnings)]
        )


def _check_source(source: str) -> None:
    if source not in _SOURCES:
        raise ParameterError(f"source must be one of {', '.join(_SOURCES)}, got {source!r}")


def load_month(
    month: str,
    *,
    source: str = "auto",
    store: str | Path | None = None,
    currency: str | None = None,
    client: Client | None = None,
    version: int | None = None,
) -> tuple[pl.DataFrame, LoadInfo]:
    """Load one UTC month, verified, from the service, the embedded sandbox or the store.

    Args:
        month: ``YYYY-MM``.
        source: ``auto`` (the service when ``TXKIT_SECRET_KEY`` is configured, else the
            sandbox), ``sandbox``, ``service``, or ``store`` (the local store that
            ``txkit sync``/``txkit report`` keep; no network).
        store: the store folder or URI, for ``source="store"`` (default: the one of the
            source a sync would use, see :func:`txkit.config.default_store`).
        currency: optionally one currency.
        client: a connected :class:`~txkit.fetch.client.Client` to use instead of ``source``.
        version: the store's table version to read (default: the newest).

    Returns:
        The frame and a :class:`LoadInfo` to display.

    Raises:
        ValueError: a bad month or source, or a store without the month.
    """
    _check_source(source)
    month = parse_month(month)  # the parsed value, from here on
    first, last = month_bounds(month)
    if source == "store" and client is None:
        return _from_store(month, first, last, _store(store), currency, version)
    stats = ExportStats()
    with _connected(source, client) as (conn, description, _):
        df = load_transactions(conn, start=first, end=last, currency=currency, stats=stats)
    if df.height == 0 and currency is None:  # nothing to check: no page computes from nothing
        raise NoRecordsError(no_records_line(month, *_span(source, client)))
    info = LoadInfo(
        month=month,
        first=first,
        last=last,
        source=description,
        rows=df.height,
        queries=dict(stats.totals),
        pages=stats.pages,
        passes=stats.passes,
    )
    return df, info


@contextlib.contextmanager
def _connected(source: str, client: Client | None) -> Iterator[tuple[Client, str, str]]:
    if client is not None:
        yield client, f"the service at {client.base_url}", client.base_url
        return
    with connect(sandbox=None if source in ("auto", "store") else source == "sandbox") as src:
        yield src.client, src.description, src.label


def _span(source: str, client: Client | None) -> tuple[tuple[str, str] | None, str]:
    if client is None and (source == "sandbox" or (source == "auto" and not key_configured())):
        last = first = config.SANDBOX.start_month
        for _ in range(config.SANDBOX.months - 1):
            last = next_month(last)
        return (first, last), "the sandbox"
    return None, "the service's export"


def _store(store: str | Path | None) -> str | Path:
    return store or default_store()


def _from_store(
    month: str,
    first: date,
    last: date,
    store: str | Path,
    currency: str | None,
    version: int | None,
) -> tuple[pl.DataFrame, LoadInfo]:
    manifest = read_manifests(store, version=version).get(month)
    if manifest is None:
        held = sorted(read_manifests(store, version=version))
        raise NoRecordsError(
            no_records_line(month, (held[0], held[-1]) if held else None, f"the store {store}")
            + ": run `txkit sync` first"
        )
    df = read_months([month], store=store, currency=currency, version=manifest.table_version)
    whole = (
        "its windows cover it whole"
        if manifest.complete
        else "it is NOT complete (run `txkit sync` to complete it)"
    )
    info = LoadInfo(
        month=month,
        first=first,
        last=last,
        source=(
            f"the store {store_name(store)} at table version {manifest.table_version} (data from "
            f"{manifest.source}, last fetched {manifest.fetched_at})"
        ),
        rows=df.height,
        store=store_name(store),
        version=manifest.table_version,
        queries={", ".join(manifest.query.get("queries", [])) or "month": manifest.service_total},
        pages=0,
        passes=0,
        verified=(
            f"Verified when fetched: {whole} "
            f"({manifest.coverage.describe_windows() if manifest.coverage else 'no windows'}); "
            f"each fetch matched the service's total for its query (the last: "
            f"{manifest.service_total:,} records, a day of margin each side)"
        ),
    )
    return df, info


def load_history(
    month: str,
    *,
    months: int = 1,
    source: str = "auto",
    store: str | Path | None = None,
    client: Client | None = None,
    version: int | None = None,
) -> tuple[pl.DataFrame | None, LoadInfo]:
    """Load the months just before ``month``, for checks that need history (balance chains).

    From the store, only the months it holds right up to ``month`` are used (a gap would
    break the chains); from the service or the sandbox, the months are fetched, verified.

    Args:
        month: ``YYYY-MM``, the month being checked.
        months: how many months before it (0: none).
        source: as for :func:`load_month`.
        store: as for :func:`load_month`.
        client: as for :func:`load_month`.
        version: as for :func:`load_month`.

    Returns:
        The records (None when there is no history) and a :class:`LoadInfo` whose line says
        what was loaded.

    Raises:
        ValueError: a bad month, source or count.
    """
    _check_source(source)
    month = parse_month(month)
    if months < 0:
        raise ParameterError(f"months must be 0 or more, got {months}")
    wanted = previous_months(month, months)

    def none(note: str) -> tuple[None, LoadInfo]:
        return None, LoadInfo(
            month=month, first=None, last=None, source="", rows=0, kind="history", note=note
        )

    if not wanted:
        return none(f"History: none; {month} is checked alone")
    if source == "store" and client is None:
        store = _store(store)
        stored = read_manifests(store, version=version)
        usable: list[str] = []
        for name in reversed(wanted):  # contiguous back from the month
            if name not in stored:
                break
            usable.insert(0, name)
        if not usable:
            return none(
                f"History: none (the store {store_name(store)} does not hold {wanted[-1]}); "
                f"{month} is "
                "checked alone"
            )
        version = stored[usable[-1]].table_version  # one version for every month read
        df = read_months(usable, store=store, version=version)
        origin = f"the store {store_name(store)}"
    else:
        usable = wanted
        with _connected(source, client) as (conn, _, origin):
            start, _ = month_bounds(usable[0])
            _, end = month_bounds(usable[-1])
            df = load_transactions(conn, start=start, end=end)
    first, _ = month_bounds(usable[0])
    _, last = month_bounds(usable[-1])
    span = usable[0] if len(usable) == 1 else f"{usable[0]} to {usable[-1]}"
    note = f"History: {df.height:,} transactions of {span} from {origin}"
    return df, LoadInfo(
        month=month, first=first, last=last, source=origin, rows=df.height, kind="history",
        note=note,
    )  # fmt: skip


def load_margin(
    month: str,
    *,
    days: int,
    source: str = "auto",
    store: str | Path | None = None,
    client: Client | None = None,
    version: int | None = None,
) -> tuple[pl.DataFrame | None, LoadInfo]:
    """Load the ``days`` UTC days just before and just after ``month`` (matching across the
    month's ends: an order of the 31st paid after midnight).

    From the store, only the neighbouring months it holds are read; from the service or the
    sandbox, the two windows are fetched, verified.

    Args:
        month: ``YYYY-MM``.
        days: how many days on each side (0: none).
        source: as for :func:`load_month`.
        store: as for :func:`load_month`.
        client: as for :func:`load_month`.
        version: as for :func:`load_month`.

    Returns:
        The records (None when ``days`` is 0) and a :class:`LoadInfo` whose line says what
        was loaded.

    Raises:
        ValueError: a bad month, source or number of days.
    """
    _check_source(source)
    month = parse_month(month)
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise ParameterError(f"days must be a whole number, 0 or more, got {days!r}")
    if days == 0:
        note = f"Days around {month}: none"
        return None, LoadInfo(
            month=month, first=None, last=None, source="", rows=0, kind="margin", note=note
        )
    first, last = month_bounds(month)
    windows = [(first - timedelta(days=days), first - timedelta(days=1))]
    windows.append((last + timedelta(days=1), last + timedelta(days=days)))
    if source == "store" and client is None:
        store = _store(store)
        stored = read_manifests(store, version=version)
        wanted = {d.strftime("%Y-%m") for window in windows for d in window}
        df = read_months(sorted(m for m in wanted if m in stored), store=store, version=version)
        day = pl.col("createdAt").dt.date()
        df = df.filter(pl.any_horizontal(day.is_between(a, b) for a, b in windows))
        origin = f"the store {store_name(store)}"
    else:
        with _connected(source, client) as (conn, _, origin):
            frames = [load_transactions(conn, start=a, end=b) for a, b in windows]
        df = pl.concat(frames, how="diagonal_relaxed")
    note = (
        f"Days around the month: {df.height:,} transactions of {windows[0][0]} to "
        f"{windows[0][1]} and {windows[1][0]} to {windows[1][1]} from {origin}"
    )
    return df, LoadInfo(
        month=month, first=windows[0][0], last=windows[1][1], source=origin, rows=df.height,
        kind="margin", note=note,
    )  # fmt: skip


def load_orders(
    orders: str,
    month: str,
    *,
    margin_days: int = 0,
    columns: str | Mapping[str, Any] | None = None,
) -> tuple[pl.DataFrame, LoadInfo]:
    """The merchant's expected payments for ``month``.

    Args:
        orders: ``auto`` (``data/orders.csv`` when a key is configured, else the sandbox's
            orders), ``sandbox`` (the embedded sandbox's merchant-side record, read from its
            written files: see :func:`txkit.fetch.source.sandbox_files`), or a CSV or Parquet path
            (see :func:`txkit.analysis.read_orders`).
        month: ``YYYY-MM``; orders dated in another month are left out when they have a date.
        margin_days: also keep the orders dated this many days before and after the month.
        columns: the file's column mapping or preset (``shopify``; see
            :func:`txkit.analysis.read_orders`); None: ``TXKIT_ORDERS_COLUMNS``, else the
            ``[orders]`` section of ``txkit.toml``, else txkit's own column names. Never
            applied to the sandbox's orders.

    Returns:
        The orders and a :class:`LoadInfo` whose line says where they came from, the mapping
        used and what
        reading the file took (an encoding other than UTF-8, values normalised, with counts);
        its ``warnings`` say when no order is dated in the month (the reconciliation would
        then list every collection as missing in the orders).

    Raises:
        DataFileError: the file cannot be read as it is (named, with its lines and what to
            do; see :func:`txkit.analysis.read_orders`).
    """
    frame, info, _ = load_orders_file(orders, month, margin_days=margin_days, columns=columns)
    return frame, info


def load_orders_file(
    orders: str,
    month: str,
    *,
    margin_days: int = 0,
    columns: str | Mapping[str, Any] | None = None,
) -> tuple[pl.DataFrame, LoadInfo, Any]:
    """:func:`load_orders`, and the :class:`~txkit.inputs.OrdersFile` read."""
    month = parse_month(month)
    first, last = month_bounds(month)
    orders = resolve_orders(orders)
    if orders == "sandbox":
        file = sandbox_files() / "orders.csv"
        read = read_orders_file(file)
        origin = f"the embedded sandbox's merchant orders ({shown_path(file)})"
    else:
        # The file's name only: a page never shows the analyst's local path.
        mapping = column_setting(ORDERS, columns, given_origin="the orders_columns parameter")
        read = read_orders_file(orders, columns=mapping)
        origin = f"orders file {Path(orders).name}"
    frame = read.frame
    warnings: list[str] = []
    if "date" in frame.columns:
        dated = pl.col("date")
        if frame.filter(dated.is_between(first, last) | dated.is_null()).is_empty():
            # Nothing undated either, so the file's dates span something else.
            since, until = read.dates or (None, None)
            warnings.append(
                f"No order is dated in {month} in {origin} (its {read.frame.height:,} orders "
                f"are dated {since} to {until}): every collection of {month} shows as "
                f"missing_in_orders; check that the file is the one for {month}, or pass the "
                "right one (txkit report --orders FILE, or the notebook's orders parameter)"
            )
    frame = orders_around(frame, month, margin_days)
    around_text = f" and the {margin_days} day(s) around it" if margin_days else ""
    note = f"{origin}: {frame.height:,} orders in {month}{around_text}"
    if read.notes:
        note += f"; reading the file: {read.describe()}"
    info = LoadInfo(
        month=month, first=first, last=last, source=origin, rows=frame.height, kind="orders",
        note=note, warnings=tuple(warnings),
    )  # fmt: skip
    return frame, info, read


def trend_records(
    month: str,
    *,
    months: int = 12,
    source: str = "store",
    store: str | None = None,
    version: int | None = None,
) -> tuple[pl.LazyFrame, str]:
    """The records of the ``months`` months up to ``month``, for
    :func:`txkit.analysis.monthly_metrics`.

    From the store (``source="store"``) this is a lazy scan (``txkit.scan_store``) filtered
    on the ``month`` partition: nothing is read until the metrics' projected columns are.
    Otherwise the months are fetched from the service or the sandbox, verified.

    Args:
        month: the last month (``YYYY-MM``).
        months: how many months up to it.
        source: as for :func:`load_month`.
        store: the store (folder or URI; None: the source's default store).
        version: the store's table version (None: the newest).

    Returns:
        The records (lazy) and a line saying what they are.

    Raises:
        ValueError: a bad month, count or source.
    """
    month = parse_month(month)
    if months < 1:
        raise ParameterError(f"months must be 1 or more, got {months}")
    wanted = [*previous_months(month, months - 1), month]
    if source == "store":
        store = store or str(default_store())
        lf = scan_store(store, version=version).filter(pl.col("month").is_in(wanted))
        at = f" at table version {version}" if version is not None else ""
        return lf, (
            f"the store {store_name(store)}{at}, the months it holds from {wanted[0]} to "
            f"{wanted[-1]} (read "
            "lazily, only the "
            "columns needed)"
        )
    df, info = load_month(month, source=source, store=store, version=version)
    history, _ = load_history(month, months=months - 1, source=source, store=store, version=version)
    frames = [df] if history is None else [history, df]
    lf = pl.concat(frames, how="diagonal_relaxed").lazy()
    return lf, f"{info.source}, months {wanted[0]} to {wanted[-1]} (fetched and verified)"
