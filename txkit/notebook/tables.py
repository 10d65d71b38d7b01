"""Tables for people: the one place that turns a result frame into a formatted table.

Notebooks and the report show every table through :func:`format_table` (via
``txkit.notebook.display_table``). It masks customer data through :func:`txkit.privacy.mask_pii`
unless ``show_pii``, puts the key columns first, sorts, and formats each value for reading:

* money (``Decimal`` columns): thousands separators and the row's currency
  (``108,571,283.63 NGN``), exact, never through a float (:func:`txkit.money.format_money`,
  the one rule for money in tables, sentences and headlines);
* rates and shares (float columns named ``*rate*``, ``*share*``): percentages (``85.33%``);
* counts: thousands separators; timestamps: ``2026-10-03 14:05:09`` (UTC), or the date alone
  when every value is at midnight; booleans ``yes``/``no``; lists joined with commas.

The HTML is a great_tables table (no dtype row, no quotes, no ``shape:``) inside a box that
scrolls sideways when the table is wider than the page. The plain-text form (what nbval
compares, and what a terminal shows) holds the same formatted values. An empty frame is shown as
a sentence (``None this month.``), not as an empty grid.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from txkit._session import notebook_value
from txkit.money import format_money
from txkit.privacy import mask_pii

__all__ = ["Table", "cut_notice", "format_money", "format_table", "format_value"]

# Where a money column finds its currency: ``order_amount`` -> ``order_currency``, then these.
_CURRENCY_COLUMNS = ("currency", "toCurrency", "wallet")
_NUMBER_STYLE = "white-space:nowrap!important;text-align:right"
#: Characters (the widest value or name of each column, two more for its padding) beyond
#: which a table is wider than JupyterLab's notebook (docs/benchmarks.md); such a table says,
#: above its first row, that it scrolls.
WIDE = 150


class Table:
    """A formatted table: ``_repr_html_`` for Jupyter and HTML, ``repr`` for plain text."""

    def __init__(
        self,
        frame: pl.DataFrame,
        *,
        numeric: Sequence[str],
        note: str | None,
        empty: str,
        total_rows: int,
        download: str | None = None,
    ) -> None:
        self.frame = frame  # every cell already formatted as text
        self.numeric = list(numeric)
        self.note = note
        self.empty = empty
        self.total_rows = total_rows
        self.download = download
        # Numbered from 1 in each notebook: a page's ids do not depend on the pages before it.
        ids = notebook_value("txkit.notebook.tables.ids", lambda: itertools.count(1))
        self._id = f"txkit-table-{next(ids)}"

    def width(self) -> int:
        """The table's width in characters: each column's widest value or name, plus two."""
        return sum(
            2 + max([len(name), *(len(v) for v in self.frame[name] if v is not None)])
            for name in self.frame.columns
        )

    def __repr__(self) -> str:
        if self.frame.height == 0:
            return self.empty
        columns = self.frame.columns
        cells = [[c for c in columns]] + [
            ["" if v is None else str(v) for v in row] for row in self.frame.iter_rows()
        ]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        lines = []
        for n, row in enumerate(cells):
            lines.append(
                "  ".join(
                    v.rjust(w) if columns[i] in self.numeric and n else v.ljust(w)
                    for i, (v, w) in enumerate(zip(row, widths, strict=True))
                ).rstrip()
            )
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        if self.frame.height == 0:
            return f'<p class="txkit-empty">{html.escape(self.empty)}</p>'
        from great_tables import GT, loc, style
        from great_tables import html as GT_html

        table = GT(self.frame, id=self._id)
        if self.width() > WIDE:
            # Said above the rows: a reader of a wide table sees its first columns only.
            # Paper has no sideways: there the columns wrap to the page (PAGE_CSS's print).
            table = table.tab_header(
                title=GT_html(
                    f"{len(self.frame.columns)} columns, the first ones identify each row"
                    '<span class="txkit-screen-only">: scroll sideways for the rest</span>'
                    '<span class="txkit-print-only">, every one printed, wrapped to the page'
                    "</span>."
                )
            ).tab_options(
                heading_title_font_size="13px",
                heading_align="left",
                heading_title_font_weight="normal",
            )
        table = (
            table.sub_missing(missing_text="")
            .opt_row_striping()
            .tab_options(
                container_width="100%",
                container_overflow_x="auto",
                table_font_size="13px",
                data_row_padding="3px",
                column_labels_font_weight="bold",
                table_margin_left="0",
            )
        )
        # Cells stay on one line; a table wider than the page scrolls inside its box (on
        # paper, text wraps instead: PAGE_CSS's print rules).
        table = table.opt_css(f"#{self._id} .gt_row, #{self._id} .gt_col_heading "
                              "{ white-space: nowrap; }")  # fmt: skip
        # A long column name may wrap after its underscores (on paper), not letter by letter.
        labels = {c: GT_html(html.escape(c).replace("_", "_<wbr>")) for c in self.frame.columns}
        table = table.cols_label(**labels)
        if self.numeric:
            table = table.cols_align("right", columns=self.numeric)
            # Inline, so that an untrusted notebook (JupyterLab drops its <style>) and a
            # printed page keep an amount and its currency on one line.
            table = table.tab_style(
                style=style.css(_NUMBER_STYLE), locations=loc.body(columns=self.numeric)
            )
        if self.note:
            note = html.escape(self.note)
            if self.download:
                href = html.escape(self.download, quote=True)
                note += (
                    f' Every row is in the download: <a href="{href}.csv">CSV</a> · '
                    f'<a href="{href}.xlsx">Excel</a>.'
                )
            table = table.tab_source_note(GT_html(note))
        return table.as_raw_html()


def _currency_columns(name: str, columns: Sequence[str]) -> list[str]:
    prefix = name.rsplit("_", 1)[0] if "_" in name else ""
    found = [c for c in (f"{prefix}_currency", *_CURRENCY_COLUMNS) if c in columns and c != name]
    # e.g. a reconciliation's ``at_stake``: the export's currency, else the order's (a
    # reference missing in the export has only the order's).
    found += [c for c in columns if c.lower().endswith("currency") and c not in found]
    return found


def format_value(value: Any, kind: str, currency: str | None = None) -> str | None:
    """One value as a person reads it (see the module docstring); None stays None.

    Args:
        value: the cell.
        kind: ``money``, ``rate``, ``count``, ``number``, ``date``, ``datetime``, ``bool``,
            ``list`` or ``text``.
        currency: the row's currency, for money.

    Returns:
        The text, or None for a null.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if kind == "money":
        return format_money(value, currency)
    if kind == "rate":
        return f"{value:.2%}"
    if kind == "count":
        return f"{value:,}"
    if kind == "number":
        return f"{value:,.2f}"
    if kind == "date":
        return value.date().isoformat() if isinstance(value, datetime) else str(value)
    if kind == "datetime":
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if kind == "bool":
        return "yes" if value else "no"
    if kind == "list":
        return ", ".join("" if v is None else str(v) for v in value)
    return str(value)


