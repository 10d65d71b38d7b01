"""Old Excel ``.xls`` (BIFF) and OpenDocument ``.ods`` sheets through calamine (fastexcel).

calamine gives each number cell's binary value, not its number format: a number is given as
the shortest decimal that is that value (what a General cell shows), refused (the cell's
address) when it needs more than 15 significant digits. An ``.ods`` (a ZIP of XML) is checked
first for its declared decompressed size and for its sheets' extent (rows and columns repeated
by ``table:number-rows-repeated`` and ``number-columns-repeated``): calamine makes a sheet a
dense rectangle of cells.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import IO

import polars as pl
from lxml import etree

from txkit.config import MAX_INPUT_VAR, max_input_bytes
from txkit.errors import DataFileError
from txkit.inputs._limits import max_unzipped_bytes
from txkit.inputs.sheets._xlsx import SIGNIFICANT, Sheet, _bomb, _significant

__all__ = ["read_calamine"]


def _check_zip(path: Path, what: str) -> None:
    try:
        with zipfile.ZipFile(path) as book:
            total = sum(info.file_size for info in book.infolist())
            if total > max_unzipped_bytes():
                raise _bomb(path, total, max_unzipped_bytes(), what)
            if "content.xml" in book.namelist():
                with book.open("content.xml") as content:
                    _check_extent(path, content, what)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DataFileError(
            path,
            f"is not an OpenDocument spreadsheet ({exc})",
            "save it again as .ods or .xlsx",
            what=what,
        ) from None
    except etree.XMLSyntaxError as exc:
        raise DataFileError(
            path,
            f"holds XML that cannot be read ({exc})",
            "save it again as .ods or .xlsx",
            what=what,
        ) from None


def max_cells() -> int:
    """The most cells a sheet's extent may span: one per 100 bytes of ``TXKIT_MAX_INPUT_MB``
    (2.7 million at the default 256 MB; calamine and the text columns
    take about 250 bytes a cell). calamine makes a sheet's cells a dense rectangle."""
    return max_input_bytes() // 100


_T = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"


def _repeat(element: etree._Element, name: str) -> int:
    text = element.get(f"{_T}{name}", "1")
    return int(text) if text.isdigit() else 1


def _check_extent(path: Path, content: IO[bytes], what: str) -> None:
    """Checked before calamine believes it: a cell repeated a million times, or one far off,
    would make billions of cells."""
    limit = max_cells()
    events = etree.iterparse(
        content, events=("start", "end"), resolve_entities=False, no_network=True,
        load_dtd=False, huge_tree=False,
    )  # fmt: skip
    row = rows = columns = 0
    for event, element in events:
        tag = element.tag
        if event == "start" and tag == f"{_T}table":
            row = rows = columns = 0
        elif event == "end" and tag == f"{_T}table-row":
            repeated = _repeat(element, "number-rows-repeated")
            column = 0
            for cell in element:
                if cell.tag not in (f"{_T}table-cell", f"{_T}covered-table-cell"):
                    continue
                span = _repeat(cell, "number-columns-repeated")
                if len(cell) or cell.get(
                    "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}value-type"
                ):
                    columns = max(columns, column + span)
                    rows = row + repeated
                column += span
            row += repeated
            element.clear()
            if rows * columns > limit:
                raise DataFileError(
                    path,
                    f"its sheet would span {rows:,} rows x {columns:,} columns, over the "
                    f"{limit:,} cells believed (one per 100 bytes of {MAX_INPUT_VAR}): a damaged "
                    "or hostile spreadsheet",
                    f"check that it is the right file, or raise {MAX_INPUT_VAR}",
                    what=what,
                )


def read_calamine(
    path: str | Path, *, what: str = "file", want: Callable[[Sheet], bool] | None = None
) -> Sheet:
    """A sheet of an ``.xls`` or ``.ods`` workbook as text: the first for which ``want``
    holds (the first sheet when none does, or without ``want``).

    Raises:
        DataFileError: not such a workbook, or too large once decompressed.
    """
    import fastexcel  # imported here: only these two formats need it

    path = Path(path)
    if path.suffix.lower() == ".ods":
        _check_zip(path, what)
    kind = (
        "an OpenDocument spreadsheet" if path.suffix.lower() == ".ods" else "an Excel .xls workbook"
    )
    try:
        reader = fastexcel.read_excel(str(path))
        names = list(reader.sheet_names)
        first: Sheet | None = None
        for index, name in enumerate(names):
            # skip_rows=0 counts from the sheet's first row, not its first row holding something:
            # rows keep their numbers
            frame = reader.load_sheet(
                index, header_row=None, dtypes="string", skip_rows=0
            ).to_polars()
            sheet = _sheet(name, frame)
            if want is None or want(sheet):
                break
            first = first or sheet
        else:
            sheet = first if first is not None else Sheet("Sheet1")
    except Exception as exc:  # fastexcel's errors are its own classes, one per cause
        raise DataFileError(
            path,
            f"cannot be read as {kind} ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})",
            "open it in the spreadsheet program and save it again as .xlsx (or export CSV)",
            what=what,
        ) from None
    others = [n for n in names if n != sheet.name]
    if others:
        sheet.notes.append(
            f"read its sheet {sheet.name!r}; not read: {', '.join(map(repr, others))}"
        )
    sheet.notes.append(
        "number formats of .xls and .ods are not read: amounts are the stored numbers' decimals"
    )
    return sheet


def _sheet(name: str, frame: pl.DataFrame) -> Sheet:
    sheet = Sheet(name)
    for index, values in enumerate(frame.iter_rows(), start=1):
        cells = ["" if v is None else str(v).strip() for v in values]
        for column, text in enumerate(cells):
            if not any(c in text for c in ".eE"):
                continue  # digits only: a reference typed as text is read as it is
            try:
                number = Decimal(text)
            except InvalidOperation:
                continue
            if number.is_finite() and _significant(number) > SIGNIFICANT:
                sheet.problems[(index, column)] = (
                    f"holds {text}, more than the {SIGNIFICANT} significant digits a "
                    "spreadsheet keeps exactly"
                )
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            sheet.rows.append((index, cells))
    return sheet
