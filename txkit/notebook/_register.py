"""What notebook 07 (the exception register) needs: the register to look at, and its "what to
look at" sentences.

* :func:`load_register`: in a report (``downloads`` set), the register as it will be once the
  report is recorded (this month's lists and the re-evaluation of earlier months, nothing
  written); with ``source="store"``, the store's register as of the month; otherwise (the
  sandbox, or the service, on a machine without a register) a register built in a temporary
  store from the months up to ``month``, as their reports would have recorded them, so the
  page shows the same thing on every machine;
* :func:`owner_counts`: open items per owner and status;
* :func:`register_findings`: the sentences, with counts and exact amounts per currency.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from txkit import config
from txkit.calendar import month_bounds, parse_month, previous_months
from txkit.money import format_sums
from txkit.notebook._load import LoadInfo
from txkit.notebook._recompute import build_register, read_all_orders, recomputer
from txkit.register import (
    OPEN_STATUSES,
    Materiality,
    filter_items,
    load_materiality,
    read_events,
    register_view,
)
from txkit.store import sync

__all__ = ["RegisterInfo", "load_register", "owner_counts", "register_findings"]


@dataclass
class RegisterInfo:
    """The register a page looks at.

    Attributes:
        view: :func:`txkit.register.register_view` as of the month.
        store: the store holding it (a temporary one for a demonstration).
        demo: a register built here in a temporary store (annotating it changes nothing real).
        info: the page's "as run" line.
    """

    view: pl.DataFrame
    store: str
    demo: bool
    info: LoadInfo
    _keep: Any = field(default=None, repr=False)  # the temporary folder, alive with this
    _read: Any = field(default=None, repr=False)

    def reload(self) -> pl.DataFrame:
        """Read the view again (after :func:`txkit.register.explain`), and return it."""
        if self._read is not None:
            self.view = self._read()
        return self.view


def _project() -> Path:
    # The project folder (materiality.toml), found the same way from notebooks/ as from the
    # folder txkit report runs in.
    return config.project_dir()


def _info(month: str, note: str, rows: int) -> LoadInfo:
    first, last = month_bounds(month)
    return LoadInfo(
        month=month, first=first, last=last, source="register", rows=rows, kind="register",
        note=note,
    )  # fmt: skip


def load_register(
    month: str,
    *,
    source: str = "auto",
    store: str | None = None,
    version: int | None = None,
    orders: str = "auto",
    downloads: str = "",
    months: int = 3,
    orders_columns: str | None = None,
) -> RegisterInfo:
    """The exception register as of ``month`` (see the module's text for which one).

    Args:
        month: ``YYYY-MM``.
        source: ``store`` reads the store's register; ``auto``, ``sandbox`` or ``service``
            build one in a temporary store (unless in a report).
        store: the store (default: the source's).
        version: the store's table version a report reads.
        orders: the orders the report reads (``auto``, ``sandbox`` or a path).
        downloads: the folder of the report being built (its exception lists).
        months: for a built register, how many months up to ``month`` it records.
        orders_columns: the orders file's column mapping or preset (None:
            ``TXKIT_ORDERS_COLUMNS``, else ``txkit.toml``, else txkit's own names).

    Raises:
        ValueError: a month the store's register has no report of (names those it has).
    """
    month = parse_month(month)
    materiality = load_materiality(_project())
    if downloads:
        where = store or config.default_store()
        every = read_all_orders(config.resolve_orders(orders), orders_columns)
        return _with_report(month, where, materiality, version, every, downloads)
    if source == "store":
        return _from_store(month, store or config.default_store(), materiality)
    return _built(month, months, materiality, orders, orders_columns)


def _with_report(
    month: str,
    where: str | os.PathLike[str],
    materiality: Materiality,
    version: int | None,
    every: pl.DataFrame | None,
    downloads: str,
) -> RegisterInfo:
    recompute = recomputer(where, version=version, orders=every)

    def read() -> pl.DataFrame:
        return register_view(
            where, month=month, materiality=materiality, pending=downloads,
            table_version=version, orders=every, recompute=recompute,
        )  # fmt: skip

    view = read()
    note = f"the store's exception register with {month}'s report, {view.height:,} items"
    return RegisterInfo(view, str(where), False, _info(month, note, view.height), None, read)


def _from_store(
    month: str, where: str | os.PathLike[str], materiality: Materiality
) -> RegisterInfo:
    def read() -> pl.DataFrame:
        return register_view(where, month=month, materiality=materiality)

    view = read()
    _, at = read_events(where)
    note = f"the store's exception register (version {at}) as of {month}, {view.height:,} items"
    return RegisterInfo(view, str(where), False, _info(month, note, view.height), None, read)


def _built(
    month: str, months: int, materiality: Materiality, orders: str, orders_columns: str | None
) -> RegisterInfo:
    keep = tempfile.TemporaryDirectory(prefix="txkit-register-demo-")
    where = str(Path(keep.name) / "store")
    span = [*previous_months(month, months - 1), month]
    first, _ = month_bounds(span[0])
    _, last = month_bounds(month)
    # Three days after the month: the reconciliation looks there for the month's last
    # payments (inside the sandbox's calendar, which ends with its last month).
    end = last + timedelta(days=3)
    if not config.key_configured():
        end = min(end, _sandbox_last_day())
    sync(start=first, end=end, store=where, progress=False, retention=False)
    every = read_all_orders(config.resolve_orders(orders), orders_columns)
    build_register(where, span, orders=every)

    def built() -> pl.DataFrame:
        return register_view(where, month=month, materiality=materiality)

    view = built()
    note = (
        f"an exception register built in a temporary store from {span[0]} to {month} (as "
        f"their reports would record them), {view.height:,} items"
    )
    return RegisterInfo(view, where, True, _info(month, note, view.height), keep, built)


def _sandbox_last_day() -> date:
    settings = config.SANDBOX
    first, _ = month_bounds(settings.start_month)
    year, month = divmod(first.year * 12 + first.month - 1 + settings.months - 1, 12)
    return month_bounds(f"{year:04d}-{month + 1:02d}")[1]


def owner_counts(view: pl.DataFrame) -> pl.DataFrame:
    """Open items (``open``, ``explained``) per owner (``(none)`` without one): ``owner``,
    ``open``, ``explained``, ``material``, ``oldest_days``; most open first."""
    still = view.filter(pl.col("status").is_in(OPEN_STATUSES))
    return (
        still.with_columns(pl.col("owner").fill_null("(none)"))
        .group_by("owner")
        .agg(
            (pl.col("status") == "open").sum().alias("open"),
            (pl.col("status") == "explained").sum().alias("explained"),
            pl.col("material").sum().alias("material"),
            pl.col("age_days").max().alias("oldest_days"),
        )
        .sort(["open", "owner"], descending=[True, False])
    )


def register_findings(view: pl.DataFrame, month: str, *, older_than: int = 60) -> list[str]:
    """The register's "what to look at": material items past ``older_than`` days without an
    explanation (the oldest named), material items nobody owns, the oldest section, and what
    the month resolved."""
    still = filter_items(view, still_open=True)
    if still.is_empty():
        return [f"No open item in the register as of {month}."]
    out = []
    stale = filter_items(still, material=True, older_than=older_than).filter(
        pl.col("status") == "open"
    )
    if stale.height:
        # Equal ages: the first by section, then key (the register's own order).
        oldest = stale.sort(
            ["age_days", "section", "first_month", "key"], descending=[True, False, False, False]
        ).row(0, named=True)
        # Absolute amounts: an item's sign says which side is short, not its size.
        amounts = format_sums(stale.with_columns(pl.col("amount").abs()), "amount")
        out.append(
            f"{stale.height:,} material items older than {older_than} days have no explanation "
            f"({amounts}); the oldest, {oldest['key']} ({oldest['section']}, "
            f"{oldest['age_days']} days), first listed in {oldest['first_month']}."
        )
    unowned = filter_items(still, material=True, owner="")
    if unowned.height:
        by = unowned.group_by("section").len().sort(["len", "section"], descending=[True, False])
        top = by.row(0, named=True)
        out.append(
            f"{unowned.height:,} material open items have no owner; most in {top['section']} "
            f"({top['len']:,}): `txkit exceptions explain KEY --owner NAME` assigns one."
        )
    aged = (
        still.group_by("section")
        .agg((pl.col("age_bucket") == "90+").sum().alias("old"), pl.len().alias("all"))
        .sort(["old", "section"], descending=[True, False])
        .row(0, named=True)
    )
    if aged["old"]:
        out.append(
            f"{aged['section']} holds the most items over 90 days: {aged['old']:,} of its "
            f"{aged['all']:,} open ones."
        )
    resolved = view.filter(
        pl.col("status").is_in(["resolved", "written_off"]) & (pl.col("resolved_month") == month)
    )
    example = (
        resolved.sort("section", "first_month", "key").row(0, named=True)
        if resolved.height
        else None
    )
    out.append(
        f"{resolved.height:,} items were resolved in {month}"
        + (f", e.g. {example['key']}." if example else ".")
    )
    return out
