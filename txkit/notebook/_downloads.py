"""Downloadable exception lists: CSV and Excel files next to the report's HTML pages.

A notebook run by ``txkit report`` gets a ``downloads`` folder (the report being built). For
each exception list it calls :func:`publish_exceptions`, which

* masks customer data like the HTML (through :func:`txkit.privacy.mask_pii`) unless
  ``show_pii``, and replaces the secret key wherever a server echoed it into a value
  (:func:`txkit._scrub.scrub_frame`);
* adds a stable ``key`` per row (a reference or id plus its category), then marks each row
  ``new`` or ``still open`` against the previous month's report and appends the keys
  ``resolved`` since (:mod:`txkit.notebook._open_items`);
* writes ``NAME.csv`` (formula-safe, :func:`txkit.output.csv_safe`) and ``NAME.xlsx``
  (xlsxwriter through polars) atomically, and records the list in ``NAME.download.json``
  (title, rows, files, open-item counts, and the open keys with their first month, which the
  next month's report reads; one file per list, so notebooks may run at the same time);
* writes ``NAME.register.parquet`` (key, section, kind, currency, amount, the item's own date),
  which ``txkit report`` records in the exception register (:mod:`txkit.register`);
* shows the open-item counts and the links under the table.

Outside a report (``downloads`` empty) nothing is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl

from txkit._scrub import scrub_frame
from txkit.analysis.exception_lists import AT_STAKE, LISTS, exception_list
from txkit.calendar import parse_month, previous_month
from txkit.money import money_sums
from txkit.notebook._open_items import RESOLVED, OpenCounts, classify
from txkit.output import atomic_path, csv_safe, ordered, write_xlsx
from txkit.privacy import mask_pii
from txkit.register import ITEMS_SUFFIX, newest_revision, register_items

__all__ = [
    "MANIFEST",
    "Destination",
    "Download",
    "ExceptionList",
    "count_by_currency",
    "exception_key",
    "previous_open",
    "publish_exceptions",
    "read_downloads",
    "report_folder",
    "report_history",
]

#: Each exception list's record, beside its HTML page: ``NAME.download.json``.
MANIFEST = ".download.json"


@dataclass(frozen=True)
class Download:
    """One exception list as written: its files, rows and open-item counts."""

    name: str
    title: str
    page: str
    csv: str
    xlsx: str
    rows: int
    counts: OpenCounts
    population: int | None = None  # what the list was drawn from (references reconciled, ...)
    population_label: str = ""
    #: Rows and population per currency (a list's month total read on a currency's row was
    #: the trends' ``breaks 18`` on every currency of 2026-10); None when not recorded.
    rows_by_currency: dict[str, int] | None = None
    population_by_currency: dict[str, int] | None = None
    #: The money at stake of the listed (open) items per currency: the sum of the absolute
    #: ``at_stake`` (exact text), never across currencies; items without an amount (a
    #: currency mismatch) are counted under ``without_amount``.
    at_stake_by_currency: dict[str, str] | None = None
    without_amount: int = 0
    #: The rows the list's rate counts, in all and per currency, when not every row listed
    #: (:meth:`txkit.analysis.exception_lists.ExceptionList.rated_rows`); None: every row.
    rated: int | None = None
    rated_by_currency: dict[str, int] | None = None

    def links_markdown(self) -> str:
        """``Download: CSV · Excel`` with the counts, for the notebook page."""
        return (
            f"{self.title}: {self.counts.sentence()}. Download: [CSV]({self.csv}) · "
            f"[Excel]({self.xlsx})"
        )


def exception_key(df: pl.DataFrame, columns: Sequence[str]) -> pl.Expr:
    """A stable key per row: the ``columns`` joined with ``:`` (e.g. ``TXK-1A2B:amount_mismatch``).

    Raises:
        ValueError: a key column is absent.
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"key columns {missing} are not in the exceptions ({df.columns})")
    return pl.concat_str(
        [pl.col(c).cast(pl.String).fill_null("") for c in columns], separator=":"
    ).alias("key")


def read_downloads(folder: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The exception lists recorded in a report folder, by name (``{}`` when there are none).

    Raises:
        ValueError: a record is not valid JSON (names the file).
    """
    out = {}
    for path in sorted(Path(folder).glob(f"*{MANIFEST}")):
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path} is not valid JSON ({exc.msg}): delete it and rerun the report"
            ) from None
        out[entry["name"]] = entry
    return out


def report_folder(reports: str | os.PathLike[str], month: str) -> Path:
    """The folder of ``month``'s newest report: its newest revision (``YYYY-MM.rN``, written
    beside a signed report reopened) when it has one, else ``YYYY-MM``."""
    newest = newest_revision(reports, month)
    return newest[0] if newest is not None else Path(reports) / month


def previous_open(folder: str | os.PathLike[str], name: str) -> dict[str, str] | None:
    """The keys open in a report's list ``name``, with their first month; None without one."""
    entry = read_downloads(folder).get(name)
    return None if entry is None else dict(entry.get("open", {}))


