"""A data file's bytes as text: UTF-8, UTF-16 with a byte-order mark or Windows-1252, or a
one-line refusal naming the line and byte."""

from __future__ import annotations

import codecs
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from txkit.errors import DataFileError
from txkit.inputs._alphabets import central_alphabet
from txkit.inputs._limits import check_input, read_input

__all__ = ["TextFile", "check_suffix", "read_text", "show_values"]

#: What a spreadsheet's extension means, and how to get CSV out of it.
_SPREADSHEETS: Final[dict[str, str]] = {
    ".xlsx": "an Excel workbook",
    ".xlsm": "an Excel workbook",
    ".xlsb": "an Excel workbook",
    ".xls": "an Excel workbook",
    ".ods": "an OpenDocument spreadsheet",
    ".numbers": "a Numbers document",
}
_SAVE_AS_CSV: Final = (
    "save the sheet as CSV (Excel: File > Save As > 'CSV UTF-8 (Comma delimited)'; "
    "LibreOffice: File > Save As > 'Text CSV', character set Unicode (UTF-8))"
)
# Magic numbers of files that are not text, whatever their extension says.
_BINARY: Final[tuple[tuple[bytes, str], ...]] = (
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx workbook is one)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old-style Excel .xls workbook"),
    (b"PAR1", "a Parquet file"),
    (b"%PDF", "a PDF document"),
    (b"\x1f\x8b", "a gzip-compressed file"),
)
_SHOWN: Final = 10


def show_values(values: Sequence[object]) -> str:
    """The first values of a list for a message: ``'a', 'b', ... (12 in all)``."""
    items = list(values)
    shown = ", ".join("empty" if v is None or v == "" else repr(v) for v in items[:_SHOWN])
    return shown + (f", ... ({len(items):,} in all)" if len(items) > _SHOWN else "")


def check_suffix(path: str | Path, accepted: Mapping[str, str], *, what: str = "file") -> str:
    """The file's extension (lower case), once the file exists and the extension is accepted.

    Args:
        path: the file.
        accepted: extension (with its dot, lower case) -> what it is read as, e.g.
            ``{".csv": "CSV text", ".parquet": "Parquet"}``.
        what: how the file is named in messages (``orders file``).

    Raises:
        DataFileError: the file does not exist, is not a regular file (a folder, a device, a
            FIFO, a link loop), is over ``TXKIT_MAX_INPUT_MB``, or has another extension (a
            spreadsheet is told how to save itself as CSV).
    """
    path = Path(path)
    listed = ", ".join(f"{suffix} ({kind})" for suffix, kind in accepted.items())
    check_input(path, what=what)  # a regular file within TXKIT_MAX_INPUT_MB, or named
    suffix = path.suffix.lower()
    if suffix in accepted:
        return suffix
    if suffix in _SPREADSHEETS:
        raise DataFileError(
            path,
            f"{_SPREADSHEETS[suffix]} is not read here",
            f"save it as .xlsx, or {_SAVE_AS_CSV}; accepted: {listed}",
            what=what,
        )
    raise DataFileError(
        path,
        f"files ending {suffix!r} are not read"
        if suffix
        else "files without an extension are not read",
        f"accepted: {listed}",
        what=what,
    )


