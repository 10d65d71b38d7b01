"""A ``.xls`` that is an HTML table (GTBank's statement download, and other banks' "Excel"
exports): its rows as the text of their cells, the digits as written.

Parsed by lxml's HTML parser (no network, no huge trees); every ``tr`` that holds no table of
its own is a row, its ``td``/``th`` cells' text with runs of white space as one space, a cell
spanning columns (``colspan``) in its first column and the others empty (as a spreadsheet shows
a merged cell). Rows are numbered in document order, from 1.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Final

from lxml import etree, html

from txkit.errors import DataFileError
from txkit.files._xlsx import MAX_COLUMNS, Sheet

__all__ = ["looks_like_html", "read_html_table"]

_SPACE: Final = re.compile(r"\s+")
_DECLARATION: Final = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)


def looks_like_html(data: bytes) -> bool:
    """Whether the file's first KB looks like HTML (whatever its name says)."""
    head = data[:1024]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        head = data[:2048].decode("utf-16", errors="replace").encode()
    head = head.removeprefix(codecs.BOM_UTF8).lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<table", b"<meta", b"<head")) or (
        head.startswith(b"<") and b"<table" in data[:65536].lower()
    )


def _decode(data: bytes) -> tuple[str, str | None]:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace").lstrip("\ufeff"), None
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), (
            "read as Windows-1252 text (it is not UTF-8): check that names read right"
        )


def read_html_table(path: str | Path, data: bytes, *, what: str = "file") -> Sheet:
    """The rows of the HTML tables in ``data``.

    Raises:
        DataFileError: no table row in the file.
    """
    path = Path(path)
    text, note = _decode(data)
    text = _DECLARATION.sub("", text, count=1)
    parser = html.HTMLParser(no_network=True, huge_tree=False, remove_comments=True)
    try:
        root = html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise DataFileError(
            path, f"looks like HTML but cannot be read ({exc})", "download it again", what=what
        ) from None
    for br in root.iter("br"):  # a line break inside a cell separates words
        br.tail = " " + (br.tail or "")
    sheet = Sheet("HTML table")
    if note:
        sheet.notes.append(note)
    number = 0
    for row in root.iter("tr"):
        if next(row.iter("table"), None) is not None:
            continue  # a layout row holding a table: its own rows are read
        number += 1
        cells: list[str] = []
        for cell in row:
            if not isinstance(cell.tag, str) or cell.tag.lower() not in ("td", "th"):
                continue
            value = _SPACE.sub(" ", cell.text_content().replace("\xa0", " ")).strip()
            span = cell.get("colspan", "1")
            width = max(1, min(int(span) if span.isdigit() else 1, MAX_COLUMNS))
            cells.extend([value] + [""] * (width - 1))  # as a merged cell: in its first column
            if len(cells) > MAX_COLUMNS:
                break
        if any(cells):
            sheet.rows.append((number, cells))
    if not sheet.rows:
        raise DataFileError(
            path,
            "is HTML without a table row",
            "download the statement again as Excel or CSV",
            what=what,
        )
    return sheet
