"""Data files the user gives txkit: read and checked before anything else runs.

The merchant's orders (``txkit report --orders FILE``) are the first such file; bank
statements (CSV, MT940, camt.053) are meant to come through the same steps. Every problem is a
:class:`~txkit.errors.DataFileError` naming the file, the line (as a text editor or a
spreadsheet numbers it: the header is line 1) and what to do, so a caller can check a file
before it syncs a store or starts a notebook kernel.

The steps, each usable on its own:

* :func:`check_suffix`: the file exists and its extension is one the reader accepts; a
  spreadsheet the reader does not accept (``.numbers``, ``.xlsb``) is refused with how to save
  it.
* :func:`read_text`: the bytes as text. UTF-8 (with or without a byte-order mark) is read as
  it is; UTF-16 with a byte-order mark (Excel's "Unicode Text") and Windows-1252 (Excel's
  "CSV (Comma delimited)" on a Western Windows) are read with a note saying so and where the
  first non-ASCII character is, so the reader can see whether it came out right. Anything else
  (bytes that are neither, a mix of UTF-8 and other bytes, a binary file) is refused with the
  line and the position of the first bad byte.
* :func:`read_csv_table`: CSV text as a frame of strings with each record's line number
  (quoted values may span lines), the header's names matched without regard to case or
  surrounding spaces, the delimiter (``,``, ``;``, tab or ``|``) taken from the header.
* :func:`read_table`: :func:`read_csv_table`'s table from CSV or a spreadsheet (``.xlsx``,
  ``.xls``, ``.ods``, a ``.xls`` that is HTML), each value the text its cell shows; the header
  found among title rows or over two rows, total and footer rows and continuation rows
  handled as :mod:`txkit.files._layout` says.
* :func:`fail_lines`: raise for the lines where a condition holds, with their values.

Every file is first checked by :func:`txkit.files.check_input`: a regular file (not a folder,
a device, a FIFO or a link loop) within ``TXKIT_MAX_INPUT_MB``.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Final

import polars as pl

from txkit.calendar import month_bounds
from txkit.errors import DataFileError
from txkit.files import (
    HEADER_SEARCH,
    SPREADSHEET_SUFFIXES,
    Grid,
    check_input,
    find_header,
    join_continuations,
    read_grid,
    read_input,
    summary_runs,
)

__all__ = [
    "LINE",
    "CsvTable",
    "DataFileError",
    "TextFile",
    "check_suffix",
    "fail_lines",
    "read_csv_table",
    "read_table",
    "read_text",
    "show_values",
]

#: The column of :attr:`CsvTable.frame` holding each record's first line (1 = the header).
LINE: Final = "_line"

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
_DELIMITERS: Final = (",", ";", "\t", "|")
_DELIMITER_NAMES: Final = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "'|'"}
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
    """The 1-based line and byte-in-line of a byte offset (``\\r\\n``, ``\\n``, ``\\r`` end
    lines, as an editor shows them)."""
    head = data[:offset]
    line = head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1
    start = max(head.rfind(b"\n"), head.rfind(b"\r")) + 1
    return line, offset - start + 1


def _first_non_ascii(text: str) -> tuple[int, str] | None:
    """The line number and text of the first line holding a non-ASCII character."""
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
    notes: list[str] = []
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text, encoding = data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError as exc:
            line, byte = _position(data, exc.start)
            raise DataFileError(
                path,
                f"starts as UTF-16 text but is not (byte {byte} of the line)",
                "save it again as CSV UTF-8",
                lines=[line],
                what=what,
            ) from None
        text = text.removeprefix("\ufeff")
        notes.append("read as UTF-16 text (it starts with UTF-16's byte-order mark)")
    else:
        if b"\0" in data:
            line, byte = _position(data, data.index(b"\0"))
            raise DataFileError(
                path,
                f"holds a NUL byte (byte {byte} of the line): not a text file",
                "pass a CSV text file (a spreadsheet: save it as CSV UTF-8)",
                lines=[line],
                what=what,
            )
        text, encoding = _decode_8bit(path, data, what, notes)
    if not text.strip():
        raise DataFileError(
            path,
            "holds no text, only blank lines",
            "export it again, or pass the right file",
            what=what,
        )
    return TextFile(path, text, encoding, tuple(notes))


def _decode_8bit(path: Path, data: bytes, what: str, notes: list[str]) -> tuple[str, str]:
    """UTF-8, or Windows-1252 when the bytes are that and only that; else DataFileError."""
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


def _reader(lines: list[str], delimiter: str) -> Iterator[list[str]]:
    return csv.reader(io.StringIO("".join(lines), newline=""), delimiter=delimiter, strict=True)


def _record_lines(
    path: Path, body: list[str], delimiter: str, first_line: int, what: str
) -> list[int]:
    """Each record's first line, when a quoted value spans lines (or the CSV is malformed:
    then DataFileError naming the record's first line)."""
    reader = _reader(body, delimiter)
    lines = []
    start = first_line
    while True:
        try:
            next(reader)
        except StopIteration:
            return lines
        except csv.Error as exc:
            raise DataFileError(
                path,
                f"the record starting here cannot be read as CSV ({exc}); usually a quote "
                '(") that is not closed, or text after a closing quote',
                'quote a value holding the delimiter, a quote or a line break ("1,500"), '
                'write a quote inside it twice (""), or save the file again from the '
                "spreadsheet",
                lines=[start],
                what=what,
            ) from None
        lines.append(start)
        start = first_line + reader.line_num


