"""Where a table starts and ends in a file made for people: the header among title rows, a
header written over two rows, total and footer rows, description lines that continue on the
next row. Shared by the CSV and the spreadsheet readers (:mod:`txkit.inputs`).

* The header is the first row (of the first 200 that hold something) naming every required
  column (case and spaces do not matter), with a name split over the rows right above and
  below it where its own cell is blank (``Transaction`` / blank / ``date``); failing that,
  the first two consecutive rows that do once each column's two cells are read as one name
  (``Value`` over ``Date``: ``Value Date``).
  Rows above it are titles (the bank's name, the account, the period): skipped, and said.
* A summary row is one whose text says total, closing or opening balance, brought or carried
  forward, end of statement, generated, printed, page N of M (or totale, totaal, Summe,
  Gesamt, solde, saldo), ... and that cannot be an entry: its date cell holds no digit (when
  the caller names the date column; else a required cell is empty, or the row is not as wide
  as the header). A row holding a single value (or one text repeated, as a merged cell is
  written), where an entry needs several, is one too when that value stands in the date
  column and is not a date, or in a column not required (a value in a required column is an
  entry with values missing: refused, never dropped). Only the runs of such rows right after
  the header and at the end of the data are skipped (each said, with its row); one in the
  middle of the data is read as a row and refused by the checks that follow, never dropped
  silently, but for the summary rows right before a row repeating the header (a page's
  footer at a page break, as statements converted from PDF have them). A row repeating the
  header (a page break) is skipped.
* A continuation row holds text in the description column only: it is joined (with a space)
  to the description of the row above.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import zip_longest
from typing import Final

import polars as pl

__all__ = ["HEADER_SEARCH", "find_header", "is_summary", "join_continuations", "summary_runs"]

#: How many rows holding something are searched for the header.
HEADER_SEARCH: Final = 200
_SUMMARY: Final = re.compile(
    r"\b(sub-?totals?|totals?|grand total|closing|opening|b/f|c/f|bal(ance)? (b|c)/?f|"
    r"brought forward|carried forward|end of (the )?(statement|report|file|transactions)|"
    r"summary|generated|printed|page \d+( of \d+)?|number of|no\. of|count|"
    # the same in the languages of the real files: Italian, Dutch, French, German, Spanish
    r"totale|totali|totaal|totaux|summe|gesamt\w*|solde|saldo)\b",
    re.I,
)


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def _covers(cells: Sequence[str], required: Sequence[str]) -> bool:
    names = {_norm(c) for c in cells}
    return bool(required) and all(_norm(r) in names for r in required)


def find_header(
    rows: Sequence[tuple[int, list[str]]], required: Sequence[str]
) -> tuple[int, list[str], int] | None:
    """(index in ``rows`` of the header's first row, the column names, 1 or 2 rows), or None."""
    window = rows[:HEADER_SEARCH]
    for index, (_, cells) in enumerate(window):
        if _covers(cells, required):
            return _split_names(window, index) or (index, [c.strip() for c in cells], 1)
    for index in range(len(window) - 1):
        top, bottom = window[index][1], window[index + 1][1]
        joined = [
            " ".join(p for p in (a.strip(), b.strip()) if p)
            for a, b in zip_longest(top, bottom, fillvalue="")
        ]
        if _covers(joined, required):
            return index, joined, 2
    return None


def _split_names(
    rows: Sequence[tuple[int, list[str]]], index: int
) -> tuple[int, list[str], int] | None:
    """A header row whose blank cells are named by the rows right above and below it, and
    nothing else is in those two rows (Stanbic Zambia's ``Transaction`` over an empty cell
    over ``date``): the header over three rows, those names read as one."""
    if not 0 < index < len(rows) - 1:
        return None
    (above, top), (line, middle), (below, bottom) = rows[index - 1 : index + 2]
    if not above + 1 == line == below - 1:
        return None
    split = [i for i, c in enumerate(top) if c.strip()]
    if not split or split != [i for i, c in enumerate(bottom) if c.strip()]:
        return None
    if any(i < len(middle) and middle[i].strip() for i in split):
        return None
    names = [c.strip() for c in middle] + [""] * (max(split) + 1 - len(middle))
    for i in split:
        names[i] = f"{top[i].strip()} {bottom[i].strip()}"
    return index - 1, names, 3


def is_summary(
    cells: Sequence[str],
    names: Sequence[str],
    required: Sequence[str],
    date: str | None,
    continues: str | None,
) -> bool:
    """Whether a row is a title, total or footer row rather than an entry (see the module)."""
    filled = [(i, c) for i, c in enumerate(cells) if c.strip()]
    if not filled:
        return False
    at = {name: i for i, name in enumerate(names)}

    def cell(name: str) -> str:
        i = at.get(name)
        return cells[i].strip() if i is not None and i < len(cells) else ""

    if date is not None and date in at:
        # a row with a date is an entry (a "TOTAL" fuel station's payment is not a total)
        incomplete = not re.search(r"[0-9]", cell(date))
    else:
        incomplete = len(cells) != len(names) or any(not cell(r) for r in required)
    if len({c.strip() for _, c in filled}) == 1 and len(required) > 1:
        # a lone value (or one text repeated, as a merged cell is written): a footer when it
        # stands where no entry's value would (the date column, not a date; a column not
        # required); a continuation in the description; else an entry with values missing,
        # refused by the checks that follow (an order whose amount was left out is never
        # dropped as a footer)
        first = filled[0][0]
        if continues is not None and at.get(continues) == first:
            return False
        # "Page 2 of 5" alone, with no date: a page's footer, wherever it stands
        if _SUMMARY.search(filled[0][1]) and incomplete:
            return True
        if date is not None and at.get(date) == first:
            return not _date_like(cell(date))
        return names[first] not in required if first < len(names) else True
    return bool(_SUMMARY.search(" ".join(c for _, c in filled))) and incomplete


_DATE_LIKE: Final = re.compile(r"[0-9A-Za-z ./:,+\-]{4,30}")


def _date_like(text: str) -> bool:
    """As banks write it: ``05-Jan-2015``, ``31 October 2026 14:05``, ``2026-10-31T00:00:00``."""
    return (
        bool(_DATE_LIKE.fullmatch(text))
        and any(c.isdigit() for c in text)
        and len(re.findall(r"[A-Za-z]+", text)) <= 1
    )


def summary_runs(
    rows: Sequence[list[str]],
    names: Sequence[str],
    required: Sequence[str],
    date: str | None,
    continues: str | None,
    limit: int = 100,
) -> tuple[int, int]:
    """How many rows at the start and at the end of the data are summaries (at most
    ``limit`` each; the rows given hold something)."""

    def summary(i: int) -> bool:
        return is_summary(rows[i], names, required, date, continues)

    lead = 0
    while lead < min(limit, len(rows)) and summary(lead):
        lead += 1
    trail = 0
    while trail < min(limit, len(rows) - lead) and summary(len(rows) - 1 - trail):
        trail += 1
    return lead, trail


def join_continuations(frame: pl.DataFrame, continues: str, line: str) -> tuple[pl.DataFrame, int]:
    """Rows with text in ``continues`` only joined to the row above; (frame, rows joined)."""
    others = [c for c in frame.columns if c not in (continues, line)]
    if continues not in frame.columns or not others:
        return frame, 0

    def empty(name: str) -> pl.Expr:
        return pl.col(name).is_null() | (pl.col(name).str.strip_chars() == "")

    alone = pl.all_horizontal(*(empty(c) for c in others)) & ~empty(continues)
    marked = frame.with_columns(alone.alias("_alone"))
    joined = int(marked["_alone"].sum())
    # a first row that continues nothing stays a row of its own (and fails the checks)
    marked = marked.with_columns(
        (~pl.col("_alone") | (pl.int_range(pl.len()) == 0)).cum_sum().alias("_entry")
    )
    if joined == 0 or (joined == 1 and marked["_alone"][0]):
        return frame, 0
    text = pl.col(continues).str.strip_chars()
    out = (
        marked.group_by("_entry", maintain_order=True)
        .agg(
            *(pl.col(c).first() for c in frame.columns if c != continues),
            text.filter(text != "").str.join(" ").alias(continues),
        )
        .select(frame.columns)
    )
    return out, joined - int(marked["_alone"][0])
