"""Timeline phase: when each record was created, its id, and late updates.

:func:`times` draws ``createdAt`` over the calendar (volume growing over time, quieter
weekends, busier month ends, a day-shaped hour profile) and plants equal-millisecond ties;
:func:`ids` makes ObjectId-like ids, sorted within each group of equal timestamps;
:func:`late_updates` moves the ``updatedAt`` of reversed records to days after their payment
(a reversal comes days later), so that a service filtering dates on ``updatedAt`` answers
observably differently from one filtering on ``createdAt``.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from txkit.sandbox._render import iso_ms
from txkit.sandbox.ledger._model import (
    _HOUR_WEIGHTS,
    _TIE_RATE,
    DAY_MS,
    HOUR_MS,
    _cumulative,
)

if TYPE_CHECKING:
    from txkit.sandbox.ledger._state import LedgerState

_UPDATED = re.compile(rb'"updatedAt":"([^"]*)"')


def times(g: LedgerState) -> None:
    """Draw every record's ``createdAt`` (sorted) and plant ties (``g.tie``)."""
    rng, n = g.rng, g.n
    days = (g.end_ms - g.start_ms) // DAY_MS
    first = date.fromordinal(date(1970, 1, 1).toordinal() + g.start_ms // DAY_MS)
    cum: list[float] = []
    acc = 0.0
    for d in range(days):
        day = first + timedelta(days=d)
        weight = 1.0 + d / max(days - 1, 1)  # volume doubles over the calendar
        if day.weekday() >= 5:
            weight *= 0.7
        if day.day >= 25:
            weight *= 1.15
        acc += weight
        cum.append(acc)
    _, hour_cum = _cumulative((h, w) for h, w in enumerate(_HOUR_WEIGHTS))
    day_of = rng.choices(range(days), cum_weights=cum, k=n)
    hour_of = rng.choices(range(24), cum_weights=hour_cum, k=n)
    rand = rng.random
    start = g.start_ms
    created = [
        start + d * DAY_MS + h * HOUR_MS + int(rand() * HOUR_MS)
        for d, h in zip(day_of, hour_of, strict=True)
    ]
    created.sort()
    tie = [False] * n
    for i in range(1, n):
        if rand() < _TIE_RATE:
            created[i] = created[i - 1]
            tie[i] = tie[i - 1] = True
    g.cols.created = created
    g.tie = tie


def ids(g: LedgerState) -> None:
    """ObjectId-like ids: seconds, one of three 'process' values, a running counter."""
    rng, n = g.rng, g.n
    procs = [rng.getrandbits(40) for _ in range(3)]
    counter = rng.getrandbits(24)
    rand = rng.random
    created = g.cols.created
    oid = [
        f"{c // 1000:08x}{procs[int(rand() * 3)]:010x}{(counter + i) & 0xFFFFFF:06x}"
        for i, c in enumerate(created)
    ]
    # Records are ordered by createdAt, then id: sort the ids inside each group of equal
    # timestamps, planted ties and chance collisions alike (balances chain in this order).
    i = 0
    while i < n:
        j = i + 1
        while j < n and created[j] == created[i]:
            j += 1
        if j - i > 1:
            oid[i:j] = sorted(oid[i:j])
        i = j
    g.cols.oid = oid
    g.id_proc = procs[0]
    g.id_counter = counter + n


def late_updates(g: LedgerState, bodies: list[bytes]) -> None:
    """Move each reversed record's ``updatedAt`` 1 to 14 days after its payment.

    The renderer dates a reversal a day after the payment; here a random source of its own
    adds 0 to 13 more days (never past the calendar's end), rewriting the rendered bytes.
    Only reversed records change.
    """
    cols = g.cols
    rand = random.Random(f"txkit-late-updates:{g.seed}").random
    last = g.end_ms - 1
    for i, status in enumerate(cols.status):
        if status != "reversed":
            continue
        extra = int(rand() * 13 * DAY_MS)
        match = _UPDATED.search(bodies[i])
        assert match is not None
        updated = _epoch_ms_of(match.group(1).decode())
        moved = max(updated, min(updated + extra, last))
        bodies[i] = bodies[i][: match.start(1)] + iso_ms(moved).encode() + bodies[i][match.end(1) :]


def _epoch_ms_of(iso: str) -> int:
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
