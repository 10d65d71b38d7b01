"""The generator's state and the order of its phases.

:class:`_Generator` holds one run's columns and bookkeeping (planted records, quotas, ground
truth) and the helpers every phase uses (rejection sampling of free records, new references,
ground-truth entries). :meth:`_Generator.run` calls the phase modules in a fixed order: every
random choice comes from one ``random.Random(seed)``, so that order is part of the output.
"""

from __future__ import annotations

import random
from typing import Any

from txkit.sandbox._render import (
    Columns,
    build_context,
    iso_ms,
    render_rows,
)
from txkit.sandbox.ledger import _anomalies, _attributes, _balances, _fees, _orders, _timeline
from txkit.sandbox.ledger._model import (
    ANOMALY_KINDS,
    DAY_MS,
    RESERVE_DAYS,
    WALLET_CURRENCIES,
)
from txkit.sandbox.ledger._records import Ledger


class _Generator:
    """One run of :func:`generate_ledger`; steps consume the RNG in a fixed order."""

    def __init__(
        self,
        seed: int,
        n: int,
        start_month: str,
        months: int,
        anomaly_rate: float,
        *,
        balance_model: str = "net",
        zero_balance_rate: float = 0.0,
        late_payments_per_month: int = 3,
        repeat_underpayers: int = 0,
    ) -> None:
        self.seed = seed
        self.balance_model = balance_model
        self.zero_balance_rate = zero_balance_rate
        self.late_payments_per_month = late_payments_per_month
        self.repeat_underpayers = repeat_underpayers
        self.repeat_truth: list[dict[str, Any]] = []
        self.zero_rows: list[int] = []
        self.zero_truth: list[dict[str, Any]] = []
        self.late_truth: list[dict[str, Any]] = []
        self.group_truth: list[dict[str, Any]] = []
        self.balance_planted: dict[str, set[int]] = {c: set() for c in WALLET_CURRENCIES}
        self.n = n
        self.start_month = start_month
        self.months = months
        self.anomaly_rate = anomaly_rate
        self.rng = random.Random(seed)
        self.cols = Columns()
        self.hidden: list[bool] = [False] * n
        self.taken: dict[int, str] = {}
        self.protected: set[int] = set()
        self.truth: list[tuple[int, dict[str, Any]]] = []  # (sort key in ms, entry)
        total = round(n * anomaly_rate)
        kinds = list(ANOMALY_KINDS)
        self.quota = {
            k: total // len(kinds) + (1 if j < total % len(kinds) else 0)
            for j, k in enumerate(kinds)
        }
        self.seq: dict[str, list[int]] = {c: [] for c in WALLET_CURRENCIES}
        self.held_at: dict[tuple[int, str], int] = {}
        self.used_refs: set[str] = set()

    def run(self, start_ms: int, end_ms: int) -> Ledger:
        """Run every phase in order (the order fixes which random numbers each one draws)."""
        self.start_ms, self.end_ms = start_ms, end_ms
        rng = self.rng
        n_customers = max(50, min(self.n // 8, 20_000))
        self.ctx = build_context(
            rng,
            n_customers=n_customers,
            start_ms=start_ms,
            end_ms=end_ms,
            reserve_ms=RESERVE_DAYS * DAY_MS,
        )
        _timeline.times(self)
        _timeline.ids(self)
        _attributes.attributes(self)
        _attributes.force_statuses(self)
        _attributes.references(self)
        _anomalies.plant_payment_anomalies(self)
        _fees.plant_fee_anomalies(self)
        _balances.balances(self)
        _anomalies.plant_balance_anomalies(self)
        _anomalies.plant_duplicates(self)
        _anomalies.plant_repeat_underpayers(self)
        _balances.pick_zero_balances(self)
        bodies = render_rows(self.cols, self.ctx, rng)
        _balances.zero_bodies(self, bodies)
        _timeline.late_updates(self, bodies)
        orders = _orders.orders(self)
        return _orders.assemble(self, bodies, orders)

    # -- helpers shared by the phases ------------------------------------------------------

    def new_reference(self) -> str:
        """A ``transactionReference`` not used before in this ledger."""
        ref = f"TXK-{self.rng.getrandbits(48):012X}"
        while ref in self.used_refs:
            ref = f"TXK-{self.rng.getrandbits(48):012X}"
        self.used_refs.add(ref)
        return ref

    def sample(self, kind: str, count: int, ok: Any, tries: int | None = None) -> list[int]:
        """Pick up to ``count`` free records satisfying ``ok`` by rejection sampling."""
        rand = self.rng.random
        chosen: list[int] = []
        if self.n == 0:
            return chosen
        budget = tries if tries is not None else max(2_000, count * 500)
        while len(chosen) < count and budget > 0:
            budget -= 1
            i = int(rand() * self.n)
            if i in self.taken or i in self.protected or not ok(i):
                continue
            self.taken[i] = kind
            chosen.append(i)
        return chosen

    def is_ngn_va(self, i: int) -> bool:
        """Whether record ``i`` is an NGN virtual-account collection."""
        cols = self.cols
        return cols.ttype[i] == "collection" and cols.cur[i] == "NGN" and cols.chan[i] == "VA"

    def add_truth(self, i: int, kind: str, **details: Any) -> None:
        """Record a planted anomaly on record ``i`` in the ground truth."""
        cols = self.cols
        entry: dict[str, Any] = {
            "kind": kind,
            "id": cols.oid[i],
            "reference": cols.ref[i],
            "currency": cols.cur[i],
            "createdAt": iso_ms(cols.created[i]),
            "transType": cols.ttype[i],
        }
        entry.update(details)
        self.truth.append((cols.created[i], entry))