# A record's fields, its first line, and whether every field is empty (a blank line, or
# ",,,," at the end of a spreadsheet's export: nothing to read, not an error).
_Records = tuple[pl.DataFrame, list[tuple[int, int]], int]


def _lines_of(text: str) -> pl.Series:
    """The text's lines without their ends, as a text editor shows them (``\\r\\n``, ``\\n``
    and a lone ``\\r`` each end a line)."""
    if text.count("\r") != text.count("\r\n"):  # a lone \r: Python's universal newlines
        lines = pl.Series("text", io.StringIO(text, newline="").readlines(), dtype=pl.String)
        return lines.str.strip_chars_end("\r\n")
    # Split in polars: 0.38 s for 1,000,000 lines where io's readlines took 0.77 s.
    lines = pl.Series("text", [text], dtype=pl.String).str.split("\n").explode()
    if text.endswith("\n"):
        lines = lines.head(len(lines) - 1)
    return lines.str.strip_chars_end("\r")


def _plain_records(body: pl.Series, delimiter: str, names: list[str], first_line: int) -> _Records:
    """Records of text without quotes, one a line, split by polars: reading 1,000,000 orders
    took 6.5 s this way against 14.2 s through the csv module (a shared machine at load 4).

    Returns:
        The records that hold something (names and :data:`LINE`), the ragged ones (line,
        fields) and how many lines of empty fields were left out (blank lines not counted).
    """
    lines = (
        body.to_frame()
        .with_row_index(LINE, offset=first_line)
        .with_columns(
            (pl.col("text").str.count_matches(delimiter, literal=True) + 1).alias("_width"),
            (
                pl.col("text").str.replace_all(delimiter, "", literal=True).str.strip_chars() == ""
            ).alias("_empty"),
        )
    )
    width, empty = pl.col("_width") == len(names), pl.col("_empty")
    ragged = list(lines.filter(~width & ~empty).select(LINE, "_width").iter_rows())
    skipped = lines.filter(empty & (pl.col("text") != "")).height
    fields = pl.col("text").str.split_exact(delimiter, len(names) - 1)
    frame = lines.filter(width & ~empty).select(
        *(fields.struct[i].alias(name) for i, name in enumerate(names)),
        pl.col(LINE).cast(pl.UInt32),
    )
    return frame, ragged, skipped