def _currency(schema: pl.Schema) -> pl.Expr | None:
    """``currency``, else the export's, else the order's (a reconciliation row); None: the list
    has none."""
    if "currency" in schema:
        return pl.col("currency").cast(pl.String)
    sides = [
        pl.col(c).cast(pl.String) for c in ("export_currency", "order_currency") if c in schema
    ]
    return pl.coalesce(sides) if sides else None


def count_by_currency(df: pl.DataFrame) -> dict[str, int]:
    """Rows per currency (see :func:`_currency`); rows without one count under ``""``.

    Raises:
        ValueError: the frame has no currency column.
    """
    expr = _currency(df.schema)
    if expr is None:
        raise ValueError(
            f"no currency column in {df.columns}: expected currency, export_currency or "
            "order_currency"
        )
    counts = df.select(expr.fill_null("").alias("c")).group_by("c").len()
    return dict(zip(counts["c"].to_list(), counts["len"].to_list(), strict=True))


def _for_files(df: pl.DataFrame) -> pl.DataFrame:
    """Timestamps as naive UTC: Excel has no time zones (the header says UTC)."""
    out = []
    for name, dtype in df.schema.items():
        if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None:
            out.append(pl.col(name).dt.convert_time_zone("UTC").dt.replace_time_zone(None))
        elif dtype.is_nested():
            out.append(pl.col(name).cast(pl.List(pl.String)).list.join(", "))
        elif isinstance(dtype, (pl.Enum, pl.Categorical)):
            out.append(pl.col(name).cast(pl.String))
    return df.with_columns(out) if out else df


def _at_stake_by_currency(keyed: pl.DataFrame, name: str) -> tuple[dict[str, str] | None, int]:
    if name not in LISTS:
        return None, 0
    spec = LISTS[name]
    rows = spec.with_at_stake(keyed)
    frame = rows.select(
        pl.col(AT_STAKE).abs().alias("amount"), spec.currency_of(rows.schema).alias("currency")
    )
    sums = {
        code: str(total)
        for code, total, _ in money_sums(frame.drop_nulls("amount"), "amount")
        if code is not None and total is not None
    }
    return sums, frame["amount"].null_count()


def _flags(descending: bool | Sequence[bool], n: int) -> list[bool]:
    return [descending] * n if isinstance(descending, bool) else list(descending)


@dataclass(frozen=True)
class ExceptionList:
    """An exception list as a notebook defines it.

    Attributes:
        name: the file stem (``reconciliation_mismatches``).
        title: what people read (``Reconciliation mismatches``).
        key: the columns that identify a row across months (reference or id plus category).
        first: the columns a reader needs first in the files, after ``key``'s (amount,
            currency, date, what is wrong); the technical ``key`` column comes last.
        sort: the rows' order (as the page's: what is at stake first); in the files, resolved
            items follow the open ones.
        descending: for ``sort``.
        population: how many items the list was drawn from (e.g. references reconciled), for
            the index's rates, or those counts per currency (:func:`count_by_currency`), for
            the trends' per-currency rates; None when it has no meaning.
        population_label: what those items are (``references``).
    """

    name: str
    title: str
    key: Sequence[str]
    first: Sequence[str] = ()
    sort: Sequence[str | pl.Expr] | None = None
    descending: bool | Sequence[bool] = False
    population: int | Mapping[str, int] | None = None
    population_label: str = ""


@dataclass(frozen=True)
class Destination:
    """Where a list is written: the report's month, the report folder being written (None or
    empty: nothing is written), the notebook page that shows the list
    (``02_reconciliation.html``), and whether customer data is written unmasked."""

    month: str
    folder: str | os.PathLike[str] | None
    page: str = ""
    show_pii: bool = False


