"""Writing frames to files: Parquet or CSV, atomically (a reader never sees half a file).

CSV files are safe to open in a spreadsheet: every text cell that a spreadsheet would run as a
formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is neutralised
with a leading ``'`` (:func:`csv_safe`, as OWASP recommends). Parquet keeps the values as they
are, except that either format never holds the secret key: a value a server echoed it into is
written with ``***`` in its place, with a warning (:func:`txkit._scrub.scrub_frame`).
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import polars as pl
from xlsxwriter import Workbook

from txkit._scrub import scrub_frame
from txkit._xlsx_table import write_table
from txkit.schema import COLUMNS, CSV_JSON_COLUMNS

__all__ = [
    "FORMULA_START",
    "MAX_WIDTH",
    "MIN_PRINT_SCALE",
    "MONEY_FORMAT",
    "atomic_path",
    "check_writable",
    "csv_safe",
    "money_format",
    "ordered",
    "pages_wide",
    "write_frame",
    "write_xlsx",
]

FORMATS = {".parquet": "Parquet", ".csv": "CSV"}


def _umask() -> int:
    """Read without changing it: ``os.umask`` sets it to read it, which another thread writing a
    file at that moment would see."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(target: Path) -> int:
    """The mode a plain ``open(target, "w")`` would leave: the existing file's, else 0666 less
    the umask. ``mkstemp`` creates 0600, which made the report's downloads unreadable where its
    pages (0644) were served or shared."""
    with contextlib.suppress(OSError):
        return target.stat().st_mode & 0o7777
    return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it replaces ``target`` at once,
    with the mode a plain write would give it (:func:`file_mode`).

    On any error the temporary file is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        tmp_path.chmod(file_mode(target))
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def _csv_ready(df: pl.DataFrame) -> pl.DataFrame:
    """Lists and structs as JSON text (lossless); known columns as
    :data:`txkit.schema.CSV_JSON_COLUMNS` says."""
    nested = [
        name
        for name, dtype in df.schema.items()
        if dtype.is_nested() and (name in CSV_JSON_COLUMNS or name not in COLUMNS)
    ]
    if not nested:
        return df
    return df.with_columns(
        pl.col(name).map_elements(_to_json, return_dtype=pl.String) for name in nested
    )


#: What a spreadsheet may read as the start of a formula (OWASP "CSV injection").
FORMULA_START = r"^[=+\-@\t\r]"


def csv_safe(df: pl.DataFrame) -> pl.DataFrame:
    """Neutralise text cells a spreadsheet would run as formulas, for CSV and Excel files.

    Every text (or categorical) cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a
    carriage return gets a leading ``'``, so ``=HYPERLINK(...)`` is shown as text, not run.
    Numbers, dates and nulls are unchanged; so is the frame passed in.

    Args:
        df: the frame about to be written as CSV or Excel (lists and structs already as text).

    Returns:
        The frame with those cells prefixed.

    Example:
        >>> csv_safe(pl.DataFrame({"a": ["=1+1", "ok", "-2"]}))["a"].to_list()
        ["'=1+1", 'ok', "'-2"]
    """
    text = [
        name
        for name, dtype in df.schema.items()
        if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))
    ]
    if not text:
        return df
    return df.with_columns(
        pl.when(pl.col(name).cast(pl.String).str.contains(FORMULA_START))
        .then(pl.lit("'") + pl.col(name).cast(pl.String))
        .otherwise(pl.col(name).cast(pl.String))
        .alias(name)
        for name in text
    )


def _to_json(value: object) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value, default=str)


