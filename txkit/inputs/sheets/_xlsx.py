"""An ``.xlsx`` sheet as the text each cell shows, streamed from the workbook's XML.

calamine (and so polars' ``read_excel``) gives a number cell's binary value but not its number
format, so it cannot say which decimal the cell shows; this reader takes both from the XML:
the stored value (``<v>``, the digits the writing program put there) and the cell's style
(``s``) looked up in ``xl/styles.xml`` (``cellXfs`` -> ``numFmtId`` -> the built-in or
``numFmts`` code). A number is given as the decimal its format shows (``1234.50`` for
``#,##0.00``; General: at most 15 significant digits, as a spreadsheet shows it), a date as
``2026-10-31`` (``2026-10-31 14:05:00`` with a time). A shown decimal that differs from the
stored value beyond float noise, or needs more than 15 significant digits, is a problem of
the cell (its address), raised by the table reader when the cell is in a column read.

Bounds, checked before anything is believed: the parts read must decompress (as declared in
the ZIP's directory, which Python's zipfile then holds each part to) to at most
``TXKIT_MAX_INPUT_MB`` x 8; the declared dimension and every cell address must lie within a
spreadsheet's 16,384 columns and 1,048,576 rows; XML is parsed resolving no entities, loading
no DTD, reaching no network, and streamed (each row freed once read).
"""

from __future__ import annotations

import math
import posixpath
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import IO, Final, NamedTuple

from lxml import etree

from txkit.config import MAX_INPUT_VAR, max_input_bytes
from txkit.errors import DataFileError
from txkit.inputs._limits import _mb, max_unzipped_bytes

__all__ = ["MAX_COLUMNS", "MAX_ROWS", "Sheet", "address", "read_xlsx"]

MAX_ROWS: Final = 1_048_576
MAX_COLUMNS: Final = 16_384
_NS: Final = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_C: Final = f"{_NS}c"
_V: Final = f"{_NS}v"
_F: Final = f"{_NS}f"
_IS: Final = f"{_NS}is"
_REL: Final = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_REL: Final = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_CELL: Final = re.compile(r"\$?([A-Za-z]{1,10})\$?([0-9]{1,10})")
_SAVE: Final = "open it in the spreadsheet program and save it again as .xlsx (or export CSV)"
#: Built-in number formats that are dates or times (ECMA-376 18.8.30, and the CJK ones).
_DATE_IDS: Final = frozenset([*range(14, 23), *range(27, 37), *range(45, 48), *range(50, 59)])
#: Built-in number formats' decimals (ids not listed and not dates: General).
_DECIMALS_BY_ID: Final = {1: 0, 2: 2, 3: 0, 4: 2, 5: 0, 6: 0, 7: 2, 8: 2, 9: 0, 10: 2,
                          37: 0, 38: 0, 39: 2, 40: 2, 41: 0, 42: 0, 43: 2, 44: 2}  # fmt: skip
_PERCENT_IDS: Final = frozenset({9, 10})
#: Significant digits a spreadsheet keeps (IEEE doubles, as Excel shows them).
SIGNIFICANT: Final = 15


