"""Small helpers that keep notebook cells short: load a month, show a table, list findings.

Everything shown is deterministic for a given source and month (no timings, ports or
request ids), so the committed notebook outputs can be compared by nbval.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

import polars as pl

from txkit.load import load_transactions, month_bounds, previous_months
from txkit.pages import ExportStats
from txkit.privacy import mask_sentences
from txkit.source import connect

__all__ = [
    "LoadInfo",
    "display_exceptions",
    "display_table",
    "load_history",
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


def load_orders(orders: str, month: str) -> tuple[pl.DataFrame, str]:
    """The merchant's expected payments for ``month``.

    Args:
        orders: ``auto`` (``data/orders.csv`` when a key is configured, else the sandbox's
            orders), ``sandbox`` (the embedded sandbox's merchant-side record), or a CSV or
            Parquet path (see :func:`txkit.analysis.read_orders`).
        month: ``YYYY-MM``; orders dated in another month are left out when they have a date.

    Returns:
        The orders and a line saying where they came from.
    """
    from txkit.analysis import read_orders
    from txkit.source import DEFAULT_SANDBOX, key_configured

    first, last = month_bounds(month)
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
    return frame, f"{origin}: {frame.height:,} orders in {month}"


def display_table(
    df: pl.DataFrame,
    *,
    show_pii: bool = False,
    rows: int = 30,
    key: Sequence[str] = (),
    sort: Sequence[str | pl.Expr] | None = None,
    descending: bool | Sequence[bool] = False,
    empty: str = "None this month.",
) -> None:
    """Display a formatted table (:func:`txkit.tables.format_table`), masked unless ``show_pii``.

    Money with separators and its currency, rates as percentages, key columns first, sorted
    by ``sort``; at most ``rows`` rows; an empty frame is shown as the ``empty`` sentence.
    """
    from IPython.display import display

    from txkit.tables import format_table

    display(
        format_table(
            df,
            show_pii=show_pii,
            rows=rows,
            key=key,
            sort=sort,
            descending=descending,
            empty=empty,
        )
    )


def what_to_look_at(findings: Iterable[str], *, show_pii: bool = False) -> None:
    """Display computed findings as a Markdown list under "What to look at".

    Every sentence goes through :func:`txkit.privacy.mask_sentences` (customer e-mails and
    account numbers masked unless ``show_pii``).
    """
    from IPython.display import Markdown, display

    items = mask_sentences(findings, show_pii=show_pii) or ["Nothing unusual was found."]
    display(Markdown("\n".join(f"* {item}" for item in items)))


def display_exceptions(
    df: pl.DataFrame,
    name: str,
    *,
    title: str,
    key: Sequence[str],
    month: str,
    downloads: str | None,
    page: str = "",
    show_pii: bool = False,
    rows: int = 30,
    sort: Sequence[str | pl.Expr] | None = None,
    descending: bool | Sequence[bool] = False,
    empty: str = "None this month.",
    population: int | None = None,
    population_label: str = "",
    first: Sequence[str] = (),
) -> None:
    """Display an exception list and, in a report, write it as CSV and Excel with links.

    The table is shown as by :func:`display_table` (``key`` columns first, then ``first``,
    the ones that matter most, so they are in view without scrolling). When
    ``downloads`` is a folder (``txkit report`` sets it), the whole list is written there by
    :func:`txkit.downloads.publish_exceptions`, marked new / still open / resolved against the
    previous month's report, and a line with the counts and the links follows the table.
    ``population`` (what the list was drawn from, e.g. the references reconciled) gives the
    index its rate.
    """
    from IPython.display import Markdown, display

    from txkit.downloads import publish_exceptions

    display_table(
        df,
        show_pii=show_pii,
        rows=rows,
        key=[*key, *[c for c in first if c not in key]],
        sort=sort,
        descending=descending,
        empty=empty,
    )
    written = publish_exceptions(
        df,
        name,
        title=title,
        key=key,
        month=month,
        folder=downloads,
        page=page,
        show_pii=show_pii,
        population=population,
        population_label=population_label,
    )
    if written is not None:
        display(Markdown(written.links_markdown()))
