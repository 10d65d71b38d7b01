"""The month's wallet statement per currency, read like a bank statement, and what explains
any difference.

For each wallet (currency) of the month:

* ``opening_ledger`` and ``opening_available``: the balances reported by the wallet's last
  record before the month (from ``history``; a record that reports no balance is carried
  through by its own amounts, as the balance checks do);
* the month's activity by category, signed (money in positive): ``collections``,
  ``transfers``, ``settlements``, ``conversions_in``, ``conversions_out``, ``fees`` and
  ``tax`` (as the wallet's balance model moves them: under ``fee-only`` the tax is part of the
  fee and ``tax`` is 0; under ``gross`` fees and tax are charged outside the wallet and both
  are 0), then ``reserves_held`` and ``reserves_released`` (rolling reserves move the
  available balance only);
* ``closing_computed`` = ``opening_ledger`` + the seven ledger categories;
  ``closing_reported``: the ledger balance reported by the month's last record;
  ``difference`` = reported - computed, which is 0 when the month's records explain the
  change;
* the same for the available balance: ``closing_available_computed`` = ``opening_available``
  + the seven ledger categories + both reserve columns, ``closing_available_reported`` and
  ``available_difference``.

A difference is never left unexplained: ``explained_by`` names the records that the balance
checks (:func:`~txkit.analysis.balance_breaks`) find, with what each contributes, and
:func:`wallet_differences` lists them one per row: a ``chain_gap`` (a record the export
lacks, whose amount the reported balances include), a wrong value at the month's last record
(``bad_value`` or ``reserve_mismatch``), or one at the opening record. The statement and the
breaks agree by construction: ``unexplained`` is the difference less what the breaks
explain, and is 0 unless the checks could not classify a value.

Everything is exact (integer minor units in between) and per currency: no figure adds two
currencies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import polars as pl

from txkit.analysis._common import (
    Frame,
    check_columns,
    column_or_null,
    from_minor,
    lazy,
    money_scale,
    to_minor,
)
from txkit.analysis.balances import _MONEY, _OPTIONAL, _REQUIRED, BREAK_KINDS, _check
from txkit.calendar import month_bounds

__all__ = [
    "ACTIVITY_COLUMNS",
    "DIFFERENCE_SIGN",
    "LEDGER_ACTIVITY",
    "wallet_differences",
    "wallet_statement",
    "wallet_statement_and_differences",
]

#: The ledger's activity columns: each adds to ``opening_ledger`` to make ``closing_computed``.
LEDGER_ACTIVITY: Final[tuple[str, ...]] = (
    "collections",
    "transfers",
    "settlements",
    "conversions_in",
    "conversions_out",
    "fees",
    "tax",
)
#: Every activity column, the reserves (available balance only) last.
ACTIVITY_COLUMNS: Final[tuple[str, ...]] = (*LEDGER_ACTIVITY, "reserves_held", "reserves_released")
#: What a wallet difference's sign means, said wherever the figure stands (index, pages 06
#: and 00): ``difference`` = the closing balance reported - the one the records compute.
DIFFERENCE_SIGN: Final = "reported - computed; +: the wallet reports more than its records explain"
_TS = pl.Datetime("ms", "UTC")
_UTC_MIDNIGHT = "%Y-%m-%dT00:00:00Z"


def wallet_statement(
    transactions: Frame,
    *,
    month: str,
    history: Frame | None = None,
    model: Any = "auto",
) -> pl.DataFrame:
    """The month's statement of every wallet: opening, activity by category, closing, and the
    difference between the closing computed and the closing reported.

    Args:
        transactions: the month's records (eager or lazy), e.g. from
            :func:`txkit.notebook.load_month`; records outside the month are ignored.
        month: ``YYYY-MM`` (UTC).
        history: records before the month (at least the month before: its last record on
            each wallet gives the opening balance, and its reserves the ones still held).
            Without it, or for a wallet it lacks, the opening is unknown and so are the
            closing computed and the difference (the ``note`` says so): never assumed 0.
        model: the balance model, as for :func:`~txkit.analysis.balance_breaks`
            (``"auto"``: per wallet, from the data).

    Returns:
        One row per wallet currency, sorted: ``currency``, ``opening_ledger``,
        ``opening_available``, the :data:`ACTIVITY_COLUMNS`, ``closing_computed``,
        ``closing_reported``, ``difference``, ``closing_available_computed``,
        ``closing_available_reported``, ``available_difference``, ``explained``,
        ``unexplained``, ``explained_by`` (the records behind a difference, ``; ``-separated),
        ``model``, ``records`` (successful records moving the wallet in the month) and
        ``note``. Money is exact at the widest scale of the input's money columns.

    Raises:
        ValueError: a required column is missing or of the wrong type; a bad month or model.
    """
    statement, _ = _statement(transactions, month, history, model)
    return statement


def wallet_differences(
    transactions: Frame,
    *,
    month: str,
    history: Frame | None = None,
    model: Any = "auto",
) -> pl.DataFrame:
    """The records that explain each wallet's difference (one row each), as the balance
    checks classify them.

    Args:
        transactions, month, history, model: as for :func:`wallet_statement`.

    Returns:
        ``currency``, ``side`` (``ledger`` or ``available``), ``id``, ``createdAt``,
        ``where`` (``opening`` record, ``in the month``, ``closing`` record), ``kind`` (a
        :data:`~txkit.analysis.BREAK_KINDS` value), ``contribution`` (what it adds to the
        difference), sorted by currency, side and time. Each break is one row, on the side
        the balance checks give it (:func:`~txkit.analysis.balance_breaks`): the ``ledger``
        rows add to ``difference``; the available balance is the ledger less the reserves
        held, so the ``ledger`` and ``available`` rows together add to
        ``available_difference``.
    """
    _, items = _statement(transactions, month, history, model)
    return items


def wallet_statement_and_differences(
    transactions: Frame,
    *,
    month: str,
    history: Frame | None = None,
    model: Any = "auto",
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`wallet_statement` and :func:`wallet_differences` of the same records, from one
    run of the balance checks (a page that shows both reads them once, not twice).

    Args:
        transactions, month, history, model: as for :func:`wallet_statement`.

    Returns:
        The statement and the differences, each as its own function returns it.
    """
    return _statement(transactions, month, history, model)


