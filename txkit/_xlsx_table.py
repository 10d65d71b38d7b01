"""The Excel table of :func:`txkit.output.write_xlsx`: a frame's cells written fast enough for
the report's largest lists (a hundred thousand cells and more at a million records a year).

xlsxwriter stores and writes a cell in about ten Python calls; here the plain cells (numbers,
dates, booleans, blanks, text that is neither a formula nor a link) are laid out column by
column, each ``<c>`` element exactly as ``Worksheet._write_cell`` writes it, the shared strings
added in the order ``write()`` adds them (row by row). Every part of the workbook is the one
polars' ``write_excel`` wrote before, byte for byte: the cells, the shared strings, the styles,
the table ``Frame0``, the widths, the frozen header. A frame holding any other cell is written
cell by cell through ``write()``.

:class:`_Sheet` uses xlsxwriter's worksheet internals (``_write_rows``, ``_write_row``,
``_write_cell``, ``_calculate_spans``, ``_check_dimensions``, ``_convert_date_time``, the shared
string table): ``tests/test_output.py`` compares its workbooks with polars' byte for byte over
every column type, so an xlsxwriter release that changes them fails there, not in a report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import polars as pl
from xlsxwriter import Workbook
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

__all__ = ["write_table"]


# The formats of the columns a caller gives none: those polars' ``write_excel`` (which wrote
# these workbooks before) gives a table without a style, kept so that the files stay the same.
_TIME_FORMAT = "hh:mm:ss;@"
_INTEGER_FORMAT = "#,##0;[Red]-#,##0"
_FLOAT_FORMAT = "#,##0.000;[Red]-#,##0.000"
#: The table's name in every workbook (``Frame0``: the name polars gave it).
_TABLE_NAME = "Frame0"
_XL_ROWS = 1_048_576
_XL_COLUMNS = 16_384
# What xlsxwriter's write() does not store as a plain shared string: a formula (``=...``,
# ``{=...}``), a link (``https://...``), a text long enough to need its UTF-16 length checked.
_URL = r"^(?:(?:ftp|http)s?://|mailto:|(?:in|ex)ternal:|file://)"


def _column_format(dtype: pl.DataType) -> dict[str, object]:
    if dtype == pl.Time:
        return {"num_format": _TIME_FORMAT, "valign": "vcenter"}
    if dtype.is_integer():
        return {"num_format": _INTEGER_FORMAT, "valign": "vcenter"}
    if dtype.is_float():
        return {"num_format": _FLOAT_FORMAT, "valign": "vcenter"}
    return {"valign": "vcenter"}


def write_table(
    book: Workbook,
    frame: pl.DataFrame,
    name: str,
    formats: Mapping[str, Mapping[str, object]],
    pixels: Mapping[str, int],
) -> None:
    """``frame`` as an Excel table (header, filter, column formats, widths, frozen header) on a
    new worksheet ``name``: the cells xlsxwriter's ``write()`` would store, row by row.

    Plain cells (numbers, dates, booleans, blanks, text that is no formula or link) are laid
    out column by column (:class:`_Sheet`): a cell through ``write()`` cost about ten times as
    much, and these workbooks hold a hundred thousand cells and more at a million records.
    """
    if frame.height >= _XL_ROWS or frame.width > _XL_COLUMNS:
        raise ValueError(
            f"cannot write {frame.height:,} rows of {frame.width:,} columns to the worksheet "
            f"{name!r}: a worksheet holds {_XL_ROWS - 1:,} rows below its header and "
            f"{_XL_COLUMNS:,} columns"
        )
    seen: dict[str, str] = {}
    for column in frame.columns:  # Excel's table headers ignore case
        if (twin := seen.setdefault(column.lower(), column)) != column:
            raise ValueError(
                f"cannot write the worksheet {name!r}: its columns {twin!r} and {column!r} "
                "differ only in case, which an Excel table's header does not tell apart"
            )
    made: dict[str, Format] = {}

    def cell_format(props: Mapping[str, object]) -> Format:
        key = json.dumps(props, sort_keys=True, default=str)
        if key not in made:
            made[key] = book.add_format(dict(props))
        return made[key]

    column_formats = [
        cell_format(formats.get(n) or _column_format(t)) for n, t in frame.schema.items()
    ]
    sheet = book.add_worksheet(name, worksheet_class=_Sheet)
    assert isinstance(sheet, _Sheet)
    refused = sheet.add_table(
        0,
        0,
        max(frame.height, 1),  # an empty list keeps one empty row in its table
        frame.width - 1,
        {
            "style": None,
            "columns": [
                {"header": n, "format": f}
                for n, f in zip(frame.columns, column_formats, strict=True)
            ],
            "header_row": True,
            "autofilter": True,
            "total_row": False,
            "name": _TABLE_NAME,
        },
    )
    if refused:  # xlsxwriter only warns, and writes no table
        raise ValueError(f"cannot write the worksheet {name!r}: xlsxwriter refused its table")
    for col, name_ in enumerate(frame.columns):
        if name_ in pixels:
            sheet.set_column_pixels(col, col, pixels[name_], None, {})
    sheet.freeze_panes(1, 0)
    if frame.height:
        sheet.put_rows(frame, column_formats)


def _plain(frame: pl.DataFrame) -> bool:
    """Every cell of ``frame`` one that :class:`_Sheet` lays out as ``write()`` stores it."""
    checks: list[pl.Expr] = []
    for name, dtype in frame.schema.items():
        col = pl.col(name)
        if dtype == pl.String:
            checks.append(
                (
                    col.str.starts_with("=")
                    | (col.str.starts_with("{=") & col.str.ends_with("}"))
                    | col.str.contains(_URL)
                    | (col.str.len_chars() > 16383)
                ).any()
            )
        elif dtype.is_float():
            checks.append(col.is_infinite().any() | col.is_nan().any())
        elif not _laid_out(dtype):
            return False
    return not checks or not any(frame.select(checks).row(0))


def _laid_out(dtype: pl.DataType) -> bool:
    if isinstance(dtype, pl.Datetime):
        return dtype.time_zone is None  # write() refuses an aware time
    return (
        dtype.is_integer()
        or dtype in (pl.Boolean, pl.Null)
        or isinstance(dtype, pl.Decimal | pl.Date | pl.Time)
    )


class _Sheet(Worksheet):
    """A worksheet whose data rows below the header are laid out column by column, each cell's
    XML exactly as xlsxwriter writes it (``Worksheet._write_cell``): same shared strings, in the
    same order, same numbers (``.16G``), same Excel serial dates. A frame with a cell it does not
    lay out (see :func:`_plain`) is written cell by cell through ``write()`` instead."""

    def __init__(self) -> None:
        super().__init__()
        self._columns: list[tuple[str, list[object]]] = []
        self._column_formats: list[Format] = []
        self._height = 0

    def put_rows(self, frame: pl.DataFrame, column_formats: Sequence[Format]) -> None:
        """Write ``frame``'s rows below the header (the table already added)."""
        values = [series.to_list() for series in frame.iter_columns()]
        if not _plain(frame):
            for row, cells in enumerate(zip(*values, strict=True), start=1):
                for col, value in enumerate(cells):
                    self.write(row, col, value, column_formats[col])
            return
        # The shared strings in the order write() would add them: row by row.
        text = [col for col, dtype in enumerate(frame.dtypes) if dtype == pl.String]
        indices: dict[int, list[object]] = {col: [None] * frame.height for col in text}
        string_index = self.str_table._get_shared_string_index
        for row, cells in enumerate(zip(*(values[col] for col in text), strict=True)):
            for col, value in zip(text, cells, strict=True):
                if value:  # "" is a blank cell, as write() stores it
                    indices[col][row] = string_index(value)
        convert = self._convert_date_time
        for col, (series, cells) in enumerate(zip(frame.iter_columns(), values, strict=True)):
            dtype = series.dtype
            if col in indices:
                self._columns.append(("s", indices[col]))
            elif dtype == pl.Boolean:
                self._columns.append(("b", [None if v is None else int(v) for v in cells]))
            elif isinstance(dtype, pl.Date | pl.Datetime | pl.Time):
                self._columns.append(("n", [None if v is None else convert(v) for v in cells]))
            else:
                self._columns.append(("n", cells))
        self._column_formats = list(column_formats)
        self._height = frame.height
        self._check_dimensions(frame.height, frame.width - 1)

    def _write_rows(self) -> None:
        if not self._height:
            super()._write_rows()
            return
        # The header row, as xlsxwriter writes it; then the laid-out rows (every column of
        # each has a cell: its value or a formatted blank, so every block spans all columns).
        self._calculate_spans()
        spans = self.row_spans.get(0)
        self._write_row(0, spans, self.row_info.get(0))
        for col in range(self.dim_colmin, self.dim_colmax + 1):
            if col in self.table[0]:
                self._write_cell(0, col, self.table[0][col])
        self.fh.write("</row>")
        parts = [
            _cells(col, kind, cells, cell_format._get_xf_index())
            for col, ((kind, cells), cell_format) in enumerate(
                zip(self._columns, self._column_formats, strict=True)
            )
        ]
        span = f"1:{len(parts)}"
        write, row_info = self.fh.write, self.row_info
        for row, cells in enumerate(zip(*parts, strict=True), start=1):
            self._write_row(row, span, row_info.get(row))
            write("".join(cells))
            write("</row>")


def _cells(col: int, kind: str, values: list[object], xf: int) -> list[str]:
    """One column's ``<c>`` elements, from row 2 down, as ``Worksheet._write_cell`` writes them."""
    letter = xl_col_to_name(col)
    blank = f' s="{xf}"/>'
    if kind == "s":
        return [
            f'<c r="{letter}{row}"' + (blank if v is None else f' s="{xf}" t="s"><v>{v}</v></c>')
            for row, v in enumerate(values, start=2)
        ]
    if kind == "b":
        return [
            f'<c r="{letter}{row}"' + (blank if v is None else f' s="{xf}" t="b"><v>{v}</v></c>')
            for row, v in enumerate(values, start=2)
        ]
    return [
        f'<c r="{letter}{row}"' + (blank if v is None else f' s="{xf}"><v>{v:.16G}</v></c>')
        for row, v in enumerate(values, start=2)
    ]
