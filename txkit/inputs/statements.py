"""The merchant's bank statements: CSV, MT940, camt.053, OFX/QFX and PDF, read exactly.

:func:`read_statements` reads one or more files, finding each one's format from its content
(not its name) by asking the formats of :data:`REGISTRY` in turn (each format subpackage's
``FORMAT``: ``identify`` then ``extract``): a PDF is a printed statement of a known bank's
layout, every row proven by its running balance; a file that starts with an OFX header is
OFX/QFX (1.x or 2.x), other XML is camt.053, text with ``:20:`` and ``:60F:``/``:61:`` tags is
MT940, anything else is CSV read through a column mapping (:func:`parse_mapping`); a ``.xlsx``,
``.xls`` or ``.ods`` file (or a ``.xls`` that is an HTML table) is read as a spreadsheet through
the same mapping (:func:`txkit.inputs.read_table`). Every file is checked before anything
is matched against it, and every problem is a one-line
:class:`~txkit.errors.DataFileError` naming the file, the line (an XML element's line) and
what to do:

* amounts are exact decimals from their digits, never through a float; a statement's opening
  balance plus its booked entries must equal its closing balance (MT940, camt.053, a CSV
  with a running ``balance`` column), so a truncated or damaged file is refused, never read
  as a statement with fewer lines;
* the same entry in two files (statements that overlap) is refused, since matching would
  read it as a credit received twice;
* a reversal reads the same in every format: camt.053's and MT940's own mark, or, in a
  format without one, a debit whose narration says so ("RETURN OF CREDIT") returning a credit
  of its amount read before it (:mod:`txkit.inputs._reversals`).

The result is a :class:`BankStatement`: one row per entry (``file``, ``line``, ``format``,
``account``, ``statement``, ``currency``, ``date`` (booking), ``value_date``, ``amount``
(signed: credits positive), ``direction`` (``credit``/``debit``), ``reversal``, ``booked``,
``reference`` (the structured reference where the format has one), ``narration`` and
``bank_reference``) and one row per statement and currency with its balances.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import polars as pl

from txkit.errors import DataFileError
from txkit.inputs import camt, csv, mt940, ofx, pdf, sheets
from txkit.inputs._content import content_note, in_content_note
from txkit.inputs._format import Format, Source
from txkit.inputs._kept import Kept, kept_read
from txkit.inputs._limits import check_input
from txkit.inputs._mapped import MAPPING_KEYS, describe_mapping, parse_mapping
from txkit.inputs._model import BALANCE_COLUMNS, ENTRY_COLUMNS, WHAT, frames
from txkit.inputs._reversals import mark_reversals
from txkit.inputs.columns import ColumnMapping

__all__ = [
    "BALANCE_COLUMNS",
    "ENTRY_COLUMNS",
    "FORMATS",
    "MAPPING_KEYS",
    "REGISTRY",
    "BankStatement",
    "describe_mapping",
    "parse_mapping",
    "read_statement",
    "read_statements",
]

#: The statement formats, in the order they are asked whether a file is theirs, each from the
#: file's content whatever its name (banks name text files every way: .sta, .940, .txt, .xml,
#: none; and a workbook .csv or CSV .xlsx): workbooks first, CSV, which claims any text, last.
REGISTRY: Final[tuple[Format, ...]] = (
    sheets.FORMAT,
    pdf.FORMAT,
    ofx.FORMAT,
    camt.FORMAT,
    mt940.FORMAT,
    csv.FORMAT,
)
# How the load line names a text format a file named as a workbook was read as.
_TEXT_FORMATS: Final = {"csv": "CSV", "mt940": "MT940", "camt.053": "camt.053", "ofx": "OFX"}
#: The formats a read file may have (its ``format`` column), with what each is.
FORMATS: Final[dict[str, str]] = {k: v for f in REGISTRY for k, v in f.kinds.items()}


@dataclass(frozen=True)
class BankStatement:
    """Bank statement entries and balances, from one or more files.

    Attributes:
        entries: one row per entry (see the module docstring), in file then line order.
        balances: one row per statement and currency: ``file``, ``statement``,
            ``account``, ``currency``, ``opening_date``, ``opening``, ``closing_date``,
            ``closing``, ``entries`` (booked entries between them), ``opening_line``,
            ``closing_line``; empty for a CSV file.
        files: the files read, with their format.
        notes: what a reader should know, one sentence each (encoding, delimiter, a
            statement without balances).
    """

    entries: pl.DataFrame
    balances: pl.DataFrame
    files: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line: files, formats, entries, credits and the dates covered."""
        if not self.files:
            return "no bank statement"
        credits = self.entries.filter(pl.col("direction") == "credit").height
        first, last = self.entries["date"].min(), self.entries["date"].max()
        files = "; ".join(f"{Path(f).name} ({fmt})" for f, fmt in self.files.items())
        span = f", dated {first} to {last}" if first is not None else ""
        notes = f"; {'; '.join(self.notes)}" if self.notes else ""
        return (
            f"bank statements: {files}: {self.entries.height:,} entries, {credits:,} credits"
            f"{span}{notes}"
        )