def _statement(
    transactions: Frame, month: str, history: Frame | None, model: Any
) -> tuple[pl.DataFrame, pl.DataFrame]:
    first, last = month_bounds(month)
    start = datetime(first.year, first.month, first.day)
    end = datetime(last.year, last.month, last.day) + timedelta(days=1)
    lf = lazy(transactions, "transactions", "wallet_statement")
    schema = lf.collect_schema()
    check_columns(schema, _REQUIRED, "transactions", "wallet_statement", optional=_OPTIONAL)
    scale = money_scale(schema, _MONEY)
    in_month = (
        pl.col("createdAt")
        .cast(_TS)
        .is_between(
            pl.lit(start).dt.replace_time_zone("UTC").cast(_TS),
            pl.lit(end).dt.replace_time_zone("UTC").cast(_TS),
            closed="left",
        )
    )
    month_lf = lf.filter(in_month)
    frames = [month_lf]
    if history is not None:
        hlf = lazy(history, "history", "wallet_statement")
        hschema = hlf.collect_schema()
        check_columns(hschema, _REQUIRED, "history", "wallet_statement", optional=_OPTIONAL)
        scale = max(scale, money_scale(hschema, _MONEY))
        before = hlf.filter(
            pl.col("createdAt").cast(_TS) < pl.lit(start).dt.replace_time_zone("UTC").cast(_TS)
        )
        frames.insert(0, before.join(month_lf.select("id"), on="id", how="anti"))
    records = pl.concat(frames, how="diagonal_relaxed")
    entries, check_scale = _check(records, None, "wallet_statement", None, model)
    scale = max(scale, check_scale)
    start_ts = pl.lit(start).dt.replace_time_zone("UTC").cast(_TS)
    entries = entries.with_columns((pl.col("createdAt") >= start_ts).alias("_in_month"))
    activity = _activity(month_lf, lf.collect_schema(), scale)
    rows, items = [], []
    released = _releases(records, records.collect_schema(), scale)
    for (currency,), wallet in entries.sort("row").group_by("currency", maintain_order=True):
        row, wallet_items = _wallet(currency, wallet, activity.get(currency, {}), released)
        if row is not None:
            rows.append(row)
            items.extend(wallet_items)
    for currency in sorted(set(activity) - {r["currency"] for r in rows}):
        rows.append(_empty_row(currency, activity[currency]))
    return _frame(rows, scale), _items_frame(items, scale)


