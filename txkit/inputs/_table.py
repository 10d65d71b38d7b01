"""What the CSV and the spreadsheet readers share: the table read, its column names and its
checks; :func:`fail_lines` for the callers' own checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Final

import polars as pl

from txkit.calendar import month_bounds
from txkit.errors import DataFileError
from txkit.inputs._text import show_values

__all__ = [
    "LINE",
    "CsvTable",
    "check_records",
    "column_names",
    "fail_lines",
    "orders_around",
    "skipped_note",
]

#: The column of :attr:`CsvTable.frame` holding each record's first line (1 = the header).
LINE: Final = "_line"


@dataclass(frozen=True)
class CsvTable:
    """A CSV file read as strings, each record with its line.

    Attributes:
        path: the file.
        frame: one row per record (blank lines and lines of empty fields left out), every
            column a String as written, plus :data:`LINE` (the record's first line, UInt32).
            Known column names are given as the caller spells them.
        header: the names as written in the header (surrounding spaces removed).
        delimiter: the field delimiter found in the header ("" for a spreadsheet).
        notes: what a reader should know (encoding, delimiter, lines skipped).
        kind: ``csv``, ``xlsx``, ``xls``, ``ods`` or ``html`` (a ``.xls`` that is HTML).
        unit: how :data:`LINE` is named in messages: ``line`` for CSV, ``Sheet1 row`` for a
            sheet (pass it to :func:`fail_lines`).
    """

    path: Path
    frame: pl.DataFrame
    header: tuple[str, ...]
    delimiter: str
    notes: tuple[str, ...] = ()
    kind: str = "csv"
    unit: str = "line"


def skipped_note(kind: str, lines: list[int], cells: list[list[str]], unit: str = "line") -> str:
    """``2 title lines skipped (lines 1 and 2: 'Statement of account'; ...)``."""
    # a merged cell may be written in each of its columns: its text said once
    texts = [" ".join(dict.fromkeys(c.strip() for c in row if c.strip()))[:60] for row in cells[:3]]
    where = DataFileError.where(lines, unit)
    plural = "s" if len(lines) != 1 else ""
    return (
        f"{len(lines):,} {kind}{plural} skipped ({where}: "
        + "; ".join(repr(t) for t in texts)
        + ("; ..." if len(cells) > 3 else "")
        + ")"
    )


def column_names(
    path: Path,
    header: list[str],
    columns: Sequence[str],
    required: Sequence[str],
    line_of_header: int,
    what: str,
    unit: str = "line",
) -> list[str]:
    """The frame's column names: known ones as the caller spells them, blank ones numbered.

    Raises:
        DataFileError: a required column missing, or a column named twice.
    """
    known = {name.casefold(): name for name in columns}
    names = [known.get(c.casefold(), c) or f"column_{i + 1}" for i, c in enumerate(header)]
    missing = [r for r in required if r not in names]
    if missing:
        optional = [c for c in columns if c not in required]
        raise DataFileError(
            path,
            f"no column {', '.join(map(repr, missing))} in the header"
            + (f" (found: {show_values(header)})" if any(header) else " (it is empty)"),
            f"the first line must name the columns: required {', '.join(required)}"
            + (f"; optional {', '.join(optional)}" if optional else "")
            + " (case and surrounding spaces do not matter; separated by commas or "
            "semicolons)",
            lines=[line_of_header],
            unit=unit,
            what=what,
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataFileError(
            path,
            f"the header names {show_values(twice)} more than once",
            "rename or remove the extra column",
            lines=[line_of_header],
            unit=unit,
            what=what,
        )
    return names


def check_records(
    path: Path,
    frame: pl.DataFrame,
    ragged: list[tuple[int, int]],
    width: int,
    line_of_header: int,
    what: str,
    rows: str,
    unit: str = "line",
) -> None:
    """Raise :class:`DataFileError` for records of the wrong width, or for no record."""
    if ragged:
        widths = sorted({w for _, w in ragged})
        raise DataFileError(
            path,
            f"{'a record has' if len(ragged) == 1 else 'records have'} "
            f"{show_values(widths)} field(s) where the header has {width}",
            'a value holding the delimiter must be quoted ("1,500.00"), or remove the extra '
            "or missing separators"
            if unit == "line"
            else "move or remove the cells right of the table, or name their column in the header",
            lines=[line for line, _ in ragged],
            unit=unit,
            what=what,
        )
    if frame.height == 0:
        raise DataFileError(
            path,
            f"has a header ({unit} {line_of_header}) but no {rows} after it",
            f"export the {rows} again, or pass the right file",
            what=what,
        )


def fail_lines(
    path: str | Path,
    frame: pl.DataFrame,
    condition: pl.Expr,
    *,
    problem: str,
    advice: str,
    shown: str | pl.Expr | None = None,
    what: str = "file",
    unit: str = "line",
    position: str = LINE,
) -> None:
    """Raise :class:`DataFileError` for the records where ``condition`` holds (null counts as
    holding), naming their lines and, with ``shown``, their values.

    Args:
        path: the file.
        frame: the records, with ``position`` (their line or row numbers).
        condition: true where a record is wrong.
        problem: what is wrong with them.
        advice: what to do.
        shown: the column (or expression) whose values are quoted in the message.
        what: how the file is named (``orders file``).
        unit: ``line`` or ``row``.
        position: the column of ``frame`` holding the numbers.
    """
    flagged = frame.filter(condition.fill_null(True))
    if flagged.height == 0:
        return
    text = problem
    if shown is not None:
        column = pl.col(shown) if isinstance(shown, str) else shown
        values = flagged.select(column.cast(pl.String).alias("v"))["v"].to_list()
        text += f": {show_values(values)}"
    raise DataFileError(path, text, advice, lines=flagged[position].to_list(), unit=unit, what=what)


def orders_around(orders: pl.DataFrame, month: str, days: int = 0) -> pl.DataFrame:
    """The orders dated in ``month`` or within ``days`` of it, and the undated ones (an order
    without a date is never left out); ``orders`` whole when it has no ``date`` column."""
    if "date" not in orders.columns:
        return orders
    first, last = month_bounds(month)
    margin = timedelta(days=days)
    dated = pl.col("date")
    return orders.filter(dated.is_between(first - margin, last + margin) | dated.is_null())