def _quoted_records(
    path: Path, body: list[str], delimiter: str, names: list[str], first_line: int, what: str
) -> _Records:
    """Records of text with quotes, by the csv module (a quoted value may span lines); the
    same results as :func:`_plain_records`."""
    try:
        records = list(_reader(body, delimiter))
    except csv.Error:
        records = []  # _record_lines names the record
    lines = (
        list(range(first_line, first_line + len(records)))
        if len(records) == len(body)
        else _record_lines(path, body, delimiter, first_line, what)
    )
    width = len(names)
    ragged, kept, kept_lines, skipped = [], [], [], 0
    for line, record in zip(lines, records, strict=True):
        if not any(field.strip() for field in record):
            skipped += 1 if record else 0
        elif len(record) != width:
            ragged.append((line, len(record)))
        else:
            kept.append(record)
            kept_lines.append(line)
    fields = list(zip(*kept, strict=True)) if kept else [() for _ in names]
    frame = pl.DataFrame(
        {
            name: pl.Series(name, column, dtype=pl.String)
            for name, column in zip(names, fields, strict=True)
        }
        | {LINE: pl.Series(LINE, kept_lines, dtype=pl.UInt32)}
    )
    return frame, ragged, skipped


@dataclass(frozen=True)
class CsvTable:
    """A CSV file read as strings, each record with its line.

    Attributes:
        path: the file.
        frame: one row per record (blank lines and lines of empty fields left out), every
            column a String as written, plus :data:`LINE` (the record's first line, UInt32).
            Known column names are given as the caller spells them.
        header: the names as written in the header (surrounding spaces removed).
        delimiter: the field delimiter found in the header ("" for a spreadsheet).
        notes: what a reader should know (encoding, delimiter, lines skipped).
        kind: ``csv``, ``xlsx``, ``xls``, ``ods`` or ``html`` (a ``.xls`` that is HTML).
        unit: how :data:`LINE` is named in messages: ``line`` for CSV, ``Sheet1 row`` for a
            sheet (pass it to :func:`fail_lines`).
    """

    path: Path
    frame: pl.DataFrame
    header: tuple[str, ...]
    delimiter: str
    notes: tuple[str, ...] = ()
    kind: str = "csv"
    unit: str = "line"


def _parse_header(line: str, delimiter: str) -> list[str]:
    try:
        return next(csv.reader([line], delimiter=delimiter))
    except (csv.Error, StopIteration):
        return []


