"""The fee schedule and the fee phase of the generator.

Owns :data:`FEE_SCHEDULE`, :data:`TAX_RATE_BP`, :func:`schedule_fee` and :func:`schedule_tax`,
the choice of records that get a planted ``fee_mismatch``/``tax_mismatch``
(:func:`plant_fee_anomalies`) and the fee and tax each record reports (:func:`fee_tax`, called
by the balance pass so that fees are drawn in record order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from txkit.sandbox._render import (
    money,
)
from txkit.sandbox.ledger._model import (
    WALLET_CURRENCIES,
)

if TYPE_CHECKING:
    from txkit.sandbox.ledger._state import LedgerState


@dataclass(frozen=True, slots=True)
class FeeRule:
    """A fee: ``flat`` plus ``percent_bp`` basis points of ``toAmount``, capped at ``cap``.

    All amounts are in minor units; the percentage is rounded half up to the minor unit.
    """

    percent_bp: int = 0
    flat: int = 0
    cap: int | None = None

    def fee(self, amount_minor: int) -> int:
        """Return the fee, in minor units, for a ``toAmount`` of ``amount_minor``."""
        fee = self.flat + (amount_minor * self.percent_bp + 5_000) // 10_000
        return fee if self.cap is None else min(fee, self.cap)


def _frozen(rules: dict[str, FeeRule]) -> Mapping[str, FeeRule]:
    return MappingProxyType(rules)


#: The sandbox's fee schedule by transaction type and currency (see the module docstring).
FEE_SCHEDULE: Final[Mapping[str, Mapping[str, FeeRule]]] = MappingProxyType(
    {
        "collection": _frozen(
            {
                "NGN": FeeRule(percent_bp=140, cap=200_000),
                "USD": FeeRule(percent_bp=390),
                "GHS": FeeRule(percent_bp=195),
                "KES": FeeRule(percent_bp=290),
                "USDT": FeeRule(percent_bp=100, cap=5_000),
            }
        ),
        "transfer": _frozen(
            {
                "NGN": FeeRule(flat=5_000),
                "USD": FeeRule(flat=150),
                "GHS": FeeRule(flat=200),
                "KES": FeeRule(flat=3_000),
                "USDT": FeeRule(flat=100),
            }
        ),
        "settlement": _frozen(
            {
                "NGN": FeeRule(flat=10_000),
                "USD": FeeRule(flat=500),
                "GHS": FeeRule(flat=500),
                "KES": FeeRule(flat=5_000),
                "USDT": FeeRule(flat=200),
            }
        ),
        "conversion": _frozen({c: FeeRule(percent_bp=50) for c in WALLET_CURRENCIES}),
    }
)

#: Tax (VAT) in basis points of the fee.
TAX_RATE_BP: Final = 750


def schedule_fee(trans_type: str, currency: str, to_amount_minor: int) -> int:
    """The fee the schedule charges, in minor units.

    Args:
        trans_type: ``collection``, ``transfer``, ``settlement`` or ``conversion``.
        currency: the record's ``toCurrency``.
        to_amount_minor: the record's ``toAmount`` in minor units.

    Returns:
        The fee in minor units.

    Raises:
        KeyError: for a type or currency the schedule does not cover.
    """
    return FEE_SCHEDULE[trans_type][currency].fee(to_amount_minor)


def schedule_tax(fee_minor: int) -> int:
    """The tax on a fee (7.5 % VAT, rounded half up), in minor units."""
    return (fee_minor * TAX_RATE_BP + 5_000) // 10_000


def plant_fee_anomalies(g: LedgerState) -> None:
    cols = g.cols
    g.fee_kind: dict[int, str] = {}
    for kind in ("fee_mismatch", "tax_mismatch"):
        for i in g.sample(kind, g.quota[kind], lambda i: cols.status[i] == "successful"):
            g.fee_kind[i] = kind


def fee_tax(g: LedgerState, i: int, ttype: str, cur: str, amount: int) -> tuple[int, int]:
    fee = schedule_fee(ttype, cur, amount)
    kind = g.fee_kind.get(i)
    if kind is None:
        return fee, schedule_tax(fee)
    rand = g.rng.random
    if kind == "fee_mismatch":
        rule = FEE_SCHEDULE[ttype][cur]
        if rule.percent_bp:
            if rule.cap is not None and fee == rule.cap and rand() < 0.5:
                wrong = FeeRule(percent_bp=rule.percent_bp).fee(amount)  # cap not applied
            else:
                wrong = FeeRule(percent_bp=rule.percent_bp + 10 + int(rand() * 50)).fee(amount)
        else:
            wrong = rule.flat * 2 if rand() < 0.5 else rule.flat // 2
        if wrong == fee:
            wrong = fee + 1 + int(rand() * 100)
        g.add_truth(i, kind, field="feeAmount", expected=money(fee), reported=money(wrong))
        return wrong, schedule_tax(wrong)
    tax = schedule_tax(fee)
    wrong_tax = (fee * 1_000 + 5_000) // 10_000 if rand() < 0.5 else 0  # 10 % VAT, or none
    if wrong_tax == tax:
        wrong_tax = tax + 1 + int(rand() * 50)
    g.add_truth(i, kind, field="taxAmount", expected=money(tax), reported=money(wrong_tax))
    return fee, wrong_tax
