"""The index's content: each section's downloads and headline figures, then the index page."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from txkit.analysis.trends import month_over_month, monthly_metrics
from txkit.calendar import previous_month
from txkit.notebook import load_bank_statements, read_downloads, report_folder
from txkit.register import SECTIONS, Materiality, RegisterSummary, signature_block
from txkit.report._close_files import close_summary_frame, write_close_files
from txkit.report._close_summary import (
    CLOSE_SUMMARY,
    OPEN_STATUSES,
    CloseFigures,
    FluxLine,
    close_figures,
    close_summary_html,
    register_states,
    with_register,
)
from txkit.report._flux import FluxReview, flux_review, write_flux
from txkit.report._headlines import (
    completed_rate_headlines,
    exception_headlines,
    explore_headlines,
    orders_headline,
    underpayment_headlines,
)
from txkit.report._html import Headline, Section, index_html
from txkit.report._manifest import Revision
from txkit.report._plan import OrdersCheck, ReportPlan
from txkit.store import MonthManifest, scan_store, store_name

__all__ = [
    "CloseReview",
    "add_headlines",
    "attach_downloads",
    "review_close",
    "write_close_summary",
    "write_index",
]


def attach_downloads(sections: list[Section], staging: Path) -> None:
    """Each section's downloads (the lists and tables its notebook wrote)."""
    published = read_downloads(staging)
    for section in sections:
        section.downloads = [d for d in published.values() if d.get("page") == section.href]


def add_headlines(
    sections: list[Section],
    plan: ReportPlan,
    manifest: MonthManifest,
    *,
    out: Path,
    orders: OrdersCheck | None = None,
    material: dict[str, int] | None = None,
) -> None:
    """Each section's headline figures (this month against the one before, from the table
    version the notebooks read): the store's figures, the orders' count, and one per download
    (after :func:`attach_downloads`); ``out`` holds last month's report. With ``material``
    (open material items per register section), an exception list's headline looks at this
    only when its section has material items.
    """
    month = plan.month
    before = previous_month(month)
    scan = scan_store(plan.store, version=manifest.table_version)
    metrics = monthly_metrics(scan.filter(pl.col("month").is_in([before, month])))
    mom = month_over_month(metrics, month)
    previous = read_downloads(report_folder(out, before))  # a reopened month: its newest
    by_topic = {"explore": explore_headlines, "underpayments": underpayment_headlines}
    for section in sections:
        topic = Path(section.href).stem.split("_", 1)[-1]
        if topic in by_topic:
            section.headlines += by_topic[topic](mom)
        if topic == "explore":
            section.headlines = completed_rate_headlines(
                section.headlines, _completed(scan, month), _completed(scan, before)
            )
        if topic == "reconciliation" and orders is not None:
            section.headlines.append(orders_headline(orders.in_month, orders.dates))
        for entry in section.downloads:
            if entry.get("kind") == "table":  # a whole table: its own headline figures
                section.headlines += [Headline(**h) for h in entry.get("headlines", [])]
                continue
            section.headlines += exception_headlines(
                entry,
                previous.get(entry["name"]),
                material=None
                if material is None
                else material.get(SECTIONS.get(entry["name"], entry["name"]), 0),
            )


def _completed(scan: pl.LazyFrame, month: str) -> tuple[int, int, int]:
    status = pl.col("status").cast(pl.String)
    row = (
        scan.filter(pl.col("month") == month)
        .select(
            (~status.is_in(OPEN_STATUSES)).sum().alias("completed"),
            (status == "successful").sum().alias("successful"),
            status.is_in(OPEN_STATUSES).sum().alias("open"),
        )
        .collect()
        .row(0)
    )
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


def write_index(
    staging: Path,
    plan: ReportPlan,
    sections: list[Section],
    manifest: MonthManifest,
    checked: OrdersCheck,
    *,
    register: RegisterSummary | None = None,
    revision: Revision | None = None,
    history: str = "",
) -> None:
    """The index page, "what needs action" first, the exception register's block and the notes
    on what was read in its footer; a revision of a signed month says so first."""
    warnings = list(checked.info.warnings)
    if revision:
        warnings.append(revision.warning(plan.month))
    (staging / "index.html").write_text(
        index_html(
            plan.month,
            sections,
            show_pii=plan.show_pii,
            freshness=_freshness(plan.month, plan.store, manifest),
            source=str(manifest.source),
            table_version=None if manifest.table_version is None else str(manifest.table_version),
            warnings=warnings,
            register=history
            + (register.html if register else "")
            + signature_block([], as_of=plan.as_of),
        ),
        encoding="utf-8",
    )


