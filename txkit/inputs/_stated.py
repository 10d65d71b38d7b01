"""What a statement laid out for people states beside its entries (private): its opening and
closing balance written as rows of the table, and a description written under a header that
stands over a merged cell (Stanbic Zambia's download has both).

* A row whose description is ``Opening balance`` or ``Closing balance`` (any case), with no
  amount and a balance, is the statement's opening or closing balance, not an entry: both are
  taken out of the entries and the opening plus the entries must be the closing
  (:func:`txkit.inputs._model.frames` proves it, naming the closing row when not).
* A merged cell: a description column empty on every line, right of a column with no header
  that holds the text, is read from that column, and the load line says so.
"""

from __future__ import annotations

import re
from typing import Final

import polars as pl

from txkit.inputs._table import LINE

__all__ = ["STATED", "merged_text", "stated_rows"]

#: The descriptions of the rows stating a balance, and what each states.
STATED: Final = {"opening balance": "opening", "closing balance": "closing"}
_BLANK: Final = re.compile(r"column_\d+")


def _empty(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.String).fill_null("").str.strip_chars() == ""


def merged_text(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """``narration`` and ``reference`` read from the unnamed column left of them where they
    are empty on every line and it is not (a header over a merged cell)."""
    notes = []
    columns = frame.columns
    for key in ("narration", "reference"):
        if key not in columns or not frame.select(_empty(key).all()).item():
            continue
        at = columns.index(key)
        left = columns[at - 1] if at > 0 else ""
        if _BLANK.fullmatch(left) and not frame.select(_empty(left).all()).item():
            frame = frame.with_columns(pl.col(left).alias(key))
            notes.append(
                f"{key} read from the column left of its header, which has no name (the "
                "header stands over a merged cell), as every line writes it there"
            )
    return frame, notes


def stated_rows(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the entries, the rows stating the opening or closing balance with a ``_stated``
    column saying which); no row is taken unless it has no amount and a balance."""
    if "narration" not in frame.columns or "balance" not in frame.columns:
        return frame, frame.clear()
    said = pl.col("narration").cast(pl.String).fill_null("").str.strip_chars().str.to_lowercase()
    amounts = [c for c in ("amount", "credit", "debit") if c in frame.columns]
    stated = said.is_in(list(STATED)) & ~_empty("balance")
    for column in amounts:
        stated &= _empty(column)
    which = said.replace_strict(STATED, default=None)
    marked = frame.with_columns(stated.alias("_is"), which.alias("_stated"))
    rows = marked.filter(pl.col("_is")).drop("_is")
    return marked.filter(~pl.col("_is")).drop("_is", "_stated"), rows.sort(LINE)
