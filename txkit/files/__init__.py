"""The files a user gives txkit, read within bounds: only regular files, a size limit checked
before reading, workbooks' declared sizes and dimensions checked before they are believed.

* :mod:`txkit.files._limits`: :func:`check_input` and :func:`read_input` (every reader's first
  step: a folder, a device, a FIFO, a symbolic link loop and a file over
  ``TXKIT_MAX_INPUT_MB`` are refused in one line naming the path).
* :mod:`txkit.files._xlsx`: an ``.xlsx`` sheet as the text each cell shows (its number format's
  decimals), streamed from the workbook's XML.
* :mod:`txkit.files._html`: a ``.xls`` that is an HTML table (GTBank's download).
* :mod:`txkit.files._calamine`: old ``.xls`` (BIFF) and ``.ods`` through calamine (fastexcel).
* :mod:`txkit.files._digest`: a file's digest and txkit's code digest (what kept results are
  keyed on).
* :mod:`txkit.files._grid`: the rows of a sheet, where the header is, which rows are titles,
  totals and continuation lines.

:func:`txkit.datafile.read_table` is the entry point.
"""

from __future__ import annotations

from txkit.files._digest import code_digest, file_digest
from txkit.files._grid import SPREADSHEET_SUFFIXES, Grid, read_grid
from txkit.files._layout import (
    HEADER_SEARCH,
    find_header,
    is_summary,
    join_continuations,
    summary_runs,
)
from txkit.files._limits import check_input, max_unzipped_bytes, read_input

__all__ = [
    "HEADER_SEARCH",
    "SPREADSHEET_SUFFIXES",
    "Grid",
    "check_input",
    "code_digest",
    "file_digest",
    "find_header",
    "is_summary",
    "join_continuations",
    "max_unzipped_bytes",
    "read_grid",
    "read_input",
    "summary_runs",
]
