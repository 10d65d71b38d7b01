"""Anomaly phase: payment, balance and reference anomalies with their ground truth.

:func:`plant_payment_anomalies` (before the balance pass) turns NGN virtual-account payments
into under- and overpayments; :func:`plant_balance_anomalies` (after it) hides records and
falsifies balance-after values, spaced apart on each wallet so each stays identifiable;
:func:`plant_duplicates` reuses an earlier record's reference; :func:`plant_repeat_underpayers`
(an option, off by default) gives some customers several underpayments in the calendar's last
month. Fee anomalies live in
:mod:`._fees`, order anomalies in :mod:`._orders`.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable
from datetime import date, timedelta
from typing import TYPE_CHECKING

from txkit.sandbox._render import iso_ms, money
from txkit.sandbox.ledger._model import (
    _SPACING,
    WALLET_CURRENCIES,
    _draw_amount,
)

if TYPE_CHECKING:
    from txkit.sandbox.ledger._state import LedgerState


def plant_payment_anomalies(g: LedgerState) -> None:
    cols, rand = g.cols, g.rng.random
    for kind, label in (("underpayment", "UNDERPAYMENT"), ("overpayment", "OVERPAYMENT")):

        def ok(i: int) -> bool:
            return (
                i >= g.n // 20
                and g.is_ngn_va(i)
                and cols.status[i] == "successful"
                and cols.amt[i] >= 20_000
            )

        for i in g.sample(kind, g.quota[kind], ok):
            original = None
            if rand() < 0.8:
                for _ in range(50):
                    j = i - 1 - int(rand() * min(i, 2_000))
                    if j not in g.taken and g.is_ngn_va(j):
                        original = j
                        break
            if original is not None:
                expected = cols.amt[original]
                reference = cols.ref[original]
                g.protected.add(original)
                cols.children.setdefault(original, []).append(cols.oid[i])
            else:
                expected = _draw_amount(g.rng, "collection", "NGN") + 20_000
                reference = g.new_reference()
            expected_major = expected // 100
            if kind == "underpayment":
                paid = max(1, expected_major * (50 + int(rand() * 48)) // 100) * 100
                paid = min(paid, expected - 100)
            else:
                paid = expected_major * (102 + int(rand() * 48)) // 100 * 100
                paid = max(paid, expected + 100)
            cols.amt[i] = paid
            cols.existing[i] = (reference, expected, label)
            g.add_truth(
                i,
                kind,
                expected_amount=money(expected),
                paid_amount=money(paid),
                existing_reference=reference,
                existing_id=None if original is None else cols.oid[original],
                existing_in_export=original is not None,
            )


def _wallets(g: LedgerState, i: int) -> tuple[str, ...]:
    cols = g.cols
    if cols.ttype[i] == "conversion":
        return (cols.fcur[i], cols.cur[i])  # type: ignore[return-value]
    return (cols.cur[i],)


def _spaced(g: LedgerState, i: int, planted: dict[str, set[int]]) -> bool:
    for wallet in _wallets(g, i):
        seq = g.seq[wallet]
        p = bisect.bisect_left(seq, i)
        if p < _SPACING or p > len(seq) - _SPACING - 2:
            return False
        if any(q in planted[wallet] for q in range(p - _SPACING, p + _SPACING + 1)):
            return False
    return True


def _mark(g: LedgerState, i: int, planted: dict[str, set[int]]) -> None:
    for wallet in _wallets(g, i):
        planted[wallet].add(bisect.bisect_left(g.seq[wallet], i))


def plant_balance_anomalies(g: LedgerState) -> None:
    """Hide records and falsify balance-after values, each spaced apart on its wallets."""
    planted: dict[str, set[int]] = {c: set() for c in WALLET_CURRENCIES}
    g.balance_planted = planted  # wallet -> positions in g.seq (zero balances keep away)
    _hide_collections(g, planted)
    _falsify_ledger_balances(g, planted)
    _falsify_available_balances(g, planted)


def _hide_collections(g: LedgerState, planted: dict[str, set[int]]) -> None:
    cols = g.cols

    def ok_missing(i: int) -> bool:
        return (
            cols.ttype[i] == "collection"
            and cols.status[i] == "successful"
            and not cols.reserve[i]
            and _spaced(g, i, planted)
        )

    for _ in range(g.quota["missing_from_export"]):
        picked = g.sample("missing_from_export", 1, ok_missing)
        if not picked:
            break
        i = picked[0]
        _mark(g, i, planted)
        g.hidden[i] = True
        g.add_truth(
            i,
            "missing_from_export",
            transType=cols.ttype[i],
            status=cols.status[i],
            amount=money(cols.amt[i]),
        )


def _ok_bad(g: LedgerState, planted: dict[str, set[int]]) -> Callable[[int], bool]:
    cols = g.cols

    def ok_bad(i: int) -> bool:
        return cols.status[i] == "successful" and _spaced(g, i, planted)

    return ok_bad


def _falsify_ledger_balances(g: LedgerState, planted: dict[str, set[int]]) -> None:
    cols, rand = g.cols, g.rng.random
    ok_bad = _ok_bad(g, planted)
    for _ in range(g.quota["bad_balance"]):
        picked = g.sample("bad_balance", 1, ok_bad)
        if not picked:
            break
        i = picked[0]
        _mark(g, i, planted)
        side = _side(g, i)
        values = cols.to_l if side == "to" else cols.from_l
        true = values[i]
        assert true is not None
        delta = 1 + int(rand() * 50_000)
        reported = true - delta if rand() < 0.5 and true >= delta else true + delta
        values[i] = reported
        g.add_truth(
            i,
            "bad_balance",
            currency=_side_currency(g, i, side),
            field=f"{side}BalanceAfterLedger",
            expected=money(true),
            reported=money(reported),
        )


def _falsify_available_balances(g: LedgerState, planted: dict[str, set[int]]) -> None:
    cols, rand = g.cols, g.rng.random
    for i in _reserve_mismatches(g, planted):
        side = _side_with_reserve(g, i)
        ledger_values, avail_values = (
            (cols.to_l, cols.to_a) if side == "to" else (cols.from_l, cols.from_a)
        )
        true = avail_values[i]
        ledger = ledger_values[i]
        assert true is not None and ledger is not None
        if ledger > true:
            reported = ledger  # the held reserve was not deducted
        else:
            delta = 1 + int(rand() * 20_000)
            reported = true - delta if true >= delta else true + delta
        avail_values[i] = reported
        g.add_truth(
            i,
            "reserve_mismatch",
            currency=_side_currency(g, i, side),
            field=f"{side}BalanceAfterAvailable",
            expected=money(true),
            reported=money(reported),
            reserve_held=money(ledger - true),
        )


def _reserve_mismatches(g: LedgerState, planted: dict[str, set[int]]) -> list[int]:
    """All chosen before any is falsified."""
    cols = g.cols
    ok_bad = _ok_bad(g, planted)

    def held(i: int) -> int:
        side = _side_with_reserve(g, i)
        ledger = cols.to_l[i] if side == "to" else cols.from_l[i]
        avail = cols.to_a[i] if side == "to" else cols.from_a[i]
        return (ledger or 0) - (avail or 0)

    chosen: list[int] = []
    for _ in range(g.quota["reserve_mismatch"]):
        # Prefer records with a reserve held: the realistic bug is not deducting it.
        got = g.sample(
            "reserve_mismatch", 1, lambda i: ok_bad(i) and held(i) > 0, tries=500
        ) or g.sample("reserve_mismatch", 1, ok_bad)
        if not got:
            break
        _mark(g, got[0], planted)
        chosen.append(got[0])
    return chosen


def _side(g: LedgerState, i: int) -> str:
    ttype = g.cols.ttype[i]
    if ttype == "collection":
        return "to"
    if ttype == "conversion":
        return "to" if g.rng.random() < 0.5 else "from"
    return "from"


def _side_with_reserve(g: LedgerState, i: int) -> str:
    cols = g.cols
    if cols.ttype[i] == "collection":
        return "to"
    if cols.ttype[i] == "conversion" and (cols.to_l[i] or 0) > (cols.to_a[i] or 0):
        return "to"
    return "from"


def _side_currency(g: LedgerState, i: int, side: str) -> str:
    cols = g.cols
    if side == "from" and cols.ttype[i] == "conversion":
        return cols.fcur[i]  # type: ignore[return-value]
    return cols.cur[i]


def plant_duplicates(g: LedgerState) -> None:
    cols, rand = g.cols, g.rng.random
    kind = "duplicate_reference"

    def ok(j: int) -> bool:
        return j >= 1 and not g.hidden[j]

    for _ in range(g.quota[kind]):
        picked = g.sample(kind, 1, ok)
        if not picked:
            break
        j = picked[0]
        k = None
        for _ in range(20):
            cand = j - 1 - int(rand() * min(j, 50))
            if cand not in g.taken and cand not in g.protected and not g.hidden[cand]:
                k = cand
                break
        if k is None:
            del g.taken[j]
            continue
        g.protected.add(k)
        cols.ref[j] = cols.ref[k]
        g.add_truth(j, kind, original_id=cols.oid[k])


def plant_repeat_underpayers(g: LedgerState) -> None:
    """Give ``repeat_underpayers`` customers two or three underpayments each.

    The underpayments planted in the calendar's last month (the default report month) are
    grouped, from a random source of their own, into customers of two or three: every
    underpayment of a group takes the customer (``customerEmail``, name, bank) of the group's
    first. Nothing else changes. Groups are listed in ``g.repeat_truth``; fewer than asked
    when the month holds too few underpayments.
    """
    if g.repeat_underpayers <= 0:
        return
    cols = g.cols
    last_month = _month_start(g.end_ms - 1)
    candidates = [
        i
        for i, (_, _, label) in sorted(cols.existing.items())
        if label == "UNDERPAYMENT" and cols.created[i] >= last_month and not g.hidden[i]
    ]
    rng = random.Random(f"txkit-repeat-underpayers:{g.seed}")
    rng.shuffle(candidates)
    for _ in range(g.repeat_underpayers):
        size = 2 if rng.random() < 0.6 else 3
        if len(candidates) < 2:
            break
        group = sorted(candidates[:size])
        del candidates[:size]
        party = cols.party[group[0]]
        for i in group:
            cols.party[i] = party
        g.repeat_truth.append(
            {
                "kind": "repeat_underpayer",
                "customerEmail": g.ctx.customers[party][1],
                "currency": "NGN",
                "ids": [cols.oid[i] for i in group],
                "references": [cols.ref[i] for i in group],
                "createdAt": [iso_ms(cols.created[i]) for i in group],
            }
        )


def _month_start(ms: int) -> int:
    day = date(1970, 1, 1) + timedelta(milliseconds=ms)
    return (date(day.year, day.month, 1) - date(1970, 1, 1)) // timedelta(milliseconds=1)
