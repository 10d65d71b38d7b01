"""Recomputing a month's exception lists from the store, without running a notebook: what
the register's carry-over (:mod:`txkit.register._carry`) compares an earlier month's open
items with, and what :func:`build_register` records where no report has run.

The lists are the notebooks' (02, 03, 04, 08) with their default parameters and keys.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import polars as pl

from txkit import config
from txkit.analysis import (
    balance_breaks,
    balance_model_choice,
    balance_model_fit,
    fee_tax_mismatches,
    not_reported_balances,
    reconcile,
    underpayments,
)
from txkit.analysis.exception_lists import exception_list
from txkit.calendar import parse_month
from txkit.fetch.source import sandbox_files
from txkit.inputs import orders_around
from txkit.inputs.columns import ORDERS, column_setting
from txkit.inputs.orders import read_orders_file
from txkit.notebook._load import load_history, load_margin, load_month
from txkit.register import (
    ITEMS_SUFFIX,
    RECOMPUTED,
    UNDERPAYMENT_HISTORY,
    Recompute,
    Recomputed,
    record_report,
    register_items,
)

__all__ = ["build_register", "month_keys", "read_all_orders", "recomputer"]

#: Notebook 04's ``history_months`` (03's is the register's, 02's ``date_tolerance`` is
#: ``config.MARGIN_DAYS``).
_BALANCE_HISTORY: Final = 1


def read_all_orders(orders: str | None, columns: str | None = None) -> pl.DataFrame | None:
    """The whole orders file a report reads (``sandbox``: the embedded sandbox's); None for
    none. ``columns``: its column mapping or preset (None: ``TXKIT_ORDERS_COLUMNS``, else
    ``txkit.toml``, else txkit's own names).

    Raises:
        DataFileError: the file cannot be read as it is.
    """
    if not orders:
        return None
    if orders == "sandbox":
        return read_orders_file(sandbox_files() / "orders.csv").frame
    return read_orders_file(orders, columns=column_setting(ORDERS, columns)).frame


def _keyed(frame: pl.DataFrame, name: str, month: str) -> pl.DataFrame:
    spec = exception_list(name)
    rows = spec.listed(frame)
    key = pl.concat_str(
        [pl.col(c).cast(pl.String).fill_null("") for c in spec.key], separator=":"
    ).alias("key")
    return register_items(rows.with_columns(key), name, month)


def month_keys(
    store: str | os.PathLike[str],
    month: str,
    *,
    version: int | None,
    orders: pl.DataFrame | None,
    sections: Iterable[str] = RECOMPUTED,
) -> Recomputed:
    """Recompute ``month``'s exception lists of ``sections`` from the store at ``version``,
    with the notebooks' functions, keys and default parameters.

    ``orders``: the merchant's orders (the whole file, as :func:`txkit.analysis.read_orders`
    reads it); None leaves the reconciliation out.

    Raises:
        TxkitError: the store lacks the month.
    """
    month = parse_month(month)
    sections = set(sections)
    df, _ = load_month(month, source="store", store=store, version=version)
    lists: dict[str, pl.DataFrame] = {}
    reconciled = None
    if "reconciliation" in sections and orders is not None:
        around, _ = load_margin(
            month, days=config.MARGIN_DAYS, source="store", store=store, version=version
        )
        records = df if around is None else pl.concat([df, around], how="diagonal_relaxed")
        expected = orders_around(orders, month, config.MARGIN_DAYS)
        reconciled = reconcile(records, expected, month=month, date_tolerance=config.MARGIN_DAYS)
        lists["reconciliation_mismatches"] = _keyed(reconciled, "reconciliation_mismatches", month)
    if "underpayments" in sections:
        history, _ = load_history(
            month, months=UNDERPAYMENT_HISTORY, source="store", store=store, version=version
        )
        flagged = underpayments(df, history=history)
        lists["flagged_payments"] = _keyed(flagged, "flagged_payments", month)
    if sections & {"balance_breaks", "not_reported"}:
        history, _ = load_history(
            month, months=_BALANCE_HISTORY, source="store", store=store, version=version
        )
        choice = balance_model_choice(balance_model_fit(df, history=history))
        breaks = balance_breaks(df, history=history, model=choice)
        lists["balance_breaks"] = _keyed(breaks, "balance_breaks", month)
        lists["not_reported_balances"] = _keyed(
            not_reported_balances(df), "not_reported_balances", month
        )
    if "fees" in sections:
        lists["fee_tax_mismatches"] = _keyed(fee_tax_mismatches(df), "fee_tax_mismatches", month)
    return Recomputed(lists=lists, reconciled=reconciled, records=df)


def recomputer(
    store: str | os.PathLike[str], *, version: int | None, orders: pl.DataFrame | None
) -> Recompute:
    """The ``recompute`` the register's carry-over calls: :func:`month_keys` on ``store`` at
    ``version`` with ``orders``."""

    def recompute(month: str, sections: set[str]) -> Recomputed:
        return month_keys(store, month, version=version, orders=orders, sections=sections)

    return recompute


def build_register(
    store: str | os.PathLike[str],
    months: Iterable[str],
    *,
    orders: pl.DataFrame | None,
    version: int | None = None,
    actor: str = "txkit build_register",
) -> int:
    """Record ``months`` in the store's register, oldest first, as reports would, with each
    month's lists recomputed from the store (:func:`month_keys`: reconciliation,
    underpayments, balance breaks, balances not reported, fees; no notebook runs). For a
    register to look at where no report has run (notebook 07's demonstration). Returns the
    register's version.

    Raises:
        TxkitError: the store lacks a month.
    """
    written = -1
    recompute = recomputer(store, version=version, orders=orders)
    for month in sorted(parse_month(m) for m in months):
        got = month_keys(store, month, version=version, orders=orders)
        with tempfile.TemporaryDirectory(prefix="txkit-register-") as folder:
            for name, frame in got.lists.items():
                frame.write_parquet(Path(folder) / f"{name}{ITEMS_SUFFIX}")
            written = record_report(
                store, month, folder, table_version=version, actor=actor, orders=orders,
                recompute=recompute,
            )  # fmt: skip
    return written
