"""CSV text as a table of strings, each record with its line number."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final, NamedTuple

import polars as pl

from txkit.errors import DataFileError
from txkit.inputs._layout import (
    HEADER_SEARCH,
    find_header,
    is_summary,
    join_continuations,
    summary_runs,
)
from txkit.inputs._table import LINE, CsvTable, check_records, column_names, skipped_note
from txkit.inputs._text import TextFile, read_text

__all__ = ["read_csv_table"]

_DELIMITERS: Final = (",", ";", "\t", "|")
_DELIMITER_NAMES: Final = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "'|'"}


def _reader(lines: list[str], delimiter: str) -> Iterator[list[str]]:
    return csv.reader(io.StringIO("".join(lines), newline=""), delimiter=delimiter, strict=True)


def _record_lines(
    path: Path, body: list[str], delimiter: str, first_line: int, what: str
) -> list[int]:
    """Needed when a quoted value spans lines; a malformed CSV raises DataFileError naming the
    record's first line."""
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
    """As a text editor shows them: ``\\r\\n``, ``\\n`` and a lone ``\\r`` each end a line."""
    # No \r at all (the usual file) is told without counting every \r and \r\n.
    carriage = "\r" in text
    if carriage and text.count("\r") != text.count("\r\n"):  # a lone \r: universal newlines
        lines = pl.Series("text", io.StringIO(text, newline="").readlines(), dtype=pl.String)
        return lines.str.strip_chars_end("\r\n")
    # Split in polars: half the time of io's readlines.
    lines = pl.Series("text", [text], dtype=pl.String).str.split("\n").explode()
    if text.endswith("\n"):
        lines = lines.head(len(lines) - 1)
    return lines.str.strip_chars_end("\r") if carriage else lines


