"""The fault layer: what every fault does to a ``/transaction`` request and to the data.

The HTTP handler validates a request and then asks :class:`FaultEffects` for the reply; every
fault's effect lives here, so a new fault is added in :mod:`txkit.sandbox.faults` (its
parameter) and here (its effect), never in the handler:

* before the page: delays (``latency``, ``slow``), dropped connections, 429, 5xx, HTML;
* on the page: ``cap``, ``shuffle_ties``, ``drift``, ``date_shift``/``bounds``;
* after the page, before the client can see it: the data changes of an export in progress
  (``arrivals``, ``status_changes``), through the :class:`~txkit.sandbox._store.Store`'s edit
  primitives.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Final

import orjson
import polars as pl

from txkit.sandbox._store import Store
from txkit.sandbox.faults import Faults, drift_body
from txkit.sandbox.ledger import Arrival

if TYPE_CHECKING:
    from txkit.sandbox.server import Query

__all__ = ["FaultEffects", "Reply"]

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


class FaultEffects:
    """Applies the faults to requests and to the :class:`Store` (one per running sandbox)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._reset_state()

    def _reset_state(self) -> None:
        self.arrivals_done = 0
        self.changes_done = 0
        self._arrivals: tuple[int, list[Arrival]] | None = None
        self._change_order: tuple[int, list[str]] | None = None
        self._drift: dict[str, tuple[bytes, bytes]] = {}

    def reset(self) -> None:
        """Undo every data change and forget the faults' progress."""
        with self.store.lock:
            self.store.reset()
            self._reset_state()

    # -- one request -----------------------------------------------------------------------

    def reply(self, query: Query, faults: Faults, seq: int) -> Reply:
        """The reply to the ``seq``-th valid ``/transaction`` request (may sleep first).

        Args:
            query: the validated query.
            faults: the sandbox's faults as they are now.
            seq: the request's sequence number (1 for the first).

        Returns:
            The :class:`Reply`; for a served page, the data changes the faults ask for have
            been applied after the page was computed (the client's next request sees them).
        """
        decision = faults.decide(seq)
        if decision.delay:
            time.sleep(decision.delay)
        if decision.drop:
            return Reply(drop=True)
        if decision.status == 429:
            return Reply(
                429,
                error_body("Rate limit exceeded; retry later"),
                headers={"Retry-After": str(faults.retry_after)},
            )
        if decision.status is not None:
            reason = HTTPStatus(decision.status).phrase
            html = HTML_ERROR.format(code=decision.status, reason=reason).encode()
            return Reply(decision.status, html, "text/html")
        if decision.not_json:
            return Reply(200, HTML_PAGE, "text/html; charset=utf-8")
        body = self.page(query, faults, seq)
        self.after_page(faults)
        return Reply(200, body)

    def page(self, query: Query, faults: Faults, seq: int) -> bytes:
        """The JSON body of one page (envelope included)."""
        store = self.store
        with store.lock:
            low, high = query.window(faults.date_shift, faults.bounds)
            selection = store.select(low, high, query.trans_type, query.status, query.currency)
            total = len(selection)
            limit = query.limit if faults.cap is None else min(query.limit, faults.cap)
            skip = min(query.skip, total)
            if faults.shuffle_ties:
                positions = self._shuffled(selection, skip, limit, faults.fault_seed, seq)
                chunk = [store.bodies[p] for p in positions]
            else:
                chunk = store.chunk(selection, skip, limit)
            if faults.drift > 0:
                chunk = [self._drifted(b, faults) for b in chunk]
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
        """The page's positions, with every tie group shuffled anew for this request.

        Tie groups that straddle the page's edges are shuffled whole, so that records move
        across page boundaries between requests, as with an unstable sort on a real server.
        """
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

    def after_page(self, faults: Faults) -> None:
        """Apply one arrival and one status change, if the faults ask for more."""
        with self.store.lock:
            if faults.arrivals > self.arrivals_done:
                self._arrive(faults)
            if faults.status_changes > self.changes_done:
                self._change_status(faults)

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
