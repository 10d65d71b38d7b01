"""Balance phase: walk the records in order, moving each wallet's balances.

:func:`balances` applies the balance model of the package docstring (``net`` or ``fee-only``;
successful records only, rolling reserves held for :data:`RESERVE_DAYS` days), turns debits
that cannot be met into ``failed`` records, and draws each record's fee and tax in record
order. :func:`pick_zero_balances` chooses the successful transfers that report their balances
as ``0`` (after the balance anomalies are planted, away from them) and :func:`zero_bodies`
rewrites their rendered bytes; the true chain is unchanged.
"""

from __future__ import annotations

import heapq
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from txkit.sandbox._render import iso_ms, money
from txkit.sandbox.ledger._fees import (
    fee_tax,
)
from txkit.sandbox.ledger._model import (
    _MIN_DEBIT,
    _RESERVE_SHARE,
    _SPACING,
    DAY_MS,
    RESERVE_BP,
    RESERVE_DAYS,
    WALLET_CURRENCIES,
    _convert,
)

if TYPE_CHECKING:
    from txkit.sandbox.ledger._state import LedgerState


@dataclass(slots=True)
class _Walk:
    """The balance walk's state: each wallet's ledger balance and reserves held (with the
    heap of their release times), and the balance-after, fee, tax and reserve columns it
    fills."""

    g: LedgerState
    charge: Callable[[int, str, str, int], tuple[int, int]]
    tax_moves: bool
    ledger: dict[str, int]
    held: dict[str, int]
    heaps: dict[str, list[tuple[int, int]]]
    to_l: list[int | None]
    to_a: list[int | None]
    from_l: list[int | None]
    from_a: list[int | None]
    fees: list[int]
    taxes: list[int]
    reserves: list[int]

    @classmethod
    def start(cls, g: LedgerState) -> _Walk:
        """Empty wallets, and columns of ``g.n`` empty values."""
        n = g.n
        return cls(
            g,
            partial(fee_tax, g),
            # Under "net" the tax moves the balance on top of the fee; under "fee-only" it is
            # part of the fee and does not move the balance by itself.
            g.balance_model == "net",
            dict.fromkeys(WALLET_CURRENCIES, 0),
            dict.fromkeys(WALLET_CURRENCIES, 0),
            {c: [] for c in WALLET_CURRENCIES},
            [None] * n,
            [None] * n,
            [None] * n,
            [None] * n,
            [0] * n,
            [0] * n,
            [0] * n,
        )

    def release(self, currency: str, now: int) -> None:
        """Release the wallet's reserves due by ``now``."""
        heap = self.heaps[currency]
        while heap and heap[0][0] <= now:
            self.held[currency] -= heapq.heappop(heap)[1]

    def conversion(self, i: int, cur: str, now: int) -> None:
        """A successful conversion: out of one wallet into another, or failed when the source
        wallet cannot meet it or the fee would take it all."""
        g, cols, ledger, held = self.g, self.g.cols, self.ledger, self.held
        fcur = cols.fcur[i]
        assert fcur is not None
        self.release(fcur, now)
        self.release(cur, now)
        famount = _debit_amount(g, "conversion", fcur, cols.famt[i], ledger[fcur] - held[fcur])
        amount = cols.amt[i] if famount is None else _convert(famount, (fcur, cur))
        fee, tax = self.charge(i, "conversion", cur, amount)
        self.fees[i], self.taxes[i] = fee, tax
        if famount is None or amount - fee - (tax if self.tax_moves else 0) <= 0:
            cols.status[i] = "failed"
            return
        cols.famt[i] = famount
        cols.amt[i] = amount
        ledger[fcur] -= famount
        self.from_l[i] = ledger[fcur]
        self.from_a[i] = ledger[fcur] - held[fcur]
        ledger[cur] += amount - fee - (tax if self.tax_moves else 0)
        self.to_l[i] = ledger[cur]
        self.to_a[i] = ledger[cur] - held[cur]
        g.seq[fcur].append(i)
        g.seq[cur].append(i)

    def finish(self) -> None:
        """Hand the filled columns, the final balances and the open reserves to ``g``."""
        g, cols = self.g, self.g.cols
        cols.to_l, cols.to_a, cols.from_l, cols.from_a = (
            self.to_l,
            self.to_a,
            self.from_l,
            self.from_a,
        )
        cols.fee, cols.tax, cols.reserve = self.fees, self.taxes, self.reserves
        g.final_ledger = self.ledger
        g.open_reserves = {c: sorted(h) for c, h in self.heaps.items()}


