"""The fault layer: what every fault does to a ``/transaction`` request and to the data.

The HTTP handler validates a request and then asks :class:`FaultEffects` for the reply; every
fault's effect lives here, so a new fault is added in :mod:`txkit.sandbox.faults` (its
parameter) and here (its effect), never in the handler:

* before the page: the ``rate`` token bucket, delays (``latency``, ``slow``), dropped
  connections, 429 (``Retry-After`` written per ``retry_after_form``), 5xx, HTML, and the
  ``max_skip`` refusal;
* on the page: ``date_shift``/``bounds``/``date_field`` (which records match), ``cap``,
  ``max_skip`` in ``empty`` mode, ``shuffle_ties``, ``drift``, ``envelope_extras``;
* after the page, before the client can see it: the data changes of an export in progress
  (``arrivals``, ``status_changes``, ``settle``, ``swaps``), through the
  :class:`~txkit.sandbox._store.Store`'s edit primitives.
"""

from __future__ import annotations

import random
import re
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Final

import orjson
import polars as pl

from txkit.sandbox._store import Store
from txkit.sandbox.faults import (
    NEXT_STATUS,
    SETTLE_NEXT,
    Faults,
    drift_body,
    precision_body,
    retry_after_value,
)
from txkit.sandbox.ledger import Arrival

if TYPE_CHECKING:
    from txkit.sandbox._query import Query

__all__ = ["FaultEffects", "Reply", "Settled"]

JSON: Final = "application/json; charset=utf-8"
HTML_ERROR: Final = (
    "<!DOCTYPE html>\n<html><head><title>{code} {reason}</title></head>\n"
    "<body><center><h1>{code} {reason}</h1></center><hr><center>nginx</center></body></html>\n"
)
HTML_PAGE: Final = (
    b"<!DOCTYPE html>\n<html><head><title>Maintenance</title></head>\n"
    b"<body><h1>We'll be right back</h1><p>The service is under maintenance.</p></body></html>\n"
)
#: What an in-flight record becomes under ``status_changes``.
IN_FLIGHT_NEXT: Final = {
    "verified": "successful",
    "processing": "failed",
    "pending": "abandoned",
    "initiated": "abandoned",
    "ongoing": "abandoned",
}


_UPDATED_VALUE: Final = re.compile(rb'"updatedAt":"([^"]*)"')


@dataclass(frozen=True, slots=True)
class Settled:
    """One ``settle`` change: the record's version before and after (``updatedAt`` text)."""

    id: str
    old_status: str
    old_updated: str
    new_status: str
    new_updated: str


@dataclass(frozen=True, slots=True)
class Reply:
    """What the handler sends: a response, or nothing (``drop``: close the connection)."""

    status: int = 200
    body: bytes = b""
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


def error_body(message: str) -> bytes:
    """The JSON envelope of an error response."""
    return orjson.dumps({"success": False, "message": message, "data": {}})


