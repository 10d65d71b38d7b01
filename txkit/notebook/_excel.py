"""The report's Excel downloads, laid out as an analyst would lay out their own sheet.

* money (``Decimal`` columns) as numbers formatted ``#,##0.00``, or with as many decimals as
  the column's scale when it has more (``12.345678`` USDT never shows as ``12.35``), the
  currency in its own column beside them (Excel numbers carry no currency; the CSV keeps the
  exact digits);
* timestamps as Excel dates (``yyyy-mm-dd hh:mm``, UTC, wide enough that no ``###`` shows),
  dates as ``yyyy-mm-dd``;
* the columns a reader needs first (reference, amount, currency, date, what is wrong) first,
  the technical ``key`` last; rows in the order the caller gives (what is at stake first);
* the header row frozen, filters on, printed on A4 landscape, fitted to one page wide with
  the header repeated on every page; a long text column (a narration, a list of candidates) is
  at most :data:`PRINT_WIDTH` characters wide and wraps, so a wide list still prints at a
  readable size.

It is the one writer of every workbook of a report: the exception lists, the whole tables and
the register's ``exceptions.xlsx``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

__all__ = ["MAX_WIDTH", "MONEY_FORMAT", "money_format", "ordered", "write_xlsx"]

#: Money: thousands separators and two decimals (``78.00`` shows ``78.00``, not ``78``).
MONEY_FORMAT = "#,##0.00"
_DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
_DATE_FORMAT = "yyyy-mm-dd"
# Widths in characters: a ``yyyy-mm-dd hh:mm:ss`` timestamp needs 19 (Excel shows ``###``
# when a date does not fit; autofit measures the serial number, not the shown text).
_DATETIME_WIDTH = 20
_DATE_WIDTH = 11
#: The widest a column is made, in characters: a long text (a narration, the settlements' list
#: of candidates, 94) would widen the sheet past a printed page; the cell still holds it all.
MAX_WIDTH = 48
#: A text column wider than this (in characters) wraps within it: the sheet stays narrow
#: enough to print one page wide at a readable size.
PRINT_WIDTH = 28
_A4 = 9  # xlsxwriter's paper code for A4


def money_format(scale: int | None) -> str:
    """The number format of a money column: two decimals, or the column's scale when larger."""
    return MONEY_FORMAT if (scale or 0) <= 2 else "#,##0." + "0" * scale


def ordered(df: pl.DataFrame, first: Sequence[str], last: Sequence[str]) -> pl.DataFrame:
    """``df`` with the ``first`` columns first and the ``last`` last: the order of a list's
    CSV and its workbook alike."""
    head = [c for c in dict.fromkeys(first) if c in df.columns and c not in last]
    tail = [c for c in last if c in df.columns]
    middle = [c for c in df.columns if c not in head and c not in tail]
    return df.select(head + middle + tail)


def _width(series: pl.Series, name: str) -> float:
    if isinstance(series.dtype, pl.Decimal):  # as the money format shows the largest, signed
        scale = max(series.dtype.scale or 0, 2)
        largest = series.abs().max() if series.null_count() < series.len() else None
        longest = len(f"{largest:,.{scale}f}") + 1 if largest is not None else 0
    else:
        text = series.head(500).cast(pl.String, strict=False).drop_nulls()
        longest = int(text.str.len_chars().max() or 0) if text.len() else 0
    if not isinstance(series.dtype, pl.Decimal | pl.Datetime | pl.Date):
        longest = min(longest, PRINT_WIDTH)  # long text wraps (see _wrapped)
    return float(min(max(longest, len(name)) + 2, MAX_WIDTH))


def _decimals(series: pl.Series) -> int:
    """The decimals a money column's values use (at least 2): a register's ``Decimal(38, 6)``
    of NGN amounts shows ``107,786.00``; USDT's micro-units keep their six."""
    used = [-min(0, v.normalize().as_tuple().exponent) for v in series.drop_nulls().head(5000)]
    return max([2, *used])


def _longest(series: pl.Series) -> int:
    text = series.head(500).drop_nulls()
    return int(text.str.len_chars().max() or 0) if text.len() else 0


def write_xlsx(
    df: pl.DataFrame,
    path: str | os.PathLike[str],
    *,
    sheet: str,
    first: Sequence[str] = (),
    last: Sequence[str] = ("key",),
) -> None:
    """Write ``df`` to ``path`` as one formatted worksheet (see the module docstring).

    Args:
        df: the rows, already masked, formula-safe and in the order to show; timestamps
            naive UTC.
        path: the file (written as is: the caller writes atomically).
        sheet: the worksheet's name (at most 31 characters are kept).
        first: the columns shown first, in this order (those absent are skipped).
        last: the columns shown last (the technical key).
    """
    from xlsxwriter import Workbook

    frame = ordered(df, first, last)
    money = [n for n, t in frame.schema.items() if isinstance(t, pl.Decimal)]
    stamps = [n for n, t in frame.schema.items() if isinstance(t, pl.Datetime)]
    dates = [n for n, t in frame.schema.items() if t == pl.Date]
    widths = {n: _width(frame[n], n) for n in frame.columns if n not in stamps + dates}
    # a date column is as wide as its header too (``settlement_date`` is 15 characters)
    widths |= {n: float(max(_DATETIME_WIDTH, len(n) + 2)) for n in stamps}
    widths |= {n: float(max(_DATE_WIDTH, len(n) + 2)) for n in dates}
    # Long text wraps within its column (see PRINT_WIDTH).
    wrapped = [
        n for n, t in frame.schema.items() if t == pl.String and _longest(frame[n]) > PRINT_WIDTH
    ]
    with Workbook(os.fspath(path)) as book:
        frame.write_excel(
            book,
            worksheet=sheet[:31],
            column_formats={n: money_format(_decimals(frame[n])) for n in money}
            | {n: {"text_wrap": True, "valign": "top"} for n in wrapped},
            dtype_formats={pl.Datetime: _DATETIME_FORMAT, pl.Date: _DATE_FORMAT},
            column_widths={n: int(w * 7) for n, w in widths.items()},  # pixels, ~7 a character
            freeze_panes=(1, 0),
            autofilter=True,
            table_style=None,
        )
        worksheet = book.get_worksheet_by_name(sheet[:31])
        worksheet.set_paper(_A4)
        worksheet.set_landscape()
        worksheet.fit_to_pages(1, 0)  # one page wide, as many long as it takes
        worksheet.repeat_rows(0)
