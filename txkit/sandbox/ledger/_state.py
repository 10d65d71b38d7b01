"""The state of one generation run, shared by the phases of the ledger generator.

:class:`LedgerState` holds one run's columns and bookkeeping (planted records, quotas, ground
truth) and the helpers every phase uses (rejection sampling of free records, new references,
ground-truth entries). The phase modules take it; :mod:`._generator` runs them in order.
"""

from __future__ import annotations

import random
from typing import Any

from txkit.sandbox._render import Columns, Context, iso_ms
from txkit.sandbox.ledger._model import ANOMALY_KINDS, WALLET_CURRENCIES


class LedgerState:
    """One run of :func:`~txkit.sandbox.ledger.generate_ledger`: the columns, what was
    planted, and the one random source every phase draws from in a fixed order."""

    #: Set by the run before the first phase.
    start_ms: int
    end_ms: int
    ctx: Context

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
