"""What a report records: its events in the store's exception register, and ``report.json``
(what it read and rendered, the register's summary, and for a revision of a signed month what
changed)."""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from txkit.errors import RegisterFormatError, StoreError, one_line
from txkit.notebook import read_all_orders, recomputer
from txkit.register import (
    Materiality,
    RegisterSummary,
    Target,
    compare_reports,
    read_events,
    report_events,
    summarise,
)
from txkit.report._plan import Notes, OrdersCheck, ReportPlan, resolved_store
from txkit.store import MonthManifest

log = logging.getLogger("txkit")

__all__ = [
    "ReportManifest",
    "Revision",
    "describe_revision",
    "record_register",
    "reproduce_command",
    "write_manifest",
]

_FILE = "report.json"


@dataclass(frozen=True)
class Revision:
    """A revision of a signed month: its number, the signed report it revises, why, and what
    changed against it."""

    number: int
    of: str
    reason: str | None
    changes: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def warning(self, month: str) -> str:
        return (
            f"revision {self.number} of {month}, beside the signed report {self.of} "
            f"(reopened: {self.reason}); what changed: " + "; ".join(self.changes)
        )


@dataclass(frozen=True)
class ReportManifest:
    """``report.json``: what the report read (store, table version, source, orders) and
    rendered, how to render it again, and what it recorded."""

    month: str
    store: str
    table_version: int | None
    #: the retention policy keeps this version of this table only (a store moved aside and
    #: synced again is another table, whose versions start at 0 again)
    table_id: str | None
    as_of: int | None
    source: str
    rows: int
    complete: bool
    show_pii: bool
    rendered_at: str
    notebooks: list[str]
    synced: list[str]
    orders: dict[str, Any] | None
    reproduce: str
    register: dict[str, Any] | None = None
    revision: Revision | None = None

    @classmethod
    def of(
        cls,
        plan: ReportPlan,
        manifest: MonthManifest,
        notebooks: list[str],
        orders: OrdersCheck | None,
    ) -> ReportManifest:
        return cls(
            month=plan.month,
            store=resolved_store(plan.store),
            table_version=manifest.table_version,
            table_id=manifest.table_id,
            as_of=plan.as_of,
            source=manifest.source,
            rows=manifest.rows,
            complete=manifest.complete,
            show_pii=plan.show_pii,
            rendered_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            notebooks=notebooks,
            synced=[plan.since.isoformat(), plan.until.isoformat()],
            orders=None
            if orders is None
            else {
                "read": orders.info.note,
                "in_month": orders.in_month,
                "warnings": list(orders.info.warnings),
            },
            reproduce=reproduce_command(
                plan.month,
                plan.store,
                manifest.table_version,
                orders=orders.path if orders is not None else None,
                bank_statements=plan.bank_statements,
                bank_columns=plan.bank_columns if plan.bank_statements else None,
                orders_columns=plan.orders_columns,
            ),
        )

    def to_json(self) -> dict[str, Any]:
        doc = {name: getattr(self, name) for name in self.__dataclass_fields__}
        doc["revision"] = self.revision.to_json() if self.revision else None
        extra = ("register", "revision")  # written only when there is one
        return {k: v for k, v in doc.items() if k not in extra or v is not None}

    def write(self, folder: Path) -> None:
        (folder / _FILE).write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def record_register(
    plan: ReportPlan,
    manifest: MonthManifest,
    staging: Path,
    materiality: Materiality,
    notes: Notes,
    *,
    orders: pl.DataFrame | None = None,
) -> tuple[RegisterSummary | None, pl.DataFrame | None]:
    """The month's exception lists as register events, and the register summarised for the
    index as it will be once they are committed; nothing is written: the events are committed
    with the report's pack (:func:`txkit.report._publish.publish`). Returns the summary and the
    register's events with this report's (``pending``, what the index's history reads); None,
    None (with a warning) when the register cannot be read or written (a read-only store).
    ``--as-of`` is read-only: the register as it is, no events. ``orders``: the whole orders
    file as the report read it (default: read again)."""
    version = None if manifest.table_version is None else int(manifest.table_version)
    if plan.as_of is not None:
        try:
            events, read = read_events(plan.store)
            summary = summarise(plan.store, plan.month, version=read, materiality=materiality,
                                folder=staging, events=events)  # fmt: skip
        except ValueError:  # the register has no report of the month: nothing to show
            return None, None
        return summary, None
    try:
        if orders is None:
            orders = read_all_orders(plan.orders, plan.orders_columns)
        before, read = read_events(plan.store)
        events, carried = report_events(
            plan.store,
            plan.month,
            staging,
            table_version=version,
            orders=orders,
            recompute=recomputer(plan.store, version=version, orders=orders),
            events=before,
        )
        pending = pl.concat([before, events])
        summary = summarise(
            plan.store,
            plan.month,
            version=read,
            materiality=materiality,
            folder=staging,
            carry=carried,
            events=pending,
        )
    except (StoreError, OSError) as exc:
        # A closed stdout (`txkit report | head -1`) is no read-only store: the report stops
        # before its pack is put in place, so it never stands without its register events.
        if isinstance(exc, (RegisterFormatError, BrokenPipeError)):
            raise
        # A read-only store (a report re-rendered from a mounted copy) still gets its report.
        log.warning("report: the exception register was not updated: %s", one_line(exc))
        return None, None
    if carried is not None:  # printed outside the register's fault handling (a closed pipe)
        notes.add(carried.describe())
    return summary, pending


