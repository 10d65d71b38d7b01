"""Spreadsheets: ``.xlsx`` (streamed from the workbook's XML, each cell as it shows), ``.xls``
and ``.ods`` through calamine (fastexcel), and a ``.xls`` that is an HTML table (GTBank's
download); workbooks' declared sizes and dimensions checked before they are believed.

* ``_xlsx``: an ``.xlsx`` sheet as the text each cell shows (its number format's decimals).
* ``_html``: a ``.xls`` that is an HTML table.
* ``_calamine``: old ``.xls`` (BIFF) and ``.ods``.
* ``_grid``: the rows of a workbook's sheet, whichever kind.
* ``_table``: a sheet's first table as CSV's (:func:`read_table`, for CSV or a spreadsheet).
"""

from __future__ import annotations

from txkit.inputs.sheets._grid import SPREADSHEET_SUFFIXES, Grid, read_grid
from txkit.inputs.sheets._table import read_table

__all__ = ["SPREADSHEET_SUFFIXES", "Grid", "read_grid", "read_table"]
