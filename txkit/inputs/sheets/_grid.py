"""A spreadsheet's first sheet as rows of text, whatever the workbook's kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from txkit.errors import DataFileError
from txkit.inputs._limits import check_input, read_input
from txkit.inputs.sheets._calamine import read_calamine
from txkit.inputs.sheets._html import looks_like_html, read_html_table
from txkit.inputs.sheets._xlsx import Sheet, address, read_xlsx

__all__ = ["SPREADSHEET_SUFFIXES", "Grid", "read_grid"]

#: Extensions read as spreadsheets, and what they are.
SPREADSHEET_SUFFIXES = {
    ".xlsx": "an Excel workbook",
    ".xlsm": "an Excel workbook with macros (the macros are not run)",
    ".xls": "an old Excel workbook, or an HTML table saved as .xls",
    ".ods": "an OpenDocument spreadsheet",
    ".html": "an HTML page holding a table (a bank's download saved as a web page)",
    ".htm": "an HTML page holding a table (a bank's download saved as a web page)",
}


@dataclass(frozen=True)
class Grid:
    """A sheet and how its rows are named in messages.

    Attributes:
        sheet: the rows and the cells' problems.
        kind: ``xlsx``, ``xls``, ``ods`` or ``html`` (a ``.xls`` that is an HTML table).
        unit: how a row is named (``Sheet1 row``: messages say ``Sheet1 row 14``).
    """

    sheet: Sheet
    kind: str

    @property
    def unit(self) -> str:
        if self.kind == "html":
            return "HTML table row"
        return (
            f"sheet {self.sheet.name!r} row" if " " in self.sheet.name else f"{self.sheet.name} row"
        )

    def address(self, row: int, column: int) -> str:
        """A cell's address: ``Sheet1!C14``, or ``HTML table row 14, column 3``."""
        if self.kind == "html":
            return f"HTML table row {row}, column {column + 1}"
        return address(self.sheet.name, row, column)


_SNIFF = 65_536
_ZIP = b"PK\x03\x04"
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def read_grid(
    path: str | Path, *, what: str = "file", want: Callable[[Sheet], bool] | None = None
) -> Grid:
    """A sheet of a spreadsheet file, its kind found from its bytes (an ``.xls`` that is HTML
    is read as HTML): the first sheet for which ``want`` holds (e.g. it has the header), else
    the first sheet.

    Raises:
        DataFileError: not a regular file, too large, or not the workbook it claims to be.
    """
    path = Path(path)
    check_input(path, what=what)
    with path.open("rb") as file:
        data = file.read(_SNIFF)  # what it is; a workbook is then streamed from the file
    suffix = path.suffix.lower()
    if looks_like_html(data):
        return Grid(read_html_table(path, read_input(path, what=what), what=what), "html")
    if data.startswith(_ZIP):
        if suffix == ".ods":
            return Grid(read_calamine(path, what=what, want=want), "ods")
        return Grid(read_xlsx(path, what=what, want=want), "xlsx")
    if data.startswith(_OLE):
        return Grid(read_calamine(path, what=what, want=want), "xls")
    if not data:
        raise DataFileError(path, "the file is empty (0 bytes)", "export it again", what=what)
    raise DataFileError(
        path,
        f"is named {suffix or 'without an extension'} but is neither a workbook nor an HTML table",
        "export it again from the bank or shop, as .xlsx or CSV",
        what=what,
    )