def write_manifest(
    staging: Path,
    manifest: ReportManifest,
    target: Target,
    notes: Notes,
) -> Revision | None:
    """``report.json`` in ``staging``; for a revision of a signed month, what changed against
    it (compared with the new ``report.json``) is added, and returned."""
    manifest.write(staging)
    revision = describe_revision(target, staging, manifest.month, notes)
    if revision is not None:
        replace(manifest, revision=revision).write(staging)
    return revision


def describe_revision(target: Target, staging: Path, month: str, notes: Notes) -> Revision | None:
    """A revision of a signed month (its changes told as notes too); None for a month not
    signed."""
    if target.signed is None:
        return None
    changes = compare_reports(target.signed, staging)
    notes.add(
        f"revision {target.number} of {month} (reopened: {target.reason}); changes against "
        f"{target.signed.name}:"
    )
    for line in changes:
        notes.add(f"  {line}")
    return Revision(target.number, target.signed.name, target.reason, changes)


def reproduce_command(
    month: str,
    store: str | Path,
    version: int | None,
    *,
    orders: str | Path | None = None,
    bank_statements: Sequence[str | Path] | None = None,
    bank_columns: str | None = None,
    orders_columns: str | None = None,
) -> str:
    """The shell command that renders the same report again: the month, store and table
    version it read, and the orders file, bank statements and CSV column mapping it was
    given (each argument quoted for a POSIX shell: a mapping holds spaces).

    Args:
        month: ``YYYY-MM``.
        store: the store read.
        version: its table version.
        orders: the orders file (None: the sandbox's own).
        bank_statements: the statements given (None: the sandbox's own, or none).
        bank_columns: the CSV mapping in effect, from the flag, ``TXKIT_BANK_COLUMNS`` or
            ``txkit.toml`` (written as a flag, so the command does not depend on the
            environment or the settings file).
        orders_columns: the orders file's mapping in effect, likewise.

    Returns:
        One line, e.g. ``txkit report --month 2026-10 --store data/store/sandbox --as-of 3``.
    """
    argv = ["txkit", "report", "--month", month, "--store", str(store), "--as-of", str(version)]
    if orders:
        argv += ["--orders", str(orders)]
        if orders_columns:
            argv += ["--orders-columns", orders_columns]
    for path in bank_statements or ():
        argv += ["--bank-statement", str(path)]
    if bank_statements and bank_columns:
        argv += ["--bank-columns", bank_columns]
    return shlex.join(argv)