def publish_exceptions(
    df: pl.DataFrame, listing: ExceptionList, to: Destination
) -> Download | None:
    """Write an exception list (one row per exception) as CSV and Excel into the report, with
    open-item status; the :class:`Download`, or None when ``to.folder`` is empty.

    Raises:
        ValueError: a key column is absent or keys repeat, a malformed month, or a list that
            :mod:`txkit.analysis.exception_lists` does not define (before any file is written).
    """
    if not to.folder:
        return None
    month = parse_month(to.month)  # it names files and open items: the parsed value only
    exception_list(listing.name)  # the register's items need the list's one definition
    folder, name = Path(to.folder), listing.name
    shown = df if to.show_pii else mask_pii(df)
    assert isinstance(shown, pl.DataFrame)
    # Before the keys are made: they go into the manifest too.
    shown, _ = scrub_frame(shown, where=f"the report's {name} downloads")
    keyed = shown.with_columns(exception_key(shown, listing.key))
    keyed = keyed.select("key", *[c for c in keyed.columns if c != "key"])
    # The previous report sits beside this one (reports/YYYY-MM/ or its newest revision
    # YYYY-MM.rN; this one being built aside).
    previous = previous_open(report_folder(folder.parent, previous_month(month)), name)
    marked, counts = classify(keyed, previous, month=month)
    marked = _in_page_order(marked, listing)
    # The CSV and the workbook in one column order: the reader's first, the key last.
    files = csv_safe(ordered(_for_files(marked), [*listing.key, *listing.first], ["key"]))
    with atomic_path(folder / f"{name}.csv") as tmp:
        files.write_csv(tmp)
    with atomic_path(folder / f"{name}.xlsx") as tmp:
        write_xlsx(files, tmp, sheet=name, first=files.columns, last=())
    download = _download(listing, to, keyed, counts)
    still = marked.filter(pl.col("open_status") != RESOLVED)
    entry = asdict(download) | {
        "open": dict(zip(still["key"].to_list(), still["first_seen"].to_list(), strict=True))
    }
    # The register's view of the list (key, section, kind, currency, exact amount, the item's
    # own date), which the report records in the store's exception register.
    with atomic_path(folder / f"{name}{ITEMS_SUFFIX}") as tmp:
        register_items(keyed, name, month).write_parquet(tmp)
    with atomic_path(folder / f"{name}{MANIFEST}") as tmp:
        tmp.write_text(json.dumps(entry, indent=1, sort_keys=True), encoding="utf-8")
    return download


def _in_page_order(marked: pl.DataFrame, listing: ExceptionList) -> pl.DataFrame:
    if not listing.sort:
        return marked
    sort = listing.sort
    order = marked.with_row_index("_at").sort(
        [pl.col("open_status") == RESOLVED, *sort, "_at"],
        descending=[False, *_flags(listing.descending, len(sort)), False],
        nulls_last=True,
    )
    return order.drop("_at")


def _download(
    listing: ExceptionList, to: Destination, keyed: pl.DataFrame, counts: OpenCounts
) -> Download:
    population, name = listing.population, listing.name
    stake, without = _at_stake_by_currency(keyed, name)
    rated = LISTS[name].rated_rows(keyed) if name in LISTS else keyed
    currency = _currency(keyed.schema) is not None
    return Download(
        name=name,
        title=listing.title,
        page=to.page,
        csv=f"{name}.csv",
        xlsx=f"{name}.xlsx",
        rows=keyed.height,
        counts=counts,
        population=sum(population.values()) if isinstance(population, Mapping) else population,
        population_label=listing.population_label,
        rows_by_currency=count_by_currency(keyed) if _currency(keyed.schema) is not None else None,
        population_by_currency=dict(population) if isinstance(population, Mapping) else None,
        at_stake_by_currency=stake,
        without_amount=without,
        rated=rated.height if rated.height != keyed.height else None,
        rated_by_currency=(
            count_by_currency(rated) if currency and rated.height != keyed.height else None
        ),
    )


def report_history(
    reports: str | os.PathLike[str], *, current: tuple[str, str | os.PathLike[str]] | None = None
) -> pl.DataFrame:
    """What each month's report found: exception lists, their rows and what they were out of.

    Args:
        reports: the reports folder (``reports/``, one ``YYYY-MM/`` folder per month).
        current: ``(month, folder)`` of a report being built (its folder is not yet in
            place); it replaces that month's finished report.

    Returns:
        ``month``, ``list``, ``currency`` (null: the month's whole list; then a row per
        currency where the report recorded them), ``rows`` (exceptions), ``population`` (e.g.
        the references reconciled; null when not recorded), sorted by month; empty when no
        report has downloads.
    """
    folders = {
        f.name: report_folder(reports, f.name)
        for f in sorted(Path(reports).glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]"))
    }
    if current is not None and str(current[1]):
        folders[current[0]] = Path(current[1])
    rows = []
    for month in sorted(folders):
        for name, entry in read_downloads(folders[month]).items():
            rows.append(
                {
                    "month": month,
                    "list": name,
                    "currency": None,
                    # The rate's rows (a sum-rule match is listed, not a mismatch).
                    "rows": entry["rated"] if entry.get("rated") is not None else entry.get("rows"),
                    "population": entry.get("population"),
                }
            )
            by_rows = entry.get("rated_by_currency") or entry.get("rows_by_currency")
            if by_rows is None:
                continue
            by_population = entry.get("population_by_currency") or {}
            for currency in sorted(set(by_rows) | set(by_population)):
                rows.append(
                    {
                        "month": month,
                        "list": name,
                        "currency": currency,
                        "rows": by_rows.get(currency, 0),
                        "population": by_population.get(currency),
                    }
                )
    schema = {
        "month": pl.String,
        "list": pl.String,
        "currency": pl.String,
        "rows": pl.Int64,
        "population": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema).sort("month", "list", "currency", nulls_last=False)