def column_letters(index: int) -> str:
    """``0`` -> ``A``, ``26`` -> ``AA``."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def address(sheet: str, row: int, column: int) -> str:
    """``Sheet1!C14`` (the sheet's name quoted when it holds other than letters and digits)."""
    name = sheet if re.fullmatch(r"[A-Za-z0-9_]+", sheet) else "'" + sheet.replace("'", "''") + "'"
    return f"{name}!{column_letters(column)}{row}"


@dataclass
class Sheet:
    """A sheet's cells as text, row by row.

    Attributes:
        name: the sheet's name.
        rows: (row number from 1, the row's cells as shown, "" when empty), rows that hold
            nothing left out.
        problems: (row, column from 0) -> what is wrong with that cell's value.
        notes: what a reader should know (the sheets not read).
    """

    name: str
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    problems: dict[tuple[int, int], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cells: int = 0

    def add(self, path: Path, number: int, cells: list[str], what: str) -> None:
        """Keep a row, within :func:`max_sheet_cells` cells in all (a row is as wide as its
        last cell that holds something: one cell far right, row after row, would make a
        tiny file take gigabytes)."""
        self.cells += len(cells)
        if self.cells > max_sheet_cells():
            raise DataFileError(
                path,
                f"its rows span more than {max_sheet_cells():,} cells (up to {self.name} row "
                f"{number:,}, {len(cells):,} columns wide): a damaged or hostile spreadsheet",
                f"check that it is the right file, or raise {MAX_INPUT_VAR}",
                what=what,
            )
        self.rows.append((number, cells))


def max_sheet_cells() -> int:
    """The most cells a sheet's rows may span: one per 16 bytes of ``TXKIT_MAX_INPUT_MB``
    (16.8 million at 256 MB, about 130 MB of a row's slots)."""
    return max_input_bytes() // 16


@dataclass(frozen=True)
class _Format:
    kind: str  # "general", "fixed", "percent", "date", "text"
    decimals: int = 0


_GENERAL: Final = _Format("general")


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _fail(path: Path, problem: str, what: str, advice: str = _SAVE) -> DataFileError:
    return DataFileError(path, problem, advice, what=what)


def _column_index(path: Path, ref: str, what: str) -> tuple[int, int]:
    found = _CELL.fullmatch(ref)
    if not found:
        raise _fail(path, f"a cell's address {ref[:40]!r} is not an address like C14", what)
    number = 0
    for char in found.group(1).upper():
        number = number * 26 + ord(char) - 64
        if number > MAX_COLUMNS:
            break
    row = int(found.group(2))
    if number > MAX_COLUMNS or not 1 <= row <= MAX_ROWS:
        raise _fail(
            path,
            f"claims cell {ref[:40]}, beyond a spreadsheet's last cell XFD1048576 (a damaged or "
            "hostile workbook)",
            what,
        )
    return row, number - 1


def _read_part(book: zipfile.ZipFile, name: str) -> IO[bytes]:
    return book.open(name)


def _relations(book: zipfile.ZipFile, part: str) -> dict[str, str]:
    folder, base = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    if rels not in book.namelist():
        return {}
    root = etree.fromstring(book.read(rels), _parser())
    out = {}
    for rel in root.iter(f"{_PKG_REL}Relationship"):
        target = rel.get("Target", "")
        name = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        out[rel.get("Id", "")] = posixpath.normpath(name)
    return out


class _Book(NamedTuple):
    """What the workbook part says about every sheet's values."""

    date1904: bool = False
    # calcPr fullCalcOnLoad: the saved values of formulas are not to be believed (xlsxwriter
    # saves 0 and asks Excel to compute them on opening).
    recalculate: bool = False


def _true(element: etree._Element | None, attribute: str) -> bool:
    return element is not None and element.get(attribute, "0").lower() in ("1", "true")


def _sheets(book: zipfile.ZipFile, names: set[str]) -> tuple[list[tuple[str, str]], _Book]:
    flags = _Book()
    if "xl/workbook.xml" in names:
        root = etree.fromstring(book.read("xl/workbook.xml"), _parser())
        flags = _Book(
            _true(root.find(f"{_NS}workbookPr"), "date1904"),
            _true(root.find(f"{_NS}calcPr"), "fullCalcOnLoad"),
        )
        rels = _relations(book, "xl/workbook.xml")
        listed = [
            (s.get("state", "visible") != "visible", s.get("name", "Sheet1"),
             rels.get(s.get(f"{_REL}id", ""), ""))
            for s in root.iter(f"{_NS}sheet")
        ]  # fmt: skip
        # a hidden sheet (a macro's data, a lookup list) is read only when no visible one fits
        sheets = [(n, p) for _, n, p in sorted(listed, key=lambda s: s[0]) if p in names]
        if sheets:
            return sheets, flags
    parts = sorted(n for n in names if re.fullmatch(r"xl/worksheets/sheet[0-9]+\.xml", n))
    return [(f"Sheet{i + 1}", p) for i, p in enumerate(parts)], flags


def _format_of(code: str) -> _Format:
    section = code.split(";")[0]
    plain = re.sub(r'"[^"]*"|\\.|\[[^\]]*\]|_.|\*.', "", section)
    if plain.strip().lower() in ("general", ""):
        return _GENERAL
    if plain.strip() == "@":
        return _Format("text")
    if re.search(r"[dmyhs]", plain, re.I) and not re.search(r"[0#?]", plain):
        return _Format("date")
    if re.search(r"[eE][+-]|/", plain):
        return _GENERAL  # scientific and fractions: the value's own digits
    _, dot, after = plain.partition(".")
    decimals = len(re.match(r"[0#?]*", after).group(0)) if dot else 0  # type: ignore[union-attr]
    return _Format("percent" if "%" in plain else "fixed", decimals)


def _styles(book: zipfile.ZipFile, names: set[str]) -> list[_Format]:
    if "xl/styles.xml" not in names:
        return []
    root = etree.fromstring(book.read("xl/styles.xml"), _parser())
    codes = {
        int(f.get("numFmtId", "-1")): f.get("formatCode", "")
        for f in root.iter(f"{_NS}numFmt")
        if f.get("numFmtId", "").isdigit()
    }
    xfs = root.find(f"{_NS}cellXfs")
    out = []
    for xf in [] if xfs is None else xfs.iter(f"{_NS}xf"):
        number = int(xf.get("numFmtId", "0")) if xf.get("numFmtId", "0").isdigit() else 0
        if number in codes:
            out.append(_format_of(codes[number]))
        elif number in _DATE_IDS:
            out.append(_Format("date"))
        elif number in _DECIMALS_BY_ID:
            kind = "percent" if number in _PERCENT_IDS else "fixed"
            out.append(_Format(kind, _DECIMALS_BY_ID[number]))
        elif number == 49:
            out.append(_Format("text"))
        else:
            out.append(_GENERAL)
    return out


def _si_text(si: etree._Element) -> str:
    parts = [t.text or "" for t in si.iterchildren(f"{_NS}t")]
    for run in si.iterchildren(f"{_NS}r"):
        parts.extend(t.text or "" for t in run.iterchildren(f"{_NS}t"))
    return "".join(parts)


def _shared(book: zipfile.ZipFile, names: set[str]) -> list[str]:
    if "xl/sharedStrings.xml" not in names:
        return []
    out = []
    with book.open("xl/sharedStrings.xml") as part:
        for _, si in etree.iterparse(
            part,
            tag=f"{_NS}si",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
        ):
            out.append(_si_text(si))
            si.clear()
    return out


def _significant(value: Decimal) -> int:
    digits = value.normalize().as_tuple().digits
    return 0 if value.is_zero() else len(digits)


def _noise(a: float, b: float) -> bool:
    """A few units in the last place."""
    return a == b or abs(a - b) <= 4 * math.ulp(max(abs(a), abs(b)))


def shown_number(stored: str, fmt: _Format) -> tuple[str, str | None]:
    """(the text a number cell shows, the problem with it or None)."""
    try:
        value = Decimal(stored.strip())
        binary = float(value)
    except (InvalidOperation, ValueError):
        return stored, f"holds {stored[:40]!r}, which is not a number"
    if not value.is_finite():
        return stored, f"holds {stored[:40]!r}, which is not a number"
    if fmt.kind in ("fixed", "percent"):
        # as a spreadsheet shows it: the value to 15 significant digits, then to the format's
        # decimals, halves away from zero (0.305 shows 0.31; 2.5 with none shows 3)
        exponent = value.adjusted() - (SIGNIFICANT - 1)
        if exponent < 0:
            value = value.quantize(Decimal(1).scaleb(exponent), ROUND_HALF_UP)
        scaled = value * 100 if fmt.kind == "percent" else value
        shown = scaled.quantize(Decimal(1).scaleb(-fmt.decimals), ROUND_HALF_UP)
        back = float(shown / 100) if fmt.kind == "percent" else float(shown)
        suffix = "%" if fmt.kind == "percent" else ""
        text = f"{shown:f}{suffix}"
        if not _noise(binary, back):
            return text, (
                f"holds {value.normalize():f} but shows {text} (its number format has "
                f"{fmt.decimals} decimals)"
            )
    else:  # General (and a number in a text-formatted cell): 15 significant digits
        exponent = value.adjusted() - (SIGNIFICANT - 1)
        shown = (
            value.quantize(Decimal(1).scaleb(exponent), ROUND_HALF_UP) if exponent < 0 else value
        )
        shown = shown.normalize()
        text = f"{shown:f}"
        if not _noise(binary, float(shown)):
            return text, (
                f"holds {value.normalize():f}, more than the {SIGNIFICANT} significant digits "
                "a spreadsheet shows"
            )
    if _significant(shown) > SIGNIFICANT:
        return text, (
            f"holds {text}, more than the {SIGNIFICANT} significant digits a spreadsheet keeps "
            "exactly"
        )
    return text, None


def shown_date(stored: str, date1904: bool) -> tuple[str, str | None]:
    """A date cell's serial number as ``2026-10-31`` (with ``HH:MM:SS`` when it has a time)."""
    try:
        serial = float(stored)
    except ValueError:
        return stored, f"holds {stored[:40]!r}, which is not a date's serial number"
    if not 0 <= serial < 2_958_466:  # 9999-12-31
        return stored, f"holds {stored[:40]!r}, which is not a date"
    base = datetime(1904, 1, 1) if date1904 else datetime(1899, 12, 30)
    if not date1904 and 1 <= serial < 61:
        # Excel's 1900 system counts 1900-02-29, a day that never was (serial 60): the days
        # before it are one later than a plain count from 1899-12-30.
        if serial >= 60:
            return stored, f"holds {stored[:40]!r}, the 1900-02-29 of Excel's leap-year bug"
        base = datetime(1899, 12, 31)
    moment = base + timedelta(seconds=round(serial * 86_400))
    if serial < 1:
        return moment.strftime("%H:%M:%S"), None
    if moment.time() == datetime.min.time():
        return moment.date().isoformat(), None
    return moment.isoformat(sep=" "), None


def _text_of(element: etree._Element) -> str:
    return "".join(t.text or "" for t in element.iter(f"{_NS}t"))


def read_xlsx(
    path: str | Path, *, what: str = "file", want: Callable[[Sheet], bool] | None = None
) -> Sheet:
    """A sheet of an ``.xlsx`` workbook as the text its cells show: the first for which
    ``want`` holds (the first sheet when none does, or without ``want``).

    Raises:
        DataFileError: not a workbook, parts that would decompress past the limit, a
            dimension or cell beyond a spreadsheet's last cell, XML that cannot be read.
    """
    path = Path(path)
    try:
        book = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise _fail(path, f"is not an .xlsx workbook (not a ZIP archive: {exc})", what) from None
    try:
        with book:
            return _read_book(path, book, what, want)
    except (zipfile.BadZipFile, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
        raise _fail(path, f"is a damaged .xlsx workbook ({exc})", what) from None
    except etree.XMLSyntaxError as exc:
        raise _fail(path, f"holds XML that cannot be read ({exc})", what) from None


def _read_book(
    path: Path, book: zipfile.ZipFile, what: str, want: Callable[[Sheet], bool] | None
) -> Sheet:
    infos = {info.filename: info for info in book.infolist()}
    names = set(infos)
    small = ["xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/styles.xml"]
    limit = max_unzipped_bytes()
    for name in small:  # read whole before the sheet is found: bounded first
        if name in infos and infos[name].file_size > limit:
            raise _bomb(path, infos[name].file_size, limit, what)
    if "xl/workbook.xml" in names and b"purl.oclc.org/ooxml" in book.read("xl/workbook.xml")[:4096]:
        raise _fail(
            path,
            "is saved as a Strict Open XML Spreadsheet, which is not read",
            what,
            "save it as 'Excel Workbook (.xlsx)' (or export CSV)",
        )
    sheets, flags = _sheets(book, names)
    if not sheets:
        raise _fail(path, "holds no worksheet", what)
    # every part that may be read, believed only as declared (zipfile holds each part to it)
    parts = {*small, "xl/sharedStrings.xml", *(part for _, part in sheets)}
    total = sum(infos[p].file_size for p in parts if p in infos)
    if total > limit:
        raise _bomb(path, total, limit, what)
    styles = _styles(book, names)
    shared = _shared(book, names)
    first: Sheet | None = None
    for name, part in sheets:
        sheet = Sheet(name)
        with book.open(part) as stream:
            _read_rows(path, stream, sheet, styles, shared, flags, what)
        if want is None or want(sheet):
            break
        first = first or sheet
    else:
        sheet = first or sheet
    others = [n for n, _ in sheets if n != sheet.name]
    if others:
        sheet.notes.append(
            f"read its sheet {sheet.name!r}; not read: {', '.join(map(repr, others))}"
        )
    return sheet


def _bomb(path: Path, size: int, limit: int, what: str) -> DataFileError:
    return DataFileError(
        path,
        f"its parts would decompress to {_mb(size)}, over the {_mb(limit)} believed (8 x "
        f"{MAX_INPUT_VAR}): a damaged workbook or a ZIP bomb",
        f"check that it is the right file, or raise {MAX_INPUT_VAR}",
        what=what,
    )


def _read_rows(
    path: Path,
    stream: IO[bytes],
    sheet: Sheet,
    styles: list[_Format],
    shared: list[str],
    flags: _Book,
    what: str,
) -> None:
    events = etree.iterparse(
        stream,
        events=("end",),
        tag=(f"{_NS}row", f"{_NS}dimension"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
    )
    last_row = 0
    columns: dict[str, int] = {}  # a column's letters -> its index, checked once
    for _, element in events:
        if element.tag == f"{_NS}dimension":
            for ref in element.get("ref", "").split(":"):
                if ref:
                    _column_index(path, ref, what)
            continue
        given = element.get("r")
        number = int(given) if given and given.isdigit() else last_row + 1
        if not 1 <= number <= MAX_ROWS:
            raise _fail(
                path,
                f"claims row {given[:20] if given else number}, beyond a spreadsheet's last "
                "row 1048576",
                what,
            )
        last_row = number
        cells: dict[int, str] = {}
        next_column = 0
        for cell in element.iterchildren(_C):
            ref = cell.get("r")
            if ref:
                letters = ref.rstrip("0123456789")
                column = columns.get(letters, -1)
                if column < 0:
                    column = columns[letters] = _column_index(path, ref, what)[1]
            else:
                column = next_column
            next_column = column + 1
            text, problem = _cell(cell, styles, shared, flags)
            if text:
                cells[column] = text
            if problem:
                sheet.problems[(number, column)] = problem
        if cells:
            width = max(cells) + 1
            sheet.add(path, number, [cells.get(i, "") for i in range(width)], what)
        element.clear()
        while element.getprevious() is not None:
            del element.getparent()[0]


def _cell(
    cell: etree._Element, styles: list[_Format], shared: list[str], flags: _Book
) -> tuple[str, str | None]:
    kind = cell.get("t", "n")
    stored = inline = None
    formula = False
    for child in cell:  # one pass: find() per part costs a third of the read
        tag = child.tag
        if tag == _V:
            stored = child.text
        elif tag == _F:
            formula = True
        elif tag == _IS:
            inline = child
    if kind == "inlineStr":
        return (_text_of(inline) if inline is not None else "").strip(), None
    if stored is None:
        if kind == "s":
            return "", "refers to shared string without an index, which the workbook lacks"
        if formula:
            return "", "is a formula without a computed value (the workbook was never recalculated)"
        return "", None
    if formula and flags.recalculate:
        return "", (
            f"is a formula whose saved value ({stored[:40]!r}) the workbook asks to recalculate "
            "on opening (calcPr fullCalcOnLoad), so it is not believed"
        )
    if kind == "s":
        index = stored.strip()
        if index.isdigit() and int(index) < len(shared):  # never -1: the last string
            return shared[int(index)].strip(), None
        return "", f"refers to shared string {stored[:20]!r}, which the workbook lacks"
    if kind in ("str", "e", "d"):
        return stored.strip(), None
    if kind == "b":
        return ("TRUE" if stored.strip() == "1" else "FALSE"), None
    style = cell.get("s")
    fmt = styles[int(style)] if style and style.isdigit() and int(style) < len(styles) else _GENERAL
    if fmt.kind == "date":
        return shown_date(stored, flags.date1904)
    return shown_number(stored, fmt)