def write_frame(df: pl.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``df`` to ``path`` as Parquet or CSV (chosen by the extension), atomically.

    CSV cells that a spreadsheet would run as formulas are neutralised (:func:`csv_safe`);
    Parquet is written as it is. In both, the secret key (in any form) is replaced by ``***``
    wherever a server echoed it into a value, with a one-line warning.

    Args:
        df: the frame.
        path: a ``.parquet`` or ``.csv`` file name.

    Returns:
        The written path.

    Raises:
        ValueError: another extension (the message lists the accepted ones).
    """
    path = Path(path)
    writers: dict[str, Callable[[pl.DataFrame, Path], None]] = {
        ".parquet": lambda frame, p: frame.write_parquet(p, compression="zstd"),
        ".csv": lambda frame, p: csv_safe(_csv_ready(frame)).write_csv(p),
    }
    suffix = path.suffix.lower()
    if suffix not in writers:
        raise ValueError(
            f"cannot write {path.name!r}: the output file must end in "
            f"{' or '.join(FORMATS)} ({', '.join(FORMATS.values())})"
        )
    df, _ = scrub_frame(df, where=f"the export {path.name}")
    with atomic_path(path) as tmp:
        writers[suffix](df, tmp)
    return path


def check_writable(path: Path, *, is_file: bool, flag: str) -> None:
    """Raise ``OSError`` (with the file name) unless ``path`` can be written: a file whose
    folder accepts a new file with some data in it, or a folder that does; ``ValueError`` (a bad
    argument) for a folder given as a file or the other way round.

    Args:
        path: the output file or folder (it or its parents may not exist yet).
        is_file: ``path`` is a file (else a folder).
        flag: the option that named it, for the message.
    """
    if is_file and path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a folder: give a file name")
    if not is_file and path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a file: give a folder")
    folder = path.parent if is_file else path
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{existing} is not a folder", str(path))
    try:
        fd, probe = tempfile.mkstemp(prefix=".txkit-probe-", dir=existing)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        block = memoryview(b"\0" * 65536)  # a full disk fails here, before the export starts
        while block:
            block = block[os.write(fd, block) :]
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(fd)
        os.unlink(probe)


# --- Excel workbooks -------------------------------------------------------------------------
# The report's Excel downloads, laid out as an analyst would lay out their own sheet.
#
# * money (``Decimal`` columns) as numbers formatted ``#,##0.00``, or with as many decimals as
#   the column's scale when it has more (``12.345678`` USDT never shows as ``12.35``), the
#   currency in its own column beside them (Excel numbers carry no currency; the CSV keeps the
#   exact digits);
# * timestamps as Excel dates (``yyyy-mm-dd hh:mm``, UTC, wide enough that no ``###`` shows),
#   dates as ``yyyy-mm-dd``;
# * the columns a reader needs first (reference, amount, currency, date, what is wrong) first,
#   the technical ``key`` last; rows in the order the caller gives (what is at stake first);
# * the header row frozen, filters on, printed on A4 landscape with the header repeated on
#   every page, fitted to one page wide where that keeps its text readable, else split over as
#   few pages wide as keep :data:`MIN_PRINT_SCALE` (:func:`pages_wide`), the first column (the
#   item's reference or key) repeated on each; a long text column (a narration, a list of
#   candidates) is at most :data:`PRINT_WIDTH` characters wide and wraps.
#
# It is the one writer of every workbook of a report: the exception lists, the whole tables and
# the register's ``exceptions.xlsx``.
#: Money: thousands separators and two decimals (``78.00`` shows ``78.00``, not ``78``).
MONEY_FORMAT = "#,##0.00"
_DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
_DATE_FORMAT = "yyyy-mm-dd"
# Widths in characters: a ``yyyy-mm-dd hh:mm:ss`` timestamp needs 19 (Excel shows ``###``
# when a date does not fit; autofit measures the serial number, not the shown text).
_DATETIME_WIDTH = 20
_DATE_WIDTH = 11
#: The widest a column is made, in characters: a long text (a narration, the settlements' list
#: of candidates, 94) would widen the sheet past a printed page; the cell still holds it all.
MAX_WIDTH = 48
#: A text column wider than this (in characters) wraps within it: the sheet stays narrow
#: enough to print one page wide at a readable size.
PRINT_WIDTH = 28
_A4 = 9  # xlsxwriter's paper code for A4
#: Characters of column width that fill A4 landscape within the default margins at 100 %.
_PAGE_CHARS = 140
#: The smallest print scale kept: 11-point cells print at 7 points, still readable.
MIN_PRINT_SCALE = 0.65


def pages_wide(widths: Sequence[float]) -> int:
    """How many A4 landscape pages wide a sheet of these column widths (characters) prints, so
    that fitted to them its text keeps :data:`MIN_PRINT_SCALE` (its first column is repeated on
    each page when split)."""
    budget = _PAGE_CHARS / MIN_PRINT_SCALE
    total = sum(widths)
    if total <= budget:
        return 1
    first = widths[0]
    return math.ceil((total - first) / (budget - first))


def money_format(scale: int | None) -> str:
    """The number format of a money column: two decimals, or the column's scale when larger."""
    return MONEY_FORMAT if (scale or 0) <= 2 else "#,##0." + "0" * scale


def ordered(df: pl.DataFrame, first: Sequence[str], last: Sequence[str]) -> pl.DataFrame:
    """``df`` with the ``first`` columns first and the ``last`` last: the order of a list's
    CSV and its workbook alike."""
    head = [c for c in dict.fromkeys(first) if c in df.columns and c not in last]
    tail = [c for c in last if c in df.columns]
    middle = [c for c in df.columns if c not in head and c not in tail]
    return df.select(head + middle + tail)


def _width(series: pl.Series, name: str) -> float:
    if isinstance(series.dtype, pl.Decimal):  # as the money format shows the largest, signed
        scale = max(series.dtype.scale or 0, 2)
        largest = series.abs().max() if series.null_count() < series.len() else None
        longest = len(f"{largest:,.{scale}f}") + 1 if largest is not None else 0
    else:
        text = series.head(500).cast(pl.String, strict=False).drop_nulls()
        longest = int(text.str.len_chars().max() or 0) if text.len() else 0
    if not isinstance(series.dtype, pl.Decimal | pl.Datetime | pl.Date):
        longest = min(longest, PRINT_WIDTH)  # long text wraps (see _wrapped)
    return float(min(max(longest, len(name)) + 2, MAX_WIDTH))


def _decimals(series: pl.Series) -> int:
    """The decimals a money column's first 5,000 amounts use, trailing zeros left out; at least
    2: a register's ``Decimal(38, 6)`` NGN shows ``107,786.00``; USDT's micro-units keep six."""
    # Read from the digits polars writes (the column's scale), not a Decimal object per amount.
    text = series.drop_nulls().head(5000).cast(pl.String)
    used = text.str.extract(r"\.(\d*[1-9])0*$").str.len_chars().max()
    return max(2, int(used or 0))


def _longest(series: pl.Series) -> int:
    text = series.head(500).drop_nulls()
    return int(text.str.len_chars().max() or 0) if text.len() else 0


def write_xlsx(
    df: pl.DataFrame,
    path: str | os.PathLike[str],
    *,
    sheet: str,
    first: Sequence[str] = (),
    last: Sequence[str] = ("key",),
) -> None:
    """Write ``df`` to ``path`` as one formatted worksheet (see the module docstring).

    Args:
        df: the rows, already masked, formula-safe and in the order to show; timestamps
            naive UTC.
        path: the file (written as is: the caller writes atomically).
        sheet: the worksheet's name (at most 31 characters are kept).
        first: the columns shown first, in this order (those absent are skipped).
        last: the columns shown last (the technical key).
    """
    frame = ordered(df, first, last)
    money = [n for n, t in frame.schema.items() if isinstance(t, pl.Decimal)]
    stamps = [n for n, t in frame.schema.items() if isinstance(t, pl.Datetime)]
    dates = [n for n, t in frame.schema.items() if t == pl.Date]
    widths = {n: _width(frame[n], n) for n in frame.columns if n not in stamps + dates}
    # a date column is as wide as its header too (``settlement_date`` is 15 characters)
    widths |= {n: float(max(_DATETIME_WIDTH, len(n) + 2)) for n in stamps}
    widths |= {n: float(max(_DATE_WIDTH, len(n) + 2)) for n in dates}
    # Long text wraps within its column (see PRINT_WIDTH).
    wrapped = [
        n for n, t in frame.schema.items() if t == pl.String and _longest(frame[n]) > PRINT_WIDTH
    ]
    formats: dict[str, dict[str, object]] = {
        n: {"num_format": money_format(_decimals(frame[n])), "valign": "vcenter"} for n in money
    } | {n: {"text_wrap": True, "valign": "top"} for n in wrapped}
    formats |= {n: {"num_format": _DATETIME_FORMAT, "valign": "vcenter"} for n in stamps}
    formats |= {n: {"num_format": _DATE_FORMAT, "valign": "vcenter"} for n in dates}
    # in_memory: the parts zipped from memory, not each written to a temporary file and read back
    with Workbook(os.fspath(path), {"in_memory": True}) as book:
        write_table(book, frame, sheet[:31], formats, {n: int(w * 7) for n, w in widths.items()})
        worksheet = book.get_worksheet_by_name(sheet[:31])
        assert worksheet is not None
        # Rows as tall as their wrapped text: LibreOffice keeps a stored height on opening (a
        # wrapped cell drew over the next rows), so each row's height is set from its text.
        if wrapped:
            lines = frame.select(
                pl.max_horizontal(
                    ((pl.col(n).fill_null("").str.len_chars() + PRINT_WIDTH - 1) // PRINT_WIDTH)
                    for n in wrapped
                ).alias("lines")
            )["lines"]
            for row, count in enumerate(lines.to_list(), start=1):
                if count and count > 1:
                    worksheet.set_row(row, 15 * min(count, 20))
        worksheet.set_paper(_A4)
        worksheet.set_landscape()
        wide = pages_wide([widths[n] for n in frame.columns])
        worksheet.fit_to_pages(wide, 0)  # as many long as it takes
        worksheet.repeat_rows(0)
        if wide > 1:
            worksheet.repeat_columns(0)  # each part of a split row names its item
