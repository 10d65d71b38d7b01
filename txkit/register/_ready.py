"""Whether a month's pack may be signed now: its files are the register at the signed version
(no annotation of the month committed after its report), and, for the reviewer, every flux
breach explained (docs/register.md, "Who may sign")."""

from __future__ import annotations

import os

import polars as pl

from txkit.errors import ReportSignedError
from txkit.register._model import FLUX_SECTION
from txkit.register._state import annotation_months, register_view

__all__ = ["changed_since_report", "refuse_unready", "shown_keys", "unexplained_flux"]


def refuse_unready(
    store: str | os.PathLike[str], events: pl.DataFrame, month: str, role: str, folder: str
) -> None:
    """Raise when the month's newest pack (``folder``, its name) may not be signed as ``role``.

    Raises:
        ReportSignedError: one line naming the items changed since the report, or (reviewer)
            the flux breaches without an explanation, and what to run.
    """
    changed = changed_since_report(events, month)
    if changed:
        raise ReportSignedError(
            f"the register changed after {folder} was written: {shown_keys(changed)}; its "
            f"exceptions list would not be the register at the signed version: rerun "
            f"txkit report --month {month}, then sign (a rerun's pack needs both signatures)"
        )
    breaches = unexplained_flux(store, month, events) if role == "reviewer" else []
    if breaches:
        raise ReportSignedError(
            f"the reviewer cannot sign {folder}: flux breaches without an explanation: "
            f"{shown_keys(breaches)}; explain each (txkit exceptions explain KEY --note "
            f'"why"), rerun txkit report --month {month}, then sign'
        )


def changed_since_report(events: pl.DataFrame, month: str) -> list[str]:
    """The month's annotations committed after its newest report (``key`` and what changed):
    the pack's ``exceptions.csv`` shows the register before them, so signing it would sign
    files that differ from the register at the signed version."""
    ordered = events.with_row_index("_commit")  # read_events' order: the register's commits
    runs = ordered.filter((pl.col("event") == "reported") & (pl.col("month") == month))
    if runs.is_empty():
        return []
    last = runs["_commit"].max()
    notes = annotation_months(ordered).filter(
        (pl.col("month") == month) & (pl.col("_commit") > last)
    )
    found = []
    for row in notes.sort("_commit").iter_rows(named=True):
        what = row["status"] or ("explained" if row["explanation"] else "annotated")
        by = f" by {row['actor']}" if row["actor"] else ""
        found.append(f"{row['key']} ({what}{by})")
    return list(dict.fromkeys(found))


def unexplained_flux(
    store: str | os.PathLike[str], month: str, events: pl.DataFrame | None = None
) -> list[str]:
    """The keys of the month's flux breaches still open without an explanation: each breach
    needs one before the reviewer signs (docs/register.md, "Flux review")."""
    view = register_view(store, month=month, events=events)
    return sorted(
        view.filter(
            (pl.col("section") == FLUX_SECTION)
            & (pl.col("first_month") == month)
            & pl.col("listed")
            & (pl.col("status") == "open")
        )["key"].to_list()
    )


def shown_keys(keys: list[str]) -> str:
    """The first five of ``keys`` and how many more: one line however many."""
    return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
