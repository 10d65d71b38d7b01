"""The order of the ledger generator's phases.

:meth:`_Generator.run` calls the phase modules in a fixed order over one
:class:`~._state.LedgerState`: every random choice comes from one ``random.Random(seed)``, so
that order is part of the output.
"""

from __future__ import annotations

from txkit.sandbox._render import build_context, render_rows
from txkit.sandbox.ledger import _anomalies, _attributes, _balances, _fees, _orders, _timeline
from txkit.sandbox.ledger._model import DAY_MS, RESERVE_DAYS
from txkit.sandbox.ledger._records import Ledger
from txkit.sandbox.ledger._state import LedgerState


class _Generator(LedgerState):
    """One run of :func:`generate_ledger`; steps consume the RNG in a fixed order."""

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
