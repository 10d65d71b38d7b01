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

from lxml import etree

from txkit.errors import DataFileError
from txkit.inputs.sheets._xlsx import MAX_COLUMNS, Sheet

__all__ = ["looks_like_html", "read_html_table"]

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
    """The rows of the HTML tables in ``data``, streamed: each row freed once read, so memory
    follows the rows kept, not the page's tree.

    Raises:
        DataFileError: no table row in the file, or HTML that cannot be read.
    """
    path = Path(path)
    text, note = _decode(data)
    del data
    text = _DECLARATION.sub("", text, count=1)
    parser = etree.HTMLPullParser(
        events=("end",), tag="tr", no_network=True, huge_tree=False, remove_comments=True
    )
    sheet = Sheet("HTML table")
    if note:
        sheet.notes.append(note)
    number = 0
    try:
        for start in range(0, len(text) + 1, _CHUNK):
            if start < len(text):
                parser.feed(text[start : start + _CHUNK])
            else:
                parser.close()
            for _, row in parser.read_events():
                if next(row.iter("table"), None) is None:  # a layout row: its rows are read
                    number += 1
                    cells = _cells(row)
                    if any(cells):
                        sheet.add(path, number, cells, what)
                row.clear()
                while row.getprevious() is not None:
                    del row.getparent()[0]
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise DataFileError(
            path, f"looks like HTML but cannot be read ({exc})", "download it again", what=what
        ) from None
    if not sheet.rows:
        raise DataFileError(
            path,
            "is HTML without a table row",
            "download the statement again as Excel or CSV",
            what=what,
        )
    return sheet


_CHUNK: Final = 1 << 20


def _cells(row: etree._Element) -> list[str]:
    """White space runs (non-breaking too) as one space; a merged cell in its first column, the
    others empty."""
    cells: list[str] = []
    for cell in row:
        tag = cell.tag
        if tag != "td" and tag != "th":  # lxml's HTML parser gives lower-case tags
            continue
        if len(cell):
            for br in cell.iter("br"):  # a line break inside a cell separates words
                br.tail = " " + (br.tail or "")
            raw = "".join(cell.itertext())
        else:
            raw = cell.text or ""
        cells.append(" ".join(raw.split()))
        span = cell.get("colspan")
        if span is not None and span.isdigit() and int(span) > 1:
            cells.extend([""] * (min(int(span), MAX_COLUMNS) - 1))
        if len(cells) > MAX_COLUMNS:
            break
    return cells