def balances(g: LedgerState) -> None:
    """Walk the records in order, moving balances and failing debits that cannot be met."""
    walk = _Walk.start(g)
    cols, rand, n, seq = g.cols, g.rng.random, g.n, g.seq
    ledger, held, heaps, tax_moves = walk.ledger, walk.held, walk.heaps, walk.tax_moves
    to_l, to_a, from_l, from_a = walk.to_l, walk.to_a, walk.from_l, walk.from_a
    fees, taxes, reserves = walk.fees, walk.taxes, walk.reserves
    charge, release = walk.charge, walk.release
    reserve_ms = RESERVE_DAYS * DAY_MS
    # Every record but a successful conversion (93 % of a 60,000-record ledger) is handled
    # inline, so that most records cost no extra call; conversions (7 %) are a step.
    for i in range(n):
        ttype = cols.ttype[i]
        cur = cols.cur[i]
        now = cols.created[i]
        if cols.status[i] != "successful":
            fees[i], taxes[i] = charge(i, ttype, cur, cols.amt[i])
        elif ttype == "collection":
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
            ledger[cur] += amount - fee - (tax if tax_moves else 0)
            to_l[i] = ledger[cur]
            to_a[i] = ledger[cur] - held[cur]
            seq[cur].append(i)
            fees[i], taxes[i] = fee, tax
        elif ttype != "conversion":
            release(cur, now)
            fee, tax = charge(i, ttype, cur, cols.amt[i])
            room = ledger[cur] - held[cur] - fee - (tax if tax_moves else 0)
            amount = _debit_amount(g, ttype, cur, cols.amt[i], room)
            fees[i], taxes[i] = fee, tax
            if amount is None:
                cols.status[i] = "failed"
                continue
            cols.amt[i] = amount
            ledger[cur] -= amount + fee + (tax if tax_moves else 0)
            from_l[i] = ledger[cur]
            from_a[i] = ledger[cur] - held[cur]
            seq[cur].append(i)
        else:
            walk.conversion(i, cur, now)
    walk.finish()


def _debit_amount(g: LedgerState, ttype: str, cur: str, desired: int, room: int) -> int | None:
    """``room`` is available minus fees; None fails the debit."""
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


_FROM_BALANCES = re.compile(
    rb'"fromBalanceAfterAvailable":-?[0-9.]+,"fromBalanceAfterLedger":-?[0-9.]+,'
)
_ZEROS = (
    b'"toBalanceAfterAvailable":0,"toBalanceAfterLedger":0,'
    b'"fromBalanceAfterAvailable":0,"fromBalanceAfterLedger":0,'
)


def pick_zero_balances(g: LedgerState) -> None:
    """Choose the successful transfers that report all four balance-after fields as ``0``.

    Each eligible transfer (successful, served, no planted anomaly, at least
    :data:`_SPACING` + 1 records on its wallet away from a planted balance anomaly, so that
    every anomaly stays identifiable) is chosen with probability ``zero_balance_rate``, from a
    random source of its own: the rest of the ledger is the same whatever the rate.
    """
    g.zero_rows = []
    if g.zero_balance_rate <= 0:
        return
    rand = random.Random(f"txkit-zero-balances:{g.seed}").random
    cols = g.cols
    planted = g.balance_planted
    for cur, seq in g.seq.items():
        near = set()
        for q in planted[cur]:
            near.update(range(q - _SPACING - 1, q + _SPACING + 2))
        for p, i in enumerate(seq):
            if cols.ttype[i] != "transfer" or p in near:
                continue
            if i in g.taken or i in g.protected or g.hidden[i]:
                continue
            if rand() < g.zero_balance_rate:
                g.zero_rows.append(i)
    g.zero_rows.sort()
    for i in g.zero_rows:
        g.zero_truth.append(
            {
                "kind": "zero_balance",
                "id": cols.oid[i],
                "reference": cols.ref[i],
                "currency": cols.cur[i],
                "createdAt": iso_ms(cols.created[i]),
                "transType": cols.ttype[i],
                "fromBalanceAfterLedger": money(cols.from_l[i] or 0),
                "fromBalanceAfterAvailable": money(cols.from_a[i] or 0),
            }
        )


def zero_bodies(g: LedgerState, bodies: list[bytes]) -> None:
    """Rewrite the rendered bytes of the chosen transfers: four balance-after fields of ``0``."""
    for i in g.zero_rows:
        body, count = _FROM_BALANCES.subn(_ZEROS, bodies[i], count=1)
        assert count == 1, "a successful transfer renders its from-balances"
        bodies[i] = body
