"""Deterministic synthetic ledger behind the sandbox.

:func:`generate_ledger` builds one merchant's transactions over a calendar of whole months
(by default November 2025 through October 2026, never "today"), renders each record to the
JSON bytes the sandbox serves, and plants anomalies with a ground truth. The same arguments
give byte-identical records, ``orders.csv`` and ``ground_truth.json``: every random choice
comes from one ``random.Random(seed)`` consumed in a fixed order.

Content
    One merchant (:data:`MERCHANT_NAME`) with wallets in NGN (most volume), USD, GHS, KES and
    USDT. About 80 % collections (NGN through virtual accounts, ``meta.paymentChannel = "VA"``,
    or cards, ``"CARD"``; other currencies by card), 8 % transfers (with a ``recipient``), 5 %
    settlements and 7 % conversions (with ``fromAmount``/``fromCurrency``). Old records are
    mostly ``successful``; in-flight statuses (ongoing, pending, processing, verified,
    initiated) sit mostly in the last three days of the calendar. A few % of records share
    their ``createdAt`` millisecond with a neighbour. Customer data is obviously fake
    (``@example.test``, ``TEST CUSTOMER 00042``, account numbers starting ``00000``).

Fee schedule (:data:`FEE_SCHEDULE`, :data:`TAX_RATE_BP`)
    ======================  ==========================================================
    collection              NGN 1.4 % capped at 2,000.00; USD 3.9 %; GHS 1.95 %;
                            KES 2.9 %; USDT 1.0 % capped at 50.00
    transfer (flat)         NGN 50.00; USD 1.50; GHS 2.00; KES 30; USDT 1.00
    settlement (flat)       NGN 100.00; USD 5.00; GHS 5.00; KES 50; USDT 2.00
    conversion              0.5 % of ``toAmount`` (fee in the target currency)
    tax                     VAT of 7.5 % of the fee
    ======================  ==========================================================

    Percentages apply to ``toAmount`` and are rounded half up to the minor unit, as is the tax.
    KES records render whole fees and taxes as integers (``30``), as the provider does.

Balance model (checked by :func:`check_balance_model`)
    Wallets are per currency and start at zero at the start of the calendar. Records are
    ordered by ``createdAt`` then ``id``; only ``successful`` records move balances.

    * collection: ``toBalanceAfterLedger`` = previous + ``toAmount - feeAmount - taxAmount``;
    * transfer and settlement: ``fromBalanceAfterLedger`` = previous -
      (``toAmount + feeAmount + taxAmount``), in the ``toCurrency`` wallet;
    * conversion: ``fromBalanceAfterLedger`` = previous (``fromCurrency`` wallet) -
      ``fromAmount``; ``toBalanceAfterLedger`` = previous (``toCurrency`` wallet) +
      ``toAmount - feeAmount - taxAmount``;
    * on every side, ``...BalanceAfterAvailable`` = that ledger value minus the rolling
      reserves of the same currency still held at that moment. A successful collection's
      reserve (10 % of ``toAmount``, on some NGN/USD card payments) is held from its own
      ``createdAt`` until ``reserveReleaseDate`` (exclusive), 30 days later.

    Non-successful records carry no balance fields. Debits never exceed the available balance
    (a debit that would is recorded as ``failed``).

Planted anomalies (:data:`ANOMALY_KINDS`)
    ``round(records * anomaly_rate)`` anomalies, split evenly over the thirteen kinds (at
    most one per record; no two balance anomalies within 5 successful records of each other
    on one wallet). See :data:`ANOMALY_KINDS` for what each kind means. The merchant-side
    orders (:attr:`Ledger.orders`) hold one row per exported collection except where an
    ``order_*`` anomaly was planted; collections hidden by ``missing_from_export`` stay in
    the orders.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import orjson
import polars as pl

from txkit.sandbox._render import (
    MERCHANT_NAME,
    Columns,
    Context,
    build_context,
    iso_ms,
    money,
    render_rows,
)
from txkit.schema import STATUSES

__all__ = [
    "ANOMALY_KINDS",
    "FEE_SCHEDULE",
    "MERCHANT_NAME",
    "TAX_RATE_BP",
    "WALLET_CURRENCIES",
    "Arrival",
    "BalanceViolation",
    "FeeRule",
    "FeeViolation",
    "Ledger",
    "check_balance_model",
    "check_fees",
    "generate_ledger",
    "schedule_fee",
    "schedule_tax",
]

DAY_MS: Final = 86_400_000
HOUR_MS: Final = 3_600_000

#: Currencies the merchant holds wallets in.
WALLET_CURRENCIES: Final[tuple[str, ...]] = ("NGN", "USD", "GHS", "KES", "USDT")

#: Arrivals (a fault) are generated in blocks of this size, each from its own seed.
_ARRIVAL_BLOCK: Final = 64

#: How long a rolling reserve is held, and which share of ``toAmount`` it holds.
RESERVE_DAYS: Final = 30
RESERVE_BP: Final = 1_000


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

#: Every planted anomaly kind and what it means.
ANOMALY_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "missing_from_export": "a successful collection (without reserve) that moved the "
        "balance but is not served; the chain jumps at the wallet's next record",
        "bad_balance": "one ledger balance-after value of one record is off; the chain "
        "resumes from the true value at the next record",
        "reserve_mismatch": "one available balance-after value is off (usually: the held "
        "reserve was not deducted); its ledger value is right",
        "duplicate_reference": "a later record reuses an earlier record's transactionReference",
        "fee_mismatch": "feeAmount is not per the schedule (taxAmount is 7.5 % of the "
        "reported fee; balances use the reported fee)",
        "tax_mismatch": "taxAmount is not 7.5 % of feeAmount (balances use the reported tax)",
        "underpayment": "an NGN virtual-account payment below the expected amount, recorded "
        "as a new successful transaction with meta.existingTransaction",
        "overpayment": "as underpayment, above the expected amount",
        "order_missing": "an exported collection has no row in orders.csv",
        "order_extra": "an orders.csv row whose reference is not in the ledger",
        "order_amount": "an orders.csv amount differs from the record's toAmount",
        "order_status": "an orders.csv status differs from the record's status",
        "order_currency": "an orders.csv currency differs from the record's toCurrency",
    }
)

_BALANCE_KINDS: Final = ("missing_from_export", "bad_balance", "reserve_mismatch")
_IN_FLIGHT: Final = ("ongoing", "pending", "processing", "verified", "initiated")
_RECENT_MS: Final = 3 * DAY_MS
_TIE_RATE: Final = 0.02
_RESERVE_SHARE: Final = 0.3
_SPACING: Final = 5

# Weights per 10,000 records, by transaction type and by age (in the last three days or not).
# In-flight statuses are rare in old records (stuck payments) and common in recent ones.
_STATUS_WEIGHTS: Final[dict[tuple[str, bool], tuple[tuple[str, int], ...]]] = {
    ("collection", False): (
        ("successful", 9_050),
        ("failed", 250),
        ("declined", 120),
        ("abandoned", 350),
        ("expired", 150),
        ("reversed", 60),
        ("pending", 10),
        ("processing", 3),
        ("verified", 3),
        ("initiated", 2),
        ("ongoing", 2),
    ),
    ("collection", True): (
        ("successful", 4_200),
        ("failed", 200),
        ("declined", 80),
        ("abandoned", 300),
        ("expired", 100),
        ("reversed", 20),
        ("ongoing", 900),
        ("pending", 1_600),
        ("processing", 900),
        ("verified", 900),
        ("initiated", 800),
    ),
    ("transfer", False): (
        ("successful", 9_460),
        ("failed", 350),
        ("reversed", 150),
        ("pending", 15),
        ("processing", 15),
        ("initiated", 10),
    ),
    ("transfer", True): (
        ("successful", 5_000),
        ("failed", 200),
        ("reversed", 50),
        ("pending", 1_500),
        ("processing", 1_800),
        ("initiated", 1_450),
    ),
    ("settlement", False): (("successful", 9_830), ("failed", 150), ("pending", 20)),
    ("settlement", True): (("successful", 5_000), ("pending", 3_000), ("processing", 2_000)),
    ("conversion", False): (("successful", 9_600), ("failed", 300), ("declined", 100)),
    ("conversion", True): (
        ("successful", 7_000),
        ("failed", 200),
        ("pending", 1_800),
        ("processing", 1_000),
    ),
}
_TYPE_CUM: Final = ((0.80, "collection"), (0.88, "transfer"), (0.93, "settlement"))
_CURRENCY_WEIGHTS: Final[dict[str, tuple[tuple[str, int], ...]]] = {
    "collection": (("NGN", 75), ("USD", 10), ("GHS", 8), ("KES", 7)),
    "transfer": (("NGN", 70), ("GHS", 10), ("KES", 12), ("USD", 8)),
    "settlement": (("NGN", 60), ("USD", 20), ("GHS", 10), ("KES", 10)),
}
_CONVERSION_PAIRS: Final = (
    (("NGN", "USD"), 45),
    (("USD", "NGN"), 15),
    (("NGN", "USDT"), 15),
    (("GHS", "USD"), 10),
    (("KES", "USD"), 10),
    (("USDT", "NGN"), 5),
)
#: Conversion rates as (numerator, denominator): to_minor = from_minor * num / den, half up.
FX_RATES: Final[Mapping[tuple[str, str], tuple[int, int]]] = MappingProxyType(
    {
        ("NGN", "USD"): (1, 1_560),
        ("USD", "NGN"): (1_540, 1),
        ("NGN", "USDT"): (1, 1_565),
        ("GHS", "USD"): (10, 156),
        ("KES", "USD"): (1, 130),
        ("USDT", "NGN"): (1_535, 1),
    }
)
# Amount distributions in major units: (median, sigma, minimum, maximum, share of whole amounts)
_AMOUNTS: Final[dict[tuple[str, str], tuple[float, float, int, int, float]]] = {
    ("collection", "NGN"): (15_000, 1.1, 100, 5_000_000, 0.85),
    ("collection", "USD"): (45, 0.9, 1, 20_000, 0.4),
    ("collection", "GHS"): (250, 1.0, 1, 100_000, 0.5),
    ("collection", "KES"): (2_500, 1.0, 10, 1_000_000, 0.9),
    ("transfer", "NGN"): (50_000, 1.2, 100, 10_000_000, 0.9),
    ("transfer", "USD"): (300, 1.0, 10, 50_000, 0.8),
    ("transfer", "GHS"): (800, 1.0, 10, 200_000, 0.8),
    ("transfer", "KES"): (8_000, 1.0, 50, 2_000_000, 0.95),
    ("settlement", "NGN"): (500_000, 1.0, 1_000, 50_000_000, 1.0),
    ("settlement", "USD"): (2_000, 1.0, 50, 500_000, 1.0),
    ("settlement", "GHS"): (5_000, 1.0, 50, 1_000_000, 1.0),
    ("settlement", "KES"): (50_000, 1.0, 500, 10_000_000, 1.0),
    ("conversion", "NGN"): (300_000, 1.0, 5_000, 50_000_000, 1.0),
    ("conversion", "USD"): (500, 1.0, 10, 100_000, 0.9),
    ("conversion", "GHS"): (2_000, 1.0, 20, 500_000, 0.9),
    ("conversion", "KES"): (20_000, 1.0, 200, 5_000_000, 1.0),
    ("conversion", "USDT"): (300, 1.0, 5, 100_000, 0.9),
}
#: Smallest debit (minor units) worth making; below it a debit is recorded as failed.
_MIN_DEBIT: Final = {"NGN": 10_000, "USD": 100, "GHS": 1_000, "KES": 10_000, "USDT": 100}
#: Relative volume by UTC hour of day.
_HOUR_WEIGHTS: Final = (1, 1, 1, 1, 1, 2, 3, 5, 7, 8, 9, 9, 9, 9, 8, 8, 8, 8, 8, 7, 6, 4, 3, 2)
_MONTH_RE: Final = re.compile(r"^(\d{4})-(\d{2})$")
_ORDER_STATUS_SWAP: Final = ("failed", "pending", "abandoned")

# Balance fields, per side.
_TO: Final = ("toBalanceAfterLedger", "toBalanceAfterAvailable")
_FROM: Final = ("fromBalanceAfterLedger", "fromBalanceAfterAvailable")

#: Money fields of a record (nested ones as paths).
MONEY_PATHS: Final[tuple[tuple[str, ...], ...]] = (
    ("toAmount",),
    ("fromAmount",),
    ("amount",),
    ("feeAmount",),
    ("taxAmount",),
    ("toBalanceAfterAvailable",),
    ("toBalanceAfterLedger",),
    ("fromBalanceAfterAvailable",),
    ("fromBalanceAfterLedger",),
    ("rollingReserve", "amount"),
    ("meta", "existingTransaction", "expectedAmount"),
)


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


class Arrival(NamedTuple):
    """A record that arrives after the ledger was generated (the ``arrivals`` fault)."""

    created_ms: int
    id: str
    trans_type: str
    status: str
    currency: str
    body: bytes


@dataclass(frozen=True, slots=True)
class BalanceViolation:
    """A balance-after value that does not follow the balance model.

    Attributes:
        id: the record's ``id``.
        currency: the wallet.
        field: the balance field (``toBalanceAfterLedger`` ...).
        kind: ``jump`` (the chain continues from the reported value: something not in the
            records moved the balance before this record), ``ledger`` (a single wrong ledger
            value, the chain resumes after it), ``available`` (available is not ledger minus
            held reserves) or ``missing`` (a successful record without the field).
        expected: what the model gives.
        reported: what the record says (``None`` when missing).
    """

    id: str
    currency: str
    field: str
    kind: str
    expected: Decimal
    reported: Decimal | None


@dataclass(frozen=True, slots=True)
class FeeViolation:
    """A fee or tax that does not follow :data:`FEE_SCHEDULE`."""

    id: str
    field: str
    expected: Decimal
    reported: Decimal


@dataclass(eq=False)
class Ledger:
    """A generated ledger: rendered records, merchant orders and the ground truth.

    Attributes:
        seed, records, start_month, months, anomaly_rate: the generation arguments.
        start_ms, end_ms: the calendar, epoch milliseconds (end exclusive).
        index: one row per record (chronological: ``createdAt`` then ``id``) with ``id``,
            ``createdAt`` (epoch ms), ``transType``, ``status``, ``toCurrency``, ``toAmount``
            (minor units), ``transactionReference`` and ``hidden`` (not served).
        orders: merchant-side orders: ``reference``, ``amount`` (Decimal), ``currency``,
            ``status``, ``date``.
        ground_truth: one dict per planted anomaly (``kind``, ``id``, ``reference``,
            ``currency``, ``createdAt``, plus kind-specific details; money as strings).
    """

    seed: int
    records: int
    start_month: str
    months: int
    anomaly_rate: float
    start_ms: int
    end_ms: int
    index: pl.DataFrame
    orders: pl.DataFrame
    ground_truth: list[dict[str, Any]]
    _bodies: list[bytes] = field(repr=False)
    _context: Context = field(repr=False)
    _final_ledger: dict[str, int] = field(repr=False)
    _open_reserves: dict[str, list[tuple[int, int]]] = field(repr=False)
    _id_proc: int = field(repr=False)
    _id_counter: int = field(repr=False)
    _export_rows: list[int] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return (
            f"Ledger(seed={self.seed}, records={self.records}, start_month={self.start_month!r},"
            f" months={self.months}, anomaly_rate={self.anomaly_rate},"
            f" anomalies={len(self.ground_truth)})"
        )

    @property
    def merchant_name(self) -> str:
        """The merchant's ``merchantInfo.name``."""
        return MERCHANT_NAME

    def export_rows(self) -> list[int]:
        """Chronological row numbers of the served records, in export order.

        Export order is the sandbox's sort: ``createdAt`` descending, ties by ``id`` ascending.
        """
        if self._export_rows is None:
            self._export_rows = (
                self.index.with_row_index("row")
                .filter(~pl.col("hidden"))
                .sort(["createdAt", "id"], descending=[True, False])
                .get_column("row")
                .to_list()
            )
        return self._export_rows

    def export_bodies(self) -> list[bytes]:
        """The served records' JSON bytes, in export order."""
        bodies = self._bodies
        return [bodies[r] for r in self.export_rows()]

    def body(self, row: int) -> bytes:
        """The JSON bytes of the record at chronological row ``row``."""
        return self._bodies[row]

    def exported_records(self) -> list[dict[str, Any]]:
        """The served records as dicts, in export order, with ``Decimal`` money.

        Returns:
            One dict per served record (parsed from the served bytes: money fields are
            :class:`decimal.Decimal`, including those rendered as integers).
        """
        return [parse_record(b) for b in self.export_bodies()]

    def all_records(self) -> list[dict[str, Any]]:
        """Every record, hidden ones included, in export order, with ``Decimal`` money."""
        rows = (
            self.index.with_row_index("row")
            .sort(["createdAt", "id"], descending=[True, False])
            .get_column("row")
            .to_list()
        )
        return [parse_record(self._bodies[r]) for r in rows]

    def orders_csv(self) -> bytes:
        """``orders.csv``: ``reference,amount,currency,status,date``, one order a line."""
        lines = ["reference,amount,currency,status,date"]
        for ref, amount, cur, status, day in self.orders.iter_rows():
            lines.append(f"{ref},{amount:.2f},{cur},{status},{day.isoformat()}")
        return ("\n".join(lines) + "\n").encode()

    def ground_truth_json(self) -> bytes:
        """``ground_truth.json``: the planted anomalies and the generation arguments."""
        doc = {
            "generator": {
                "seed": self.seed,
                "records": self.records,
                "start_month": self.start_month,
                "months": self.months,
                "anomaly_rate": self.anomaly_rate,
            },
            "anomaly_kinds": dict(ANOMALY_KINDS),
            "anomalies": self.ground_truth,
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"

    def write_files(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``orders.csv`` and ``ground_truth.json`` into ``directory`` (created).

        Returns:
            The paths of the two files.
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        orders = out / "orders.csv"
        truth = out / "ground_truth.json"
        orders.write_bytes(self.orders_csv())
        truth.write_bytes(self.ground_truth_json())
        return orders, truth

    def final_balances(self) -> dict[str, Decimal]:
        """Each wallet's ledger balance after the last record."""
        return {c: Decimal(v).scaleb(-2) for c, v in self._final_ledger.items()}

    def arrivals(self, count: int, fault_seed: int = 0) -> list[Arrival]:
        """Records that arrive after the ledger's last record (the ``arrivals`` fault).

        They are NGN virtual-account collections, a few seconds to a minute apart; two in three
        are successful and continue the NGN balance chain, the others are pending. The result
        is prefix-stable: ``arrivals(n)`` is the start of ``arrivals(m)`` for ``n <= m``.

        Args:
            count: how many.
            fault_seed: varies the records.

        Returns:
            The new records, oldest first.
        """
        out: list[Arrival] = []
        created = int(self.index.get_column("createdAt").max() or self.start_ms)
        balance = self._final_ledger["NGN"]
        reserves = self._open_reserves["NGN"]
        for block in range((count + _ARRIVAL_BLOCK - 1) // _ARRIVAL_BLOCK):
            rng = random.Random(f"txkit-arrivals:{self.seed}:{fault_seed}:{block}")
            cols = Columns()
            for j in range(_ARRIVAL_BLOCK):
                k = block * _ARRIVAL_BLOCK + j
                created += 1_000 + int(rng.random() * 60_000)
                status = "pending" if k % 3 == 2 else "successful"
                amount = _draw_amount(rng, "collection", "NGN")
                fee = schedule_fee("collection", "NGN", amount)
                tax = schedule_tax(fee)
                counter = (self._id_counter + k) & 0xFFFFFF
                to_l = to_a = None
                if status == "successful":
                    balance += amount - fee - tax
                    to_l = balance
                    to_a = balance - sum(a for release, a in reserves if release > created)
                _append_row(
                    cols,
                    created=created,
                    oid=f"{created // 1000:08x}{self._id_proc:010x}{counter:06x}",
                    ttype="collection",
                    status=status,
                    cur="NGN",
                    amt=amount,
                    fee=fee,
                    tax=tax,
                    chan="VA",
                    party=int(rng.random() * len(self._context.customers)),
                    ref=f"TXK-{rng.getrandbits(48):012X}",
                    to_l=to_l,
                    to_a=to_a,
                )
            bodies = render_rows(cols, self._context, rng)
            out.extend(
                Arrival(cols.created[j], cols.oid[j], "collection", cols.status[j], "NGN", body)
                for j, body in enumerate(bodies)
            )
        return out[:count]


def _append_row(
    cols: Columns,
    *,
    created: int,
    oid: str,
    ttype: str,
    status: str,
    cur: str,
    amt: int,
    fee: int,
    tax: int,
    chan: str | None,
    party: int,
    ref: str,
    to_l: int | None = None,
    to_a: int | None = None,
) -> None:
    """Append one collection-like row (used for arrivals)."""
    cols.created.append(created)
    cols.oid.append(oid)
    cols.ttype.append(ttype)
    cols.status.append(status)
    cols.cur.append(cur)
    cols.fcur.append(None)
    cols.amt.append(amt)
    cols.famt.append(None)
    cols.fee.append(fee)
    cols.tax.append(tax)
    cols.chan.append(chan)
    cols.party.append(party)
    cols.reserve.append(0)
    cols.to_l.append(to_l)
    cols.to_a.append(to_a)
    cols.from_l.append(None)
    cols.from_a.append(None)
    cols.ref.append(ref)


def parse_record(body: bytes) -> dict[str, Any]:
    """Parse one record's JSON bytes into a dict with exact ``Decimal`` money.

    Numbers with a fraction become ``Decimal`` (never float); see :func:`decimal_money` for
    the money fields rendered otherwise.
    """
    return decimal_money(json.loads(body, parse_float=Decimal))


def decimal_money(record: dict[str, Any]) -> dict[str, Any]:
    """Convert a parsed record's money fields to ``Decimal`` in place, and return it.

    Integer-rendered amounts and numeric strings (as the ``drift`` fault sends) become
    ``Decimal``; parse with ``parse_float=Decimal`` so that fractional numbers already are.
    """
    for path in MONEY_PATHS:
        parent: Any = record
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            value = parent.get(path[-1])
            if isinstance(value, int | str) and not isinstance(value, bool):
                parent[path[-1]] = Decimal(value)
    return record


def generate_ledger(
    *,
    seed: int = 7,
    records: int = 20_000,
    start_month: str = "2025-11",
    months: int = 12,
    anomaly_rate: float = 0.01,
) -> Ledger:
    """Generate the sandbox's synthetic ledger (see the module docstring for the model).

    Args:
        seed: random seed; the same arguments give byte-identical output.
        records: number of records, hidden ones included (0 to 10,000,000).
        start_month: first month of the calendar, ``YYYY-MM``.
        months: length of the calendar in months (1 to 120).
        anomaly_rate: planted anomalies per record (0 to 0.2).

    Returns:
        The :class:`Ledger`.

    Raises:
        ValueError: for an argument outside the ranges above.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if isinstance(records, bool) or not isinstance(records, int) or not 0 <= records <= 10**7:
        raise ValueError(f"records must be an integer from 0 to 10,000,000, got {records!r}")
    if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= 120:
        raise ValueError(f"months must be an integer from 1 to 120, got {months!r}")
    if not isinstance(anomaly_rate, int | float) or not 0 <= anomaly_rate <= 0.2:
        raise ValueError(f"anomaly_rate must be a number from 0 to 0.2, got {anomaly_rate!r}")
    start_ms, end_ms = calendar_bounds(start_month, months)
    return _Generator(seed, records, start_month, months, float(anomaly_rate)).run(start_ms, end_ms)


def calendar_bounds(start_month: str, months: int) -> tuple[int, int]:
    """The calendar as epoch milliseconds: start of ``start_month`` to the end, exclusive.

    Raises:
        ValueError: if ``start_month`` is not ``YYYY-MM`` or not a real month.
    """
    match = _MONTH_RE.match(start_month) if isinstance(start_month, str) else None
    if not match or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 1971:
        raise ValueError(f"start_month must be YYYY-MM (e.g. 2025-11), got {start_month!r}")
    year, month = int(match.group(1)), int(match.group(2))
    end_year, end_month = divmod(month - 1 + months, 12)
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + end_year, end_month + 1, 1, tzinfo=UTC)
    return _epoch_ms(start), _epoch_ms(end)


def _epoch_ms(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _cumulative(pairs: Iterable[tuple[Any, int]]) -> tuple[list[Any], list[float]]:
    values: list[Any] = []
    cum: list[float] = []
    acc = 0.0
    for value, weight in pairs:
        acc += weight
        values.append(value)
        cum.append(acc)
    return values, cum


def _pick(rand: Any, table: tuple[list[Any], list[float]]) -> Any:
    values, cum = table
    return values[bisect.bisect_right(cum, rand() * cum[-1])]


def _draw_amount(rng: random.Random, trans_type: str, currency: str) -> int:
    """An amount in minor units from the (type, currency) distribution."""
    median, sigma, low, high, whole = _AMOUNTS[(trans_type, currency)]
    major = int(min(max(rng.lognormvariate(math.log(median), sigma), low), high))
    if major >= 1_000 and rng.random() < 0.5:
        major -= major % 100
    minor = 0 if rng.random() < whole else int(rng.random() * 100)
    return major * 100 + minor


def _convert(from_minor: int, pair: tuple[str, str]) -> int:
    num, den = FX_RATES[pair]
    return (from_minor * num * 2 + den) // (2 * den)


class _Generator:
    """One run of :func:`generate_ledger`; steps consume the RNG in a fixed order."""

    def __init__(
        self, seed: int, n: int, start_month: str, months: int, anomaly_rate: float
    ) -> None:
        self.seed = seed
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
        self._times()
        self._ids()
        self._attributes()
        self._force_statuses()
        self._references()
        self._plant_payment_anomalies()
        self._plant_fee_anomalies()
        self._balances()
        self._plant_balance_anomalies()
        self._plant_duplicates()
        bodies = render_rows(self.cols, self.ctx, rng)
        orders = self._orders()
        return self._ledger(bodies, orders)

    # -- calendar, ids ---------------------------------------------------------------------

    def _times(self) -> None:
        rng, n = self.rng, self.n
        days = (self.end_ms - self.start_ms) // DAY_MS
        first = date.fromordinal(date(1970, 1, 1).toordinal() + self.start_ms // DAY_MS)
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
        start = self.start_ms
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
        self.cols.created = created
        self.tie = tie

    def _ids(self) -> None:
        """ObjectId-like ids: seconds, one of three 'process' values, a running counter."""
        rng, n = self.rng, self.n
        procs = [rng.getrandbits(40) for _ in range(3)]
        counter = rng.getrandbits(24)
        rand = rng.random
        created = self.cols.created
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
        self.cols.oid = oid
        self.id_proc = procs[0]
        self.id_counter = counter + n

    # -- record attributes -----------------------------------------------------------------

    def _attributes(self) -> None:
        rng, n, cols = self.rng, self.n, self.cols
        rand = rng.random
        currencies = {t: _cumulative(w) for t, w in _CURRENCY_WEIGHTS.items()}
        pairs = _cumulative(_CONVERSION_PAIRS)
        statuses = {k: _cumulative(w) for k, w in _STATUS_WEIGHTS.items()}
        recent_from = self.end_ms - _RECENT_MS
        last_hour = self.end_ms - HOUR_MS
        n_customers = len(self.ctx.customers)
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

    def _force_statuses(self) -> None:
        """Make sure every status appears (small ledgers), on late successful collections."""
        cols = self.cols
        if self.n < 50:
            return
        present = set(cols.status)
        for status in STATUSES:
            if status in present:
                continue
            for i in range(self.n - 1, -1, -1):
                if cols.ttype[i] != "collection" or cols.status[i] != "successful":
                    continue
                if status == "expired" and cols.cur[i] != "NGN":
                    continue
                if status in ("abandoned", "expired") and cols.created[i] >= self.end_ms - HOUR_MS:
                    continue
                cols.status[i] = status
                if status == "expired":
                    cols.chan[i] = "VA"
                elif status == "declined":
                    cols.chan[i] = "CARD"
                break

    def _references(self) -> None:
        getrandbits = self.rng.getrandbits
        refs = []
        used = self.used_refs
        for _ in range(self.n):
            ref = f"TXK-{getrandbits(48):012X}"
            while ref in used:
                ref = f"TXK-{getrandbits(48):012X}"
            used.add(ref)
            refs.append(ref)
        self.cols.ref = refs

    def _new_reference(self) -> str:
        ref = f"TXK-{self.rng.getrandbits(48):012X}"
        while ref in self.used_refs:
            ref = f"TXK-{self.rng.getrandbits(48):012X}"
        self.used_refs.add(ref)
        return ref

    # -- anomalies planted before the balance pass -------------------------------------------

    def _sample(self, kind: str, count: int, ok: Any, tries: int | None = None) -> list[int]:
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

    def _is_ngn_va(self, i: int) -> bool:
        cols = self.cols
        return cols.ttype[i] == "collection" and cols.cur[i] == "NGN" and cols.chan[i] == "VA"

    def _plant_payment_anomalies(self) -> None:
        cols, rand = self.cols, self.rng.random
        for kind, label in (("underpayment", "UNDERPAYMENT"), ("overpayment", "OVERPAYMENT")):

            def ok(i: int) -> bool:
                return (
                    i >= self.n // 20
                    and self._is_ngn_va(i)
                    and cols.status[i] == "successful"
                    and cols.amt[i] >= 20_000
                )

            for i in self._sample(kind, self.quota[kind], ok):
                original = None
                if rand() < 0.8:
                    for _ in range(50):
                        j = i - 1 - int(rand() * min(i, 2_000))
                        if j not in self.taken and self._is_ngn_va(j):
                            original = j
                            break
                if original is not None:
                    expected = cols.amt[original]
                    reference = cols.ref[original]
                    self.protected.add(original)
                    cols.children.setdefault(original, []).append(cols.oid[i])
                else:
                    expected = _draw_amount(self.rng, "collection", "NGN") + 20_000
                    reference = self._new_reference()
                expected_major = expected // 100
                if kind == "underpayment":
                    paid = max(1, expected_major * (50 + int(rand() * 48)) // 100) * 100
                    paid = min(paid, expected - 100)
                else:
                    paid = expected_major * (102 + int(rand() * 48)) // 100 * 100
                    paid = max(paid, expected + 100)
                cols.amt[i] = paid
                cols.existing[i] = (reference, expected, label)
                self._truth(
                    i,
                    kind,
                    expected_amount=money(expected),
                    paid_amount=money(paid),
                    existing_reference=reference,
                    existing_id=None if original is None else cols.oid[original],
                    existing_in_export=original is not None,
                )

    def _plant_fee_anomalies(self) -> None:
        cols = self.cols
        self.fee_kind: dict[int, str] = {}
        for kind in ("fee_mismatch", "tax_mismatch"):
            for i in self._sample(kind, self.quota[kind], lambda i: cols.status[i] == "successful"):
                self.fee_kind[i] = kind

    def _fee_tax(self, i: int, ttype: str, cur: str, amount: int) -> tuple[int, int]:
        fee = schedule_fee(ttype, cur, amount)
        kind = self.fee_kind.get(i)
        if kind is None:
            return fee, schedule_tax(fee)
        rand = self.rng.random
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
            self._truth(i, kind, field="feeAmount", expected=money(fee), reported=money(wrong))
            return wrong, schedule_tax(wrong)
        tax = schedule_tax(fee)
        wrong_tax = (fee * 1_000 + 5_000) // 10_000 if rand() < 0.5 else 0  # 10 % VAT, or none
        if wrong_tax == tax:
            wrong_tax = tax + 1 + int(rand() * 50)
        self._truth(i, kind, field="taxAmount", expected=money(tax), reported=money(wrong_tax))
        return fee, wrong_tax

    # -- the balance pass --------------------------------------------------------------------

    def _balances(self) -> None:
        """Walk the records in order, moving balances and failing debits that cannot be met."""
        cols, rand, n = self.cols, self.rng.random, self.n
        ledger = dict.fromkeys(WALLET_CURRENCIES, 0)
        held = dict.fromkeys(WALLET_CURRENCIES, 0)
        heaps: dict[str, list[tuple[int, int]]] = {c: [] for c in WALLET_CURRENCIES}
        reserve_ms = RESERVE_DAYS * DAY_MS
        fee_tax = self._fee_tax
        seq = self.seq
        to_l: list[int | None] = [None] * n
        to_a: list[int | None] = [None] * n
        from_l: list[int | None] = [None] * n
        from_a: list[int | None] = [None] * n
        fees = [0] * n
        taxes = [0] * n
        reserves = [0] * n

        def release(currency: str, now: int) -> None:
            heap = heaps[currency]
            while heap and heap[0][0] <= now:
                held[currency] -= heapq.heappop(heap)[1]

        for i in range(n):
            ttype = cols.ttype[i]
            cur = cols.cur[i]
            now = cols.created[i]
            if cols.status[i] != "successful":
                fees[i], taxes[i] = fee_tax(i, ttype, cur, cols.amt[i])
                continue
            if ttype == "collection":
                amount = cols.amt[i]
                fee, tax = fee_tax(i, ttype, cur, amount)
                release(cur, now)
                if (
                    cols.chan[i] == "CARD"
                    and cur in ("NGN", "USD")
                    and not self.tie[i]
                    and rand() < _RESERVE_SHARE
                ):
                    r = (amount * RESERVE_BP + 5_000) // 10_000
                    heapq.heappush(heaps[cur], (now + reserve_ms, r))
                    held[cur] += r
                    reserves[i] = r
                ledger[cur] += amount - fee - tax
                to_l[i] = ledger[cur]
                to_a[i] = ledger[cur] - held[cur]
                seq[cur].append(i)
            elif ttype != "conversion":
                release(cur, now)
                fee, tax = fee_tax(i, ttype, cur, cols.amt[i])
                room = ledger[cur] - held[cur] - fee - tax
                amount = self._debit_amount(ttype, cur, cols.amt[i], room)
                if amount is None:
                    cols.status[i] = "failed"
                    fees[i], taxes[i] = fee, tax
                    continue
                cols.amt[i] = amount
                ledger[cur] -= amount + fee + tax
                from_l[i] = ledger[cur]
                from_a[i] = ledger[cur] - held[cur]
                seq[cur].append(i)
            else:
                fcur = cols.fcur[i]
                assert fcur is not None
                release(fcur, now)
                release(cur, now)
                famount = self._debit_amount(ttype, fcur, cols.famt[i], ledger[fcur] - held[fcur])
                amount = cols.amt[i] if famount is None else _convert(famount, (fcur, cur))
                fee, tax = fee_tax(i, ttype, cur, amount)
                if famount is None or amount - fee - tax <= 0:
                    cols.status[i] = "failed"
                    fees[i], taxes[i] = fee, tax
                    continue
                cols.famt[i] = famount
                cols.amt[i] = amount
                ledger[fcur] -= famount
                from_l[i] = ledger[fcur]
                from_a[i] = ledger[fcur] - held[fcur]
                ledger[cur] += amount - fee - tax
                to_l[i] = ledger[cur]
                to_a[i] = ledger[cur] - held[cur]
                seq[fcur].append(i)
                seq[cur].append(i)
            fees[i], taxes[i] = fee, tax
        cols.to_l, cols.to_a, cols.from_l, cols.from_a = to_l, to_a, from_l, from_a
        cols.fee, cols.tax, cols.reserve = fees, taxes, reserves
        self.final_ledger = ledger
        self.open_reserves = {c: sorted(h) for c, h in heaps.items()}

    def _debit_amount(self, ttype: str, cur: str, desired: int, room: int) -> int | None:
        """How much a debit takes out of ``room`` (available minus fees), or None to fail it."""
        rand = self.rng.random
        minimum = _MIN_DEBIT[cur]
        if ttype == "settlement":
            amount = room * (30 + int(rand() * 60)) // 100
        elif desired * 2 <= room:
            return desired
        else:
            amount = room * (5 + int(rand() * 45)) // 100
        amount -= amount % 100
        return amount if amount >= minimum else None

    # -- anomalies planted after the balance pass --------------------------------------------

    def _wallets(self, i: int) -> tuple[str, ...]:
        cols = self.cols
        if cols.ttype[i] == "conversion":
            return (cols.fcur[i], cols.cur[i])  # type: ignore[return-value]
        return (cols.cur[i],)

    def _spaced(self, i: int, planted: dict[str, set[int]]) -> bool:
        for wallet in self._wallets(i):
            seq = self.seq[wallet]
            p = bisect.bisect_left(seq, i)
            if p < _SPACING or p > len(seq) - _SPACING - 2:
                return False
            if any(q in planted[wallet] for q in range(p - _SPACING, p + _SPACING + 1)):
                return False
        return True

    def _mark(self, i: int, planted: dict[str, set[int]]) -> None:
        for wallet in self._wallets(i):
            planted[wallet].add(bisect.bisect_left(self.seq[wallet], i))

    def _plant_balance_anomalies(self) -> None:
        cols, rand = self.cols, self.rng.random
        planted: dict[str, set[int]] = {c: set() for c in WALLET_CURRENCIES}

        def ok_missing(i: int) -> bool:
            return (
                cols.ttype[i] == "collection"
                and cols.status[i] == "successful"
                and not cols.reserve[i]
                and self._spaced(i, planted)
            )

        for _ in range(self.quota["missing_from_export"]):
            picked = self._sample("missing_from_export", 1, ok_missing)
            if not picked:
                break
            i = picked[0]
            self._mark(i, planted)
            self.hidden[i] = True
            self._truth(
                i,
                "missing_from_export",
                transType=cols.ttype[i],
                status=cols.status[i],
                amount=money(cols.amt[i]),
            )

        def ok_bad(i: int) -> bool:
            return cols.status[i] == "successful" and self._spaced(i, planted)

        for _ in range(self.quota["bad_balance"]):
            picked = self._sample("bad_balance", 1, ok_bad)
            if not picked:
                break
            i = picked[0]
            self._mark(i, planted)
            side = self._side(i)
            values = cols.to_l if side == "to" else cols.from_l
            true = values[i]
            assert true is not None
            delta = 1 + int(rand() * 50_000)
            reported = true - delta if rand() < 0.5 and true >= delta else true + delta
            values[i] = reported
            self._truth(
                i,
                "bad_balance",
                currency=self._side_currency(i, side),
                field=f"{side}BalanceAfterLedger",
                expected=money(true),
                reported=money(reported),
            )

        def held(i: int) -> int:
            side = self._side_with_reserve(i)
            ledger = cols.to_l[i] if side == "to" else cols.from_l[i]
            avail = cols.to_a[i] if side == "to" else cols.from_a[i]
            return (ledger or 0) - (avail or 0)

        chosen: list[int] = []
        for _ in range(self.quota["reserve_mismatch"]):
            # Prefer records with a reserve held: the realistic bug is not deducting it.
            got = self._sample(
                "reserve_mismatch", 1, lambda i: ok_bad(i) and held(i) > 0, tries=500
            ) or self._sample("reserve_mismatch", 1, ok_bad)
            if not got:
                break
            self._mark(got[0], planted)
            chosen.append(got[0])
        for i in chosen:
            side = self._side_with_reserve(i)
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
            self._truth(
                i,
                "reserve_mismatch",
                currency=self._side_currency(i, side),
                field=f"{side}BalanceAfterAvailable",
                expected=money(true),
                reported=money(reported),
                reserve_held=money(ledger - true),
            )

    def _side(self, i: int) -> str:
        ttype = self.cols.ttype[i]
        if ttype == "collection":
            return "to"
        if ttype == "conversion":
            return "to" if self.rng.random() < 0.5 else "from"
        return "from"

    def _side_with_reserve(self, i: int) -> str:
        cols = self.cols
        if cols.ttype[i] == "collection":
            return "to"
        if cols.ttype[i] == "conversion" and (cols.to_l[i] or 0) > (cols.to_a[i] or 0):
            return "to"
        return "from"

    def _side_currency(self, i: int, side: str) -> str:
        cols = self.cols
        if side == "from" and cols.ttype[i] == "conversion":
            return cols.fcur[i]  # type: ignore[return-value]
        return cols.cur[i]

    def _plant_duplicates(self) -> None:
        cols, rand = self.cols, self.rng.random
        kind = "duplicate_reference"

        def ok(j: int) -> bool:
            return j >= 1 and not self.hidden[j]

        for _ in range(self.quota[kind]):
            picked = self._sample(kind, 1, ok)
            if not picked:
                break
            j = picked[0]
            k = None
            for _ in range(20):
                cand = j - 1 - int(rand() * min(j, 50))
                if cand not in self.taken and cand not in self.protected and not self.hidden[cand]:
                    k = cand
                    break
            if k is None:
                del self.taken[j]
                continue
            self.protected.add(k)
            cols.ref[j] = cols.ref[k]
            self._truth(j, kind, original_id=cols.oid[k])

    # -- orders, ground truth, assembly ------------------------------------------------------

    def _truth(self, i: int, kind: str, **details: Any) -> None:
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

    def _orders(self) -> list[tuple[str, int, str, str, str]]:
        cols, rand, n = self.cols, self.rng.random, self.n
        free = [
            i
            for i in range(n)
            if cols.ttype[i] == "collection" and i not in self.taken and i not in self.protected
        ]
        order_kind: dict[int, str] = {}
        for kind in ("order_missing", "order_amount", "order_status", "order_currency"):
            count = 0
            tries = max(2_000, self.quota[kind] * 500)
            while count < self.quota[kind] and free and tries > 0:
                tries -= 1
                i = free[int(rand() * len(free))]
                if i in order_kind or self.hidden[i]:
                    continue
                order_kind[i] = kind
                count += 1
        rows: list[tuple[str, int, str, str, str]] = []
        created_days = _iso_days(cols.created)
        for i in range(n):
            if cols.ttype[i] != "collection":
                continue
            ref, amount, cur, status = cols.ref[i], cols.amt[i], cols.cur[i], cols.status[i]
            kind = order_kind.get(i)
            if kind == "order_missing":
                self._truth(i, kind)
                continue
            if kind == "order_amount":
                change = max(100, amount * (1 + int(rand() * 20)) // 100 // 100 * 100)
                reported = amount + change if rand() < 0.5 or amount <= change else amount - change
                self._truth(
                    i, kind, field="amount", expected=money(amount), reported=money(reported)
                )
                amount = reported
            elif kind == "order_status":
                reported = (
                    _ORDER_STATUS_SWAP[int(rand() * 3)] if status == "successful" else "successful"
                )
                self._truth(i, kind, field="status", expected=status, reported=reported)
                status = reported
            elif kind == "order_currency":
                others = [c for c in ("NGN", "USD", "GHS", "KES") if c != cur]
                reported = others[int(rand() * len(others))]
                self._truth(i, kind, field="currency", expected=cur, reported=reported)
                cur = reported
            rows.append((ref, amount, cur, status, created_days[i]))
        days = (self.end_ms - self.start_ms) // DAY_MS
        for _ in range(self.quota["order_extra"]):
            ref = self._new_reference()
            day_ms = self.start_ms + int(rand() * days) * DAY_MS
            amount = _draw_amount(self.rng, "collection", "NGN")
            day = iso_ms(day_ms)[:10]
            rows.append((ref, amount, "NGN", "successful", day))
            self.truth.append(
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
        rows.sort(key=lambda r: (r[4], r[0]))
        return rows

    def _ledger(self, bodies: list[bytes], orders: list[tuple[str, int, str, str, str]]) -> Ledger:
        cols = self.cols
        index = pl.DataFrame(
            {
                "id": cols.oid,
                "createdAt": cols.created,
                "transType": cols.ttype,
                "status": cols.status,
                "toCurrency": cols.cur,
                "toAmount": cols.amt,
                "transactionReference": cols.ref,
                "hidden": self.hidden,
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
        orders_frame = pl.DataFrame(
            {
                "reference": [r[0] for r in orders],
                "amount": [Decimal(r[1]).scaleb(-2) for r in orders],
                "currency": [r[2] for r in orders],
                "status": [r[3] for r in orders],
                "date": [date.fromisoformat(r[4]) for r in orders],
            },
            schema={
                "reference": pl.String,
                "amount": pl.Decimal(38, 2),
                "currency": pl.String,
                "status": pl.String,
                "date": pl.Date,
            },
        )
        truth = [
            e
            for _, e in sorted(
                self.truth, key=lambda t: (t[0], t[1]["kind"], t[1]["id"] or "", t[1]["reference"])
            )
        ]
        created = cols.created
        last = created[-1] if created else self.start_ms
        reserves = {
            c: [(release, amount) for release, amount in h if release > last]
            for c, h in self.open_reserves.items()
        }
        return Ledger(
            seed=self.seed,
            records=self.n,
            start_month=self.start_month,
            months=self.months,
            anomaly_rate=self.anomaly_rate,
            start_ms=self.start_ms,
            end_ms=self.end_ms,
            index=index,
            orders=orders_frame,
            ground_truth=truth,
            _bodies=bodies,
            _context=self.ctx,
            _final_ledger=dict(self.final_ledger),
            _open_reserves=reserves,
            _id_proc=self.id_proc,
            _id_counter=self.id_counter,
        )


def _iso_days(values: list[int]) -> list[str]:
    """UTC calendar days (``YYYY-MM-DD``) of epoch-millisecond values, vectorised."""
    series = pl.Series(values, dtype=pl.Int64).cast(pl.Datetime("ms", "UTC"))
    return series.dt.strftime("%Y-%m-%d").to_list()


# -- checks -----------------------------------------------------------------------------------


def _dec(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value)


def _ms(value: str) -> int:
    return _epoch_ms(datetime.fromisoformat(value.replace("Z", "+00:00")))


class _Side(NamedTuple):
    pos: int
    record: Mapping[str, Any]
    delta: Decimal
    ledger_field: str
    avail_field: str
    created: int


def check_balance_model(
    records: Iterable[Mapping[str, Any]], *, opening: Mapping[str, Decimal] | None = None
) -> list[BalanceViolation]:
    """Check records against the sandbox's balance model (see the module docstring).

    Wallets are walked in ``createdAt``/``id`` order. A wrong ledger value is classified by
    looking at the wallet's next record: if that one continues from the reported value, the
    chain *jumped* (a move not in ``records``, e.g. a record missing from the export, and the
    walk continues from the reported value); otherwise the value alone is wrong (``ledger``)
    and the walk continues from the expected value. Available values are checked against the
    walked ledger value minus the reserves held at that moment.

    Args:
        records: transaction dicts as served (money as ``Decimal``, ``int`` or ``str``), in
            any order.
        opening: each wallet's balance before the first record (default: zero).

    Returns:
        The violations, in record order.
    """
    ordered = sorted(records, key=lambda r: (_ms(r["createdAt"]), r["id"]))
    sides: dict[str, list[_Side]] = {}
    reserves: dict[str, list[tuple[int, int, Decimal]]] = {}
    for pos, rec in enumerate(ordered):
        if rec.get("status") != "successful":
            continue
        created = _ms(rec["createdAt"])
        ttype = rec.get("transType")
        to_amount = _dec(rec.get("toAmount")) or Decimal(0)
        fee = _dec(rec.get("feeAmount")) or Decimal(0)
        tax = _dec(rec.get("taxAmount")) or Decimal(0)
        to_cur = rec.get("toCurrency")
        if ttype == "collection":
            sides.setdefault(to_cur, []).append(
                _Side(pos, rec, to_amount - fee - tax, *_TO, created)
            )
            reserve = rec.get("rollingReserve")
            if isinstance(reserve, Mapping) and reserve.get("amount") is not None:
                release = _ms(reserve["reserveReleaseDate"])
                reserves.setdefault(to_cur, []).append(
                    (pos, release, _dec(reserve["amount"]) or Decimal(0))
                )
        elif ttype in ("transfer", "settlement"):
            sides.setdefault(to_cur, []).append(
                _Side(pos, rec, -(to_amount + fee + tax), *_FROM, created)
            )
        elif ttype == "conversion":
            from_amount = _dec(rec.get("fromAmount")) or Decimal(0)
            sides.setdefault(rec.get("fromCurrency"), []).append(
                _Side(pos, rec, -from_amount, *_FROM, created)
            )
            sides.setdefault(to_cur, []).append(
                _Side(pos, rec, to_amount - fee - tax, *_TO, created)
            )
    found: list[tuple[int, BalanceViolation]] = []

    def flag(
        side: _Side, currency: str, field: str, kind: str, want: Decimal, got: Decimal | None
    ) -> None:
        found.append(
            (side.pos, BalanceViolation(side.record["id"], currency, field, kind, want, got))
        )

    for currency, events in sides.items():
        balance = (opening or {}).get(currency, Decimal(0))
        wallet_reserves = reserves.get(currency, [])
        heap: list[tuple[int, int, Decimal]] = []
        next_reserve = 0
        held = Decimal(0)
        for k, side in enumerate(events):
            while (
                next_reserve < len(wallet_reserves) and wallet_reserves[next_reserve][0] <= side.pos
            ):
                pos, release, amount = wallet_reserves[next_reserve]
                heapq.heappush(heap, (release, pos, amount))
                held += amount
                next_reserve += 1
            while heap and heap[0][0] <= side.created:
                held -= heapq.heappop(heap)[2]
            expected = balance + side.delta
            reported = _dec(side.record.get(side.ledger_field))

            if reported is None:
                flag(side, currency, side.ledger_field, "missing", expected, None)
                balance = expected
            elif reported != expected:
                nxt = events[k + 1] if k + 1 < len(events) else None
                nxt_reported = None if nxt is None else _dec(nxt.record.get(nxt.ledger_field))
                jumped = nxt is not None and nxt_reported == reported + nxt.delta
                kind = "jump" if jumped else "ledger"
                flag(side, currency, side.ledger_field, kind, expected, reported)
                balance = reported if jumped else expected
            else:
                balance = expected
            avail_expected = balance - held
            avail = _dec(side.record.get(side.avail_field))
            if avail != avail_expected:
                kind = "missing" if avail is None else "available"
                flag(side, currency, side.avail_field, kind, avail_expected, avail)
    found.sort(key=lambda item: (item[0], item[1].field))
    return [v for _, v in found]


def check_fees(records: Iterable[Mapping[str, Any]]) -> list[FeeViolation]:
    """Check every record's ``feeAmount`` against the schedule and ``taxAmount`` against the fee.

    The tax is checked against the *reported* fee, so a wrong fee is reported once.

    Args:
        records: transaction dicts as served.

    Returns:
        The violations (``feeAmount`` or ``taxAmount``), in the order of ``records``.
    """
    out: list[FeeViolation] = []
    cent = Decimal("0.01")
    for rec in records:
        amount = _dec(rec.get("toAmount"))
        fee = _dec(rec.get("feeAmount"))
        tax = _dec(rec.get("taxAmount"))
        if amount is None or fee is None or tax is None:
            continue
        rule = FEE_SCHEDULE.get(rec.get("transType", ""), {}).get(rec.get("toCurrency", ""))
        if rule is None:
            continue
        expected_fee = Decimal(rule.fee(int(amount / cent))).scaleb(-2)
        if fee != expected_fee:
            out.append(FeeViolation(rec["id"], "feeAmount", expected_fee, fee))
        expected_tax = Decimal(schedule_tax(int(fee / cent))).scaleb(-2)
        if tax != expected_tax:
            out.append(FeeViolation(rec["id"], "taxAmount", expected_tax, tax))
    return out
