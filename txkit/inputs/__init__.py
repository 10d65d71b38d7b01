"""The files a merchant gives txkit, read within bounds and checked before anything else runs.

One package for every file a merchant gives (the orders, the bank statements), in the shape of
polars' ``io/<format>`` and beangulp's importers: a subpackage per format, each identifying a
file from its content and extracting its entries; what the formats share is here, once.

* :mod:`txkit.inputs.statements`: :func:`read_statements`, a bank statement of any format.
* :mod:`txkit.inputs.orders`: :func:`read_orders`, the merchant's orders file (CSV, Parquet or
  a spreadsheet), as txkit's own columns or as a shop exports it.
* :mod:`txkit.inputs.columns`: the one column-mapping syntax (orders and bank statements) and
  the one presets registry (shop presets and bank presets).
* The formats: :mod:`txkit.inputs.csv`, :mod:`txkit.inputs.sheets` (``.xlsx``, ``.xls``,
  ``.ods``, a ``.xls`` that is HTML), :mod:`txkit.inputs.mt940`, :mod:`txkit.inputs.camt`,
  :mod:`txkit.inputs.ofx`, :mod:`txkit.inputs.pdf`.
* Shared: ``_content`` (:func:`identify_content`: what a file is from its first bytes and a
  ZIP's directory, whatever its name; the load line says when name and content disagree),
  ``_limits`` (:func:`check_input`, :func:`read_input`: a regular file within
  ``TXKIT_MAX_INPUT_MB``, unzipped sizes bounded), ``_text`` (extension and encoding:
  :func:`check_suffix`, :func:`read_text`), ``_table`` (:class:`CsvTable`: a table of text
  with each record's line, :func:`fail_lines`), ``_layout`` (where a table starts and ends:
  titles, totals, two-row headers, continuation rows), ``_model`` (what every statement
  reader returns), ``_mapped`` (a statement table read through a column mapping),
  ``_kept`` (the checked reads of the orders file and the bank statements, kept by content),
  ``_digest`` (:func:`file_digest`, :func:`code_digest`: what kept results are keyed on).

Every problem is a :class:`~txkit.errors.DataFileError` naming the file, the line (as a text
editor or a spreadsheet numbers it: the header is line 1) and what to do, so a caller can
check a file before it syncs a store or starts a notebook kernel.
"""

from txkit.errors import DataFileError
from txkit.inputs._content import identify_content
from txkit.inputs._digest import code_digest, file_digest
from txkit.inputs._layout import (
    HEADER_SEARCH,
    find_header,
    is_summary,
    join_continuations,
    summary_runs,
)
from txkit.inputs._limits import check_input, max_unzipped_bytes, read_input
from txkit.inputs._table import LINE, CsvTable, fail_lines, orders_around
from txkit.inputs._text import TextFile, check_suffix, read_text, show_values
from txkit.inputs.csv import read_csv_table
from txkit.inputs.orders import OrdersFile, read_orders, read_orders_file
from txkit.inputs.sheets import SPREADSHEET_SUFFIXES, Grid, read_grid, read_table
from txkit.inputs.statements import (
    BALANCE_COLUMNS,
    ENTRY_COLUMNS,
    FORMATS,
    MAPPING_KEYS,
    BankStatement,
    describe_mapping,
    parse_mapping,
    read_statement,
    read_statements,
)

__all__ = [
    "BALANCE_COLUMNS",
    "ENTRY_COLUMNS",
    "FORMATS",
    "HEADER_SEARCH",
    "LINE",
    "MAPPING_KEYS",
    "SPREADSHEET_SUFFIXES",
    "BankStatement",
    "CsvTable",
    "DataFileError",
    "Grid",
    "OrdersFile",
    "TextFile",
    "check_input",
    "check_suffix",
    "code_digest",
    "describe_mapping",
    "fail_lines",
    "file_digest",
    "find_header",
    "identify_content",
    "is_summary",
    "join_continuations",
    "max_unzipped_bytes",
    "orders_around",
    "parse_mapping",
    "read_csv_table",
    "read_grid",
    "read_input",
    "read_orders",
    "read_orders_file",
    "read_statement",
    "read_statements",
    "read_table",
    "read_text",
    "show_values",
    "summary_runs",
]
