"""Verify the balance-after fields against the balance model, exactly and vectorised.

How fees and tax move a wallet is one of the candidates of
:mod:`txkit.analysis.balance_models`, chosen per wallet from the data (or given); the model
below is written for ``net``, the sandbox's default.

The model:

* one wallet per currency; entries ordered by ``createdAt``, then ``id``; only ``successful``
  records move balances;
* a collection adds ``toAmount - feeAmount - taxAmount`` to the ``toCurrency`` wallet, reported
  in ``toBalanceAfterLedger``/``toBalanceAfterAvailable``;
* a transfer or settlement takes ``toAmount + feeAmount + taxAmount`` from the ``toCurrency``
  wallet, reported in ``fromBalanceAfterLedger``/``fromBalanceAfterAvailable``;
* a conversion takes ``fromAmount`` from the ``fromCurrency`` wallet (from-side fields) and adds
  ``toAmount - feeAmount - taxAmount`` to the ``toCurrency`` wallet (to-side fields);
* available = ledger minus the rolling reserves still held: a successful collection with
  ``hasRollingReserve`` holds ``rollingReserve.amount`` of its currency from its ``createdAt``
  until ``rollingReserve.reserveReleaseDate`` (exclusive).

How a ledger break is found (all in integer minor units): per wallet, ``delta_sum`` is the
running sum of the deltas and ``implied_opening = reported - delta_sum`` is the wallet's
opening balance as each entry implies it. On a clean chain it is constant, so each entry's
``residual`` (its implied opening minus the previous entry's, against the previous entry with
a reported ledger) is zero. A non-zero residual ``r`` followed by ``-r`` is one wrong value
(``bad_value``; the next entry resumes the chain and is not a break); followed by zero it is a
jump that a record missing from the export would explain (``chain_gap``, ``difference`` = that
record's delta); anything else is ``other``. An entry whose delta cannot be computed restarts
the chain (its successor is compared with it, not with what came before).

Where the chain alone cannot tell, the available value is the second witness, through its
offset ``available - ledger + held``: a record missing from the export moves ledger and
available alike (the offset stays), a wrong ledger value leaves available with the chain (the
offset moves by ``-r``). This classifies a break on a chain's last entry, which has no
successor, and finds a wrong first value (the chain's anchor) from its successor.

Available values are checked per wallet through their ``available_offset``: available minus
(ledger minus the known reserves held), which is 0 when every reserve is known. In an export
that starts mid-history, reserves from before it make the offset equal to minus what they
still hold: never above 0 and only rising as they are released; a value breaking that pattern
while its neighbours keep it is a ``reserve_mismatch``. Once an entry shows an offset of 0
(confirmed by its successor), no earlier reserve is left and every later value must match
exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Final

import polars as pl

from txkit.analysis._balance_chain import ledger_chain
from txkit.analysis._common import (
    Frame,
    Kind,
    check_columns,
    column_or_null,
    decimals_of,
    from_minor,
    lazy,
    money_scale,
    to_minor,
    to_minor_map,
)
from txkit.analysis.balance_models import (
    BALANCE_MODELS,
    balance_model_choice,
    credits_and_debits,
    delta_column,
    fit_table,
    resolve_models,
)
from txkit.schema import require

__all__ = [
    "BREAK_KINDS",
    "balance_breaks",
    "balance_model_fit",
    "balance_summary",
    "balance_summary_and_breaks",
]

#: The ``kind`` values of :func:`balance_breaks`.
BREAK_KINDS: Final[tuple[str, ...]] = ("chain_gap", "bad_value", "reserve_mismatch", "other")

_REQUIRED: Final[dict[str, Kind]] = require(
    "id",
    "createdAt",
    "transType",
    "status",
    "toAmount",
    "toCurrency",
    "feeAmount",
    "taxAmount",
    "toBalanceAfterLedger",
    "toBalanceAfterAvailable",
    "fromBalanceAfterLedger",
    "fromBalanceAfterAvailable",
    "hasRollingReserve",
    "rollingReserve.amount",
    "rollingReserve.reserveReleaseDate",
)
# Absent on exports without conversions; then a conversion's from-side is unverifiable.
_OPTIONAL: Final[dict[str, Kind]] = require("fromAmount", "fromCurrency")
_MONEY: Final = (
    "toAmount",
    "fromAmount",
    "feeAmount",
    "taxAmount",
    "toBalanceAfterLedger",
    "toBalanceAfterAvailable",
    "fromBalanceAfterLedger",
    "fromBalanceAfterAvailable",
    "rollingReserve.amount",
)
_BALANCES: Final = _MONEY[4:8]
_UNCHECKED: Final = ("unverifiable", "not_reported")
#: What the ``model`` argument of the checks accepts: ``"auto"``, a model's name, a mapping
#: of wallet currency to model name (or None: that wallet is not checked), or the frame
#: :func:`~txkit.analysis.balance_model_choice` returns.
BalanceModel = str | Mapping[str, str | None] | pl.DataFrame
_SIDE_RANK: Final = {"from": 0, "to": 1}
_W = "currency"
_PERIOD = "_period"
_TS = pl.Datetime("ms", "UTC")
_ZERO = pl.lit(0, dtype=pl.Int128)  # Int128 has no unary minus in polars 2.1


def balance_breaks(
    transactions: Frame,
    *,
    opening: Mapping[str, Decimal | int | str] | None = None,
    history: Frame | None = None,
    model: BalanceModel = "auto",
) -> pl.DataFrame:
    """Check every balance-after value against the balance model; one row per break.

    The model (how fees and tax move a wallet) is chosen per wallet from the data by default
    (``model="auto"``, see :func:`balance_model_fit` and
    :func:`~txkit.analysis.balance_model_choice`); a wallet no candidate fits is not checked
    and has no breaks, so a wrong model never floods the result.

    Without ``opening``, the export may start anywhere in the wallets' history: each wallet's
    first reported ledger value anchors its chain (it cannot be checked itself), and reserves
    held from before the export are unknown. Available values are then checked against what
    the data can prove: available never exceeds ledger minus the known reserves, and the
    unknown earlier reserves can only be released, never grow; once an entry shows none are
    left, every later value must match exactly. With ``opening`` (each wallet's ledger balance
    before its first record, for an export that starts at the beginning of the wallets'
    history, so no reserve was held before it), every value of those wallets is checked
    exactly, the first included.

    Entries lacking what they need are unverifiable, never breaks: a successful record whose
    balance-after fields are all ``0`` or absent is *not reported* (as the provider documents
    for one KES transfer): the chain carries on through it by its own amounts, so a break
    right after it is still found; an entry whose delta is unknown (missing amount, fee or
    tax, or an unknown ``transType``) restarts its wallet's chain; an available value while a
    reserve of unknown amount or release date is held. Records without ``createdAt``, and the
    debit of a conversion without ``fromCurrency``, cannot be placed in a chain and are left
    out (the wallet they moved then shows a ``chain_gap``).

    What no export can show: a missing record just before the export's first entry on a
    wallet (the first value anchors the chain), and, without ``opening``, whether a wallet's
    first available values are right while reserves from before the export may be held.
    ``history`` closes that gap for a period (a month): the records just before it anchor the
    chains and show the reserves still held, so the period's first values are checked too.

    Args:
        transactions: the export (eager or lazy), e.g. from :func:`txkit.load_transactions`,
            in any row order.
        opening: optional ledger balance per wallet currency before the first record
            (``Decimal``, ``int`` or exact ``str``); see above. With ``history``: before the
            history's first record.
        history: optional records from before ``transactions`` (eager or lazy), all of them
            from some day up to the start of ``transactions``: a gap between the two would
            show as a ``chain_gap``. They are checked with ``transactions`` but only breaks
            in ``transactions`` are returned. A record in both counts once, as
            ``transactions`` has it. Reserves are held for a fixed time (30 days in the
            sandbox): history at least that long makes every available value checkable.
        model: ``"auto"`` (default: per wallet, the candidate that fits at least 95 % of its
            pairs of values, with ``history``'s pairs too), one of
            :data:`~txkit.analysis.BALANCE_MODELS` for every wallet, a mapping of currency to
            a model (or None: that wallet is not checked; wallets it lacks are chosen as by
            ``auto``), or the frame :func:`~txkit.analysis.balance_model_choice` returned.

    Returns:
        One row per break, by ``createdAt``, ``id`` then ``field``: ``currency`` (the wallet),
        ``model`` (the wallet's balance model), ``side`` (``ledger`` or ``available``),
        ``field`` (e.g. ``toBalanceAfterLedger``), ``id``, ``createdAt``, ``expected`` (what
        the chain gives), ``reported``, ``difference`` (reported minus expected; for a
        ``chain_gap`` the delta of the record that would close the gap) and ``kind``:
        ``chain_gap``, ``bad_value`` or ``other`` on the ledger side, ``reserve_mismatch`` on
        the available side. Money is exact, at the widest scale of the input's money columns.

    Raises:
        ValueError: a required column is missing or of the wrong type, ``opening`` holds a
            value that is not an exact amount at the frame's scale, or ``model`` is not one of
            the accepted values.

    Example:
        >>> breaks = balance_breaks(df)
        >>> breaks.group_by("currency", "kind").len()
    """
    checked, scale = _check(transactions, opening, "balance_breaks", history, model)
    return _breaks(checked, scale)


def _breaks(checked: pl.DataFrame, scale: int) -> pl.DataFrame:
    ledger = checked.filter(pl.col("ledger_kind").is_in(BREAK_KINDS)).select(
        pl.col(_W),
        "model",
        pl.lit("ledger").alias("side"),
        (pl.col("pos") + "BalanceAfterLedger").alias("field"),
        "id",
        "createdAt",
        pl.col("expected_ledger").alias("expected"),
        pl.col("reported_ledger").alias("reported"),
        pl.col("ledger_kind").alias("kind"),
    )
    available = checked.filter(pl.col("avail_kind") == "reserve_mismatch").select(
        pl.col(_W),
        "model",
        pl.lit("available").alias("side"),
        (pl.col("pos") + "BalanceAfterAvailable").alias("field"),
        "id",
        "createdAt",
        pl.col("avail_expected").alias("expected"),
        pl.col("reported_available").alias("reported"),
        pl.col("avail_kind").alias("kind"),
    )
    return (
        pl.concat([ledger, available])
        .sort(["createdAt", "id", "field"])
        .select(
            _W,
            "model",
            "side",
            "field",
            "id",
            "createdAt",
            from_minor(pl.col("expected"), scale).alias("expected"),
            from_minor(pl.col("reported"), scale).alias("reported"),
            from_minor(pl.col("reported") - pl.col("expected"), scale).alias("difference"),
            "kind",
        )
    )


def balance_summary(
    transactions: Frame,
    *,
    opening: Mapping[str, Decimal | int | str] | None = None,
    history: Frame | None = None,
    model: BalanceModel = "auto",
) -> pl.DataFrame:
    """Per wallet and side: how many entries were checked, unverifiable, and broken by kind.

    Args:
        transactions: the export (eager or lazy).
        opening: as for :func:`balance_breaks`.
        history: as for :func:`balance_breaks`; only entries of ``transactions`` are counted.
        model: as for :func:`balance_breaks`.

    Returns:
        One row per wallet ``currency`` and ``side`` (``ledger``, ``available``), sorted:
        ``model`` (the wallet's balance model; null when none fits, and then nothing is
        checked), ``entries`` (successful records moving that wallet), ``checked``,
        ``unverifiable`` (``checked + unverifiable == entries``; a chain's first entry without
        ``opening`` is unverifiable), ``not_reported`` (of the unverifiable, the records whose
        balance-after fields are all 0 or absent), ``breaks`` and one count per kind of
        :data:`BREAK_KINDS`.

    Raises:
        ValueError: as for :func:`balance_breaks`.
    """
    checked, _ = _check(transactions, opening, "balance_summary", history, model)
    return _summary(checked)


def balance_summary_and_breaks(
    transactions: Frame,
    *,
    opening: Mapping[str, Decimal | int | str] | None = None,
    history: Frame | None = None,
    model: BalanceModel = "auto",
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`balance_summary` and :func:`balance_breaks` of the same records, from one run of
    the checks (a page that shows both reads them once, not twice).

    Args:
        transactions, opening, history, model: as for :func:`balance_breaks`.

    Returns:
        The summary and the breaks, each as its own function returns it.

    Raises:
        ValueError: as for :func:`balance_breaks`.
    """
    checked, scale = _check(transactions, opening, "balance_summary_and_breaks", history, model)
    return _summary(checked), _breaks(checked, scale)


def _summary(checked: pl.DataFrame) -> pl.DataFrame:
    rows = []
    for side, kind_col in (("ledger", "ledger_kind"), ("available", "avail_kind")):
        kind = pl.col(kind_col)
        rows.append(
            checked.group_by(_W).agg(
                pl.lit(side).alias("side"),
                pl.col("model").first(),
                pl.len().cast(pl.UInt32).alias("entries"),
                (~kind.is_in(_UNCHECKED)).sum().cast(pl.UInt32).alias("checked"),
                kind.is_in(_UNCHECKED).sum().cast(pl.UInt32).alias("unverifiable"),
                (kind == "not_reported").sum().cast(pl.UInt32).alias("not_reported"),
                kind.is_in(BREAK_KINDS).sum().cast(pl.UInt32).alias("breaks"),
                *((kind == k).sum().cast(pl.UInt32).alias(k) for k in BREAK_KINDS),
            )
        )
    return (
        pl.concat(rows)
        .sort(_W, pl.col("side") != "ledger")
        .select(_W, "side", "model", pl.exclude(_W, "side", "model"))
    )


def balance_model_fit(
    transactions: Frame,
    *,
    opening: Mapping[str, Decimal | int | str] | None = None,
    history: Frame | None = None,
) -> pl.DataFrame:
    """How well each candidate balance model explains each wallet's reported ledger values.

    A pair is two consecutive reported ledger values of a wallet (records whose balance is not
    reported are passed through by their own amounts; an entry whose delta a model cannot
    compute restarts that model's chain). A model fits the pair when the later value equals
    the earlier one plus the model's deltas in between. The candidates are
    :data:`~txkit.analysis.BALANCE_MODELS`: ``net`` (fee and tax deducted on top of each
    other), ``fee-only`` (tax included in the fee) and ``gross`` (fees outside the wallet).
    :func:`~txkit.analysis.balance_model_choice` turns the table into one model per wallet,
    as :func:`balance_breaks` does with ``model="auto"``.

    Args:
        transactions: the export (eager or lazy).
        opening: as for :func:`balance_breaks`; pairs each wallet's first value with it.
        history: as for :func:`balance_breaks`; its pairs are tested too (more evidence).

    Returns:
        One row per wallet and candidate, by currency then candidate order: ``currency``,
        ``model``, ``checked`` (pairs tested), ``fitting`` (pairs the model explains
        exactly) and ``fit_rate`` (``fitting / checked``; null without pairs).

    Raises:
        ValueError: as for :func:`balance_breaks`.

    Example:
        >>> fit = balance_model_fit(df)
        >>> balance_model_choice(fit)  # one model per wallet, or none
    """
    entries, _, _, opening_minor = _prepare(
        transactions, opening, "balance_model_fit", history, reserves=False
    )
    return fit_table(entries, opening_minor)


# ---------------------------------------------------------------------------------------------
# The check, shared by both public functions: one row per entry (a record's effect on one
# wallet) with ``ledger_kind`` and ``avail_kind`` in ok / unverifiable / a break kind.


def _prepare(
    transactions: Frame,
    opening: Mapping[str, Decimal | int | str] | None,
    caller: str,
    history: Frame | None,
    *,
    reserves: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame | None, int, dict[str, int]]:
    lf = lazy(transactions, "transactions", caller)
    schema = lf.collect_schema()
    check_columns(schema, _REQUIRED, "transactions", caller, optional=_OPTIONAL)
    if opening is not None and not isinstance(opening, Mapping):
        raise ValueError(f"{caller}: opening must be a mapping of currency to amount")
    scales = [money_scale(schema, _MONEY), *map(decimals_of, (opening or {}).values())]
    if history is not None:
        hlf = lazy(history, "history", caller)
        hschema = hlf.collect_schema()
        check_columns(hschema, _REQUIRED, "history", caller, optional=_OPTIONAL)
        scales.append(money_scale(hschema, _MONEY))
    scale = max(scales)
    opening_minor = to_minor_map(opening or {}, scale, "opening")
    records = _successful(lf, schema, scale, period=True)
    if history is not None:
        earlier = _successful(hlf, hschema, scale, period=False)
        # A record in both (an overlap, or a status change seen later) counts once, as the
        # period has it.
        earlier = earlier.join(records.select("id"), on="id", how="anti")
        records = pl.concat([earlier, records], how="vertical")
    if not reserves:
        return _entries(records, reserves=False).collect(), None, scale, opening_minor
    entries, held = pl.collect_all([_entries(records), _reserves(records)])
    return entries, held, scale, opening_minor


def _check(
    transactions: Frame,
    opening: Mapping[str, Decimal | int | str] | None,
    caller: str,
    history: Frame | None = None,
    model: object = "auto",
) -> tuple[pl.DataFrame, int]:
    chosen = resolve_models(model, caller)
    entries, reserves, scale, opening_minor = _prepare(transactions, opening, caller, history)
    assert reserves is not None
    wallets: list[str] = entries[_W].unique().sort().to_list()
    if isinstance(chosen, str):
        per_wallet: dict[str, str | None] = dict.fromkeys(wallets, chosen)
    else:
        given = chosen or {}
        per_wallet = {w: given[w] for w in wallets if w in given}
        if len(per_wallet) < len(wallets):
            auto = balance_model_choice(fit_table(entries, opening_minor))
            per_wallet = {**dict(auto.select(_W, "model").iter_rows()), **per_wallet}
    model_of = pl.col(_W).replace_strict(per_wallet, default=None, return_dtype=pl.String)
    delta = pl.lit(None, dtype=pl.Int128)
    for name in BALANCE_MODELS:
        delta = pl.when(pl.col("model") == name).then(pl.col(delta_column(name))).otherwise(delta)
    entries = entries.with_columns(model_of.alias("model")).with_columns(delta.alias("delta"))
    entries = _held(entries, reserves)
    entries = ledger_chain(entries, opening_minor)
    entries = _available(entries, set(opening_minor))
    unchecked = pl.col("model").is_null()  # no model fits the wallet: nothing is checked
    entries = entries.with_columns(
        pl.when(pl.col("not_reported"))
        .then(pl.lit("not_reported"))
        .when(unchecked)
        .then(pl.lit("unverifiable"))
        .otherwise(pl.col(kind))
        .alias(kind)
        for kind in ("ledger_kind", "avail_kind")
    )
    if history is not None:
        entries = entries.filter(pl.col(_PERIOD))
    return entries, scale


def _successful(
    lf: pl.LazyFrame, schema: pl.Schema, scale: int, *, period: bool = True
) -> pl.LazyFrame:
    """``not_reported``: every balance-after field 0 or absent (as the provider documents for one
    KES transfer); those fields become null."""
    minor = {name: to_minor(column_or_null(schema, name, pl.Decimal(38, scale)), scale)
             for name in _MONEY}  # fmt: skip
    not_reported = pl.all_horizontal(minor[name].fill_null(0) == 0 for name in _BALANCES)
    balances = {
        name: pl.when(not_reported).then(None).otherwise(minor[name]).alias(name)
        for name in _BALANCES
    }
    return lf.filter((pl.col("status") == "successful") & pl.col("createdAt").is_not_null()).select(
        pl.col("id").cast(pl.String),
        pl.col("createdAt").cast(_TS),
        pl.col("transType").cast(pl.String),
        pl.col("toCurrency").cast(pl.String),
        column_or_null(schema, "fromCurrency", pl.String()),
        *(minor[name].alias(name) for name in _MONEY if name not in _BALANCES),
        *balances.values(),
        pl.col("hasRollingReserve"),
        pl.col("rollingReserve.reserveReleaseDate").cast(_TS).alias("release"),
        pl.lit(period).alias(_PERIOD),
        not_reported.alias("not_reported"),
    )


def _entries(records: pl.LazyFrame, *, reserves: bool = True) -> pl.LazyFrame:
    both = pl.concat([_to_side(records), _from_side(records)]).filter(pl.col(_W).is_not_null())
    rank = pl.col("pos").replace_strict(_SIDE_RANK, return_dtype=pl.Int8)
    if not reserves:
        return both.sort(["createdAt", "id", rank], nulls_last=True).select(
            _W, "reported_ledger", *map(delta_column, BALANCE_MODELS)
        )
    return (
        both.join(_reserve_adds(records), on=["id", "pos"], how="left")
        .with_columns(
            pl.col("reserve_add").fill_null(0),
            pl.col("unknown_add").fill_null(0),
            rank.alias("_rank"),
        )
        .sort(["createdAt", "id", "_rank"], nulls_last=True)
        .with_row_index("row")
    )


_KNOWN_TYPES: Final = ("collection", "transfer", "settlement", "conversion")


def _unknown_pos() -> pl.Expr:
    """An unknown type still reports a balance: an entry of unknown delta on its toCurrency wallet,
    on the side it reports."""
    return (
        pl.when(
            pl.col("toBalanceAfterLedger").is_not_null()
            | pl.col("toBalanceAfterAvailable").is_not_null()
        )
        .then(pl.lit("to"))
        .otherwise(pl.lit("from"))
    )


def _to_side(records: pl.LazyFrame) -> pl.LazyFrame:
    ttype = pl.col("transType")
    known = ttype.is_in(list(_KNOWN_TYPES))
    return records.filter(
        ttype.is_in(["collection", "conversion"]) | (~known & (_unknown_pos() == "to"))
    ).select(
        "id",
        "createdAt",
        pl.col("toCurrency").alias(_W),
        pl.lit("to").alias("pos"),
        *(
            pl.when(known).then(credit).alias(delta_column(m))
            for m, (credit, _) in credits_and_debits().items()
        ),
        pl.col("toBalanceAfterLedger").alias("reported_ledger"),
        pl.col("toBalanceAfterAvailable").alias("reported_available"),
        _PERIOD,
        "not_reported",
    )


def _from_side(records: pl.LazyFrame) -> pl.LazyFrame:
    ttype = pl.col("transType")
    known = ttype.is_in(list(_KNOWN_TYPES))
    return records.filter(
        ttype.is_in(["transfer", "settlement", "conversion"])
        | (~known & (_unknown_pos() == "from"))
    ).select(
        "id",
        "createdAt",
        pl.when(ttype == "conversion")
        .then(pl.col("fromCurrency"))
        .otherwise(pl.col("toCurrency"))
        .alias(_W),
        pl.lit("from").alias("pos"),
        *(
            pl.when(ttype == "conversion")
            .then(_ZERO - pl.col("fromAmount"))
            .when(known)
            .then(debit)
            .alias(delta_column(m))
            for m, (_, debit) in credits_and_debits().items()
        ),
        pl.col("fromBalanceAfterLedger").alias("reported_ledger"),
        pl.col("fromBalanceAfterAvailable").alias("reported_available"),
        _PERIOD,
        "not_reported",
    )


def _reserve_adds(records: pl.LazyFrame) -> pl.LazyFrame:
    holds = _holds()
    known_reserve = pl.col("rollingReserve.amount").is_not_null() & pl.col("release").is_not_null()
    return records.filter(pl.col("transType") == "collection").select(
        "id",
        pl.lit("to").alias("pos"),
        pl.when(holds & known_reserve)
        .then(pl.col("rollingReserve.amount"))
        .otherwise(0)
        .cast(pl.Int128)
        .alias("reserve_add"),
        (holds & ~known_reserve).cast(pl.Int64).alias("unknown_add"),
    )


def _holds() -> pl.Expr:
    amount = pl.col("rollingReserve.amount")
    flagged = pl.col("hasRollingReserve").fill_null(amount.is_not_null())
    over_at_once = pl.col("release").is_not_null() & (pl.col("release") <= pl.col("createdAt"))
    return flagged & ~over_at_once


def _reserves(records: pl.LazyFrame) -> pl.LazyFrame:
    amount = pl.col("rollingReserve.amount")
    return records.filter(
        (pl.col("transType") == "collection")
        & _holds()
        & pl.col("release").is_not_null()
        & pl.col("toCurrency").is_not_null()
    ).select(
        pl.col("toCurrency").alias(_W),
        "release",
        amount.fill_null(0).cast(pl.Int128).alias("amount"),
        amount.is_null().cast(pl.Int64).alias("unknown"),
    )


def _held(entries: pl.DataFrame, reserves: pl.DataFrame) -> pl.DataFrame:
    released = reserves.sort("release").with_columns(
        pl.col("amount").cum_sum().over(_W).alias("released"),
        pl.col("unknown").cum_sum().over(_W).alias("released_unknown"),
    )
    return (
        entries.with_columns(
            pl.col("reserve_add").cum_sum().over(_W).alias("added"),
            pl.col("unknown_add").cum_sum().over(_W).alias("added_unknown"),
        )
        .join_asof(
            released.select(_W, "release", "released", "released_unknown"),
            left_on="createdAt",
            right_on="release",
            by=_W,
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(
            (pl.col("added") - pl.col("released").fill_null(0)).alias("held"),
            (pl.col("added_unknown") - pl.col("released_unknown").fill_null(0)).alias(
                "unknown_held"
            ),
        )
        .drop("added", "added_unknown", "release", "released", "released_unknown")
    )


def _available(entries: pl.DataFrame, complete: set[str]) -> pl.DataFrame:
    """``available_offset`` = reported available - (ledger - known reserves held)."""
    e = entries.with_columns(
        pl.when(pl.col("unknown_held") == 0)
        .then(pl.col("reported_available") - (pl.col("ledger_basis") - pl.col("held")))
        .alias("available_offset")
    )
    offset = pl.col("available_offset")
    prev, nxt = pl.col("prev_available_offset"), pl.col("next_available_offset")
    # The offset is available minus (ledger - known reserves held); 0 with every reserve known.
    # Reserves held from before a partial export make it -(what they still hold): never above
    # 0, and only rising as they are released. A value that breaks this while its neighbours
    # keep it is the odd one out; a lasting change cannot be attributed to one entry.
    odd = (
        (offset > 0) | ((offset > nxt) & (prev <= nxt)) | ((offset < prev) & (nxt >= prev))
    ).fill_null(False)
    # Once an entry (confirmed by its successor) shows 0, no earlier reserve is left: from
    # then on every value must match exactly.
    settles = (offset == 0) & ~odd & (nxt.is_null() | (nxt >= 0))
    complete_wallet = pl.col(_W).is_in(list(complete)) if complete else pl.lit(False)
    rows = (
        e.filter(offset.is_not_null())
        .select("row", _W, "available_offset")
        .with_columns(
            offset.shift(1).over(_W).alias("prev_available_offset"),
            offset.shift(-1).over(_W).alias("next_available_offset"),
        )
        .with_columns(
            odd.alias("odd"),
            (complete_wallet | settles.cum_max().shift(1).over(_W).fill_null(False)).alias(
                "settled"
            ),
        )
        .select(
            "row",
            pl.when(pl.col("settled"))
            .then(pl.when(offset != 0).then(pl.lit("reserve_mismatch")).otherwise(pl.lit("ok")))
            .when(pl.col("odd"))
            .then(pl.lit("reserve_mismatch"))
            .when(offset == 0)
            .then(pl.lit("ok"))
            .otherwise(pl.lit("unverifiable"))
            .alias("avail_kind"),
            # The model's value; while unsettled, with the previous entry's earlier reserves.
            pl.when(pl.col("settled"))
            .then(pl.lit(0, dtype=pl.Int128))
            .otherwise(pl.min_horizontal(prev.fill_null(0), pl.lit(0)).cast(pl.Int128))
            .alias("_offset"),
        )
    )
    return (
        e.join(rows, on="row", how="left", maintain_order="left")
        .with_columns(
            pl.col("avail_kind").fill_null("unverifiable"),
            (pl.col("ledger_basis") - pl.col("held") + pl.col("_offset").fill_null(0)).alias(
                "avail_expected"
            ),
        )
        .drop("_offset")
    )
