"""Checks of records against the sandbox's models: balances and fees.

:func:`check_balance_model` walks each wallet's balance-after chain and classifies every value
that does not follow the model; :func:`check_fees` checks fees against the schedule and taxes
against the reported fee. Both read served records (``Decimal``, ``int`` or ``str`` money).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from txkit.sandbox.ledger._fees import (
    FEE_SCHEDULE,
    schedule_tax,
)
from txkit.sandbox.ledger._model import (
    _FROM,
    _TO,
    BALANCE_MODELS,
    _epoch_ms,
)


@dataclass(frozen=True, slots=True)
class BalanceViolation:
    """A balance-after value that does not follow the balance model.

    Attributes:
        id: the record's ``id``.
        currency: the wallet.
        field: the balance field (``toBalanceAfterLedger`` ...).
        kind: ``jump`` (the chain continues from the reported value: something not in the
            records moved the balance before this record), ``ledger`` (a single wrong ledger
            value, the chain resumes after it), ``available`` (available is not ledger minus
            held reserves) or ``missing`` (a successful record without the field).
        expected: what the model gives.
        reported: what the record says (``None`` when missing).
    """

    id: str
    currency: str
    field: str
    kind: str
    expected: Decimal
    reported: Decimal | None


@dataclass(frozen=True, slots=True)
class FeeViolation:
    """A fee or tax that does not follow :data:`FEE_SCHEDULE`."""

    id: str
    field: str
    expected: Decimal
    reported: Decimal


# -- checks -----------------------------------------------------------------------------------


def _dec(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value)


def _ms(value: str) -> int:
    return _epoch_ms(datetime.fromisoformat(value.replace("Z", "+00:00")))


class _Side(NamedTuple):
    pos: int
    record: Mapping[str, Any]
    delta: Decimal
    ledger_field: str
    avail_field: str
    created: int


def check_balance_model(
    records: Iterable[Mapping[str, Any]],
    *,
    opening: Mapping[str, Decimal] | None = None,
    balance_model: str = "net",
) -> list[BalanceViolation]:
    """Check records against the sandbox's balance model (see the package docstring).

    Wallets are walked in ``createdAt``/``id`` order. A wrong ledger value is classified by
    looking at the wallet's next record that reports balances: if that one continues from the
    reported value, the chain *jumped* (a move not in ``records``, e.g. a record missing from
    the export, and the walk continues from the reported value); otherwise the value alone is
    wrong (``ledger``) and the walk continues from the expected value. Available values are
    checked against the walked ledger value minus the reserves held at that moment. A record
    whose four balance-after fields are all ``0`` does not report balances: it is not checked,
    and the walk carries on through it by its own amounts.

    Args:
        records: transaction dicts as served (money as ``Decimal``, ``int`` or ``str``), in
            any order.
        opening: each wallet's balance before the first record (default: zero).
        balance_model: ``net`` (the tax moves balances on top of the fee) or ``fee-only``
            (the tax is part of the fee).

    Returns:
        The violations, in record order.
    """
    if balance_model not in BALANCE_MODELS:
        raise ValueError(
            f"balance_model must be one of {', '.join(BALANCE_MODELS)}, got {balance_model!r}"
        )
    ordered = sorted(records, key=lambda r: (_ms(r["createdAt"]), r["id"]))
    sides, reserves = _wallet_moves(ordered, tax_moves=balance_model == "net")
    found: list[tuple[int, BalanceViolation]] = []
    for currency, events in sides.items():
        opening_balance = (opening or {}).get(currency, Decimal(0))
        found += _walk_wallet(currency, events, reserves.get(currency, []), opening_balance)
    found.sort(key=lambda item: (item[0], item[1].field))
    return [v for _, v in found]


def _wallet_moves(
    ordered: list[Mapping[str, Any]], *, tax_moves: bool
) -> tuple[dict[str, list[_Side]], dict[str, list[tuple[int, int, Decimal]]]]:
    sides: dict[str, list[_Side]] = {}
    reserves: dict[str, list[tuple[int, int, Decimal]]] = {}
    for pos, rec in enumerate(ordered):
        if rec.get("status") != "successful":
            continue
        created = _ms(rec["createdAt"])
        ttype = rec.get("transType")
        to_amount = _dec(rec.get("toAmount")) or Decimal(0)
        fee = _dec(rec.get("feeAmount")) or Decimal(0)
        tax = (_dec(rec.get("taxAmount")) or Decimal(0)) if tax_moves else Decimal(0)
        to_cur = rec.get("toCurrency")
        if ttype == "collection":
            sides.setdefault(to_cur, []).append(
                _Side(pos, rec, to_amount - fee - tax, *_TO, created)
            )
            reserve = rec.get("rollingReserve")
            if isinstance(reserve, Mapping) and reserve.get("amount") is not None:
                release = _ms(reserve["reserveReleaseDate"])
                reserves.setdefault(to_cur, []).append(
                    (pos, release, _dec(reserve["amount"]) or Decimal(0))
                )
        elif ttype in ("transfer", "settlement"):
            sides.setdefault(to_cur, []).append(
                _Side(pos, rec, -(to_amount + fee + tax), *_FROM, created)
            )
        elif ttype == "conversion":
            from_amount = _dec(rec.get("fromAmount")) or Decimal(0)
            sides.setdefault(rec.get("fromCurrency"), []).append(
                _Side(pos, rec, -from_amount, *_FROM, created)
            )
            sides.setdefault(to_cur, []).append(
                _Side(pos, rec, to_amount - fee - tax, *_TO, created)
            )
    return sides, reserves


class _HeldReserves:
    """The reserves of one wallet held at each step of its walk."""

    def __init__(self, reserves: list[tuple[int, int, Decimal]]) -> None:
        self._reserves = reserves
        self._next = 0
        self._heap: list[tuple[int, int, Decimal]] = []
        self.held = Decimal(0)

    def at(self, side: _Side) -> Decimal:
        """The amount held just after ``side``: reserves taken so far, less those released."""
        reserves, heap = self._reserves, self._heap
        while self._next < len(reserves) and reserves[self._next][0] <= side.pos:
            pos, release, amount = reserves[self._next]
            heapq.heappush(heap, (release, pos, amount))
            self.held += amount
            self._next += 1
        while heap and heap[0][0] <= side.created:
            self.held -= heapq.heappop(heap)[2]
        return self.held


def _walk_wallet(
    currency: str,
    events: list[_Side],
    reserves: list[tuple[int, int, Decimal]],
    balance: Decimal,
) -> list[tuple[int, BalanceViolation]]:
    found: list[tuple[int, BalanceViolation]] = []
    held_reserves = _HeldReserves(reserves)
    for k, side in enumerate(events):
        held = held_reserves.at(side)
        expected = balance + side.delta
        if _not_reported(side.record):
            balance = expected
            continue
        reported = _dec(side.record.get(side.ledger_field))
        if reported is None:
            found.append(_violation(side, currency, side.ledger_field, "missing", expected, None))
            balance = expected
        elif reported != expected:
            jumped = _jumped(events, k, reported)
            kind = "jump" if jumped else "ledger"
            found.append(_violation(side, currency, side.ledger_field, kind, expected, reported))
            balance = reported if jumped else expected
        else:
            balance = expected
        avail_expected = balance - held
        avail = _dec(side.record.get(side.avail_field))
        if avail != avail_expected:
            kind = "missing" if avail is None else "available"
            found.append(_violation(side, currency, side.avail_field, kind, avail_expected, avail))
    return found


def _jumped(events: list[_Side], k: int, reported: Decimal) -> bool:
    moved = Decimal(0)
    for later in events[k + 1 :]:
        moved += later.delta
        if not _not_reported(later.record):
            return _dec(later.record.get(later.ledger_field)) == reported + moved
    return False


def _violation(
    side: _Side, currency: str, field: str, kind: str, want: Decimal, got: Decimal | None
) -> tuple[int, BalanceViolation]:
    return side.pos, BalanceViolation(side.record["id"], currency, field, kind, want, got)


def _not_reported(record: Mapping[str, Any]) -> bool:
    """All four balance-after fields present and 0."""
    values = [_dec(record.get(name)) for name in (*_TO, *_FROM)]
    return all(v is not None and v == 0 for v in values)


def check_fees(records: Iterable[Mapping[str, Any]]) -> list[FeeViolation]:
    """Check every record's ``feeAmount`` against the schedule and ``taxAmount`` against the fee.

    The tax is checked against the *reported* fee, so a wrong fee is reported once.

    Args:
        records: transaction dicts as served.

    Returns:
        The violations (``feeAmount`` or ``taxAmount``), in the order of ``records``.
    """
    out: list[FeeViolation] = []
    cent = Decimal("0.01")
    for rec in records:
        amount = _dec(rec.get("toAmount"))
        fee = _dec(rec.get("feeAmount"))
        tax = _dec(rec.get("taxAmount"))
        if amount is None or fee is None or tax is None:
            continue
        rule = FEE_SCHEDULE.get(rec.get("transType", ""), {}).get(rec.get("toCurrency", ""))
        if rule is None:
            continue
        expected_fee = Decimal(rule.fee(int(amount / cent))).scaleb(-2)
        if fee != expected_fee:
            out.append(FeeViolation(rec["id"], "feeAmount", expected_fee, fee))
        expected_tax = Decimal(schedule_tax(int(fee / cent))).scaleb(-2)
        if tax != expected_tax:
            out.append(FeeViolation(rec["id"], "taxAmount", expected_tax, tax))
    return out
