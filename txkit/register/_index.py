"""The register on the report: open items by age bucket per section, what changed since the
last report, the materiality rule, and the month's register as ``exceptions.csv``."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from txkit.output import atomic_path, csv_safe, write_xlsx
from txkit.register._carry import Carry
from txkit.register._materiality import Materiality
from txkit.register._model import BUCKETS, OPEN_STATUSES
from txkit.register._state import bucket_counts, register_view, reported_months
from txkit.register._table import read_events

__all__ = ["RegisterSummary", "summarise"]


@dataclass
class RegisterSummary:
    """What the report shows and records of the register for its month."""

    version: int | None
    html: str
    doc: dict[str, Any] = field(default_factory=dict)
    #: open material items per section (the headlines look at these only)
    material: dict[str, int] = field(default_factory=dict)


def _changes(view: pl.DataFrame, before: pl.DataFrame | None, month: str) -> pl.DataFrame:
    rows = []
    old = (
        {}
        if before is None
        else {
            r["key"]: r
            for r in before.select("key", "status", "explanation", "category", "owner").iter_rows(
                named=True
            )
        }
    )
    for section in sorted(view["section"].unique().to_list()):
        part = view.filter(pl.col("section") == section)
        new = part.filter(pl.col("first_month") == month).height
        resolved = part.filter(
            pl.col("status").is_in(["resolved", "written_off"])
            & (pl.col("resolved_month") == month)
        ).height
        annotated = 0
        for r in part.select("key", "status", "explanation", "category", "owner").iter_rows(
            named=True
        ):
            o = old.get(r["key"])
            if o is not None and (o["explanation"], o["category"], o["owner"]) != (
                r["explanation"],
                r["category"],
                r["owner"],
            ):
                annotated += 1
        rows.append({"section": section, "new": new, "resolved": resolved, "annotated": annotated})
    return pl.DataFrame(
        rows,
        schema={"section": pl.String, "new": pl.Int64, "resolved": pl.Int64, "annotated": pl.Int64},
    )


#: Items resolved in the month shown on the index (the rest are in exceptions.csv).
_RESOLVED_ROWS = 20


def _resolved_block(view: pl.DataFrame, month: str, carry: Carry | None) -> str:
    parts = []
    if carry is not None:
        said = carry.describe(timed=False).removeprefix("register: ")
        parts.append(f'<p class="meta">{html.escape(said[:1].upper() + said[1:])}'
                     " (a month is recomputed from the store only when the records or orders it "
                     "is computed from changed since it was last evaluated).</p>")  # fmt: skip
    done = view.filter(
        pl.col("status").is_in(["resolved", "written_off"]) & (pl.col("resolved_month") == month)
    ).sort("first_month", "key")
    if done.height:
        rows = "".join(
            f"<tr><td>{html.escape(r['key'])}</td><td>{html.escape(r['section'])}</td>"
            f"<td>{html.escape(r['first_month'])}</td>"
            f"<td>{html.escape(r['resolved_by'] or '')}</td></tr>"
            for r in done.head(_RESOLVED_ROWS).iter_rows(named=True)
        )
        more = (
            f"<p>and {done.height - _RESOLVED_ROWS:,} more in exceptions.csv</p>"
            if done.height > _RESOLVED_ROWS
            else ""
        )
        parts.append(
            f"<p>Resolved in {html.escape(month)} ({done.height:,}), and by what:</p>"
            '<table class="head"><thead><tr><th>key</th><th>section</th><th>first month</th>'
            f"<th>resolved by</th></tr></thead><tbody>{rows}</tbody></table>{more}"
        )
    return "".join(parts)


def summarise(
    store: str | os.PathLike[str],
    month: str,
    *,
    version: int | None,
    materiality: Materiality,
    folder: str | os.PathLike[str] | None = None,
    carry: Carry | None = None,
    events: pl.DataFrame | None = None,
) -> RegisterSummary:
    """The register as of ``month`` for the report: the index's block, the ``report.json``
    entry, and (with ``folder``) the month's register written as ``exceptions.csv``;
    ``carry``: this report's re-evaluation of earlier months (:mod:`._carry`), said on both;
    ``events``: the register's with this report's, not yet committed (default: the store's)."""
    if events is None:
        events, _ = read_events(store)
    view = register_view(store, month=month, materiality=materiality, events=events)
    earlier = [m for m in reported_months(events) if m < month]
    before = _as_last_left(store, events, earlier, materiality)
    counts = bucket_counts(view)
    changes = _changes(view, before, month)
    table = (
        counts.join(changes, on="section", how="full", coalesce=True).fill_null(0).sort("section")
    )
    if folder is not None:
        _write_files(view, Path(folder))
    since = (
        f"since the report of {earlier[-1]}" if earlier else "(no earlier report in the register)"
    )
    still = view.filter(pl.col("status").is_in(OPEN_STATUSES))
    block = _block(view, still, table, month, since, materiality, carry)
    material = {r["section"]: int(r["material"]) for r in counts.iter_rows(named=True)}
    doc = _doc(view, still, table, version, materiality, carry)
    return RegisterSummary(version=version, html=block, doc=doc, material=material)


def _as_last_left(
    store: str | os.PathLike[str],
    events: pl.DataFrame,
    earlier: list[str],
    materiality: Materiality,
) -> pl.DataFrame | None:
    """Its runs and the annotations made before (None: no earlier report)."""
    if not earlier:
        return None
    runs = events.filter((pl.col("event") == "reported") & (pl.col("month") == earlier[-1]))
    return register_view(
        store,
        month=earlier[-1],
        materiality=materiality,
        events=events,
        until=runs["at"].max(),
    )


def _write_files(view: pl.DataFrame, folder: Path) -> None:
    with atomic_path(folder / "exceptions.csv") as tmp:
        csv_safe(view).write_csv(tmp)
    # The same, to annotate in a spreadsheet and read back with `txkit exceptions import`
    # (its key, category, owner, explanation and status columns).
    # Through the report's one Excel writer: A4 landscape, money formatted, timestamps wide
    # enough, header frozen and repeated; the columns in the CSV's order (the key first).
    files = view.with_columns(pl.col("changed_at").dt.replace_time_zone(None))
    with atomic_path(folder / "exceptions.xlsx") as tmp:
        write_xlsx(csv_safe(files), tmp, sheet="exceptions", first=files.columns, last=())


def _block(
    view: pl.DataFrame,
    still: pl.DataFrame,
    table: pl.DataFrame,
    month: str,
    since: str,
    materiality: Materiality,
    carry: Carry | None,
) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in ["section", *BUCKETS, "open", "material", "new", "resolved", "annotated"]
    )
    body = "".join(
        "<tr>"
        + f"<td>{html.escape(r['section'])}</td>"
        + "".join(
            f'<td class="n">{r[c]:,}</td>'
            for c in [*BUCKETS, "open", "material", "new", "resolved", "annotated"]
        )
        + "</tr>"
        for r in table.iter_rows(named=True)
    )
    return (
        '<section id="register"><h2>Exception register</h2>'
        f"<p>Open items (open or explained) by age from their own date to {html.escape(month)}'s "
        f"end, and what changed {html.escape(since)}: {still.height:,} open, "
        f"{still.filter(pl.col('material')).height:,} material. "
        'Every item: <a href="exceptions.csv">CSV</a> · <a href="exceptions.xlsx">Excel</a> '
        "(annotate its category, owner, explanation and status columns and read it back with "
        "<code>txkit exceptions import FILE</code>), or one at a time with "
        "<code>txkit exceptions explain KEY --category ... --owner ... --note ...</code>.</p>"
        f'<table class="head"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f"{_resolved_block(view, month, carry)}"
        f'<p class="meta">{html.escape(materiality.describe())}</p></section>'
    )


def _doc(
    view: pl.DataFrame,
    still: pl.DataFrame,
    table: pl.DataFrame,
    version: int | None,
    materiality: Materiality,
    carry: Carry | None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": version,
        "open": still.height,
        "material": still.filter(pl.col("material")).height,
        "items": view.height,
        "by_section": {
            r["section"]: {k: v for k, v in r.items() if k != "section"}
            for r in table.iter_rows(named=True)
        },
        "materiality": materiality.describe(),
    }
    if carry is not None:
        doc["carry"] = {
            "months": carry.months,
            "resolved": carry.cleared,
            "seconds": round(carry.seconds, 2),
        }
    return doc