def read_csv_table(
    path: str | Path,
    *,
    columns: Sequence[str],
    required: Sequence[str],
    what: str = "file",
    rows: str = "records",
    source: TextFile | None = None,
    date: str | None = None,
    continues: str | None = None,
) -> CsvTable:
    """Read a CSV file with a header as strings, keeping each record's line number.

    The header is found among title lines, over two lines if need be; total and footer lines
    after the data (and opening-balance lines right after the header) are skipped, each said in
    the notes (:mod:`txkit.files._layout` says how).

    Args:
        path: the file.
        columns: the names the caller knows (required and optional), matched in the header
            without regard to case or surrounding spaces and given back as spelled here.
        required: the columns that must be present.
        what: how the file is named in messages (``orders file``).
        rows: what a record is called in messages (``orders``).
        source: the file's text when already read (:func:`read_text`).
        date: the date column (as spelled in ``columns``): a row whose date cell holds no digit
            may be a total; a row with a date never is.
        continues: the description column whose text may continue on the next row (a row
            holding text in that column only): joined to the row above.

    Returns:
        A :class:`CsvTable`.

    Raises:
        DataFileError: as :func:`read_text`; no header; a required column missing (every one
            named, with the accepted names and the header found); a column named twice; a
            record with more or fewer fields than the header; a quote not closed; no record.
    """
    path = Path(path)
    source = source or read_text(path, what=what)
    text = source.text
    notes = list(source.notes)
    physical = _lines_of(text)
    filled = (physical.str.strip_chars() != "").arg_true()
    candidates = filled.head(HEADER_SEARCH).to_list()
    delimiter = _delimiter(physical, candidates, required)
    parsed = [(i, [c.strip() for c in _parse_header(physical[i], delimiter)]) for i in candidates]
    found = find_header(parsed, required)
    at, header, span = found if found is not None else (0, parsed[0][1], 1)
    header_at = parsed[at][0]
    line_of_header = header_at + 1
    names = _column_names(path, header, columns, required, line_of_header, what)
    if delimiter != ",":
        notes.append(f"columns separated by {_DELIMITER_NAMES[delimiter]}")
    if at:
        notes.append(
            _skipped("title line", [i + 1 for i, _ in parsed[:at]], [c for _, c in parsed[:at]])
        )
    if span == 2:
        notes.append(f"the header is written over lines {line_of_header} and {line_of_header + 1}")

    body_at = parsed[at + span - 1][0] + 1
    body = physical.slice(body_at)
    first_line = body_at + 1
    known = {name.casefold(): name for name in columns}
    spelled = [known.get(c.casefold(), c) for c in names]
    blank = _summary_lines(body, delimiter, spelled, required, date, continues)
    if blank:
        lines = sorted(blank)
        cells = [_parse_header(body[i], delimiter) for i in lines]
        notes.append(_skipped("total or footer line", [i + first_line for i in lines], cells))
    if span == 1:
        header_text = physical[header_at].strip()
        repeated = (body.str.strip_chars() == header_text).arg_true().to_list()
        if repeated:
            notes.append(f"{len(repeated):,} line(s) repeating the header skipped")
        blank.update(repeated)
    if blank:
        body = body.clone()
        body.scatter(sorted(blank), "")
    if body.str.contains('"', literal=True).any():
        kept = io.StringIO(text, newline="").readlines()[body_at:]  # line ends as written
        for i in blank:
            kept[i] = "\n"
        frame, ragged, skipped = _quoted_records(path, kept, delimiter, names, first_line, what)
    else:
        frame, ragged, skipped = _plain_records(body, delimiter, names, first_line)
    if continues is not None:
        frame, joined = join_continuations(frame, continues, LINE)
        if joined:
            notes.append(f"{joined:,} continuation line(s) joined to the {continues} above")
    _check_records(path, frame, ragged, len(names), line_of_header, what, rows)
    if skipped:
        notes.append(f"{skipped:,} line(s) of empty fields skipped")
    return CsvTable(path, frame, tuple(header), delimiter, tuple(notes))


def read_table(
    path: str | Path,
    *,
    columns: Sequence[str],
    required: Sequence[str],
    what: str = "file",
    rows: str = "records",
    source: TextFile | None = None,
    date: str | None = None,
    continues: str | None = None,
) -> CsvTable:
    """Read a table from CSV or a spreadsheet, every value the text its cell shows.

    ``.xlsx``, ``.xlsm``, ``.xls`` and ``.ods`` files are read as spreadsheets (their first
    sheet; a ``.xls`` that is an HTML table as HTML), anything else as CSV
    (:func:`read_csv_table`). The arguments, the header's search, the skipped title, total and
    continuation rows and the result are the same; a spreadsheet's rows are its row numbers
    (:attr:`CsvTable.unit` names them: ``Sheet1 row 14``), and a number cell in a column read
    whose stored value is not the decimal it shows is refused with its address
    (``Sheet1!C14``).

    Raises:
        DataFileError: as :func:`read_csv_table`; not a regular file; over
            ``TXKIT_MAX_INPUT_MB``; a workbook that is damaged, would decompress past its bound
            or claims cells beyond a spreadsheet's last; a cell not what it shows.
    """
    path = Path(path)
    if source is None and path.suffix.lower() in SPREADSHEET_SUFFIXES:
        grid = read_grid(
            path, what=what, want=lambda sheet: find_header(sheet.rows, required) is not None
        )
        return _sheet_table(path, grid, columns, required, what, rows, date, continues)
    return read_csv_table(
        path,
        columns=columns,
        required=required,
        what=what,
        rows=rows,
        source=source,
        date=date,
        continues=continues,
    )


