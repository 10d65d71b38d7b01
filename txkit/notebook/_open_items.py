"""Open items: which of this month's exceptions are new, which are still open, which of last
month's are not listed again.

Every exception list has a stable key per row (a reference or id plus its category, see
:mod:`txkit.notebook._downloads`). An exception whose key was open in the previous month's report is
``still open`` (and keeps the month it first appeared); one that was not is ``new``; a key open
last month that is no longer listed is ``not listed again`` and is carried once more, as a row
with only its key, so the download says what went away. Not listed is not resolved: most of
last month's items belong to last month and stay open in the exception register
(:mod:`txkit.register`), which alone says whether an item is resolved, when and by what.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

__all__ = ["NEW", "RESOLVED", "STILL_OPEN", "OpenCounts", "classify"]

NEW = "new"
STILL_OPEN = "still open"
RESOLVED = "not listed again"  # by this month's list; the register says if resolved


@dataclass(frozen=True)
class OpenCounts:
    """How many exceptions are open, new and still open, and how many of the previous report's
    are not listed again."""

    open: int
    new: int
    still_open: int
    resolved: int
    compared: bool  # False when there was no previous report to compare with

    def sentence(self) -> str:
        """``12 open (3 new, 9 still open); 5 of last month's not listed again`` (or that
        nothing was compared)."""
        if not self.compared:
            return f"{self.open:,} open (no previous report to compare with)"
        return (
            f"{self.open:,} open ({self.new:,} new, {self.still_open:,} still open); "
            f"{self.resolved:,} of last month's not listed again"
        )


def classify(
    current: pl.DataFrame, previous: Mapping[str, str] | None, *, month: str
) -> tuple[pl.DataFrame, OpenCounts]:
    """Mark each exception ``new`` or ``still open`` and append last month's ``not listed
    again``.

    Args:
        current: this month's exceptions with a ``key`` column (unique per row).
        previous: the keys open in the previous month's report, each with the month it first
            appeared; None when there is no previous report.
        month: this month (``YYYY-MM``), the first month of a new exception.

    Returns:
        ``current`` with ``open_status`` and ``first_seen`` after ``key``, then one row per key not
        listed again (the other columns empty), and the counts.

    Raises:
        ValueError: ``current`` has no ``key`` column, or a key occurs twice.
    """
    if "key" not in current.columns:
        raise ValueError("the exceptions need a 'key' column (reference or id plus category)")
    if current["key"].n_unique() != current.height:
        dupes = current.filter(pl.col("key").is_duplicated())["key"].unique().sort().head(3)
        raise ValueError(f"exception keys must be unique, repeated: {', '.join(dupes)}")
    before = dict(previous or {})
    keys = current["key"].to_list()
    status = [STILL_OPEN if k in before else NEW for k in keys]
    first = [before.get(k, month) for k in keys]
    marked = current.with_columns(
        pl.Series("open_status", status, dtype=pl.String),
        pl.Series("first_seen", first, dtype=pl.String),
    )
    marked = marked.select(
        "key", "open_status", "first_seen", *[c for c in current.columns if c != "key"]
    )
    now = set(keys)
    gone = sorted(k for k in before if k not in now)
    if gone:
        resolved = pl.DataFrame(
            {
                "key": gone,
                "open_status": [RESOLVED] * len(gone),
                "first_seen": [before[k] for k in gone],
            },
            schema={"key": pl.String, "open_status": pl.String, "first_seen": pl.String},
        )
        marked = pl.concat([marked, resolved], how="diagonal_relaxed")
    counts = OpenCounts(
        open=len(keys),
        new=status.count(NEW),
        still_open=status.count(STILL_OPEN),
        resolved=len(gone),
        compared=previous is not None,
    )
    return marked, counts