def _plain_records(body: pl.Series, delimiter: str, names: list[str], first_line: int) -> _Records:
    """One record a line (no quotes); lines of empty fields are counted, blank lines are not."""
    lines = (
        body.to_frame()
        .with_row_index(LINE, offset=first_line)
        .with_columns(
            (pl.col("text").str.count_matches(delimiter, literal=True) + 1).alias("_width"),
            # Nothing but delimiters and whitespace (\s is the White_Space strip_chars strips;
            # no delimiter is special in a class): one scan, stopping at a line's first value.
            ~pl.col("text").str.contains(f"[^\\s{delimiter}]").alias("_empty"),
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
    """By the csv module (a quoted value may span lines); the same results as
    :func:`_plain_records`."""
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
    footer: tuple[re.Pattern[str], str] | None = None,
) -> CsvTable:
    """Read a CSV file with a header as strings, keeping each record's line number.

    The header is found among title lines, over two lines if need be; total and footer lines
    after the data (and opening-balance lines right after the header) are skipped, each said in
    the notes (:mod:`txkit.inputs._layout` says how).

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
        footer: a bank layout's page footer (the pattern a footer line's text matches in full,
            and how it is written, for messages): the lines at a page break and at the end
            are skipped when they match it, and a line at a page break that is no entry and
            does not match it is refused (without it, the general rule of
            :mod:`txkit.inputs._layout` applies).

    Returns:
        A :class:`CsvTable`.

    Raises:
        DataFileError: as :func:`read_text`; no header; a required column missing (every one
            named, with the accepted names and the header found); a column named twice; a
            record with more or fewer fields than the header; a quote not closed; no record.
    """
    path = Path(path)
    source = source or read_text(path, what=what)
    physical = _lines_of(source.text)
    header = _csv_header(physical, required)
    names = column_names(path, header.names, columns, required, header.line, what)
    notes = [*source.notes, *_header_notes(header)]
    body, blank = _skip_summaries(physical, header, names, columns, required, date, continues)
    if footer is not None:
        _layout_footers(path, body, header, blank, footer, (names, required, date, continues), what)
    notes += _summary_notes(body, header, blank)
    body_all, body = body, _blanked(body, blank.lines)
    frame, ragged, skipped = _records(path, source.text, body, blank, header, names, what)
    if continues is not None and ragged:
        frame, ragged = _short_continuations(frame, ragged, body, header, names, continues)
    if continues is not None:
        frame, joined = join_continuations(frame, continues, LINE)
        if joined:
            notes.append(f"{joined:,} continuation line(s) joined to the {continues} above")
    check_records(path, frame, ragged, len(names), header.line, what, rows)
    if skipped:
        notes.append(f"{skipped:,} line(s) of empty fields skipped")
    first = header.body_at + 1
    summaries = tuple(
        (
            i + first,
            " ".join(c.strip() for c in _parse_header(body_all[i], header.delimiter) if c.strip()),
        )
        for i in sorted(blank.summaries)
    )
    return CsvTable(
        path, frame, tuple(header.names), header.delimiter, tuple(notes), summaries=summaries
    )


def _short_continuations(
    frame: pl.DataFrame,
    ragged: list[tuple[int, int]],
    body: pl.Series,
    header: _CsvHeader,
    names: list[str],
    continues: str,
) -> tuple[pl.DataFrame, list[tuple[int, int]]]:
    """A record written short (DBS/POSB: ``,,text``) whose only text is in the ``continues``
    column continues the description above, as the same record written full width would:
    taken into the frame, padded, for :func:`join_continuations`. Any other short or long
    record stays ragged (refused)."""
    at = names.index(continues) if continues in names else -1
    first_line = header.body_at + 1
    taken: list[dict[str, object]] = []
    left = []
    for line, width in ragged:
        cells = _parse_header(body[line - first_line], header.delimiter)
        filled = [i for i, c in enumerate(cells) if c.strip()]
        if 0 <= at < width < len(names) and filled == [at]:
            row: dict[str, object] = dict.fromkeys(names, "")
            row[continues], row[LINE] = cells[at], line
            taken.append(row)
        else:
            left.append((line, width))
    if not taken:
        return frame, ragged
    extra = pl.DataFrame(taken, schema=frame.schema)
    return pl.concat([frame, extra]).sort(LINE), left


class _CsvHeader(NamedTuple):
    """Where the header is among the file's lines (indexes from 0) and what it says."""

    delimiter: str
    names: list[str]
    span: int  # 1, or 2 or 3 for a header written over two or three lines
    at: int  # its first line
    body_at: int  # the first line after it
    titles: list[tuple[int, list[str]]]  # the lines above it, split

    @property
    def line(self) -> int:
        return self.at + 1


class _Blank(NamedTuple):
    """Indexes in the body of the lines read as blank."""

    summaries: set[int]  # totals and footers after the data, opening lines before it
    headers: set[int]  # the header repeated

    @property
    def lines(self) -> set[int]:
        return self.summaries | self.headers


def _csv_header(physical: pl.Series, required: Sequence[str]) -> _CsvHeader:
    # The first lines holding text, looked for among the file's first lines (the whole file
    # only when those hold too few).
    head = physical.head(4 * HEADER_SEARCH)
    candidates = (head.str.strip_chars() != "").arg_true().head(HEADER_SEARCH).to_list()
    if len(candidates) < HEADER_SEARCH and len(head) < len(physical):
        candidates = (physical.str.strip_chars() != "").arg_true().head(HEADER_SEARCH).to_list()
    delimiter = _delimiter(physical, candidates, required)
    parsed = [(i, [c.strip() for c in _parse_header(physical[i], delimiter)]) for i in candidates]
    found = find_header(parsed, required)
    at, names, span = found if found is not None else (0, parsed[0][1], 1)
    body_at = parsed[at + span - 1][0] + 1
    return _CsvHeader(delimiter, names, span, parsed[at][0], body_at, parsed[:at])


def _header_notes(header: _CsvHeader) -> list[str]:
    notes = []
    if header.delimiter != ",":
        notes.append(f"columns separated by {_DELIMITER_NAMES[header.delimiter]}")
    if header.titles:
        lines = [i + 1 for i, _ in header.titles]
        notes.append(skipped_note("title line", lines, [c for _, c in header.titles]))
    if header.span == 2:
        notes.append(f"the header is written over lines {header.line} and {header.line + 1}")
    elif header.span == 3:
        notes.append(f"the header is written over lines {header.line} to {header.line + 2}")
    return notes


def _skip_summaries(
    physical: pl.Series,
    header: _CsvHeader,
    names: list[str],
    columns: Sequence[str],
    required: Sequence[str],
    date: str | None,
    continues: str | None,
) -> tuple[pl.Series, _Blank]:
    body = physical.slice(header.body_at)
    known = {name.casefold(): name for name in columns}
    spelled = [known.get(c.casefold(), c) for c in names]
    summaries = _summary_lines(body, header.delimiter, spelled, required, date, continues)
    repeated: set[int] = set()
    if header.span == 1:
        header_text = physical[header.at].strip()
        repeated = set((body.str.strip_chars() == header_text).arg_true().to_list())
    # A page break inside the data: the page's footer lines right above the repeated header.
    for at in sorted(repeated):
        i = at - 1
        while i >= 0 and i not in repeated:
            line = body[i]
            if line.strip():
                cells = _parse_header(line, header.delimiter)
                if not is_summary(cells, spelled, required, date, continues):
                    break
                summaries.add(i)
            i -= 1
    return body, _Blank(summaries, repeated)


def _layout_footers(
    path: Path,
    body: pl.Series,
    header: _CsvHeader,
    blank: _Blank,
    footer: tuple[re.Pattern[str], str],
    row: tuple[list[str], Sequence[str], str | None, str | None],
    what: str,
) -> None:
    """A bank layout's page footers (see :func:`read_csv_table`): added to ``blank``, or the
    line at a page break that is no entry and not the layout's footer refused."""
    pattern, written = footer

    def text(i: int) -> str:
        cells = _parse_header(body[i], header.delimiter)
        return " ".join(c.strip() for c in cells if c.strip())

    def is_footer(i: int) -> bool:
        return pattern.fullmatch(text(i)) is not None

    i = len(body) - 1
    while i >= 0 and (not body[i].strip() or i in blank.lines or is_footer(i)):
        if body[i].strip() and i not in blank.lines:
            blank.summaries.add(i)
        i -= 1
    names, required, date, continues = row
    for at in sorted(blank.headers):
        i = at - 1
        while i >= 0 and i not in blank.headers and (not body[i].strip() or is_footer(i)):
            if body[i].strip():
                blank.summaries.add(i)
            i -= 1
        if i < 0 or i in blank.headers:
            continue
        cells = _parse_header(body[i], header.delimiter)
        if i in blank.summaries or is_summary(cells, names, required, date, continues):
            raise DataFileError(
                path,
                f"a line at a page break is not this bank's page footer ({written}): "
                f"{text(i)[:80]!r}",
                "check the file against the bank's statement (a line the layout does not "
                "write is never skipped as a footer), or map its columns without the preset",
                lines=[header.body_at + 1 + i],
                what=what,
            )


def _summary_notes(body: pl.Series, header: _CsvHeader, blank: _Blank) -> list[str]:
    notes = []
    if blank.summaries:
        lines = sorted(blank.summaries)
        cells = [_parse_header(body[i], header.delimiter) for i in lines]
        first_line = header.body_at + 1
        notes.append(skipped_note("total or footer line", [i + first_line for i in lines], cells))
    if blank.headers:
        notes.append(f"{len(blank.headers):,} line(s) repeating the header skipped")
    return notes


def _records(
    path: Path,
    text: str,
    body: pl.Series,
    blank: _Blank,
    header: _CsvHeader,
    names: list[str],
    what: str,
) -> _Records:
    first_line = header.body_at + 1
    if not body.str.contains('"', literal=True).any():
        return _plain_records(body, header.delimiter, names, first_line)
    kept = io.StringIO(text, newline="").readlines()[header.body_at :]  # line ends as written
    for i in blank.lines:
        kept[i] = "\n"
    return _quoted_records(path, kept, header.delimiter, names, first_line, what)


def _blanked(body: pl.Series, lines: set[int]) -> pl.Series:
    if not lines:
        return body
    body = body.clone()
    body.scatter(sorted(lines), "")
    return body


def _delimiter(physical: pl.Series, candidates: list[int], required: Sequence[str]) -> str:
    """The one finding every required name in a first line (or two); else the most columns."""
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
    filled = (body.str.strip_chars() != "").arg_true()  # only its ends taken to Python
    ends = (
        filled.head(100).to_list() + filled.tail(100).to_list()
        if len(filled) > 200
        else filled.to_list()
    )
    ends = list(dict.fromkeys(ends))
    cells = [_parse_header(body[i], delimiter) for i in ends]
    lead, trail = summary_runs(cells, names, required, date, continues)
    return set(ends[:lead]) | set(ends[len(ends) - trail :])


def _find_header(header_line: str, required: Sequence[str]) -> tuple[str, list[str]]:
    def found(delimiter: str) -> list[str]:
        return [c.strip() for c in _parse_header(header_line, delimiter)]

    def covers(delimiter: str) -> bool:
        names = {c.casefold() for c in found(delimiter)}
        return all(r.casefold() in names for r in required)

    delimiter = next((d for d in _DELIMITERS if covers(d)), None)
    if delimiter is None:
        delimiter = max(_DELIMITERS, key=lambda d: len(found(d)))
    return delimiter, found(delimiter)