def read_statement(
    path: str | Path, *, columns: str | Mapping[str, str] | None = None
) -> BankStatement:
    """Read one bank statement file, its format found from its content.

    Args:
        path: the file (CSV, MT940 or camt.053).
        columns: the column mapping of a CSV file (``key=Column Name`` pairs separated by
            commas, or a mapping; see :data:`MAPPING_KEYS`); ignored for MT940 and camt.053.

    Returns:
        A :class:`BankStatement`.

    Raises:
        DataFileError: the file cannot be read as it is (named, with the line or element and
            what to do); a ``ValueError``.
        ValueError: a bad column mapping.
    """
    return read_statements([path], columns=columns)


def read_statements(
    paths: Iterable[str | Path], *, columns: str | Mapping[str, str] | None = None
) -> BankStatement:
    """Read several bank statement files (e.g. this month's and the next), checked together.

    Args:
        paths: the files, in any order and any of the formats.
        columns: as for :func:`read_statement`, for every CSV file among them.

    Returns:
        A :class:`BankStatement` of all of them.

    Raises:
        DataFileError: a file cannot be read as it is, or two files hold the same entry
            (their statements overlap).
        ValueError: a bad column mapping.
    """
    mapping = parse_mapping(columns)
    given = [Path(p) for p in paths]
    if not given:
        raise ValueError("read_statements: no file given")
    for path in given:
        check_input(path, what=WHAT)  # not a FIFO or a device: each is digested first

    def read() -> Kept:
        done, private = _read_statements(given, mapping)
        said = {"files": done.files, "notes": list(done.notes), "private": private}
        return {"entries": done.entries, "balances": done.balances}, said

    # Read once by a report and taken again by notebook 06 and the close summary (:mod:`._kept`);
    # a kept read names each file as this call gives it.
    frames, said = kept_read("statements", given, mapping, read)
    named = dict(zip(said["files"], map(str, given), strict=True))
    entries, balances = frames["entries"], frames["balances"]
    if any(was != now for was, now in named.items()):
        entries = entries.with_columns(pl.col("file").replace(named))
        balances = balances.with_columns(pl.col("file").replace(named))
    files = {named[f]: kind for f, kind in said["files"].items()}
    return BankStatement(entries, balances, files, tuple(said["notes"]))


