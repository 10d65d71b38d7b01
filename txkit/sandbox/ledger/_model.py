"""The ledger's fixed model: calendar units, wallets, anomaly kinds, distributions.

Constants every generation phase reads (weights of types, currencies, statuses and hours,
amount distributions, conversion rates, anomaly kinds, money paths) and the small drawing
helpers built on them. Nothing here consumes randomness on its own: callers pass the RNG.
"""

from __future__ import annotations

import bisect
import math
import random
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Final

DAY_MS: Final = 86_400_000
HOUR_MS: Final = 3_600_000

#: Balance models the generator can play (see the package docstring).
BALANCE_MODELS: Final[tuple[str, ...]] = ("net", "fee-only")

#: Currencies the merchant holds wallets in.
WALLET_CURRENCIES: Final[tuple[str, ...]] = ("NGN", "USD", "GHS", "KES", "USDT")

#: Arrivals (a fault) are generated in blocks of this size, each from its own seed.
_ARRIVAL_BLOCK: Final = 64

#: How long a rolling reserve is held, and which share of ``toAmount`` it holds.
RESERVE_DAYS: Final = 30
RESERVE_BP: Final = 1_000


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
# ASCII digits and nothing around them, as txkit.calendar.parse_month reads a month.
_MONTH_RE: Final = re.compile(r"([0-9]{4})-([0-9]{2})")
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
    median, sigma, low, high, whole = _AMOUNTS[(trans_type, currency)]
    major = int(min(max(rng.lognormvariate(math.log(median), sigma), low), high))
    if major >= 1_000 and rng.random() < 0.5:
        major -= major % 100
    minor = 0 if rng.random() < whole else int(rng.random() * 100)
    return major * 100 + minor


def _convert(from_minor: int, pair: tuple[str, str]) -> int:
    num, den = FX_RATES[pair]
    return (from_minor * num * 2 + den) // (2 * den)
