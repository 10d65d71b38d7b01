"""Orders and assembly phase: the merchant's orders, the ground truth, the :class:`Ledger`.

:func:`orders` writes one order per exported collection, planting ``order_*`` anomalies, and
dates each order when it was placed, a little before it was paid (:func:`_order_times`):
within the payment's own calendar month, except for the planted late payments (an order of
the last evening of a month paid just after midnight). :func:`assemble` builds the ledger's
index, orders frame and sorted ground truth.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from txkit.sandbox._render import (
    iso_ms,
    money,
)
from txkit.sandbox.ledger._bank import bank_account
from txkit.sandbox.ledger._model import (
    _ORDER_STATUS_SWAP,
    DAY_MS,
    HOUR_MS,
    _draw_amount,
)
from txkit.sandbox.ledger._records import Ledger

#: Planted late payments are paid within this long after midnight on a month's first day.
_LATE_WINDOW_MS: Final = 6 * HOUR_MS

if TYPE_CHECKING:
    from txkit.sandbox.ledger._state import LedgerState


def orders(g: LedgerState) -> list[tuple[str, int, str, str, str, str]]:
    """The merchant's orders as ``(reference, amount, currency, status, date, customer)``
    rows."""
    order_kind = _order_anomalies(g)
    grouped = _choose_groups(g, order_kind)
    ordered = _order_times(g, {**order_kind, **dict.fromkeys(grouped, "group")})
    order_days = _iso_days(ordered)
    rows: list[tuple[str, int, str, str, str, str]] = []
    rows.extend(_group_orders(g, grouped, order_days))
    rows.extend(_collection_orders(g, order_kind, grouped, order_days))
    rows.extend(_extra_orders(g))
    rows.sort(key=lambda r: (r[4], r[0]))
    return rows


def _order_anomalies(g: LedgerState) -> dict[int, str]:
    cols, rand = g.cols, g.rng.random
    free = [
        i
        for i in range(g.n)
        if cols.ttype[i] == "collection" and i not in g.taken and i not in g.protected
    ]
    order_kind: dict[int, str] = {}
    for kind in ("order_missing", "order_amount", "order_status", "order_currency"):
        count = 0
        tries = max(2_000, g.quota[kind] * 500)
        while count < g.quota[kind] and free and tries > 0:
            tries -= 1
            i = free[int(rand() * len(free))]
            if i in order_kind or g.hidden[i]:
                continue
            order_kind[i] = kind
            count += 1
    return order_kind


def _collection_orders(
    g: LedgerState,
    order_kind: dict[int, str],
    grouped: dict[int, tuple[str, str, int]],
    order_days: list[str],
) -> list[tuple[str, int, str, str, str, str]]:
    cols, rand = g.cols, g.rng.random
    customers = g.ctx.customers
    rows: list[tuple[str, int, str, str, str, str]] = []
    for i in range(g.n):
        if cols.ttype[i] != "collection" or i in grouped:
            continue
        ref, amount, cur, status = cols.ref[i], cols.amt[i], cols.cur[i], cols.status[i]
        kind = order_kind.get(i)
        if kind == "order_missing":
            g.add_truth(i, kind)
            continue
        if kind == "order_amount":
            change = max(100, amount * (1 + int(rand() * 20)) // 100 // 100 * 100)
            reported = amount + change if rand() < 0.5 or amount <= change else amount - change
            g.add_truth(i, kind, field="amount", expected=money(amount), reported=money(reported))
            amount = reported
        elif kind == "order_status":
            reported = (
                _ORDER_STATUS_SWAP[int(rand() * 3)] if status == "successful" else "successful"
            )
            g.add_truth(i, kind, field="status", expected=status, reported=reported)
            status = reported
        elif kind == "order_currency":
            others = [c for c in ("NGN", "USD", "GHS", "KES") if c != cur]
            reported = others[int(rand() * len(others))]
            g.add_truth(i, kind, field="currency", expected=cur, reported=reported)
            cur = reported
        rows.append((ref, amount, cur, status, order_days[i], customers[cols.party[i]][1]))
    return rows


def _extra_orders(g: LedgerState) -> list[tuple[str, int, str, str, str, str]]:
    rand = g.rng.random
    customers = g.ctx.customers
    days = (g.end_ms - g.start_ms) // DAY_MS
    # The extra orders' customers come from a random source of their own (the records and
    # the other orders are the same as before orders had customers).
    pick = random.Random(f"txkit-order-customers:{g.seed}").random
    rows: list[tuple[str, int, str, str, str, str]] = []
    for _ in range(g.quota["order_extra"]):
        ref = g.new_reference()
        day_ms = g.start_ms + int(rand() * days) * DAY_MS
        amount = _draw_amount(g.rng, "collection", "NGN")
        day = iso_ms(day_ms)[:10]
        customer = customers[int(pick() * len(customers))][1]
        rows.append((ref, amount, "NGN", "successful", day, customer))
        g.truth.append(
            (
                day_ms,
                {
                    "kind": "order_extra",
                    "id": None,
                    "reference": ref,
                    "currency": "NGN",
                    "createdAt": iso_ms(day_ms),
                    "transType": "collection",
                    "amount": money(amount),
                    "date": day,
                },
            )
        )
    return rows


#: Planted per month (with a non-zero anomaly rate): orders paid in parts and collections
#: covering several orders, each in two forms (the order keeps a payment's reference, or
#: carries the merchant's own invoice number).
_GROUP_FORMS: Final = (
    ("paid_in_parts", "kept"),
    ("paid_in_parts", "invoice"),
    ("grouped", "kept"),
    ("grouped", "invoice"),
)
# Members lie this close in time, and this far inside their month (the reconciliation's
# date window is 3 days; a group across a month's end would be two months' business).
_GROUP_SPAN_MS: Final = 2 * DAY_MS
_GROUP_MARGIN_MS: Final = 4 * DAY_MS


def _choose_groups(g: LedgerState, order_kind: dict[int, str]) -> dict[int, tuple[str, str, int]]:
    out: dict[int, tuple[str, str, int]] = {}
    if g.anomaly_rate <= 0:
        return out
    cols = g.cols
    rng = random.Random(f"txkit-order-groups:{g.seed}")
    busy = {cols.party[i] for i in order_kind} | {
        cols.party[i] for i in range(g.n) if g.hidden[i] and cols.ttype[i] == "collection"
    }

    def free(i: int) -> bool:
        return (
            cols.ttype[i] == "collection"
            and cols.status[i] == "successful"
            and not g.hidden[i]
            and i not in g.taken
            and i not in g.protected
            and i not in order_kind
            and i not in cols.existing
            and cols.party[i] not in busy
        )

    starts = _month_starts(g.start_ms, g.end_ms)
    number = 0
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else g.end_ms
        pairs, singles = _group_candidates(g, start, end, free, rng)
        for kind, form in _GROUP_FORMS:
            members = _take_members(kind, pairs, singles, busy, cols.party)
            if members is None:
                continue
            busy.add(cols.party[members[0]])
            number += 1
            for i in members:
                out[i] = (kind, form, number)
    return out


def _group_candidates(
    g: LedgerState, start: int, end: int, free: Callable[[int], bool], rng: random.Random
) -> tuple[list[tuple[int, int]], list[int]]:
    cols = g.cols
    lo = bisect.bisect_left(cols.created, start + _GROUP_MARGIN_MS)
    hi = bisect.bisect_left(cols.created, end - _GROUP_MARGIN_MS)
    by_customer: dict[tuple[int, str], list[int]] = {}
    for i in range(lo, hi):
        if free(i):
            by_customer.setdefault((cols.party[i], cols.cur[i]), []).append(i)
    pairs = [
        (a, b)
        for members in by_customer.values()
        for a, b in itertools.pairwise(members)
        if cols.created[b] - cols.created[a] <= _GROUP_SPAN_MS
    ]
    singles = [i for members in by_customer.values() for i in members if cols.amt[i] >= 2_000]
    rng.shuffle(pairs)
    rng.shuffle(singles)
    return pairs, singles


def _take_members(
    kind: str,
    pairs: list[tuple[int, int]],
    singles: list[int],
    busy: set[int],
    party: list[int],
) -> list[int] | None:
    if kind == "paid_in_parts":
        while pairs and (party[pairs[-1][0]] in busy):
            pairs.pop()
        if not pairs:
            return None
        a, b = pairs.pop()
        return [a, b]
    while singles and party[singles[-1]] in busy:
        singles.pop()
    if not singles:
        return None
    return [singles.pop()]


def _group_orders(
    g: LedgerState, grouped: dict[int, tuple[str, str, int]], order_days: list[str]
) -> list[tuple[str, int, str, str, str, str]]:
    cols = g.cols
    rng = random.Random(f"txkit-order-group-orders:{g.seed}")
    customers = g.ctx.customers
    by_group: dict[int, list[int]] = {}
    for i, (_, _, number) in sorted(grouped.items()):
        by_group.setdefault(number, []).append(i)
    rows: list[tuple[str, int, str, str, str, str]] = []

    def invoice() -> str:
        ref = f"INV-{rng.getrandbits(40):010X}"
        while ref in g.used_refs:
            ref = f"INV-{rng.getrandbits(40):010X}"
        g.used_refs.add(ref)
        return ref

    for _, members in sorted(by_group.items()):
        kind, form, _ = grouped[members[0]]
        first = members[0]
        cur, customer = cols.cur[first], customers[cols.party[first]][1]
        day = min(order_days[i] for i in members)
        entry: dict[str, Any] = {
            "kind": kind,
            "form": form,
            "currency": cur,
            "customerEmail": customer,
            "createdAt": iso_ms(cols.created[first]),
        }
        if kind == "paid_in_parts":
            entry |= _parts_order(g, members, form, day, customer, invoice, rows)
        else:
            entry |= _split_order(g, first, form, day, customer, invoice, rng, rows)
        g.group_truth.append(entry)
    return rows


def _parts_order(
    g: LedgerState,
    members: list[int],
    form: str,
    day: str,
    customer: str,
    invoice: Callable[[], str],
    rows: list[tuple[str, int, str, str, str, str]],
) -> dict[str, Any]:
    cols = g.cols
    first, cur = members[0], g.cols.cur[members[0]]
    total = sum(cols.amt[i] for i in members)
    reference = cols.ref[first] if form == "kept" else invoice()
    rows.append((reference, total, cur, "successful", day, customer))
    return {
        "reference": reference,
        "amount": money(total),
        "parts": [
            {"reference": cols.ref[i], "id": cols.oid[i], "amount": money(cols.amt[i])}
            for i in members
        ],
    }


def _split_order(
    g: LedgerState,
    first: int,
    form: str,
    day: str,
    customer: str,
    invoice: Callable[[], str],
    rng: random.Random,
    rows: list[tuple[str, int, str, str, str, str]],
) -> dict[str, Any]:
    cols = g.cols
    cur, amount = cols.cur[first], cols.amt[first]
    split = max(100, min(amount - 100, amount * (30 + int(rng.random() * 40)) // 100))
    split -= split % 100 if split % 100 and split > 100 else 0
    shares = [split, amount - split]
    refs = [cols.ref[first] if form == "kept" else invoice(), invoice()]
    for ref, share in zip(refs, shares, strict=True):
        rows.append((ref, share, cur, "successful", day, customer))
    return {
        "reference": cols.ref[first],
        "id": cols.oid[first],
        "amount": money(amount),
        "orders": [{"reference": r, "amount": money(a)} for r, a in zip(refs, shares, strict=True)],
    }


def assemble(
    g: LedgerState, bodies: list[bytes], orders: list[tuple[str, int, str, str, str, str]]
) -> Ledger:
    """The :class:`Ledger`: the rendered bodies, the index, the orders and the truths."""
    return Ledger(
        seed=g.seed,
        records=g.n,
        start_month=g.start_month,
        months=g.months,
        anomaly_rate=g.anomaly_rate,
        start_ms=g.start_ms,
        end_ms=g.end_ms,
        index=_index_frame(g),
        orders=_orders_frame(orders),
        ground_truth=_ground_truth(g),
        late_payments=sorted(g.late_truth, key=lambda e: (e["createdAt"], e["id"])),
        zero_balances=g.zero_truth,
        balance_model=g.balance_model,
        zero_balance_rate=g.zero_balance_rate,
        late_payments_per_month=g.late_payments_per_month,
        repeat_underpayers=g.repeat_underpayers,
        repeaters=g.repeat_truth,
        _bodies=bodies,
        _context=g.ctx,
        _final_ledger=dict(g.final_ledger),
        _open_reserves=_reserves_open_at_end(g),
        _id_proc=g.id_proc,
        _id_counter=g.id_counter,
        order_groups=sorted(g.group_truth, key=lambda e: (e["createdAt"], e["reference"])),
        bank=bank_account(g),
    )


def _index_frame(g: LedgerState) -> pl.DataFrame:
    cols = g.cols
    return pl.DataFrame(
        {
            "id": cols.oid,
            "createdAt": cols.created,
            "transType": cols.ttype,
            "status": cols.status,
            "toCurrency": cols.cur,
            "toAmount": cols.amt,
            "transactionReference": cols.ref,
            "hidden": g.hidden,
        },
        schema={
            "id": pl.String,
            "createdAt": pl.Int64,
            "transType": pl.String,
            "status": pl.String,
            "toCurrency": pl.String,
            "toAmount": pl.Int64,
            "transactionReference": pl.String,
            "hidden": pl.Boolean,
        },
    )


def _orders_frame(orders: list[tuple[str, int, str, str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "reference": [r[0] for r in orders],
            "amount": [Decimal(r[1]).scaleb(-2) for r in orders],
            "currency": [r[2] for r in orders],
            "status": [r[3] for r in orders],
            "date": [date.fromisoformat(r[4]) for r in orders],
            "customer": [r[5] for r in orders],
        },
        schema={
            "reference": pl.String,
            "amount": pl.Decimal(38, 2),
            "currency": pl.String,
            "status": pl.String,
            "date": pl.Date,
            "customer": pl.String,
        },
    )


def _ground_truth(g: LedgerState) -> list[dict[str, Any]]:
    return [
        e
        for _, e in sorted(
            g.truth, key=lambda t: (t[0], t[1]["kind"], t[1]["id"] or "", t[1]["reference"])
        )
    ]


def _reserves_open_at_end(g: LedgerState) -> dict[str, list[tuple[int, int]]]:
    created = g.cols.created
    last = created[-1] if created else g.start_ms
    return {
        c: [(release, amount) for release, amount in h if release > last]
        for c, h in g.open_reserves.items()
    }


def _order_times(g: LedgerState, order_kind: dict[int, str]) -> list[int]:
    """Epoch ms, from a random source of their own (see "Order dates and late payments" in
    :mod:`txkit.sandbox.ledger`)."""
    cols, n = g.cols, g.n
    rng = random.Random(f"txkit-order-times:{g.seed}")
    rand = rng.random
    starts = _month_starts(g.start_ms, g.end_ms)
    ordered = list(cols.created)
    for i in range(n):
        if cols.ttype[i] != "collection":
            continue
        u = rand()
        if u < 0.7:
            lag = 60_000 + int(rand() * 2 * HOUR_MS)
        elif u < 0.95:
            lag = 2 * HOUR_MS + int(rand() * 22 * HOUR_MS)
        else:
            lag = DAY_MS + int(rand() * 2 * DAY_MS)
        created = cols.created[i]
        month_start = starts[bisect.bisect_right(starts, created) - 1]
        ordered[i] = max(created - lag, month_start)
    if g.late_payments_per_month <= 0:
        return ordered
    for month_start in starts[1:]:
        first = bisect.bisect_left(cols.created, month_start)
        last = bisect.bisect_left(cols.created, month_start + _LATE_WINDOW_MS)
        candidates = [
            i
            for i in range(first, last)
            if cols.ttype[i] == "collection"
            and cols.status[i] == "successful"
            and i not in g.taken
            and i not in g.protected
            and i not in order_kind
            and not g.hidden[i]
        ]
        rng.shuffle(candidates)
        for i in sorted(candidates[: g.late_payments_per_month]):
            ordered[i] = month_start - 60_000 - int(rand() * (4 * HOUR_MS - 60_000))
            g.late_truth.append(
                {
                    "kind": "late_payment",
                    "id": cols.oid[i],
                    "reference": cols.ref[i],
                    "currency": cols.cur[i],
                    "createdAt": iso_ms(cols.created[i]),
                    "transType": cols.ttype[i],
                    "amount": money(cols.amt[i]),
                    "order_date": iso_ms(ordered[i])[:10],
                    "ordered_at": iso_ms(ordered[i]),
                }
            )
    return ordered


def _month_starts(start_ms: int, end_ms: int) -> list[int]:
    first = date.fromordinal(date(1970, 1, 1).toordinal() + start_ms // DAY_MS)
    out = []
    year, month = first.year, first.month
    while True:
        ms = (date(year, month, 1).toordinal() - date(1970, 1, 1).toordinal()) * DAY_MS
        if ms >= end_ms:
            return out
        out.append(ms)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def _iso_days(values: list[int]) -> list[str]:
    series = pl.Series(values, dtype=pl.Int64).cast(pl.Datetime("ms", "UTC"))
    return series.dt.strftime("%Y-%m-%d").to_list()