def _read_statements(paths: list[Path], mapping: ColumnMapping) -> tuple[BankStatement, bool]:
    """The statements, and whether a password opened any of them."""
    entries, balances, files, notes = [], [], {}, []
    private = False
    for path in paths:
        if str(path) in files:
            raise DataFileError(path, "is given twice", "pass each statement once", what=WHAT)
        source = Source(path)
        found = next(f for f in REGISTRY if f.identify(source))
        try:
            read = found.extract(source, mapping)
        except DataFileError as exc:
            said = _named_otherwise(path, found, exc.problem)
            raise (exc if said is None else in_content_note(exc, said, what=WHAT)) from None
        # What reading it as text found (its encoding) comes first, once.
        read.notes[:0] = [n for n in source.text_notes if n not in read.notes]
        said = _named_otherwise(path, found)
        read.notes[:0] = [said] if said else []
        if not read.entries:
            raise DataFileError(
                path,
                "holds no statement entry",
                "pass the statement of the month (an empty statement proves nothing)",
                what=WHAT,
            )
        got_entries, got_balances = frames(path, read)
        entries.append(got_entries)
        balances.append(got_balances)
        files[str(path)] = read.format
        notes += [f"{path.name}: {n}" for n in read.notes]
        private = private or read.private
    all_entries = pl.concat(entries, how="vertical_relaxed")
    _refuse_overlaps(all_entries)
    all_entries, said = mark_reversals(all_entries)
    notes += said
    all_balances = pl.concat(balances, how="vertical_relaxed")
    notes += _chain_ofx(all_balances, files)
    return BankStatement(all_entries, all_balances, files, tuple(notes)), private


def _named_otherwise(path: Path, found: Format, problem: str = "") -> str | None:
    """The load line's sentence for a text or PDF statement named as a workbook (a workbook's
    reader says it itself); None when said already or name and content agree."""
    if found is sheets.FORMAT or "read by its content" in problem:
        return None
    kind = "pdf" if found is pdf.FORMAT else None
    return content_note(path, kind, read_as=_TEXT_FORMATS.get(found.name, ""))


def _chain_ofx(balances: pl.DataFrame, files: dict[str, str]) -> list[str]:
    """OFX gives a closing balance only (the opening is worked out from it): of two OFX
    statements of one account and currency, the later one's opening must be the earlier
    one's closing, which proves the earlier complete up to the later's first entry.

    Raises:
        DataFileError: they do not follow (entries between them are missing).
    """
    ofx = [name for name, fmt in files.items() if fmt == "ofx"]
    rows = (
        balances.filter(pl.col("file").is_in(ofx) & pl.col("closing").is_not_null())
        .sort("account", "currency", "closing_date", "file")
        .iter_rows(named=True)
    )
    proven: dict[tuple[str, str], list[str]] = {}
    before = None
    for row in rows:
        if before and (before["account"], before["currency"]) == (row["account"], row["currency"]):
            if row["opening"] != before["closing"]:
                raise DataFileError(
                    row["file"],
                    f"account {row['account']} {row['currency']}: its opening balance, "
                    f"{row['opening']:,} (its closing less its entries), is not the closing "
                    f"balance {before['closing']:,} of {Path(before['file']).name}: entries "
                    "between the two statements are missing",
                    "download the statements again, covering every day between them",
                    what=WHAT,
                )
            pair = (Path(before["file"]).name, Path(row["file"]).name)
            proven.setdefault(pair, []).append(f"{row['account']} {row['currency']}")
        before = row
    return [
        f"{earlier} is proven complete by {later}'s opening balances ({', '.join(accounts)})"
        for (earlier, later), accounts in proven.items()
    ]


def _refuse_overlaps(entries: pl.DataFrame) -> None:
    key = ["account", "currency", "date", "amount", "reference", "narration", "bank_reference"]
    seen = (
        entries.group_by(key, maintain_order=True)
        .agg(pl.col("file").unique(maintain_order=True), pl.col("line"))
        .filter(pl.col("file").list.len() > 1)
    )
    if seen.height:
        first = seen.row(0, named=True)
        raise DataFileError(
            first["file"][1],
            f"holds the same entry as {first['file'][0]} ({first['date']}, {first['amount']} "
            f"{first['currency']}; {seen.height:,} such entries): the statements overlap",
            "pass each period's statement once (the same credit in two files would read as a "
            "credit received twice)",
            lines=[first["line"][-1]],
            what=WHAT,
        )