def _activity(month: pl.LazyFrame, schema: pl.Schema, scale: int) -> dict[str, dict[str, Any]]:
    """Per wallet: each category's signed sum in minor units, fee and tax by model, held reserves,
    count, any unknown type."""
    minor = {
        name: to_minor(column_or_null(schema, name, pl.Decimal(38, scale)), scale).fill_null(0)
        for name in ("toAmount", "fromAmount", "feeAmount", "taxAmount", "rollingReserve.amount")
    }
    ok = month.filter(pl.col("status") == "successful").select(
        pl.col("transType").cast(pl.String).alias("type"),
        pl.col("toCurrency").cast(pl.String).alias("to"),
        column_or_null(schema, "fromCurrency", pl.String()).alias("from"),
        minor["toAmount"].alias("amount"),
        minor["fromAmount"].alias("from_amount"),
        minor["feeAmount"].alias("fee"),
        minor["taxAmount"].alias("tax"),
        pl.when(_holding()).then(minor["rollingReserve.amount"]).otherwise(0).alias("reserve"),
    )
    to_side = ok.filter(pl.col("type") != "conversion").select(
        pl.col("to").alias("currency"),
        "type",
        "amount",
        "fee",
        "tax",
        "reserve",
    )
    conv_in = ok.filter(pl.col("type") == "conversion").select(
        pl.col("to").alias("currency"),
        pl.lit("conversion_in").alias("type"),
        "amount",
        "fee",
        "tax",
        pl.lit(0, dtype=pl.Int128).alias("reserve"),
    )
    conv_out = ok.filter(pl.col("type") == "conversion").select(
        pl.col("from").alias("currency"),
        pl.lit("conversion_out").alias("type"),
        pl.col("from_amount").alias("amount"),
        pl.lit(0, dtype=pl.Int128).alias("fee"),
        pl.lit(0, dtype=pl.Int128).alias("tax"),
        pl.lit(0, dtype=pl.Int128).alias("reserve"),
    )
    # Sorted by type: unknown types are named in one order, whatever the records' order.
    parts = (
        pl.concat([to_side, conv_in, conv_out], how="vertical_relaxed")
        .filter(pl.col("currency").is_not_null())
        .group_by("currency", "type")
        .agg(pl.col("amount", "fee", "tax", "reserve").sum(), pl.len().alias("records"))
        .sort("currency", "type", nulls_last=True)
        .collect()
    )
    return _by_wallet(parts)


def _by_wallet(parts: pl.DataFrame) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for group in parts.iter_rows(named=True):
        kind = group["type"]
        wallet = out.setdefault(
            group["currency"],
            {"amount": {}, "fee": 0, "tax": 0, "reserve": 0, "records": 0, "unknown": []},
        )
        wallet["amount"][kind] = int(group["amount"])
        wallet["fee"] += int(group["fee"])
        wallet["tax"] += int(group["tax"])
        wallet["reserve"] += int(group["reserve"])
        wallet["records"] += group["records"]
        if kind not in ("collection", "transfer", "settlement", "conversion_in", "conversion_out"):
            wallet["unknown"].append(f"{group['records']:,} record(s) of type {kind!r}")
    return out


def _holding() -> pl.Expr:
    amount = pl.col("rollingReserve.amount")
    release = pl.col("rollingReserve.reserveReleaseDate").cast(_TS)
    flagged = pl.col("hasRollingReserve").fill_null(amount.is_not_null())
    return (
        (pl.col("transType") == "collection")
        & flagged
        & ~(release.is_not_null() & (release <= pl.col("createdAt").cast(_TS)))
    ).fill_null(False)


def _releases(records: pl.LazyFrame, schema: pl.Schema, scale: int) -> pl.DataFrame:
    return (
        records.filter((pl.col("status") == "successful") & _holding())
        .select(
            pl.col("toCurrency").cast(pl.String).alias("currency"),
            pl.col("rollingReserve.reserveReleaseDate").cast(_TS).alias("release"),
            to_minor(
                column_or_null(schema, "rollingReserve.amount", pl.Decimal(38, scale)), scale
            ).alias("amount"),
        )
        .filter(pl.col("release").is_not_null() & pl.col("amount").is_not_null())
        .collect()
    )


def _value(entry: Mapping[str, Any], reported: str, expected: str) -> tuple[int | None, bool]:
    if entry[reported] is not None:
        return int(entry[reported]), False
    value = entry[expected]
    return (None if value is None else int(value)), True