@dataclass(frozen=True)
class CloseReview:
    """The close summary's figures read before the register is recorded (the flux review's
    breaches are register items), and the flux review (None without ``out``)."""

    figures: CloseFigures
    flux: FluxReview | None
    read: str


def review_close(
    staging: Path,
    plan: ReportPlan,
    manifest: MonthManifest,
    *,
    out: Path | None = None,
    materiality: Materiality | None = None,
) -> CloseReview:
    """The close summary's figures, from the pages' downloads, the store at the pages' table
    version and the bank statements the settlements page read; and the flux review against
    the previous month's report in ``out`` (``flux.csv`` and its breaches as register items
    written into ``staging``, for the register to record with the month's lists)."""
    records = scan_store(plan.store, version=manifest.table_version).filter(
        pl.col("month") == plan.month
    )
    bank, bank_info = load_bank_statements(plan.bank_source, plan.month, columns=plan.bank_columns)
    figures = close_figures(staging, plan.month, records=records, bank=bank)
    version = (
        "" if manifest.table_version is None else f" at table version {manifest.table_version}"
    )
    read = f"the store {store_name(plan.store)}{version}; " + (bank_info.note or bank_info.source)
    review = None
    if out is not None:  # the previous month's report beside this one
        review = flux_review(figures, out, materiality or Materiality())
        write_flux(staging, review)
    return CloseReview(figures, review, read)


def write_close_summary(
    staging: Path, close: CloseReview, *, material: dict[str, int] | None
) -> None:
    """The month's one-page close summary (:mod:`txkit.report._close_summary`), first in the
    pack, once the register is summarised: its exceptions, roll-forward and flux breaches'
    explanations are the register's."""
    figures = with_register(close.figures, staging, material)
    flux: tuple[str, list[FluxLine]] = ("", [])
    if close.flux is not None:
        states = register_states(staging)
        breaches = close.flux.breaches.iter_rows(named=True)
        flux = (close.flux.note, [_flux_line(r, states) for r in breaches])
    page = close_summary_html(figures, as_run=close.read, flux=flux)
    (staging / CLOSE_SUMMARY).write_text(page, encoding="utf-8")
    # The same per currency and line, to post from (CSV and Excel).
    write_close_files(staging, close_summary_frame(figures))
    # The same figures as data (exact amounts as text): what a revision compares with the
    # signed report (txkit.register._sign.compare_reports).
    doc = {
        "month": figures.month,
        "lines": [
            [label, {c: _text(v) for c, v in values.items()}]
            for label, values in [*figures.lines, *figures.reconciliation]
        ],
        "exceptions": [
            [title, code, items, _text(amount), material_items]
            for title, code, items, amount, material_items in figures.exceptions
        ],
    }
    (staging / CLOSE_FIGURES).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


#: The close summary's figures as data, beside its page.
CLOSE_FIGURES = "00_close_summary.json"


def _flux_line(row: dict[str, Any], states: dict[str, str]) -> FluxLine:
    state = states.get(row["key"], "not in the register")
    return (row["line"], row["currency"], Decimal(row["previous"]), Decimal(row["amount"]),
            Decimal(row["change"]), row["change_pct"], f"{row['key']} ({state})")  # fmt: skip


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _freshness(month: str, store: str | Path, manifest: MonthManifest) -> str:
    state = "complete" if manifest.complete else "NOT complete"
    return (
        f"Data: {manifest.rows:,} transactions of {month} from {manifest.source}, read from the "
        f"store {store_name(store)} at table version {manifest.table_version}; the month is "
        f"{state} (windows {manifest.coverage.describe_windows()}); every fetch was verified "
        f"against the service's total for its query (last: {manifest.service_total:,} records, "
        "with a day of margin on each side)."
    )
