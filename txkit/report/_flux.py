"""The flux review: each close-summary figure against the previous month's, per currency.

The previous month's figures are its report's own (``00_close_summary.json`` in its folder
beside this month's), never recomputed: what was signed then is what the month is compared
with. A change that reaches both thresholds of ``materiality.toml``'s ``[flux]`` table
(:meth:`txkit.register.Materiality.flux_breach`) is a breach: listed in
``reports/YYYY-MM/flux.csv`` (every figure compared, breaches first) and on the close summary,
each with the key its explanation is kept under in the register.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Final

import polars as pl

from txkit.calendar import month_bounds, previous_month
from txkit.output import atomic_path, csv_safe
from txkit.register import ITEMS_SUFFIX, Materiality
from txkit.report._close_summary import FLUX_SECTION, CloseFigures

__all__ = ["FLUX_FILE", "FluxReview", "flux_items", "flux_key", "flux_review", "write_flux"]

FLUX_FILE: Final = "flux.csv"
_FIGURES: Final = "00_close_summary.json"
_SCHEMA: Final = {
    "month": pl.String,
    "previous_month": pl.String,
    "line": pl.String,
    "currency": pl.String,
    "previous": pl.String,
    "amount": pl.String,
    "change": pl.String,
    "change_pct": pl.String,
    "breach": pl.Boolean,
    "key": pl.String,
}


@dataclass(frozen=True)
class FluxReview:
    """The month's figures against the previous month's: ``rows`` (every figure both months
    have, :data:`_SCHEMA`, breaches first) and a sentence saying what was compared (or why
    nothing was)."""

    month: str
    previous_month: str
    rows: pl.DataFrame
    note: str

    @property
    def breaches(self) -> pl.DataFrame:
        """The rows that reach both thresholds."""
        return self.rows.filter(pl.col("breach"))


def flux_key(month: str, currency: str, line: str) -> str:
    """The key a breach is kept under in the register: ``flux:2026-10:KES:money-in-collections``."""
    slug = re.sub(r"[^a-z0-9]+", "-", line.lower()).strip("-")
    return f"flux:{month}:{currency}:{slug}"


def _previous_lines(folder: Path) -> dict[tuple[str, str], Decimal] | None:
    try:
        doc = json.loads((folder / _FIGURES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    out: dict[tuple[str, str], Decimal] = {}
    for entry in doc.get("lines") or [] if isinstance(doc, dict) else []:
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict):
            for code, value in entry[1].items():
                if isinstance(value, str) and value:
                    out[(str(entry[0]), str(code))] = Decimal(value)
    return out


def flux_review(figures: CloseFigures, out: Path, materiality: Materiality) -> FluxReview:
    """Compare ``figures`` with the previous month's report in ``out`` (``out/YYYY-MM``)."""
    before = previous_month(figures.month)
    previous = _previous_lines(out / before)
    empty = pl.DataFrame(schema=_SCHEMA)
    if previous is None:
        note = (
            f"No flux review: no report of {before} in {out} to compare with "
            f"(txkit report --month {before})."
        )
        return FluxReview(figures.month, before, empty, note)
    rows = []
    for label, values in [*figures.lines, *figures.reconciliation]:
        for code, now in values.items():
            was = previous.get((label, code))
            if now is None or was is None:
                continue
            change = now - was
            pct = "" if was == 0 else f"{change / abs(was) * 100:+.2f} %"
            rows.append({"month": figures.month, "previous_month": before, "line": label,
                         "currency": code, "previous": str(was), "amount": str(now),
                         "change": str(change), "change_pct": pct or ("new" if change else ""),
                         "breach": materiality.flux_breach(code, was, now),
                         "key": flux_key(figures.month, code, label)})  # fmt: skip
    frame = pl.DataFrame(rows, schema=_SCHEMA) if rows else empty
    frame = frame.sort("breach", descending=True, maintain_order=True)
    breaches = frame.filter(pl.col("breach")).height
    note = (
        f"Flux review against {before}: {frame.height:,} figures compared, {breaches:,} "
        f"breach(es). {materiality.describe_flux()}"
    )
    return FluxReview(figures.month, before, frame, note)


def flux_items(review: FluxReview) -> pl.DataFrame:
    """The breaches as the register's items (section ``flux``, kind ``flux_breach``, the
    change as the amount, dated the month's last day): explained with ``txkit exceptions
    explain KEY --note ...`` like any item, and signed with the month."""
    _, last = month_bounds(review.month)
    return review.breaches.select(
        "key",
        pl.lit(FLUX_SECTION).alias("section"),
        pl.lit("flux_breach").alias("kind"),
        "currency",
        pl.col("change").cast(pl.Decimal(38, 6)).alias("amount"),
        pl.lit(last).alias("item_date"),
    )


def write_flux(folder: Path, review: FluxReview) -> None:
    """``flux.csv`` in ``folder`` (written whole or not at all), when there was a previous
    month to compare with; its breaches beside it as the register's items
    (``flux.register.parquet``)."""
    if review.rows.height == 0 and review.note.startswith("No flux review"):
        return
    with atomic_path(folder / FLUX_FILE) as tmp:
        csv_safe(review.rows).write_csv(tmp)
    if review.breaches.height:
        with atomic_path(folder / f"flux{ITEMS_SUFFIX}") as tmp:
            flux_items(review).write_parquet(tmp)
