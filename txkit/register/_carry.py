"""Carry-over: each report re-evaluates the still-open items of earlier months.

A month's exception lists are computed from the store (and, for the reconciliation, the
merchant's orders). When a later report runs, what those lists were computed from may have
changed: a record arrived late, a status changed, the orders file gained the missing order.
So the report of month M, for every earlier month E that still has open items:

1. takes E's *fingerprint*: the store's live data files of the months E's lists read
   (E-3 to E+1: the underpayments' history, the balances' month before, the reconciliation's
   days around E) at the version M's report reads, and a digest of the orders dated in E and
   the days around it;
2. when it equals the one recorded the last time E was evaluated (its own report, or a later
   one's carry-over), nothing E's lists are computed from has changed: its items stay open
   and keep ageing, at no cost. The sandbox's twelve months take this path every month;
3. else recomputes E's lists from the store with the notebooks' own functions and defaults
   (:func:`txkit.notebook.month_keys`, passed in by the report) and resolves each open item
   of E whose key is gone, saying by what: the record that arrived, the status or amount that
   changed, the order that arrived.

Settlement and wallet-statement items read the bank statements as well and are not
recomputed: they stay open until a rerun of their month or an analyst resolves them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

from txkit import config
from txkit.calendar import next_month, parse_month, previous_months
from txkit.errors import TxkitError, one_line
from txkit.inputs import orders_around
from txkit.money import format_money
from txkit.register._model import OPEN_STATUSES, SECTIONS
from txkit.store import open_table

__all__ = ["RECOMPUTED", "Carry", "Recompute", "Recomputed", "carry_over", "month_fingerprint"]

#: The sections whose lists are recomputed from the store (and the orders).
RECOMPUTED: Final[tuple[str, ...]] = (
    "reconciliation",
    "underpayments",
    "balance_breaks",
    "not_reported",
    "fees",
)
#: Notebook 03's ``history_months``: the months before E that E's lists read, so the
#: fingerprint covers them (txkit.notebook's recompute reads the same).
UNDERPAYMENT_HISTORY: Final = 3


def _depends_on(month: str) -> list[str]:
    """Three months before it to one after it."""
    return [*previous_months(month, UNDERPAYMENT_HISTORY), month, next_month(month)]


def _live_files(store: str | os.PathLike[str], version: int | None) -> list[str]:
    try:
        table = open_table(store, version)
    except (TxkitError, ValueError):  # no transactions table (a register alone, in tests)
        return []
    if table is None:
        return []
    # ``.../month=YYYY-MM/part-....parquet``: the partition and the file's name.
    return sorted("/".join(uri.rsplit("/", 2)[-2:]) for uri in table.file_uris())


def _orders_digest(orders: pl.DataFrame | None, month: str) -> str:
    if orders is None:
        return "no-orders"
    frame = orders_around(orders, month, config.MARGIN_DAYS)
    text = frame.sort(frame.columns, nulls_last=True).write_csv()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def month_fingerprint(files: Iterable[str], orders: pl.DataFrame | None, month: str) -> str:
    """What ``month``'s lists are computed from, as a short digest: the store's live data
    files of the months they read (``files``: paths relative to the store, as
    ``month=YYYY-MM/part-....parquet``; a rewrite names a new file) and the orders dated in
    the month and the days around it."""
    wanted = {f"month={m}/" for m in _depends_on(month)}
    mine = sorted(f for f in files if any(f.startswith(w) for w in wanted))
    digest = hashlib.sha256("\n".join(mine).encode())
    digest.update(_orders_digest(orders, month).encode())
    return digest.hexdigest()[:32]


#: ``recompute(month, sections)``: the month's lists of those sections, recomputed.
Recompute = Callable[[str, set[str]], "Recomputed"]


@dataclass
class Recomputed:
    """A month's lists recomputed: each list's register items (:func:`register_items`), and
    the rows behind them (for a resolution's text)."""

    lists: dict[str, pl.DataFrame]
    reconciled: pl.DataFrame | None
    records: pl.DataFrame

    @property
    def keys(self) -> dict[str, set[str]]:
        """The keys listed, per section."""
        return {SECTIONS[name]: set(f["key"].to_list()) for name, f in self.lists.items()}


def _record_text(rows: pl.DataFrame) -> str:
    row = rows.sort("createdAt", "id").row(-1, named=True)  # ties: one record every run
    parts = [f"record {row['id']}", f"status {row['status']}"]
    if row.get("toAmount") is not None:
        parts.append(format_money(row["toAmount"], row.get("toCurrency")))
    if row.get("updatedAt") is not None:
        parts.append(f"updated {str(row['updatedAt'])[:19]}")
    return ", ".join(parts)


def _why(item: dict[str, Any], got: Recomputed) -> str:
    head = item["key"].split(":", 1)[0]
    kind = item["kind"] or ""
    if item["section"] == "reconciliation" and got.reconciled is not None:
        now = got.reconciled.filter(pl.col("reference").cast(pl.String) == head)
        if now.is_empty():
            return f"reference {head} is in neither the records nor the orders any more"
        row = now.row(0, named=True)
        category = str(row["category"])
        if kind == "missing_in_export" and row.get("export_id"):
            what = (
                f"the record arrived: {row['export_id']} ({row.get('export_status')}, "
                f"{format_money(row.get('export_amount'), row.get('export_currency'))}, "
                f"{str(row.get('export_date'))[:10]})"
            )
        elif kind == "missing_in_orders" and row.get("order_amount") is not None:
            what = (
                f"the order arrived "
                f"({format_money(row.get('order_amount'), row.get('order_currency'))}, "
                f"dated {str(row.get('order_date'))[:10]})"
            )
        elif kind == "status_mismatch":
            what = (
                f"the status changed: the record is now {row.get('export_status')}, the "
                f"order {row.get('order_status')}"
            )
        else:
            what = (
                f"record {row.get('export_status')} "
                f"{format_money(row.get('export_amount'), row.get('export_currency'))}, order "
                f"{row.get('order_status')} "
                f"{format_money(row.get('order_amount'), row.get('order_currency'))}"
            )
        return f"{what}; now {category}"
    records = got.records
    rows = records.filter(pl.col("id").cast(pl.String) == head) if "id" in records.columns else None
    if rows is None or rows.is_empty():
        return f"record {head} is no longer in the store's {item['last_month']}"
    return f"{_record_text(rows)}: no longer listed"


@dataclass
class Carry:
    """One report's carry-over: the events to record and what it did.

    Attributes:
        events: ``checked`` (a month's fingerprint) and ``cleared`` (an item resolved, with
            why) rows for the register.
        months: earlier months looked at -> ``unchanged`` or ``recomputed``.
        cleared: keys resolved.
        seconds: time taken.
    """

    events: list[dict[str, Any]]
    months: dict[str, str]
    cleared: list[str]
    seconds: float
    #: the months before this one the register holds a report of
    held: tuple[str, ...] = ()

    def describe(self, *, timed: bool = True) -> str:
        """One line: ``register: earlier months' open items: 2025-11..2026-08 unchanged,
        2026-09 recomputed (1 resolved) (0.4 s)``."""
        if not self.months and not self.held:
            # Said only of a register that holds earlier months: one that holds this month
            # alone knows nothing of them (issue 47, Why 8.11).
            return "register: it holds no report of an earlier month: nothing carried over"
        if not self.months:
            return "register: no open items of earlier months to look at"
        unchanged = [m for m, how in self.months.items() if how == "unchanged"]
        again = [m for m, how in self.months.items() if how == "recomputed"]
        failed = [f"{m} {how}" for m, how in self.months.items() if how.startswith("not ")]
        parts = []
        if unchanged:
            span = unchanged[0] if len(unchanged) == 1 else f"{unchanged[0]} to {unchanged[-1]}"
            count = len(unchanged)
            parts.append(f"{span} unchanged ({count} month{'s' if count != 1 else ''})")
        if again:
            parts.append(f"{', '.join(again)} recomputed")
        parts += failed
        took = f" ({self.seconds:.1f} s)" if timed else ""
        return (
            f"register: earlier months' open items: {'; '.join(parts)}; "
            f"{len(self.cleared)} resolved{took}"
        )


def carry_over(
    store: str | os.PathLike[str],
    month: str,
    *,
    version: int | None,
    orders: pl.DataFrame | None,
    items: dict[str, dict[str, Any]],
    fingerprints: dict[str, str],
    recompute: Recompute,
) -> Carry:
    """Re-evaluate the open items of months before ``month`` (see the module's text).

    Args:
        store: the store.
        month: the month being reported.
        version: the store's table version the report reads.
        orders: the merchant's orders the report reads (the whole file); None: none.
        items: the register's items before this report (:func:`._state._fold`).
        fingerprints: each month's fingerprint when it was last evaluated.
        recompute: a month's lists of some sections, recomputed from the store at ``version``
            (:func:`txkit.notebook.month_keys`, which the report passes: the register does
            not run the analyses itself).
    """
    import time

    started = time.perf_counter()
    month = parse_month(month)
    files = _live_files(store, version)
    by_month = _open_before(items, month)
    events: list[dict[str, Any]] = [
        {"event": "checked", "month": month, "note": month_fingerprint(files, orders, month)}
    ]
    looked: dict[str, str] = {}
    cleared: list[str] = []
    for earlier in sorted(by_month):
        print_ = month_fingerprint(files, orders, earlier)
        if fingerprints.get(earlier) == print_:
            looked[earlier] = "unchanged"
            continue
        sections = {i["section"] for i in by_month[earlier]}
        try:
            got = recompute(earlier, sections)
        except (TxkitError, ValueError, OSError) as exc:
            # E.g. the store no longer holds the month: its items stay open, as before.
            looked[earlier] = f"not recomputed ({one_line(exc)})"
            continue
        looked[earlier] = "recomputed"
        gone = [i for i in by_month[earlier] if _gone(i, got)]
        cleared += [item["key"] for item in gone]
        events += [_cleared_event(item, got, month, earlier, version) for item in gone]
        events.append({"event": "checked", "month": earlier, "note": print_})
    held = tuple(sorted(m for m in fingerprints if m < month))
    return Carry(events, looked, cleared, time.perf_counter() - started, held)


def _open_before(items: dict[str, dict[str, Any]], month: str) -> dict[str, list[dict[str, Any]]]:
    by_month: dict[str, list[dict[str, Any]]] = {}
    for item in items.values():
        if (
            item["status"] in OPEN_STATUSES
            and item["section"] in RECOMPUTED
            and item["last_month"] < month
        ):
            by_month.setdefault(item["last_month"], []).append(item)
    return by_month


def _gone(item: dict[str, Any], got: Recomputed) -> bool:
    still = got.keys.get(item["section"])
    return still is not None and item["key"] not in still


def _cleared_event(
    item: dict[str, Any], got: Recomputed, month: str, earlier: str, version: int | None
) -> dict[str, Any]:
    return {
        "event": "cleared",
        "key": item["key"],
        "month": month,
        "section": item["section"],
        "note": (
            f"cleared by {month}'s report, which recomputed {earlier} from the "
            f"store (table version {version}): {_why(item, got)}"
        ),
    }
