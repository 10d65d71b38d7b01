"""Small helpers that keep notebook cells short: load a month, show a table, list findings.

Everything shown is deterministic for a given source and month (no timings, ports or
request ids), so the committed notebook outputs can be compared by nbval.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

import polars as pl

from txkit.load import load_transactions, month_bounds, previous_months
from txkit.pages import ExportStats
from txkit.privacy import mask_pii
from txkit.source import connect

__all__ = [
    "LoadInfo",
    "display_table",
    "load_history",
    "load_margin",
    "load_month",
    "load_orders",
    "previous_months",
    "what_to_look_at",
]

_SOURCES = ("auto", "sandbox", "service", "store")


@dataclass(frozen=True)
class LoadInfo:
    """What was loaded, from where, and how it was verified."""

    month: str
    first: date
    last: date
    source: str
    rows: int
    queries: dict[str, int]
    pages: int
    passes: int
    verified: str | None = None

    def _lines(self) -> list[str]:
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
        return "\n".join(f"* {line}" for line in self._lines())


def load_month(
    month: str, *, source: str = "auto", store: str = "data/store", currency: str | None = None
) -> tuple[pl.DataFrame, LoadInfo]:
    """Load one UTC month, verified, from the service, the embedded sandbox or the store.

    Args:
        month: ``YYYY-MM``.
        source: ``auto`` (the service when ``TXKIT_SECRET_KEY`` is configured, else the
            sandbox), ``sandbox``, ``service``, or ``store`` (the local Parquet store that
            ``txkit sync``/``txkit report`` keep; no network).
        store: the store folder, for ``source="store"``.
        currency: optionally one currency.

    Returns:
        The frame and a :class:`LoadInfo` to display.

    Raises:
        ValueError: a bad month or source.
    """
    if source not in _SOURCES:
        raise ValueError(f"source must be one of {', '.join(_SOURCES)}, got {source!r}")
    first, last = month_bounds(month)
    if source == "store":
        return _from_store(month, first, last, store, currency)
    stats = ExportStats()
    sandbox = None if source == "auto" else source == "sandbox"
    with connect(sandbox=sandbox) as src:
        df = load_transactions(src.client, start=first, end=last, currency=currency, stats=stats)
        description = src.description
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


def _read_store(store: str, months: list[str], currency: str | None = None) -> pl.DataFrame:
    """The stored records of ``months``, in the loader's column and row order."""
    from txkit.frame import finalize
    from txkit.store import scan_store

    lf = scan_store(store).filter(pl.col("month").is_in(months)).drop("month")
    if currency is not None:
        lf = lf.filter(pl.col("toCurrency") == currency)
    return finalize(lf.collect())


def _from_store(
    month: str, first: date, last: date, store: str, currency: str | None
) -> tuple[pl.DataFrame, LoadInfo]:
    from txkit.store import read_manifests

    manifest = read_manifests(store).get(month)
    if manifest is None:
        raise ValueError(f"the store {store} holds no data for {month}: run `txkit sync` first")
    df = _read_store(store, [month], currency)
    info = LoadInfo(
        month=month,
        first=first,
        last=last,
        source=f"the local store {store} (fetched {manifest.fetched_at} from {manifest.source})",
        rows=df.height,
        queries={", ".join(manifest.query.get("queries", [])) or "month": manifest.service_total},
        pages=0,
        passes=0,
        verified=(
            f"Verified when fetched: the month was fetched whole at {manifest.full_fetch_at} and "
            f"last refreshed at {manifest.fetched_at} ({' to '.join(manifest.windows[-1])}); "
            f"that fetch matched the service's total of {manifest.service_total:,} records for "
            "its query (a day of margin each side)"
        ),
    )
    return df, info


def load_history(
    month: str, *, months: int = 1, source: str = "auto", store: str = "data/store"
) -> tuple[pl.DataFrame | None, str]:
    """Load the months just before ``month``, for checks that need history (balance chains).

    From the store, only the months it holds right up to ``month`` are used (a gap would
    break the chains); from the service or the sandbox, the months are fetched, verified.

    Args:
        month: ``YYYY-MM``, the month being checked.
        months: how many months before it (0: none).
        source: as for :func:`load_month`.
        store: as for :func:`load_month`.

    Returns:
        The records (None when there is no history) and a line saying what was loaded.

    Raises:
        ValueError: a bad month, source or count.
    """
    if source not in _SOURCES:
        raise ValueError(f"source must be one of {', '.join(_SOURCES)}, got {source!r}")
    if months < 0:
        raise ValueError(f"months must be 0 or more, got {months}")
    wanted = previous_months(month, months)
    if not wanted:
        return None, f"History: none; {month} is checked alone"
    if source == "store":
        from txkit.store import read_manifests

        stored = read_manifests(store)
        usable: list[str] = []
        for name in reversed(wanted):  # contiguous back from the month
            if name not in stored:
                break
            usable.insert(0, name)
        if not usable:
            return None, (
                f"History: none (the store {store} does not hold {wanted[-1]}); {month} is "
                "checked alone"
            )
        df = _read_store(store, usable)
        origin = f"the local store {store}"
    else:
        usable = wanted
        sandbox = None if source == "auto" else source == "sandbox"
        with connect(sandbox=sandbox) as src:
            start, _ = month_bounds(usable[0])
            _, end = month_bounds(usable[-1])
            df = load_transactions(src.client, start=start, end=end)
            origin = src.label
    span = usable[0] if len(usable) == 1 else f"{usable[0]} to {usable[-1]}"
    return df, f"History: {df.height:,} transactions of {span} from {origin}"


