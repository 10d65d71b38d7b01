"""What a file is, from its bytes rather than its name (private): the one place the binary
formats' signatures are known, for the statements' registry and the orders reader alike.

Only the first 64 KB are read, and for a ZIP its central directory (the list of its parts,
not their contents; an OpenDocument ``mimetype`` part of at most 100 bytes): a file is told
within bounds before a reader is chosen.
"""

from __future__ import annotations

import codecs
import zipfile
from pathlib import Path
from typing import Final

from txkit.errors import DataFileError
from txkit.inputs._limits import check_input

__all__ = [
    "CONTENT",
    "content_note",
    "identify_content",
    "in_content_note",
    "is_pdf",
    "looks_like_html",
    "refuse_content",
]

_SNIFF: Final = 65_536
_ZIP: Final = b"PK\x03\x04"
_OLE: Final = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE2 / Compound File Binary: old .xls
_PARQUET: Final = b"PAR1"
_ODS_MIMETYPE: Final = b"application/vnd.oasis.opendocument.spreadsheet"

#: What each content is, as messages name it (``None``: text, or bytes of no known kind).
CONTENT: Final[dict[str | None, str]] = {
    "xlsx": "an Excel workbook",
    "xls": "an old Excel .xls workbook",
    "ods": "an OpenDocument spreadsheet",
    "html": "an HTML table",
    "parquet": "Parquet",
    "pdf": "a PDF",
    "zip": (
        "a ZIP archive holding no spreadsheet (neither an Excel workbook's xl/workbook.xml "
        "nor an OpenDocument spreadsheet's mimetype)"
    ),
    "bad-zip": "a ZIP archive whose directory cannot be read (a damaged workbook?)",
    None: "text",
}
# The names each content goes by; a file named otherwise is read by its content, and said so.
_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "xlsx": (".xlsx", ".xlsm"),
    "xls": (".xls",),
    "ods": (".ods",),
    "html": (".xls", ".html", ".htm"),
    "parquet": (".parquet", ".pq"),
    "pdf": (".pdf",),
    "zip": (".zip",),
    "bad-zip": (".zip",),
}
_BINARY_NAMES: Final = frozenset(s for names in _NAMES.values() for s in names) - {".html", ".htm"}


def is_pdf(data: bytes) -> bool:
    """Whether the bytes are a PDF (its header within the first 1,024 bytes, as readers allow)."""
    return b"%PDF-" in data[:1024]


def looks_like_html(data: bytes) -> bool:
    """Whether the file's first KB looks like HTML (whatever its name says)."""
    head = data[:1024]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        head = data[:2048].decode("utf-16", errors="replace").encode()
    head = head.removeprefix(codecs.BOM_UTF8).lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<table", b"<meta", b"<head")) or (
        head.startswith(b"<") and b"<table" in data[:_SNIFF].lower()
    )


def identify_content(path: str | Path, *, what: str = "file") -> str | None:
    """What the file is, from its first bytes: ``xlsx`` (a ZIP holding ``xl/`` parts or
    ``[Content_Types].xml``), ``ods`` (a ZIP whose ``mimetype`` is an OpenDocument
    spreadsheet's), ``zip`` (any other ZIP), ``xls`` (the OLE2 signature ``D0 CF 11 E0 A1 B1
    1A E1``), ``parquet``, ``pdf``, ``html`` (markup holding a table: GTBank's ``.xls``), or
    None (text, or bytes of no kind known here).

    A ZIP whose directory cannot be read is taken for the workbook its name says (``.ods``,
    ``.xlsx``), so that its reader refuses it as a damaged workbook; named otherwise it is
    ``bad-zip``.

    Raises:
        DataFileError: not a regular file, or over ``TXKIT_MAX_INPUT_MB``.
    """
    path = Path(path)
    check_input(path, what=what)
    with path.open("rb") as file:
        head = file.read(_SNIFF)
    if head.startswith(_ZIP):
        return _zip_kind(path)
    if head.startswith(_OLE):
        return "xls"
    if head.startswith(_PARQUET):
        return "parquet"
    if is_pdf(head):
        return "pdf"
    if looks_like_html(head):
        return "html"
    return None


def _zip_kind(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:  # reads the central directory only
            infos = {info.filename: info for info in archive.infolist()}
            mimetype = infos.get("mimetype")
            if mimetype is None and "content.xml" in infos:
                return "ods"  # OpenDocument's parts without its mimetype: its reader checks
            if (
                mimetype is not None
                and mimetype.file_size <= 100
                and archive.read("mimetype").strip() == _ODS_MIMETYPE
            ):
                return "ods"
            if "[Content_Types].xml" in infos or any(n.startswith("xl/") for n in infos):
                return "xlsx"
            return "zip"
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError):
        # a damaged workbook named as one is refused by its reader, saying it is damaged
        return {".ods": "ods", ".xlsx": "xlsx", ".xlsm": "xlsx"}.get(path.suffix.lower(), "bad-zip")


def content_note(path: str | Path, kind: str | None, *, read_as: str = "") -> str | None:
    """The load line's sentence for a file whose name says another format than its content
    (``named .csv, but it is an Excel workbook: read by its content``), or None when they
    agree. ``read_as`` names the format text was read as (``CSV``)."""
    suffix = Path(path).suffix.lower()
    named_otherwise = suffix in _BINARY_NAMES if kind is None else suffix not in _NAMES[kind]
    if not named_otherwise:
        return None
    named = f"named {suffix}" if suffix else "named without an extension"
    return f"{named}, but it is {CONTENT[kind]}: read by its content" + (
        f" as {read_as}" if read_as else ""
    )


def refuse_content(
    path: str | Path, kind: str | None, accepted: str, *, what: str = "file"
) -> DataFileError:
    """The error for a file whose content is no format read here, naming its name and its
    content (reading it as its name says would be a guess)."""
    suffix = Path(path).suffix.lower()
    named = f"is named {suffix}" if suffix else "has no extension"
    return DataFileError(
        path,
        f"{named}, but it is {CONTENT[kind]}, which is not read here",
        f"check that it is the right file, or export it again as one of: {accepted}",
        what=what,
    )


def in_content_note(error: DataFileError, said: str, *, what: str = "file") -> DataFileError:
    """``error`` for a file read by its content against its name, saying so first: the
    refusal of a CSV named ``.xlsx`` must not read as a workbook's."""
    return DataFileError(
        error.path,
        f"{said}, and {error.problem}",
        error.advice,
        lines=error.lines,
        unit=error.unit,
        what=what,
    )