class TokenBucket:
    """A token bucket: ``rate`` tokens per second, at most ``burst`` saved (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._params: tuple[float, int] | None = None
        self._tokens = 0.0
        self._last = 0.0

    def take(self, rate: float, burst: int, now: float | None = None) -> float:
        """Take a token if one is there.

        Args:
            rate: tokens added per second.
            burst: the bucket's size (it starts full, and again when rate or burst change).
            now: the clock (``time.monotonic()`` by default).

        Returns:
            0.0 when a token was taken, else the seconds until the next token.
        """
        moment = time.monotonic() if now is None else now
        with self._lock:
            if self._params != (rate, burst):
                self._params = (rate, burst)
                self._tokens = float(burst)
                self._last = moment
            self._tokens = min(float(burst), self._tokens + (moment - self._last) * rate)
            self._last = moment
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return 0.0
            return (1.0 - self._tokens) / rate


class FaultEffects:
    """Applies the faults to requests and to the :class:`Store` (one per running sandbox)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._reset_state()

    def _reset_state(self) -> None:
        self.bucket = TokenBucket()
        self.arrivals_done = 0
        self.changes_done = 0
        self.swaps_done = 0
        #: Every ``settle`` change since the last reset, in order (the tests' oracle).
        self.settled: list[Settled] = []
        self._arrivals: tuple[int, list[Arrival]] | None = None
        self._change_order: tuple[int, list[str]] | None = None
        self._drift: dict[str, tuple[bytes, bytes]] = {}
        self._planted: tuple[int, int, int] | None = None

    def reset(self) -> None:
        """Undo every data change and forget the faults' progress (the bucket refills)."""
        with self.store.lock:
            self.store.reset()
            self._reset_state()

    # -- one request -----------------------------------------------------------------------

    def reply(self, query: Query, faults: Faults, seq: int, request_id: str = "") -> Reply:
        """The reply to the ``seq``-th valid ``/transaction`` request (may sleep first).

        Args:
            query: the validated query.
            faults: the sandbox's faults as they are now.
            seq: the request's sequence number (1 for the first).
            request_id: the response's ``X-Request-Id`` (``envelope_extras`` repeats it).

        Returns:
            The :class:`Reply`; for a served page, the data changes the faults ask for have
            been applied after the page was computed (the client's next request sees them).
        """
        if faults.rate > 0:
            wait = self.bucket.take(faults.rate, faults.burst)
            if wait > 0:
                return self._too_many(faults, wait)
        decision = faults.decide(seq)
        if decision.delay:
            time.sleep(decision.delay)
        if decision.drop:
            return Reply(drop=True)
        if decision.status == 429:
            return self._too_many(faults, float(faults.retry_after))
        if decision.status is not None:
            reason = HTTPStatus(decision.status).phrase
            html = HTML_ERROR.format(code=decision.status, reason=reason).encode()
            return Reply(decision.status, html, "text/html")
        if decision.not_json:
            return Reply(200, HTML_PAGE, "text/html; charset=utf-8")
        if (
            faults.max_skip is not None
            and query.skip > faults.max_skip
            and faults.max_skip_mode == "reject"
        ):
            return Reply(
                422,
                error_body(
                    f"Invalid skip {query.skip}: skip must be at most {faults.max_skip}; "
                    "narrow the query (for example by date) to reach further records"
                ),
            )
        body = self.page(query, faults, seq, request_id)
        self.after_page(faults, query)
        return Reply(200, body)

    @staticmethod
    def _too_many(faults: Faults, wait: float) -> Reply:
        value = retry_after_value(faults.retry_after_form, wait)
        return Reply(
            429,
            error_body("Rate limit exceeded; retry later"),
            headers={} if value is None else {"Retry-After": value},
        )

    def select(self, query: Query, faults: Faults) -> range | pl.Series:
        """Positions of the records ``query`` matches under the date faults."""
        low, high = query.window(faults.date_shift, faults.bounds)
        return self.store.select(
            low, high, query.trans_type, query.status, query.currency, field=faults.date_field
        )

    def page(self, query: Query, faults: Faults, seq: int, request_id: str = "") -> bytes:
        """The JSON body of one page (envelope included)."""
        store = self.store
        with store.lock:
            self.plant(faults)
            selection = self.select(query, faults)
            total = len(selection)
            limit = query.limit if faults.cap is None else min(query.limit, faults.cap)
            skip = min(query.skip, total)
            if faults.max_skip is not None and query.skip > faults.max_skip:
                chunk = []  # max_skip_mode=empty: nothing past the limit, the real total
            elif faults.ties_shuffled:
                positions = self._shuffled(selection, skip, limit, faults.fault_seed, seq)
                chunk = [store.bodies[p] for p in positions]
            else:
                chunk = store.chunk(selection, skip, limit)
            if faults.drift > 0:
                chunk = [self._drifted(b, faults) for b in chunk]
            if faults.precision > 0:
                chunk = [
                    precision_body(b, b[8:32].decode(), faults.fault_seed, faults.precision_from)
                    if faults.precise(b[8:32].decode())
                    else b
                    for b in chunk
                ]
        if faults.envelope_extras:
            page_number = query.skip // query.limit + 1
            return b"".join(
                (
                    b'{"success":true,"message":"Transactions retrieved","requestId":"%s",'
                    % request_id.encode(),
                    b'"data":{"transactions":[',
                    b",".join(chunk),
                    b'],"total":%d,"page":%d,"limit":%d}}' % (total, page_number, query.limit),
                )
            )
        return b"".join(
            (
                b'{"success":true,"message":"Transactions retrieved","data":{"transactions":[',
                b",".join(chunk),
                b'],"total":%d}}' % total,
            )
        )

    def _shuffled(
        self, selection: range | pl.Series, skip: int, limit: int, fault_seed: int, seq: int
    ) -> list[int]:
        """Tie groups straddling the page's edges are shuffled whole, as under an unstable sort."""
        listed = selection if isinstance(selection, range) else selection.to_list()
        total = len(listed)
        stop = min(total, skip + limit)
        if skip >= stop:
            return []
        created = self.store.created
        low, high = skip, stop
        while low > 0 and created[listed[low - 1]] == created[listed[skip]]:
            low -= 1
        while high < total and created[listed[high]] == created[listed[stop - 1]]:
            high += 1
        rng = random.Random(f"txkit-ties:{fault_seed}:{seq}")
        out: list[int] = []
        group: list[int] = []
        for k in range(low, high):
            p = listed[k]
            if group and created[p] != created[group[0]]:
                rng.shuffle(group)
                out.extend(group)
                group = []
            group.append(p)
        rng.shuffle(group)
        out.extend(group)
        return out[skip - low : stop - low]

    def plant(self, faults: Faults) -> None:
        """Plant the tie groups ``tie_groups`` and ``big_tie`` ask for, once (other planted
        groups are undone first, with every other data change: the store is reset)."""
        wanted = faults.planted_ties
        with self.store.lock:
            if wanted == self._planted:
                return
            if self._planted is not None:
                self.store.reset()
            self._planted = wanted
            if wanted is not None:
                self.store.set_created(_tie_stamps(self.store, *wanted))

    def _drifted(self, body: bytes, faults: Faults) -> bytes:
        record_id = body[8:32].decode()  # bodies start with {"_id":"<24 hex>"
        if not faults.drifted(record_id):
            return body
        cached = self._drift.get(record_id)
        if cached is not None and cached[0] is body:
            return cached[1]
        drifted = drift_body(body, record_id, faults.fault_seed)
        self._drift[record_id] = (body, drifted)
        return drifted

    # -- data changes during an export -----------------------------------------------------

    def after_page(self, faults: Faults, query: Query) -> None:
        """Apply one arrival, one status change and one swap, if the faults ask for more."""
        with self.store.lock:
            if faults.arrivals > self.arrivals_done:
                self._arrive(faults)
            if faults.status_changes > self.changes_done:
                self._change_status(faults)
            if faults.swaps is not None and faults.swap_count > self.swaps_done:
                self._swap(faults, query)
            for _ in range(faults.settle):
                if not self._settle(faults, query):
                    break

    def _settle(self, faults: Faults, query: Query) -> bool:
        store = self.store
        low, high = query.window(faults.date_shift, faults.bounds)
        flight = list(SETTLE_NEXT)
        statuses = store.frame.get_column("status")
        near = self.store.select(
            low, high, query.trans_type, None, query.currency, field=faults.date_field
        )
        positions = range(len(store)) if not len(near) else near
        picked = _in_flight(statuses, positions, flight)
        if not picked and len(positions) != len(store):
            picked = _in_flight(statuses, range(len(store)), flight)
        if not picked:
            return False
        rng = random.Random(f"txkit-settle:{faults.fault_seed}:{len(self.settled)}")
        position = picked[int(rng.random() * len(picked))]
        old = str(statuses[position])
        new = SETTLE_NEXT[old]
        if old == "pending" and rng.random() < 0.25:
            new = "abandoned"  # an unfinished payment, given up after an hour
        # After every createdAt (newest first) and the other faults' stamps: versions only grow.
        stamp = (store.created[0] if store.created else 0) + 86_400_000 + len(self.settled)
        found = _UPDATED_VALUE.search(store.bodies[position])
        before = found.group(1).decode() if found else ""
        store.set_status(position, new, stamp)
        found = _UPDATED_VALUE.search(store.bodies[position])
        after = found.group(1).decode() if found else ""
        self.settled.append(Settled(store.ids[position], old, before, new, after))
        return True

    def _arrive(self, faults: Faults) -> None:
        cached = self._arrivals
        if cached is None or cached[0] != faults.fault_seed or len(cached[1]) <= self.arrivals_done:
            # Grow by doubling: the work follows the arrivals served, not the number asked for.
            have = 0 if cached is None or cached[0] != faults.fault_seed else len(cached[1])
            count = min(faults.arrivals, max(64, 2 * have, self.arrivals_done + 1))
            ledger = self.store.ledger
            self._arrivals = (faults.fault_seed, ledger.arrivals(count, faults.fault_seed))
        assert self._arrivals is not None
        arrival = self._arrivals[1][self.arrivals_done]
        self.arrivals_done += 1
        self.store.insert_newest(
            arrival.body,
            arrival.id,
            arrival.created_ms,
            arrival.trans_type,
            arrival.status,
            arrival.currency,
        )

    def _change_status(self, faults: Faults) -> None:
        store = self.store
        if self._change_order is None or self._change_order[0] != faults.fault_seed:
            statuses = store.statuses()
            candidates = [store.ids[p] for p, s in enumerate(statuses) if s in IN_FLIGHT_NEXT]
            random.Random(f"txkit-status:{faults.fault_seed}").shuffle(candidates)
            self._change_order = (faults.fault_seed, candidates)
        order = self._change_order[1]
        if self.changes_done >= len(order):
            self.changes_done += 1
            return
        record_id = order[self.changes_done]
        self.changes_done += 1
        position = store.ids.index(record_id)
        old = store.frame.get_column("status")[position]
        store.set_status(
            position, IN_FLIGHT_NEXT[old], store.created[0] + 60_000 * self.changes_done
        )

    def _swap(self, faults: Faults, query: Query) -> None:
        statuses = faults.swap_statuses
        assert statuses is not None
        source, target = statuses
        store = self.store
        rng = random.Random(f"txkit-swaps:{faults.fault_seed}:{self.swaps_done}")
        self.swaps_done += 1
        stamp = (store.created[0] if store.created else 0) + 60_000 * self.swaps_done
        entering = self._matching(query, faults, source)
        leaving = self._matching(query, faults, target)
        # Both are picked before either changes: the record that enters cannot also leave.
        enter = entering[int(rng.random() * len(entering))] if entering else None
        leave = leaving[int(rng.random() * len(leaving))] if leaving else None
        if enter is not None:
            store.set_status(enter, target, stamp)
        if leave is not None:
            store.set_status(leave, NEXT_STATUS[target], stamp)

    def _matching(self, query: Query, faults: Faults, status: str) -> list[int]:
        low, high = query.window(faults.date_shift, faults.bounds)
        selection = self.store.select(
            low, high, query.trans_type, status, query.currency, field=faults.date_field
        )
        return list(selection) if isinstance(selection, range) else selection.to_list()