def load_margin(
    month: str, *, days: int, source: str = "auto", store: str = "data/store"
) -> tuple[pl.DataFrame | None, str]:
    """Load the ``days`` UTC days just before and just after ``month`` (matching across the
    month's ends: an order of the 31st paid after midnight).

    From the store, only the neighbouring months it holds are read; from the service or the
    sandbox, the two windows are fetched, verified.

    Args:
        month: ``YYYY-MM``.
        days: how many days on each side (0: none).
        source: as for :func:`load_month`.
        store: as for :func:`load_month`.

    Returns:
        The records (None when ``days`` is 0) and a line saying what was loaded.

    Raises:
        ValueError: a bad month, source or number of days.
    """
    if source not in _SOURCES:
        raise ValueError(f"source must be one of {', '.join(_SOURCES)}, got {source!r}")
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise ValueError(f"days must be a whole number, 0 or more, got {days!r}")
    if days == 0:
        return None, f"Days around {month}: none"
    first, last = month_bounds(month)
    windows = [(first - timedelta(days=days), first - timedelta(days=1))]
    windows.append((last + timedelta(days=1), last + timedelta(days=days)))
    if source == "store":
        from txkit.store import read_manifests

        stored = read_manifests(store)
        wanted = {d.strftime("%Y-%m") for window in windows for d in window}
        df = _read_store(store, sorted(m for m in wanted if m in stored))
        day = pl.col("createdAt").dt.date()
        df = df.filter(pl.any_horizontal(day.is_between(a, b) for a, b in windows))
        origin = f"the local store {store}"
    else:
        sandbox = None if source == "auto" else source == "sandbox"
        with connect(sandbox=sandbox) as src:
            frames = [load_transactions(src.client, start=a, end=b) for a, b in windows]
            origin = src.label
        df = pl.concat(frames, how="diagonal_relaxed")
    return df, (
        f"Days around the month: {df.height:,} transactions of {windows[0][0]} to "
        f"{windows[0][1]} and {windows[1][0]} to {windows[1][1]} from {origin}"
    )


def load_orders(orders: str, month: str, *, margin_days: int = 0) -> tuple[pl.DataFrame, str]:
    """The merchant's expected payments for ``month``.

    Args:
        orders: ``auto`` (``data/orders.csv`` when a key is configured, else the sandbox's
            orders), ``sandbox`` (the embedded sandbox's merchant-side record), or a CSV or
            Parquet path (see :func:`txkit.analysis.read_orders`).
        month: ``YYYY-MM``; orders dated in another month are left out when they have a date.
        margin_days: also keep the orders dated this many days before and after the month.

    Returns:
        The orders and a line saying where they came from.
    """
    from txkit.analysis import read_orders
    from txkit.source import DEFAULT_SANDBOX, key_configured

    first, last = month_bounds(month)
    first, last = first - timedelta(days=margin_days), last + timedelta(days=margin_days)
    if orders == "auto":
        orders = "data/orders.csv" if key_configured() else "sandbox"
    if orders == "sandbox":
        from txkit.sandbox import generate_ledger

        ledger = generate_ledger(
            seed=DEFAULT_SANDBOX.seed,
            records=DEFAULT_SANDBOX.records,
            start_month=DEFAULT_SANDBOX.start_month,
            months=DEFAULT_SANDBOX.months,
        )
        frame, origin = ledger.orders, "the embedded sandbox's merchant orders"
    else:
        frame, origin = read_orders(orders), f"orders file {orders}"
    if "date" in frame.columns:
        frame = frame.filter(pl.col("date").is_between(first, last) | pl.col("date").is_null())
    around = f" and the {margin_days} day(s) around it" if margin_days else ""
    return frame, f"{origin}: {frame.height:,} orders in {month}{around}"


def display_table(df: pl.DataFrame, *, show_pii: bool = False, rows: int = 30) -> None:
    """Display a frame in full width, with customer data masked unless ``show_pii``."""
    from IPython.display import display

    shown = df if show_pii else mask_pii(df)
    with pl.Config(tbl_rows=rows, tbl_cols=-1, fmt_str_lengths=40, tbl_width_chars=200):
        display(shown)


def what_to_look_at(findings: Iterable[str]) -> None:
    """Display computed findings as a Markdown list under "What to look at"."""
    from IPython.display import Markdown, display

    items = list(findings) or ["Nothing unusual was found."]
    display(Markdown("\n".join(f"* {item}" for item in items)))