def _kinds(df: pl.DataFrame) -> dict[str, str]:
    kinds = {}
    for name, dtype in df.schema.items():
        lower = name.lower()
        if isinstance(dtype, pl.Decimal):
            kinds[name] = "money"
        elif dtype.is_float():
            kinds[name] = "rate" if ("rate" in lower or "share" in lower) else "number"
        elif dtype.is_integer():
            kinds[name] = "count"
        elif isinstance(dtype, pl.Datetime):
            times = df[name].drop_nulls()
            at_midnight = times.len() == 0 or bool((times.dt.truncate("1d") == times).all())
            kinds[name] = "date" if at_midnight else "datetime"
        elif dtype == pl.Date:
            kinds[name] = "date"
        elif dtype == pl.Boolean:
            kinds[name] = "bool"
        elif isinstance(dtype, (pl.List, pl.Array)):
            kinds[name] = "list"
        else:
            kinds[name] = "text"
    return kinds


def format_table(
    df: pl.DataFrame,
    *,
    show_pii: bool = False,
    key: Sequence[str] = (),
    sort: Sequence[str | pl.Expr] | None = None,
    descending: bool | Sequence[bool] = False,
    rows: int = 30,
    empty: str = "None this month.",
    download: str | None = None,
) -> Table:
    """Format a result frame for people: masked, key columns first, sorted, readable values.

    Args:
        df: the frame (an analysis result, or records).
        show_pii: show customer e-mails, names and account numbers unmasked.
        key: columns shown first, in this order (those absent are skipped).
        sort: columns or expressions to sort by before the first ``rows`` are taken (by what
            matters: the category, then the size of the difference).
        descending: for ``sort``, as in :meth:`polars.DataFrame.sort`.
        rows: at most this many rows are shown; a note says how many there are in all.
        empty: the sentence shown when the frame has no rows.
        download: the name (file stem) of the CSV and Excel files beside the page that hold
            every row; a cut table links them under its notice.

    Returns:
        A :class:`Table` (display it, or call ``_repr_html_``/``repr``).

    Raises:
        ValueError: ``rows`` below 1.

    Example:
        >>> display(format_table(summary, key=["category", "currency"], sort=["category"]))
    """
    if rows < 1:
        raise ValueError(f"rows must be 1 or more, got {rows}")
    shown = df if show_pii else mask_pii(df)
    assert isinstance(shown, pl.DataFrame)
    first = [c for c in key if c in shown.columns]
    shown = shown.select(first + [c for c in shown.columns if c not in first])
    if sort:
        # Rows the sort ties keep the given order (the analysis's, total): polars keeps none
        # unless asked, so a page could differ between two runs on the same data.
        shown = shown.sort(list(sort), descending=descending, nulls_last=True, maintain_order=True)
    total = shown.height
    shown = shown.head(rows)
    kinds = _kinds(shown)
    columns = shown.columns
    currencies = {
        name: _currency_columns(name, columns) for name, kind in kinds.items() if kind == "money"
    }
    out: dict[str, list[str | None]] = {name: [] for name in columns}
    for record in shown.iter_rows(named=True):
        for name in columns:
            currency = next((record[c] for c in currencies.get(name, ()) if record[c]), None)
            out[name].append(format_value(record[name], kinds[name], currency))
    text = pl.DataFrame(out, schema=dict.fromkeys(columns, pl.String))
    numeric = [n for n, k in kinds.items() if k in ("money", "rate", "count", "number")]
    return Table(
        text,
        numeric=numeric,
        note=cut_notice(shown.height, total),
        empty=empty,
        total_rows=total,
        download=download if total > shown.height else None,
    )


def cut_notice(shown: int, total: int) -> str | None:
    """The sentence under a cut table: how many rows it shows and how many it leaves out
    (None when nothing is left out)."""
    if total <= shown:
        return None
    return f"Showing the first {shown:,} of {total:,} rows: {total - shown:,} left out."
