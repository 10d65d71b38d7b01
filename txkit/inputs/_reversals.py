"""A reversal read the same in every format (private).

camt.053 marks a reversal (``RvslInd``) and MT940 writes it (``RC``/``RD``); a CSV, a
spreadsheet, an OFX or a PDF statement has no such mark, only the bank's words: "RETURN OF
CREDIT" on a debit. Such a debit is read as a reversal when both say so: its narration names
a reversal, and a credit of the same amount and currency, dated no later, is in the
statements read (the credit it returns, taken once). A debit with the words and no such
credit stays a debit (a charge, listed by name in the close summary), never guessed.
"""

from __future__ import annotations

import re
from typing import Final

import polars as pl

__all__ = ["REVERSAL_WORDS", "mark_reversals"]

#: How banks word a returned or reversed credit on the debit that takes it back (any case).
REVERSAL_WORDS: Final = re.compile(
    r"\b(RETURN(ED)? OF CREDIT|CREDIT RETURN(ED)?|RETURNED CREDIT|REVERSAL|REVERSED|RVSL)\b",
    re.I,
)
#: Formats that carry the bank's own mark: it alone decides.
_MARKED: Final = frozenset({"camt.053", "mt940"})


def mark_reversals(entries: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """``entries`` (all files read together) with ``reversal`` set on the unmarked formats'
    debits that return a credit, and the load line's note naming them."""
    if entries.height == 0:
        return entries, []
    indexed = entries.with_row_index("_i")
    said = (
        indexed.filter(
            (pl.col("direction") == "debit")
            & ~pl.col("format").is_in(list(_MARKED))
            & ~pl.col("reversal").fill_null(False)
            & pl.col("narration").fill_null("").str.contains(REVERSAL_WORDS.pattern)
        )
        .select("_i", "currency", "amount", "date", "file", "line")
        .rows()
    )
    if not said:
        return entries, []
    credits = indexed.filter(pl.col("direction") == "credit").select(
        "_i", "currency", "amount", "date", "file", "line"
    )
    taken: set[int] = set()
    marked: list[int] = []
    notes: list[str] = []
    for i, currency, amount, day, file, line in said:
        # the latest credit of the amount before it, not taken by another reversal
        fits = credits.filter(
            (pl.col("currency") == currency)
            & (pl.col("amount") == -amount)
            & (pl.col("date") <= day)
            & ~pl.col("_i").is_in(list(taken))
        ).sort(["date", "_i"], descending=True)
        if fits.height == 0:
            continue
        credit = fits.row(0, named=True)
        taken.add(credit["_i"])
        marked.append(i)
        where = "" if credit["file"] == file else f"{_name(credit['file'])} "
        notes.append(f"{_name(file)} line {line} returns {where}line {credit['line']}'s credit")
    if not marked:
        return entries, []
    out = indexed.with_columns(
        (pl.col("reversal").fill_null(False) | pl.col("_i").is_in(marked)).alias("reversal")
    ).drop("_i")
    shown = "; ".join(notes[:10]) + ("; ..." if len(notes) > 10 else "")
    return out, [
        f"{len(marked):,} debit(s) read as the reversal of a credit (its narration says so and "
        f"the credit it returns is read: {shown})"
    ]


def _name(file: str) -> str:
    return file.rsplit("/", 1)[-1]