@dataclass(frozen=True)
class TextFile:
    """A data file's text and how it was decoded.

    Attributes:
        path: the file.
        text: its text, without a byte-order mark; line ends as in the file.
        encoding: ``utf-8``, ``utf-16`` or ``cp1252``.
        notes: what a reader should know (the encoding when not UTF-8), one sentence each.
    """

    path: Path
    text: str
    encoding: str
    notes: tuple[str, ...] = ()


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based; ``\\r\\n``, ``\\n``, ``\\r`` end lines, as an editor shows them."""
    head = data[:offset]
    line = head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1
    start = max(head.rfind(b"\n"), head.rfind(b"\r")) + 1
    return line, offset - start + 1


def _first_non_ascii(text: str) -> tuple[int, str] | None:
    for number, line in enumerate(io.StringIO(text, newline=""), start=1):
        if not line.isascii():
            return number, line.rstrip("\r\n")
    return None


def read_text(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> TextFile:
    """Read a data file as text, refusing what is not text and saying how it was decoded.

    Args:
        path: the file.
        what: how the file is named in messages (``orders file``).
        max_bytes: refuse larger files (besides ``TXKIT_MAX_INPUT_MB``, always checked).

    Returns:
        A :class:`TextFile`.

    Raises:
        DataFileError: not a regular file (a folder, a device, a FIFO, a link loop), the file
            is empty, binary (a workbook, a Parquet or ZIP file, NUL bytes), larger than
            ``max_bytes`` or ``TXKIT_MAX_INPUT_MB``, or neither UTF-8, UTF-16 with a byte-order mark
            nor Windows-1252 (line and byte of the first byte that is not).
    """
    path = Path(path)
    data = read_input(path, what=what)  # a regular file within TXKIT_MAX_INPUT_MB
    _refuse_not_text(path, data, what, max_bytes)
    notes: list[str] = []
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text, encoding = _decode_utf16(path, data, what), "utf-16"
        notes.append("read as UTF-16 text (it starts with UTF-16's byte-order mark)")
    else:
        _refuse_nul(path, data, what)
        text, encoding = _decode_8bit(path, data, what, notes)
    if not text or text.isspace():  # not text.strip(), which copies the whole text
        raise DataFileError(
            path,
            "holds no text, only blank lines",
            "export it again, or pass the right file",
            what=what,
        )
    return TextFile(path, text, encoding, tuple(notes))


def _refuse_not_text(path: Path, data: bytes, what: str, max_bytes: int | None) -> None:
    if max_bytes is not None and len(data) > max_bytes:
        raise DataFileError(
            path,
            f"is {len(data):,} bytes, over the {max_bytes:,} read",
            "split it, or check that it is the right file",
            what=what,
        )
    if not data:
        raise DataFileError(
            path,
            "the file is empty (0 bytes)",
            "export it again, or pass the right file",
            what=what,
        )
    for magic, kind in _BINARY:
        if data.startswith(magic):
            advice = _SAVE_AS_CSV if "Excel" in kind else "pass a text (CSV) file"
            raise DataFileError(path, f"is {kind}, not text", advice, what=what)


def _decode_utf16(path: Path, data: bytes, what: str) -> str:
    try:
        text = data.decode("utf-16")
    except UnicodeDecodeError as exc:
        line, byte = _position(data, exc.start)
        raise DataFileError(
            path,
            f"starts as UTF-16 text but is not (byte {byte} of the line)",
            "save it again as CSV UTF-8",
            lines=[line],
            what=what,
        ) from None
    return text.removeprefix("\ufeff")


def _refuse_nul(path: Path, data: bytes, what: str) -> None:
    if b"\0" in data:
        line, byte = _position(data, data.index(b"\0"))
        raise DataFileError(
            path,
            f"holds a NUL byte (byte {byte} of the line): not a text file",
            "pass a CSV text file (a spreadsheet: save it as CSV UTF-8)",
            lines=[line],
            what=what,
        )


def _central_european(data: bytes) -> tuple[str, str] | None:
    """The text as Windows-1250 when its bytes say so, with what says it; else None.

    Windows-1250 (Polish, Czech, Hungarian... bank exports) and Windows-1252 share ASCII and
    most letters; a file is taken as Windows-1250 only when some byte between two letters is a
    letter in Windows-1250 and no letter in Windows-1252 (``Prze³ew`` for ``Przełew``, or a
    byte 1252 lacks, ``ť``), and no byte the other way round. charset-normalizer was measured
    on such files and ranked Windows-1252 first for a Polish sample, so this rule is txkit's:
    explainable, and said in the load line. Any other file is left to Windows-1252."""
    try:
        central = data.decode("cp1250")
    except UnicodeDecodeError:
        return None
    western = data.decode("cp1252", errors="replace")
    for_1250 = for_1252 = 0
    example = ""
    for i, (a, b) in enumerate(zip(central, western, strict=True)):
        if a == b or ord(a) < 0x80:
            continue
        beside = (i > 0 and central[i - 1].isalpha()) or (
            i + 1 < len(central) and central[i + 1].isalpha()
        )
        if not beside:
            continue
        if a.isalpha() and not b.isalpha():
            for_1250 += 1
            if not example:
                start = max(central.rfind(" ", 0, i), central.rfind("\n", 0, i)) + 1
                end = min(x for x in (central.find(" ", i), central.find("\n", i), len(central))
                          if x >= 0)  # fmt: skip
                example = f"{central[start:end]!r}, not {western[start:end]!r}"
        elif b.isalpha() and not a.isalpha():
            for_1252 += 1
    if for_1250 and not for_1252:
        return central, f"{for_1250:,} letter(s) only Windows-1250 has, e.g. {example}"
    # Czech and Hungarian letters are letters in Windows-1252 too (ř reads ø, ő reads õ):
    # their alphabet tells (txkit.inputs._alphabets).
    language = central_alphabet(central, western)
    if language is None:
        return None
    at = next(i for i, (a, b) in enumerate(zip(central, western, strict=True)) if a != b)
    start, end = _word_at(central, at)
    return central, (
        f"its letters are {language}'s and no Western language's, e.g. "
        f"{central[start:end]!r}, not {western[start:end]!r}"
    )


def _word_at(text: str, at: int) -> tuple[int, int]:
    """The bounds of the word (no space, delimiter or line end) holding ``text[at]``."""
    stops = ' \t\r\n,;|"'
    start = max(text.rfind(c, 0, at) for c in stops) + 1
    ends = [e for e in (text.find(c, at) for c in stops) if e >= 0]
    return start, min(ends, default=len(text))


def _decode_8bit(path: Path, data: bytes, what: str, notes: list[str]) -> tuple[str, str]:
    """Windows-1252 only when the bytes are that and only that."""
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError as exc:
        bad = exc.start
    line, byte = _position(data, bad)
    where = f"byte {byte} of the line, 0x{data[bad]:02X}"
    advice = (
        "save the file as UTF-8 (Excel: File > Save As > 'CSV UTF-8 (Comma delimited)'; "
        "a text editor: Save with Encoding > UTF-8)"
    )
    # Bytes that are valid UTF-8 sequences beside bytes that are not: a file pieced together
    # from two encodings, or UTF-8 damaged in transit. Reading it either way garbles a part.
    loose = data.decode("utf-8", errors="surrogateescape")
    if any(ord(ch) > 0x7F and not 0xDC80 <= ord(ch) <= 0xDCFF for ch in loose):
        raise DataFileError(
            path,
            f"mixes UTF-8 text with bytes that are not UTF-8 (first at {where})",
            f"{advice}, from the original export",
            lines=[line],
            what=what,
        )
    central = _central_european(data)
    if central is not None:
        text, evidence = central
        notes.append(
            f"read as Windows-1250 text (Central European), not UTF-8 nor Windows-1252: "
            f"{evidence}; check that it reads right, or save the file as CSV UTF-8"
        )
        return text.removeprefix("\ufeff"), "cp1250"
    try:
        # Python's cp1252 has no character for 0x81, 0x8D, 0x8F, 0x90 and 0x9D: a file holding
        # them is in another encoding, and is refused rather than guessed.
        text = data.decode("cp1252")
    except UnicodeDecodeError as exc:
        line, byte = _position(data, exc.start)
        raise DataFileError(
            path,
            f"is neither UTF-8 nor Windows-1252 text (byte {byte} of the line, "
            f"0x{data[exc.start]:02X})",
            advice,
            lines=[line],
            what=what,
        ) from None
    text = text.removeprefix("\ufeff")
    first = _first_non_ascii(text)
    shown = (
        ""
        if first is None
        else f"; its first non-ASCII text is on line {first[0]}: " + (repr(first[1][:80]))
    )
    notes.append(
        f"read as Windows-1252 text, not UTF-8 (first non-UTF-8 byte on line {line}){shown}: "
        "check that it reads right, or save the file as CSV UTF-8"
    )
    return text, "cp1252"