_KINDS: Final = {
    "xlsx": "an Excel workbook",
    "xls": "an old Excel .xls workbook",
    "ods": "an OpenDocument spreadsheet",
    "html": "an HTML table (a .xls download that is a web page), its digits as written",
}


def _sheet_table(
    path: Path,
    grid: Grid,
    columns: Sequence[str],
    required: Sequence[str],
    what: str,
    rows: str,
    date: str | None,
    continues: str | None,
) -> CsvTable:
    """:func:`read_table` of a spreadsheet's rows."""
    sheet, unit = grid.sheet, grid.unit
    notes = [f"read as {_KINDS[grid.kind]}", *sheet.notes]
    found = find_header(sheet.rows, required)
    if found is None:
        first = sheet.rows[0] if sheet.rows else (1, [])
        _column_names(path, first[1], columns, required, first[0], what, unit)
        found = (0, first[1], 1)  # every required name found: no required column
    at, header, span = found
    while header and not header[-1]:
        header.pop()
    line_of_header = sheet.rows[at][0] if sheet.rows else 1
    names = _column_names(path, header, columns, required, line_of_header, what, unit)
    width = len(names)
    if at:
        titles = sheet.rows[:at]
        notes.append(_skipped("title row", [n for n, _ in titles], [c for _, c in titles], unit))
    if span == 2:
        notes.append(
            f"the header is written over two rows ({unit}s {line_of_header} and "
            f"{sheet.rows[at + 1][0]})"
        )
    data = sheet.rows[at + span :]
    normal = [" ".join(c.split()).casefold() for c in header]
    repeated = [n for n, c in data if [" ".join(x.split()).casefold() for x in c[:width]] == normal]
    if repeated and span == 1:
        dropped = set(repeated)
        data = [(n, c) for n, c in data if n not in dropped]
        notes.append(f"{len(repeated):,} row(s) repeating the header skipped")
    known = {name.casefold(): name for name in columns}
    spelled = [known.get(c.casefold(), c) for c in names]
    lead, trail = summary_runs(_marked(grid, data), spelled, required, date, continues)
    skipped = data[:lead] + data[len(data) - trail :]
    if skipped:
        notes.append(
            _skipped("total or footer row", [n for n, _ in skipped], [c for _, c in skipped], unit)
        )
    data = data[lead : len(data) - trail]
    ragged = [(n, len(c)) for n, c in data if any(x for x in c[width:])]
    _refuse_cells(path, grid, data, names, columns, width, what)
    frame = pl.DataFrame(
        {
            name: pl.Series(name, [c[i] if i < len(c) else "" for _, c in data], dtype=pl.String)
            for i, name in enumerate(names)
        }
        | {LINE: pl.Series(LINE, [n for n, _ in data], dtype=pl.UInt32)}
    )
    if continues is not None:
        frame, joined = join_continuations(frame, continues, LINE)
        if joined:
            notes.append(f"{joined:,} continuation row(s) joined to the {continues} above")
    _check_records(path, frame, ragged, width, line_of_header, what, rows, unit)
    return CsvTable(path, frame, tuple(header), "", tuple(notes), kind=grid.kind, unit=unit)


def _marked(grid: Grid, data: list[tuple[int, list[str]]]) -> list[list[str]]:
    """The rows' cells for finding totals and footers, a cell with a problem (a formula never
    computed) counted as holding something: its row is an entry to refuse, not a footer."""
    by_row: dict[int, list[int]] = {}
    for row, column in grid.sheet.problems:
        by_row.setdefault(row, []).append(column)
    if not by_row:
        return [c for _, c in data]
    out = []
    for number, cells in data:
        columns = by_row.get(number)
        if columns:
            cells = cells + [""] * (max(columns) + 1 - len(cells))
            cells = [c or ("?" if i in columns else "") for i, c in enumerate(cells)]
        out.append(cells)
    return out


