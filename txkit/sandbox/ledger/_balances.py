"""Balance phase: walk the records in order, moving each wallet's balances.

:func:`balances` applies the balance model of the package docstring (successful records only,
rolling reserves held for :data:`RESERVE_DAYS` days), turns debits that cannot be met into
``failed`` records, and draws each record's fee and tax in record order.
"""

from __future__ import annotations

import heapq
from functools import partial
from typing import TYPE_CHECKING

from txkit.sandbox.ledger._fees import (
    fee_tax,
)
from txkit.sandbox.ledger._model import (
    _MIN_DEBIT,
    _RESERVE_SHARE,
    DAY_MS,
    RESERVE_BP,
    RESERVE_DAYS,
    WALLET_CURRENCIES,
    _convert,
)

if TYPE_CHECKING:
    from txkit.sandbox.ledger._generator import _Generator


def balances(g: _Generator) -> None:
    """Walk the records in order, moving balances and failing debits that cannot be met."""
    cols, rand, n = g.cols, g.rng.random, g.n
    ledger = dict.fromkeys(WALLET_CURRENCIES, 0)
    held = dict.fromkeys(WALLET_CURRENCIES, 0)
    heaps: dict[str, list[tuple[int, int]]] = {c: [] for c in WALLET_CURRENCIES}
    reserve_ms = RESERVE_DAYS * DAY_MS
    charge = partial(fee_tax, g)
    seq = g.seq
    to_l: list[int | None] = [None] * n
    to_a: list[int | None] = [None] * n
    from_l: list[int | None] = [None] * n
    from_a: list[int | None] = [None] * n
    fees = [0] * n
    taxes = [0] * n
    reserves = [0] * n

    def release(currency: str, now: int) -> None:
        heap = heaps[currency]
        while heap and heap[0][0] <= now:
            held[currency] -= heapq.heappop(heap)[1]

    for i in range(n):
        ttype = cols.ttype[i]
        cur = cols.cur[i]
        now = cols.created[i]
        if cols.status[i] != "successful":
            fees[i], taxes[i] = charge(i, ttype, cur, cols.amt[i])
            continue
        if ttype == "collection":
            amount = cols.amt[i]
            fee, tax = charge(i, ttype, cur, amount)
            release(cur, now)
            if (
                cols.chan[i] == "CARD"
                and cur in ("NGN", "USD")
                and not g.tie[i]
                and rand() < _RESERVE_SHARE
            ):
                r = (amount * RESERVE_BP + 5_000) // 10_000
                heapq.heappush(heaps[cur], (now + reserve_ms, r))
                held[cur] += r
                reserves[i] = r
            ledger[cur] += amount - fee - tax
            to_l[i] = ledger[cur]
            to_a[i] = ledger[cur] - held[cur]
            seq[cur].append(i)
        elif ttype != "conversion":
            release(cur, now)
            fee, tax = charge(i, ttype, cur, cols.amt[i])
            room = ledger[cur] - held[cur] - fee - tax
            amount = _debit_amount(g, ttype, cur, cols.amt[i], room)
            if amount is None:
                cols.status[i] = "failed"
                fees[i], taxes[i] = fee, tax
                continue
            cols.amt[i] = amount
            ledger[cur] -= amount + fee + tax
            from_l[i] = ledger[cur]
            from_a[i] = ledger[cur] - held[cur]
            seq[cur].append(i)
        else:
            fcur = cols.fcur[i]
            assert fcur is not None
            release(fcur, now)
            release(cur, now)
            famount = _debit_amount(g, ttype, fcur, cols.famt[i], ledger[fcur] - held[fcur])
            amount = cols.amt[i] if famount is None else _convert(famount, (fcur, cur))
            fee, tax = charge(i, ttype, cur, amount)
            if famount is None or amount - fee - tax <= 0:
                cols.status[i] = "failed"
                fees[i], taxes[i] = fee, tax
                continue
            cols.famt[i] = famount
            cols.amt[i] = amount
            ledger[fcur] -= famount
            from_l[i] = ledger[fcur]
            from_a[i] = ledger[fcur] - held[fcur]
            ledger[cur] += amount - fee - tax
            to_l[i] = ledger[cur]
            to_a[i] = ledger[cur] - held[cur]
            seq[fcur].append(i)
            seq[cur].append(i)
        fees[i], taxes[i] = fee, tax
    cols.to_l, cols.to_a, cols.from_l, cols.from_a = to_l, to_a, from_l, from_a
    cols.fee, cols.tax, cols.reserve = fees, taxes, reserves
    g.final_ledger = ledger
    g.open_reserves = {c: sorted(h) for c, h in heaps.items()}


def _debit_amount(g: _Generator, ttype: str, cur: str, desired: int, room: int) -> int | None:
    """How much a debit takes out of ``room`` (available minus fees), or None to fail it."""
    rand = g.rng.random
    minimum = _MIN_DEBIT[cur]
    if ttype == "settlement":
        amount = room * (30 + int(rand() * 60)) // 100
    elif desired * 2 <= room:
        return desired
    else:
        amount = room * (5 + int(rand() * 45)) // 100
    amount -= amount % 100
    return amount if amount >= minimum else None
