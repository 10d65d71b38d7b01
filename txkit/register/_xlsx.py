"""Read the first sheet of an ``.xlsx`` file as text: the edited ``exceptions.xlsx`` of a
report, for ``txkit exceptions import``.

polars reads Excel only through an extra engine (fastexcel); the import needs the cells as
text only (keys, categories, names, notes), which the workbook's XML holds as shared strings
or inline strings. Parsed with lxml resolving no entities and loading no DTD (a file from
anyone's disk).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from lxml import etree

__all__ = ["read_xlsx_text"]

_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_CELL = re.compile(r"([A-Z]+)([0-9]+)")


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _column(letters: str) -> int:
    number = 0
    for char in letters:
        number = number * 26 + ord(char) - 64
    return number - 1


def _text(element: etree._Element) -> str:
    return "".join(t.text or "" for t in element.iter(f"{_NS}t"))


def read_xlsx_text(path: str | Path) -> list[list[str | None]]:
    """The first worksheet's rows as lists of text (None for an empty cell), header first.

    Raises:
        ValueError: not an ``.xlsx`` workbook (names the file and what to do).
    """
    path = Path(path)
    try:
        book = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(
            f"{path} is not an .xlsx workbook ({exc}): save it as .xlsx or CSV"
        ) from None
    with book:
        names = set(book.namelist())
        shared: list[str] = []
        if "xl/sharedStrings.xml" in names:
            root = etree.fromstring(book.read("xl/sharedStrings.xml"), _parser())
            shared = [_text(si) for si in root.iter(f"{_NS}si")]
        sheets = sorted(n for n in names if re.fullmatch(r"xl/worksheets/sheet[0-9]+\.xml", n))
        if not sheets:
            raise ValueError(f"{path} has no worksheet: save it as .xlsx or CSV")
        root = etree.fromstring(book.read(sheets[0]), _parser())
    rows: list[list[str | None]] = []
    for row in root.iter(f"{_NS}row"):
        cells: dict[int, str | None] = {}
        for cell in row.iter(f"{_NS}c"):
            found = _CELL.fullmatch(cell.get("r", ""))
            at = _column(found.group(1)) if found else len(cells)
            kind = cell.get("t")
            value = cell.find(f"{_NS}v")
            if kind == "s" and value is not None and value.text is not None:
                cells[at] = shared[int(value.text)]
            elif kind == "inlineStr":
                cells[at] = _text(cell)
            else:
                cells[at] = value.text if value is not None else None
        width = max(cells, default=-1) + 1
        rows.append([cells.get(i) or None for i in range(width)])
    return rows
