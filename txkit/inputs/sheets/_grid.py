"""A spreadsheet's first sheet as rows of text, whatever the workbook's kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from txkit.errors import DataFileError
from txkit.inputs._content import identify_content, refuse_content
from txkit.inputs._limits import read_input
from txkit.inputs.sheets._calamine import read_calamine
from txkit.inputs.sheets._html import read_html_table
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


def read_grid(
    path: str | Path,
    *,
    what: str = "file",
    want: Callable[[Sheet], bool] | None = None,
    kind: str | None = None,
) -> Grid:
    """A sheet of a spreadsheet file, its kind found from its bytes whatever its name says
    (:func:`~txkit.inputs._content.identify_content`; ``kind`` when the caller has found it):
    the first sheet for which ``want`` holds (e.g. it has the header), else the first sheet.

    Raises:
        DataFileError: not a regular file, too large, or not a workbook (naming its name and
            its content).
    """
    path = Path(path)
    if kind is None:
        kind = identify_content(path, what=what)
    if kind == "html":
        return Grid(read_html_table(path, read_input(path, what=what), what=what), "html")
    if kind == "xlsx":
        return Grid(read_xlsx(path, what=what, want=want), "xlsx")
    if kind in ("ods", "xls"):
        return Grid(read_calamine(path, what=what, want=want, kind=kind), kind)
    if kind is None and not path.stat().st_size:
        raise DataFileError(path, "the file is empty (0 bytes)", "export it again", what=what)
    raise refuse_content(path, kind, ".xlsx, .xls, .ods or CSV", what=what)