def _refuse_cells(
    path: Path,
    grid: Grid,
    data: list[tuple[int, list[str]]],
    names: list[str],
    columns: Sequence[str],
    width: int,
    what: str,
) -> None:
    """A cell in a column read whose value is not what it shows: refused with its address."""
    read = {i for i, name in enumerate(names) if name in set(columns)}
    rows = {n for n, _ in data}
    bad = sorted(
        (row, column)
        for (row, column) in grid.sheet.problems
        if row in rows and column in read and column < width
    )
    if not bad:
        return
    row, column = bad[0]
    more = f" ({len(bad) - 1:,} more such cells)" if len(bad) > 1 else ""
    raise DataFileError(
        path,
        f"cell {grid.address(row, column)} ({names[column]}) {grid.sheet.problems[bad[0]]}{more}",
        "format the cells to show every decimal the amount has, or type the amount as it "
        "should read; a formula: open the workbook and save it again so it is computed (txkit "
        "never rounds a spreadsheet's binary number)",
        what=what,
    )


def _delimiter(physical: pl.Series, candidates: list[int], required: Sequence[str]) -> str:
    """The delimiter that finds every required name in one line (or two) of the first ones;
    else the one that splits the first line into the most columns."""
    for delimiter in _DELIMITERS:
        parsed = [
            (i, [c.strip() for c in _parse_header(physical[i], delimiter)]) for i in candidates
        ]
        if find_header(parsed, required) is not None:
            return delimiter
    return _find_header(physical[candidates[0]], required)[0]


def _summary_lines(
    body: pl.Series,
    delimiter: str,
    names: list[str],
    required: Sequence[str],
    date: str | None,
    continues: str | None,
) -> set[int]:
    """Indexes in ``body`` of the summary lines right after the header and at the end."""
    filled = (body.str.strip_chars() != "").arg_true().to_list()
    ends = filled[:100] + filled[-100:] if len(filled) > 200 else filled
    ends = list(dict.fromkeys(ends))
    cells = [_parse_header(body[i], delimiter) for i in ends]
    lead, trail = summary_runs(cells, names, required, date, continues)
    return set(ends[:lead]) | set(ends[len(ends) - trail :])


def _skipped(kind: str, lines: list[int], cells: list[list[str]], unit: str = "line") -> str:
    """``2 title lines skipped (lines 1 and 2: 'Statement of account'; ...)``."""
    # a merged cell may be written in each of its columns: its text said once
    texts = [" ".join(dict.fromkeys(c.strip() for c in row if c.strip()))[:60] for row in cells[:3]]
    where = DataFileError.where(lines, unit)
    plural = "s" if len(lines) != 1 else ""
    return (
        f"{len(lines):,} {kind}{plural} skipped ({where}: "
        + "; ".join(repr(t) for t in texts)
        + ("; ..." if len(cells) > 3 else "")
        + ")"
    )


def _find_header(header_line: str, required: Sequence[str]) -> tuple[str, list[str]]:
    """The delimiter (the first that finds every required name, else the one that finds the
    most columns) and the header's names split by it."""

    def found(delimiter: str) -> list[str]:
        return [c.strip() for c in _parse_header(header_line, delimiter)]

    def covers(delimiter: str) -> bool:
        names = {c.casefold() for c in found(delimiter)}
        return all(r.casefold() in names for r in required)

    delimiter = next((d for d in _DELIMITERS if covers(d)), None)
    if delimiter is None:
        delimiter = max(_DELIMITERS, key=lambda d: len(found(d)))
    return delimiter, found(delimiter)


