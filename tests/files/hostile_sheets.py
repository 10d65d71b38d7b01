"""Hostile workbooks, built byte by byte: a tiny one claiming a far cell, and ZIP bombs whose
sheet decompresses to gigabytes (raw deflate blocks repeated, so building one takes a moment
and no memory)."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def far_cell(path: Path) -> Path:
    """A ~400-byte .xlsx whose only sheet declares and holds cell ZZZZZZZZZZ1."""
    sheet = (
        f'<worksheet xmlns="{NS}"><dimension ref="A1:ZZZZZZZZZZ1"/><sheetData>'
        '<row r="1"><c r="ZZZZZZZZZZ1" t="inlineStr"><is><t>key</t></is></c></row>'
        "</sheetData></worksheet>"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("xl/worksheets/sheet1.xml", sheet)
    return path


def _entry(name: bytes, data: bytes, crc: int, size: int, offset: int) -> tuple[bytes, bytes]:
    local = struct.pack(
        "<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(name), 0
    )
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data), size,
        len(name), 0, 0, 0, 0, 0, offset,
    )  # fmt: skip
    return local + name + data, central + name


def bomb(
    path: Path,
    gigabytes: float,
    *,
    declared: int | None = None,
    name: str = "xl/worksheets/sheet1.xml",
) -> Path:
    """An .xlsx whose sheet is ``gigabytes`` of blanks inside ``<sheetData>``, deflated to
    about a thousandth of that; ``declared`` (bytes) lies about its size in the ZIP's
    directory (default: the truth)."""
    head = f'<worksheet xmlns="{NS}"><sheetData>'.encode()
    tail = b"</sheetData></worksheet>"
    block = b" " * (1 << 20)
    count = int(gigabytes * 1024)

    def segment(data: bytes, last: bool = False) -> bytes:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush(zlib.Z_FINISH if last else zlib.Z_FULL_FLUSH)

    # after a full flush the compressor starts afresh: the same input deflates to the same
    # bytes, and the segments concatenate into one valid stream
    body = segment(block)
    data = segment(head) + body * count + segment(tail, last=True)
    size = len(head) + count * len(block) + len(tail)
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    local, central = _entry(name.encode(), data, crc, size if declared is None else declared, 0)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local), 0)
    path.write_bytes(local + central + end)
    return path


def repeated_ods(path: Path, rows: int, columns: int) -> Path:
    """A tiny .ods whose one cell is repeated ``columns`` times in a row repeated ``rows``
    times (OpenDocument's own compression of runs)."""
    content = (
        '<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        '<office:body><office:spreadsheet><table:table table:name="Sheet1">'
        f'<table:table-row table:number-rows-repeated="{rows}"><table:table-cell '
        f'table:number-columns-repeated="{columns}" office:value-type="string"><text:p>x</text:p>'
        "</table:table-cell></table:table-row></table:table></office:spreadsheet></office:body>"
        "</office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest='
        '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    with zipfile.ZipFile(path, "w") as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        book.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
        book.writestr("META-INF/manifest.xml", manifest)
    return path


def far_right(path: Path, rows: int) -> Path:
    """An .xlsx whose every row holds one cell in the last column (XFD): each row a valid
    16,384 cells wide."""
    body = "".join(
        f'<row r="{n}"><c r="XFD{n}" t="inlineStr"><is><t>x</t></is></c></row>'
        for n in range(1, rows + 1)
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(
            "xl/worksheets/sheet1.xml",
            f'<worksheet xmlns="{NS}"><sheetData>{body}</sheetData></worksheet>',
        )
    return path
