"""Spreadsheets: ``.xlsx`` (streamed from the workbook's XML, each cell as it shows), ``.xls``
and ``.ods`` through calamine (fastexcel), and a ``.xls`` that is an HTML table (GTBank's
download); workbooks' declared sizes and dimensions checked before they are believed. As a
bank statement, the first sheet is read through the column mapping, as CSV is.

* ``_xlsx``: an ``.xlsx`` sheet as the text each cell shows (its number format's decimals).
* ``_html``: a ``.xls`` that is an HTML table.
* ``_calamine``: old ``.xls`` (BIFF) and ``.ods``.
* ``_grid``: the rows of a workbook's sheet, whichever kind.
* ``_table``: a sheet's first table as CSV's (:func:`read_table`, for CSV or a spreadsheet).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from txkit.inputs._format import Format, Source
from txkit.inputs._mapped import read as read_mapped
from txkit.inputs._model import WHAT, Read
from txkit.inputs._text import check_suffix
from txkit.inputs.sheets._grid import SPREADSHEET_SUFFIXES, Grid, read_grid
from txkit.inputs.sheets._table import read_table

__all__ = ["FORMAT", "SPREADSHEET_SUFFIXES", "Grid", "read_grid", "read_table"]

# Workbooks told by their name (a .xls may be BIFF or an HTML page; its reader tells which):
# these are not read, and refused saying how to save them.
_NOT_READ: Final = (".xlsb", ".numbers")


def _identify(source: Source) -> bool:
    suffix = source.path.suffix.lower()
    if suffix in _NOT_READ:
        check_suffix(source.path, {".csv": "CSV text"}, what=WHAT)  # raises, saying how to save
    return suffix in SPREADSHEET_SUFFIXES


def _extract(source: Source, columns: Mapping[str, str]) -> Read:
    return read_mapped(source.path, read_table, columns)


FORMAT = Format(
    "spreadsheet",
    {
        "xlsx": "an Excel workbook's first sheet, with the CSV's column mapping",
        "xls": "an old Excel .xls workbook's first sheet, with the column mapping",
        "ods": "an OpenDocument spreadsheet's first sheet, with the column mapping",
        "html": "a .xls download that is an HTML table (GTBank), with the column mapping",
    },
    identify=_identify,
    extract=_extract,
)