def _in_flight(statuses: pl.Series, positions: range | pl.Series, flight: list[str]) -> list[int]:
    if isinstance(positions, range):
        chunk = statuses.slice(positions.start, len(positions))
        offset = positions.start
        hits = chunk.cast(pl.String).is_in(flight).arg_true()
        return (hits + offset).to_list()
    picked = statuses.gather(positions).cast(pl.String).is_in(flight)
    return positions.filter(picked).to_list()


def _tie_stamps(store: Store, every: int, big: int, seed: int) -> dict[int, int]:
    """Position -> epoch ms: each group takes its oldest member's (earlier never passes
    ``updatedAt``)."""
    rng = random.Random(f"txkit-tie-groups:{seed}")
    created, n = store.created, len(store)
    groups: list[list[int]] = []
    taken: set[int] = set()
    if big:
        types = store.frame.get_column("transType").cast(pl.String).to_list()
        centre = 7 * n // 10
        near = sorted(range(n), key=lambda p: (abs(p - centre), p))
        by_type: dict[str, list[int]] = {}
        for p in near:
            by_type.setdefault(types[p], []).append(p)
        queues = [by_type[t] for t in sorted(by_type)]
        chosen: list[int] = []
        while len(chosen) < min(big, n):
            for queue in queues:
                if queue and len(chosen) < big:
                    chosen.append(queue.pop(0))
        groups.append(chosen)
        taken.update(chosen)
    if every:
        for boundary in range(every, n, every):
            size = rng.randint(2, 5)
            start = max(0, boundary - rng.randint(1, size - 1))
            members = list(range(start, min(n, start + size)))
            if len(members) > 1 and not taken.intersection(members):
                groups.append(members)
                taken.update(members)
    stamps: dict[int, int] = {}
    for members in groups:
        oldest = min(created[p] for p in members)
        stamps.update({p: oldest for p in members if created[p] != oldest})
    return stamps