def _column_names(
    path: Path,
    header: list[str],
    columns: Sequence[str],
    required: Sequence[str],
    line_of_header: int,
    what: str,
    unit: str = "line",
) -> list[str]:
    """The frame's column names: known ones as the caller spells them, blank ones numbered.

    Raises:
        DataFileError: a required column missing, or a column named twice.
    """
    known = {name.casefold(): name for name in columns}
    names = [known.get(c.casefold(), c) or f"column_{i + 1}" for i, c in enumerate(header)]
    missing = [r for r in required if r not in names]
    if missing:
        optional = [c for c in columns if c not in required]
        raise DataFileError(
            path,
            f"no column {', '.join(map(repr, missing))} in the header"
            + (f" (found: {show_values(header)})" if any(header) else " (it is empty)"),
            f"the first line must name the columns: required {', '.join(required)}"
            + (f"; optional {', '.join(optional)}" if optional else "")
            + " (case and surrounding spaces do not matter; separated by commas or "
            "semicolons)",
            lines=[line_of_header],
            unit=unit,
            what=what,
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataFileError(
            path,
            f"the header names {show_values(twice)} more than once",
            "rename or remove the extra column",
            lines=[line_of_header],
            unit=unit,
            what=what,
        )
    return names


def _check_records(
    path: Path,
    frame: pl.DataFrame,
    ragged: list[tuple[int, int]],
    width: int,
    line_of_header: int,
    what: str,
    rows: str,
    unit: str = "line",
) -> None:
    """Raise :class:`DataFileError` for records of the wrong width, or for no record."""
    if ragged:
        widths = sorted({w for _, w in ragged})
        raise DataFileError(
            path,
            f"{'a record has' if len(ragged) == 1 else 'records have'} "
            f"{show_values(widths)} field(s) where the header has {width}",
            'a value holding the delimiter must be quoted ("1,500.00"), or remove the extra '
            "or missing separators"
            if unit == "line"
            else "move or remove the cells right of the table, or name their column in the header",
            lines=[line for line, _ in ragged],
            unit=unit,
            what=what,
        )
    if frame.height == 0:
        raise DataFileError(
            path,
            f"has a header ({unit} {line_of_header}) but no {rows} after it",
            f"export the {rows} again, or pass the right file",
            what=what,
        )


def fail_lines(
    path: str | Path,
    frame: pl.DataFrame,
    condition: pl.Expr,
    *,
    problem: str,
    advice: str,
    shown: str | pl.Expr | None = None,
    what: str = "file",
    unit: str = "line",
    position: str = LINE,
) -> None:
    """Raise :class:`DataFileError` for the records where ``condition`` holds (null counts as
    holding), naming their lines and, with ``shown``, their values.

    Args:
        path: the file.
        frame: the records, with ``position`` (their line or row numbers).
        condition: true where a record is wrong.
        problem: what is wrong with them.
        advice: what to do.
        shown: the column (or expression) whose values are quoted in the message.
        what: how the file is named (``orders file``).
        unit: ``line`` or ``row``.
        position: the column of ``frame`` holding the numbers.
    """
    flagged = frame.filter(condition.fill_null(True))
    if flagged.height == 0:
        return
    text = problem
    if shown is not None:
        column = pl.col(shown) if isinstance(shown, str) else shown
        values = flagged.select(column.cast(pl.String).alias("v"))["v"].to_list()
        text += f": {show_values(values)}"
    raise DataFileError(path, text, advice, lines=flagged[position].to_list(), unit=unit, what=what)


def orders_around(orders: pl.DataFrame, month: str, days: int = 0) -> pl.DataFrame:
    """The orders dated in ``month`` or within ``days`` of it, and the undated ones (an order
    without a date is never left out); ``orders`` whole when it has no ``date`` column."""
    if "date" not in orders.columns:
        return orders
    first, last = month_bounds(month)
    margin = timedelta(days=days)
    dated = pl.col("date")
    return orders.filter(dated.is_between(first - margin, last + margin) | dated.is_null())
