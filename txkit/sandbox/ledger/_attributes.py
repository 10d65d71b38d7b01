"""Attributes phase: type, currency, amount, channel, party, status, reference.

:func:`attributes` draws each record's type, currencies, amounts, payment channel, customer
or recipient and status (in-flight statuses mostly in the last three days);
:func:`force_statuses` makes every status appear in small ledgers; :func:`references` draws
unique ``transactionReference`` values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from txkit.sandbox.ledger._model import (
    _CONVERSION_PAIRS,
    _CURRENCY_WEIGHTS,
    _RECENT_MS,
    _STATUS_WEIGHTS,
    _TYPE_CUM,
    HOUR_MS,
    _convert,
    _cumulative,
    _draw_amount,
    _pick,
)
from txkit.schema import STATUSES

if TYPE_CHECKING:
    from txkit.sandbox.ledger._state import LedgerState


def attributes(g: LedgerState) -> None:
    rng, n, cols = g.rng, g.n, g.cols
    rand = rng.random
    currencies = {t: _cumulative(w) for t, w in _CURRENCY_WEIGHTS.items()}
    pairs = _cumulative(_CONVERSION_PAIRS)
    statuses = {k: _cumulative(w) for k, w in _STATUS_WEIGHTS.items()}
    recent_from = g.end_ms - _RECENT_MS
    last_hour = g.end_ms - HOUR_MS
    n_customers = len(g.ctx.customers)
    ttypes, curs, fcurs, amts, famts, chans, parties, sts = [], [], [], [], [], [], [], []
    for i in range(n):
        u = rand()
        ttype = "conversion"
        for bound, name in _TYPE_CUM:
            if u < bound:
                ttype = name
                break
        chan = None
        fcur = None
        famt = None
        if ttype == "conversion":
            pair = _pick(rand, pairs)
            fcur, cur = pair
            famt = _draw_amount(rng, "conversion", fcur)
            amt = _convert(famt, pair)
            party = 0
        else:
            cur = _pick(rand, currencies[ttype])
            amt = _draw_amount(rng, ttype, cur)
            if ttype == "collection":
                chan = "VA" if cur == "NGN" and rand() < 0.7 else "CARD"
                party = int(rand() * n_customers)
            else:
                party = int(rand() * 40)
        created = cols.created[i]
        status = _pick(rand, statuses[(ttype, created >= recent_from)])
        if status == "declined" and chan == "VA":
            status = "failed"
        elif status == "expired" and chan != "VA":
            status = "abandoned"
        if status in ("abandoned", "expired") and created >= last_hour:
            status = "pending"  # a payment is abandoned only after an hour
        ttypes.append(ttype)
        curs.append(cur)
        fcurs.append(fcur)
        amts.append(amt)
        famts.append(famt)
        chans.append(chan)
        parties.append(party)
        sts.append(status)
    cols.ttype, cols.cur, cols.fcur, cols.amt, cols.famt = ttypes, curs, fcurs, amts, famts
    cols.chan, cols.party, cols.status = chans, parties, sts


def force_statuses(g: LedgerState) -> None:
    """Make sure every status appears (small ledgers), on late successful collections."""
    cols = g.cols
    if g.n < 50:
        return
    present = set(cols.status)
    for status in STATUSES:
        if status in present:
            continue
        for i in range(g.n - 1, -1, -1):
            if cols.ttype[i] != "collection" or cols.status[i] != "successful":
                continue
            if status == "expired" and cols.cur[i] != "NGN":
                continue
            if status in ("abandoned", "expired") and cols.created[i] >= g.end_ms - HOUR_MS:
                continue
            cols.status[i] = status
            if status == "expired":
                cols.chan[i] = "VA"
            elif status == "declined":
                cols.chan[i] = "CARD"
            break


def references(g: LedgerState) -> None:
    getrandbits = g.rng.getrandbits
    refs = []
    used = g.used_refs
    for _ in range(g.n):
        ref = f"TXK-{getrandbits(48):012X}"
        while ref in used:
            ref = f"TXK-{getrandbits(48):012X}"
        used.add(ref)
        refs.append(ref)
    g.cols.ref = refs
