"""Data files the user gives txkit: read and checked before anything else runs.

The merchant's orders (``txkit report --orders FILE``) are the first such file; bank
statements (CSV, MT940, camt.053) are meant to come through the same steps. Every problem is a
:class:`~txkit.errors.DataFileError` naming the file, the line (as a text editor or a
spreadsheet numbers it: the header is line 1) and what to do, so a caller can check a file
before it syncs a store or starts a notebook kernel.

The steps, each usable on its own:

* :func:`check_suffix`: the file exists and its extension is one the reader accepts; a
  spreadsheet the reader does not accept (``.numbers``, ``.xlsb``) is refused with how to save
  it.
* :func:`read_text`: the bytes as text. UTF-8 (with or without a byte-order mark) is read as
  it is; UTF-16 with a byte-order mark (Excel's "Unicode Text") and Windows-1252 (Excel's
  "CSV (Comma delimited)" on a Western Windows) are read with a note saying so and where the
  first non-ASCII character is, so the reader can see whether it came out right. Anything else
  (bytes that are neither, a mix of UTF-8 and other bytes, a binary file) is refused with the
  line and the position of the first bad byte.
* :func:`read_csv_table`: CSV text as a frame of strings with each record's line number
  (quoted values may span lines), the header's names matched without regard to case or
  surrounding spaces, the delimiter (``,``, ``;``, tab or ``|``) taken from the header.
* :func:`read_table`: :func:`read_csv_table`'s table from CSV or a spreadsheet (``.xlsx``,
  ``.xls``, ``.ods``, a ``.xls`` that is HTML), each value the text its cell shows; the header
  found among title rows or over two rows, total and footer rows and continuation rows
  handled as :mod:`txkit.files._layout` says.
* :func:`fail_lines`: raise for the lines where a condition holds, with their values.

Every file is first checked by :func:`txkit.files.check_input`: a regular file (not a folder,
a device, a FIFO or a link loop) within ``TXKIT_MAX_INPUT_MB``.
"""

from txkit.datafile._csv import read_csv_table
from txkit.datafile._sheet import read_table
from txkit.datafile._table import LINE, CsvTable, fail_lines, orders_around
from txkit.datafile._text import TextFile, check_suffix, read_text, show_values
from txkit.errors import DataFileError

__all__ = [
    "LINE",
    "CsvTable",
    "DataFileError",
    "TextFile",
    "check_suffix",
    "fail_lines",
    "orders_around",
    "read_csv_table",
    "read_table",
    "read_text",
    "show_values",
]
