"""A spreadsheet's first table as :func:`read_csv_table` gives CSV's, and :func:`read_table`
for either."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import polars as pl

from txkit.errors import DataFileError
from txkit.inputs._layout import find_header, is_summary, join_continuations, summary_runs
from txkit.inputs._table import LINE, CsvTable, check_records, column_names, skipped_note
from txkit.inputs._text import TextFile
from txkit.inputs.csv import read_csv_table
from txkit.inputs.sheets._grid import SPREADSHEET_SUFFIXES, Grid, read_grid

__all__ = ["read_table"]


def read_table(
    path: str | Path,
    *,
    columns: Sequence[str],
    required: Sequence[str],
    what: str = "file",
    rows: str = "records",
    source: TextFile | None = None,
    date: str | None = None,
    continues: str | None = None,
    footer: tuple[re.Pattern[str], str] | None = None,
) -> CsvTable:
    """Read a table from CSV or a spreadsheet, every value the text its cell shows.

    ``.xlsx``, ``.xlsm``, ``.xls`` and ``.ods`` files are read as spreadsheets (their first
    sheet; a ``.xls`` that is an HTML table as HTML), anything else as CSV
    (:func:`read_csv_table`). The arguments, the header's search, the skipped title, total and
    continuation rows and the result are the same; a spreadsheet's rows are its row numbers
    (:attr:`CsvTable.unit` names them: ``Sheet1 row 14``), and a number cell in a column read
    whose stored value is not the decimal it shows is refused with its address
    (``Sheet1!C14``). A bank layout's ``footer`` is read in a sheet's rows as in CSV's
    lines.

    Raises:
        DataFileError: as :func:`read_csv_table`; not a regular file; over
            ``TXKIT_MAX_INPUT_MB``; a workbook that is damaged, would decompress past its bound
            or claims cells beyond a spreadsheet's last; a cell not what it shows.
    """
    path = Path(path)
    if source is None and path.suffix.lower() in SPREADSHEET_SUFFIXES:
        grid = read_grid(
            path, what=what, want=lambda sheet: find_header(sheet.rows, required) is not None
        )
        return _sheet_table(path, grid, columns, required, what, rows, date, continues, footer)
    return read_csv_table(
        path,
        columns=columns,
        required=required,
        what=what,
        rows=rows,
        source=source,
        date=date,
        continues=continues,
        footer=footer,
    )


_KINDS: Final = {
    "xlsx": "an Excel workbook",
    "xls": "an old Excel .xls workbook",
    "ods": "an OpenDocument spreadsheet",
    "html": "an HTML table (a .xls download that is a web page), its digits as written",
}


def _sheet_table(
    path: Path,
    grid: Grid,
    columns: Sequence[str],
    required: Sequence[str],
    what: str,
    rows: str,
    date: str | None,
    continues: str | None,
    footer: tuple[re.Pattern[str], str] | None = None,
) -> CsvTable:
    sheet, unit = grid.sheet, grid.unit
    at, header, span = _sheet_header(path, grid, columns, required, what)
    line_of_header = sheet.rows[at][0] if sheet.rows else 1
    names = column_names(path, header, columns, required, line_of_header, what, unit)
    notes = [f"read as {_KINDS[grid.kind]}", *sheet.notes]
    notes += _header_notes(grid, at, span, line_of_header)
    data = sheet.rows[at + span :]
    footers: _Rows = []
    if footer is not None and span == 1:
        known = {name.casefold(): name for name in columns}
        spelled = [known.get(c.casefold(), c) for c in names]
        data, footers = _layout_footers(
            path, grid, data, header, footer, (spelled, required, date, continues), what
        )
    if span == 1:
        data, dropped = _without_repeated_header(data, header, len(names))
        if dropped:
            notes.append(f"{dropped:,} row(s) repeating the header skipped")
    data, summaries = _without_summaries(grid, data, names, columns, required, date, continues)
    summaries = sorted(footers + summaries)
    if summaries:
        lines, cells = [n for n, _ in summaries], [c for _, c in summaries]
        notes.append(skipped_note("total or footer row", lines, cells, unit))
    width = len(names)
    ragged = [(n, len(c)) for n, c in data if any(x for x in c[width:])]
    _refuse_cells(path, grid, data, names, columns, width, what)
    frame = _frame(data, names)
    if continues is not None:
        frame, joined = join_continuations(frame, continues, LINE)
        if joined:
            notes.append(f"{joined:,} continuation row(s) joined to the {continues} above")
    check_records(path, frame, ragged, width, line_of_header, what, rows, unit)
    return CsvTable(path, frame, tuple(header), "", tuple(notes), kind=grid.kind, unit=unit)


_Rows = list[tuple[int, list[str]]]


def _sheet_header(
    path: Path, grid: Grid, columns: Sequence[str], required: Sequence[str], what: str
) -> tuple[int, list[str], int]:
    rows = grid.sheet.rows
    found = find_header(rows, required)
    if found is None:
        first = rows[0] if rows else (1, [])
        column_names(path, first[1], columns, required, first[0], what, grid.unit)
        found = (0, first[1], 1)  # every required name found: no required column
    at, header, span = found
    while header and not header[-1]:
        header.pop()
    return at, header, span


def _header_notes(grid: Grid, at: int, span: int, line_of_header: int) -> list[str]:
    rows, unit = grid.sheet.rows, grid.unit
    notes = []
    if at:
        titles = rows[:at]
        notes.append(
            skipped_note("title row", [n for n, _ in titles], [c for _, c in titles], unit)
        )
    if span == 2:
        notes.append(
            f"the header is written over two rows ({unit}s {line_of_header} and {rows[at + 1][0]})"
        )
    elif span == 3:
        notes.append(
            f"the header is written over three rows ({unit}s {line_of_header} to {rows[at + 2][0]})"
        )
    return notes


def _without_repeated_header(data: _Rows, header: list[str], width: int) -> tuple[_Rows, int]:
    normal = [" ".join(c.split()).casefold() for c in header]
    repeated = [n for n, c in data if [" ".join(x.split()).casefold() for x in c[:width]] == normal]
    if not repeated:
        return data, 0
    dropped = set(repeated)
    return [(n, c) for n, c in data if n not in dropped], len(repeated)


def _layout_footers(
    path: Path,
    grid: Grid,
    data: _Rows,
    header: list[str],
    footer: tuple[re.Pattern[str], str],
    row: tuple[list[str], Sequence[str], str | None, str | None],
    what: str,
) -> tuple[_Rows, _Rows]:
    """A bank layout's page footers, as :func:`txkit.inputs.csv.read_csv_table` reads them: the
    rows matching it at the end and right above a row repeating the header are taken out (the
    rows kept, the rows taken); a row there that is no entry and does not match is refused."""
    pattern, written = footer
    normal = [" ".join(c.split()).casefold() for c in header]
    names, required, date, continues = row

    def repeats(cells: list[str]) -> bool:
        return [" ".join(x.split()).casefold() for x in cells[: len(normal)]] == normal

    def text(cells: list[str]) -> str:
        return " ".join(c.strip() for c in cells if c.strip())

    def is_footer(cells: list[str]) -> bool:
        return not text(cells) or pattern.fullmatch(text(cells)) is not None

    taken: set[int] = set()
    i = len(data) - 1
    while i >= 0 and is_footer(data[i][1]):
        taken.add(i)
        i -= 1
    for at in (k for k, (_, cells) in enumerate(data) if repeats(cells)):
        i = at - 1
        while i >= 0 and not repeats(data[i][1]) and is_footer(data[i][1]):
            taken.add(i)
            i -= 1
        if i < 0 or repeats(data[i][1]):
            continue
        if is_summary(data[i][1], names, required, date, continues):
            raise DataFileError(
                path,
                f"a row at a page break is not this bank's page footer ({written}): "
                f"{text(data[i][1])[:80]!r}",
                "check the file against the bank's statement (a row the layout does not "
                "write is never skipped as a footer), or map its columns without the preset",
                lines=[data[i][0]],
                unit=grid.unit,
                what=what,
            )
    kept = [r for k, r in enumerate(data) if k not in taken]
    return kept, [r for k, r in enumerate(data) if k in taken and text(r[1])]


def _without_summaries(
    grid: Grid,
    data: _Rows,
    names: list[str],
    columns: Sequence[str],
    required: Sequence[str],
    date: str | None,
    continues: str | None,
) -> tuple[_Rows, _Rows]:
    known = {name.casefold(): name for name in columns}
    spelled = [known.get(c.casefold(), c) for c in names]
    lead, trail = summary_runs(_marked(grid, data), spelled, required, date, continues)
    return data[lead : len(data) - trail], data[:lead] + data[len(data) - trail :]


def _frame(data: _Rows, names: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            name: pl.Series(name, [c[i] if i < len(c) else "" for _, c in data], dtype=pl.String)
            for i, name in enumerate(names)
        }
        | {LINE: pl.Series(LINE, [n for n, _ in data], dtype=pl.UInt32)}
    )


def _marked(grid: Grid, data: list[tuple[int, list[str]]]) -> list[list[str]]:
    """A cell with a problem (a formula never computed) counts as holding something: its row is
    an entry to refuse, not a footer."""
    by_row: dict[int, list[int]] = {}
    for row, column in grid.sheet.problems:
        by_row.setdefault(row, []).append(column)
    if not by_row:
        return [c for _, c in data]
    out = []
    for number, cells in data:
        columns = by_row.get(number)
        if columns:
            cells = cells + [""] * (max(columns) + 1 - len(cells))
            cells = [c or ("?" if i in columns else "") for i, c in enumerate(cells)]
        out.append(cells)
    return out


def _refuse_cells(
    path: Path,
    grid: Grid,
    data: list[tuple[int, list[str]]],
    names: list[str],
    columns: Sequence[str],
    width: int,
    what: str,
) -> None:
    read = {i for i, name in enumerate(names) if name in set(columns)}
    rows = {n for n, _ in data}
    bad = sorted(
        (row, column)
        for (row, column) in grid.sheet.problems
        if row in rows and column in read and column < width
    )
    if not bad:
        return
    row, column = bad[0]
    more = f" ({len(bad) - 1:,} more such cells)" if len(bad) > 1 else ""
    raise DataFileError(
        path,
        f"cell {grid.address(row, column)} ({names[column]}) {grid.sheet.problems[bad[0]]}{more}",
        "format the cells to show every decimal the amount has, or type the amount as it "
        "should read; a formula: open the workbook and save it again so it is computed (txkit "
        "never rounds a spreadsheet's binary number)",
        what=what,
    )