def _wallet(
    currency: str,
    wallet: pl.DataFrame,
    activity: Mapping[str, Any],
    released: pl.DataFrame,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    month = wallet.filter(pl.col("_in_month"))
    if month.height == 0:
        return None, []  # no record of the wallet in the month: nothing to state
    before = wallet.filter(~pl.col("_in_month"))
    opening = before.row(before.height - 1, named=True) if before.height else None
    closing = month.row(month.height - 1, named=True)
    model = closing["model"]
    categories = _categories(activity, model)
    categories["reserves_released"] = _released_between(released, currency, opening, closing)
    notes = _unstated(month, opening, model, activity)
    computable = not notes
    ends = _ends(opening, closing)
    notes += ends.notes
    unknown_reserves = bool(
        (opening is not None and opening["unknown_held"]) or closing["unknown_held"]
    )
    if unknown_reserves:
        notes.append("reserves of unknown amount or release are held: available not stated")
    figures = _closing(categories, ends, computable, computable and not unknown_reserves)
    items, explained, explained_by = _explained(currency, month, opening, closing)
    difference = figures["difference"]
    row = {
        "currency": currency,
        "opening_ledger": ends.open_ledger,
        "opening_available": ends.open_avail,
        **categories,
        **figures,
        "explained": explained if difference is not None else None,
        "unexplained": None if difference is None else difference - explained,
        "explained_by": explained_by,
        "model": model,
        "records": int(activity.get("records", 0)),
        "note": "; ".join(notes) or None,
    }
    return row, items


def _categories(activity: Mapping[str, Any], model: str | None) -> dict[str, int]:
    """Signed (money out negative); fees and tax only where the wallet's model takes them."""
    amounts = activity.get("amount", {})
    return {
        "collections": amounts.get("collection", 0),
        "transfers": -amounts.get("transfer", 0),
        "settlements": -amounts.get("settlement", 0),
        "conversions_in": amounts.get("conversion_in", 0),
        "conversions_out": -amounts.get("conversion_out", 0),
        "fees": 0 if model == "gross" else -activity.get("fee", 0),
        "tax": 0 if model in ("gross", "fee-only") else -activity.get("tax", 0),
        "reserves_held": -activity.get("reserve", 0),
    }


def _unstated(
    month: pl.DataFrame,
    opening: Mapping[str, Any] | None,
    model: str | None,
    activity: Mapping[str, Any],
) -> list[str]:
    """Why the closing balance cannot be computed (empty: it can)."""
    notes: list[str] = []
    if model is None:
        notes.append("no balance model fits this wallet: its activity cannot be stated")
    if activity.get("unknown"):
        notes.append(
            "records of unknown type move it ("
            + ", ".join(activity["unknown"])
            + "): the closing balance cannot be computed"
        )
    if opening is None:
        notes.append(
            "no record of this wallet before the month in the history given: the opening "
            "balance is unknown (load the month before)"
        )
    if month["delta"].is_null().any() or (opening is not None and opening["delta"] is None):
        notes.append("a record's amounts are missing: the closing balance cannot be computed")
    return notes


@dataclass(frozen=True)
class _Ends:
    """A wallet's ledger and available balances at its opening record (the last before the
    month) and its closing one (the month's last), and which of them were carried."""

    open_ledger: int | None
    open_avail: int | None
    close_ledger: int | None
    close_avail: int | None
    notes: list[str]


def _ends(opening: Mapping[str, Any] | None, closing: Mapping[str, Any]) -> _Ends:
    open_ledger, open_carried = (
        _value(opening, "reported_ledger", "expected_ledger") if opening else (None, False)
    )
    open_avail, _ = (
        _value(opening, "reported_available", "avail_expected") if opening else (None, False)
    )
    close_ledger, close_carried = _value(closing, "reported_ledger", "expected_ledger")
    close_avail, _ = _value(closing, "reported_available", "avail_expected")
    notes = []
    if open_carried:
        notes.append("the opening record reports no balance: carried by its amounts")
    if close_carried:
        notes.append("the month's last record reports no balance: carried by its amounts")
    return _Ends(open_ledger, open_avail, close_ledger, close_avail, notes)


def _released_between(
    released: pl.DataFrame,
    currency: str,
    opening: Mapping[str, Any] | None,
    closing: Mapping[str, Any],
) -> int:
    """After the opening record, up to the closing one (0 without an opening record)."""
    if opening is None or opening["createdAt"] is None:
        return 0
    window = released.filter(
        (pl.col("currency") == currency)
        & (pl.col("release") > opening["createdAt"])
        & (pl.col("release") <= closing["createdAt"])
    )
    return int(window["amount"].sum() or 0)


def _closing(
    categories: Mapping[str, int], ends: _Ends, ledger_known: bool, available_known: bool
) -> dict[str, int | None]:
    ledger_activity = sum(categories[c] for c in LEDGER_ACTIVITY)
    computed = None
    if ledger_known and ends.open_ledger is not None:
        computed = ends.open_ledger + ledger_activity
    avail_computed = None
    if available_known and ends.open_avail is not None:
        avail_computed = (
            ends.open_avail
            + ledger_activity
            + categories["reserves_held"]
            + categories["reserves_released"]
        )
    return {
        "closing_computed": computed,
        "closing_reported": ends.close_ledger,
        "difference": _minus(ends.close_ledger, computed),
        "closing_available_computed": avail_computed,
        "closing_available_reported": ends.close_avail,
        "available_difference": _minus(ends.close_avail, avail_computed),
    }


def _minus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b


def _explained(
    currency: str,
    month: pl.DataFrame,
    opening: Mapping[str, Any] | None,
    closing: Mapping[str, Any],
) -> tuple[list[dict[str, Any]], int, str | None]:
    items = [i for i in _explanations(currency, month, opening, closing) if i["contribution"]]
    explained = sum(i["contribution"] for i in items if i["side"] == "ledger")
    shown = [
        f"{i['id']} {i['kind']} ({i['where']}, {i['side']})"
        for i in items
        if i["contribution"] != 0
    ]
    return items, explained, "; ".join(shown) or None


def _explanations(
    currency: str,
    month: pl.DataFrame,
    opening: Mapping[str, Any] | None,
    closing: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """What each break adds to the ledger and available differences (the rule: docs/closing.md)."""
    out: list[dict[str, Any]] = []
    last_reported = month.filter(pl.col("reported_ledger").is_not_null())
    last_id = last_reported["id"][-1] if last_reported.height else None

    def add(entry: Mapping[str, Any], side: str, kind: str, where: str, amount: int) -> None:
        out.append(
            {
                "currency": currency,
                "side": side,
                "id": entry["id"],
                "createdAt": entry["createdAt"],
                "where": where,
                "kind": kind,
                "contribution": amount,
            }
        )

    for entry in month.filter(pl.col("ledger_kind").is_in(BREAK_KINDS)).iter_rows(named=True):
        gap = int(entry["reported_ledger"]) - int(entry["expected_ledger"])
        kind = entry["ledger_kind"]
        at_close = entry["id"] == last_id
        where = "closing" if at_close else "in the month"
        if kind in ("chain_gap", "other"):
            # One row, on the side the balance checks (page 04) put it: available = ledger -
            # reserves held, so it moves the available difference too without a second row.
            add(entry, "ledger", kind, where, gap)
        else:
            add(entry, "ledger", kind, where, gap if at_close else 0)
    if closing["avail_kind"] == "reserve_mismatch" and closing["reported_available"] is not None:
        gap = int(closing["reported_available"]) - int(closing["avail_expected"])
        add(closing, "available", "reserve_mismatch", "closing", gap)
    if opening is not None:
        if opening["ledger_kind"] == "bad_value":
            gap = int(opening["reported_ledger"]) - int(opening["expected_ledger"])
            add(opening, "ledger", "bad_value", "opening", -gap)
        if (
            opening["avail_kind"] == "reserve_mismatch"
            and opening["reported_available"] is not None
        ):
            gap = int(opening["reported_available"]) - int(opening["avail_expected"])
            add(opening, "available", "reserve_mismatch", "opening", -gap)
    return out


def _empty_row(currency: str, activity: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "currency": currency,
        "records": int(activity.get("records", 0)),
        "note": "no record of this wallet reports a balance: nothing to state",
    }


_MONEY_COLUMNS: Final = (
    "opening_ledger",
    "opening_available",
    *ACTIVITY_COLUMNS,
    "closing_computed",
    "closing_reported",
    "difference",
    "closing_available_computed",
    "closing_available_reported",
    "available_difference",
    "explained",
    "unexplained",
)


def _frame(rows: list[dict[str, Any]], scale: int) -> pl.DataFrame:
    schema: dict[str, Any] = {"currency": pl.String}
    schema.update(dict.fromkeys(_MONEY_COLUMNS, pl.Int128))
    schema.update({"explained_by": pl.String, "model": pl.String, "records": pl.UInt32,
                   "note": pl.String})  # fmt: skip
    frame = pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")
    return frame.with_columns(from_minor(pl.col(c), scale).alias(c) for c in _MONEY_COLUMNS).sort(
        "currency"
    )


def _items_frame(items: list[dict[str, Any]], scale: int) -> pl.DataFrame:
    schema = {
        "currency": pl.String,
        "side": pl.String,
        "id": pl.String,
        "createdAt": _TS,
        "where": pl.String,
        "kind": pl.String,
        "contribution": pl.Int128,
    }
    frame = pl.DataFrame(items, schema=schema, orient="row")
    return frame.with_columns(from_minor(pl.col("contribution"), scale).alias("contribution")).sort(
        "currency", "side", "createdAt", "id", "where", "kind"
    )
