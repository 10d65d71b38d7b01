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

Balance model (``balance_model``; checked by :func:`check_balance_model`)
    Wallets are per currency and start at zero at the start of the calendar. Records are
    ordered by ``createdAt`` then ``id``; only ``successful`` records move balances. The
    interface document does not say whether the tax is deducted on top of the fee; the
    generator plays either answer. Write ``charge`` for ``feeAmount + taxAmount`` under
    ``net`` (the default) and for ``feeAmount`` alone under ``fee-only`` (the tax is included
    in the fee; ``feeAmount`` and ``taxAmount`` are the same numbers under both models).

    * collection: ``toBalanceAfterLedger`` = previous + ``toAmount - charge``;
    * transfer and settlement: ``fromBalanceAfterLedger`` = previous -
      (``toAmount + charge``), in the ``toCurrency`` wallet;
    * conversion: ``fromBalanceAfterLedger`` = previous (``fromCurrency`` wallet) -
      ``fromAmount``; ``toBalanceAfterLedger`` = previous (``toCurrency`` wallet) +
      ``toAmount - charge``;
    * on every side, ``...BalanceAfterAvailable`` = that ledger value minus the rolling
      reserves of the same currency still held at that moment. A successful collection's
      reserve (10 % of ``toAmount``, on some NGN/USD card payments) is held from its own
      ``createdAt`` until ``reserveReleaseDate`` (exclusive), 30 days later.

    Non-successful records carry no balance fields. Debits never exceed the available balance
    (a debit that would is recorded as ``failed``).

    Zero balances (``zero_balance_rate``, default 0): that share of eligible successful
    transfers report all four balance-after fields as ``0`` (like the provider's documented
    KES transfer), while the true chain carries on through them; such a record is never
    within 6 records of a planted balance anomaly on its wallet. They are drawn from a random
    source of their own: the rest of the ledger is the same for every rate.

Planted anomalies (:data:`ANOMALY_KINDS`)
    ``round(records * anomaly_rate)`` anomalies, split evenly over the thirteen kinds (at
    most one per record; no two balance anomalies within 5 successful records of each other
    on one wallet). See :data:`ANOMALY_KINDS` for what each kind means. The merchant-side
    orders (:attr:`Ledger.orders`) hold one row per exported collection except where an
    ``order_*`` anomaly was planted; collections hidden by ``missing_from_export`` stay in
    the orders.

Order dates and late payments (``late_payments_per_month``, default 3)
    An order is placed before it is paid: its ``date`` is the UTC day of a moment a minute to
    three days before the record's ``createdAt`` (most within two hours), never before the
    start of the payment's month. The exception is planted: at each month start after the
    first, up to ``late_payments_per_month`` successful collections without another anomaly
    paid within six hours after midnight have an order placed on the previous evening
    (20:00-23:59 UTC), so the order is dated on the last day of the month before. The order
    and the record agree in everything else. Order times come from a random source of their
    own: records and anomalies do not depend on them.

Repeat underpayers (``repeat_underpayers``, default 0)
    That many customers get two or three of the underpayments planted in the calendar's last
    month (the default report month): their records take one customer's e-mail, name and
    bank. Grouped from a random source of their own; nothing else changes
    (:attr:`Ledger.repeaters`).

Ground truth (:attr:`Ledger.ground_truth`, ``ground_truth.json``)
    ``ground_truth.json`` holds ``generator`` (every generation argument), ``anomaly_kinds``,
    ``anomalies`` (one entry per planted anomaly: ``kind``, ``id``, ``reference``,
    ``currency``, ``createdAt``, ``transType`` and kind-specific details, money as strings),
    ``late_payments`` (``kind`` ``late_payment``, ``id``, ``reference``, ``currency``,
    ``createdAt``, ``transType``, ``amount``, ``order_date``, ``ordered_at``) and
    ``zero_balances`` (``kind`` ``zero_balance``, ``id``, ``reference``, ``currency``,
    ``createdAt``, ``transType`` and the true ``fromBalanceAfterLedger`` and
    ``fromBalanceAfterAvailable``) and ``repeat_underpayers`` (``kind``
    ``repeat_underpayer``, ``customerEmail``, ``currency``, ``ids``, ``references``,
    ``createdAt``). Late payments and zero balances are not anomalies: a check should match
    or skip them, never report them.
"""

from __future__ import annotations

from datetime import UTC, datetime

from txkit.sandbox._render import MERCHANT_NAME
from txkit.sandbox.ledger._checks import (
    BalanceViolation,
    FeeViolation,
    check_balance_model,
    check_fees,
)
from txkit.sandbox.ledger._fees import (
    FEE_SCHEDULE,
    TAX_RATE_BP,
    FeeRule,
    schedule_fee,
    schedule_tax,
)
from txkit.sandbox.ledger._generator import _Generator
from txkit.sandbox.ledger._model import (
    _MONTH_RE,
    ANOMALY_KINDS,
    BALANCE_MODELS,
    DAY_MS,
    FX_RATES,
    HOUR_MS,
    MONEY_PATHS,
    RESERVE_BP,
    RESERVE_DAYS,
    WALLET_CURRENCIES,
    _epoch_ms,
)
from txkit.sandbox.ledger._records import Arrival, Ledger, decimal_money, parse_record
from txkit.sandbox.ledger._saved import load_ledger, save_ledger

__all__ = [
    "ANOMALY_KINDS",
    "BALANCE_MODELS",
    "DAY_MS",
    "FEE_SCHEDULE",
    "FX_RATES",
    "HOUR_MS",
    "MERCHANT_NAME",
    "MONEY_PATHS",
    "RESERVE_BP",
    "RESERVE_DAYS",
    "TAX_RATE_BP",
    "WALLET_CURRENCIES",
    "Arrival",
    "BalanceViolation",
    "FeeRule",
    "FeeViolation",
    "Ledger",
    "calendar_bounds",
    "check_balance_model",
    "check_fees",
    "decimal_money",
    "generate_ledger",
    "load_ledger",
    "parse_record",
    "save_ledger",
    "schedule_fee",
    "schedule_tax",
]


def generate_ledger(
    *,
    seed: int = 7,
    records: int = 20_000,
    start_month: str = "2025-11",
    months: int = 12,
    anomaly_rate: float = 0.01,
    balance_model: str = "net",
    zero_balance_rate: float = 0.0,
    late_payments_per_month: int = 3,
    repeat_underpayers: int = 0,
) -> Ledger:
    """Generate the sandbox's synthetic ledger (see the module docstring for the model).

    Args:
        seed: random seed; the same arguments give byte-identical output.
        records: number of records, hidden ones included (0 to 10,000,000).
        start_month: first month of the calendar, ``YYYY-MM``.
        months: length of the calendar in months (1 to 120).
        anomaly_rate: planted anomalies per record (0 to 0.2).
        balance_model: ``net`` (balances move by amounts net of fee and tax) or ``fee-only``
            (the tax is included in the fee: balances move by amounts net of the fee only).
        zero_balance_rate: share (0 to 1) of eligible successful transfers that report all
            four balance-after fields as ``0`` (:attr:`Ledger.zero_balances`).
        late_payments_per_month: at most this many late payments planted at each month start
            (0 to 100; :attr:`Ledger.late_payments`).
        repeat_underpayers: this many customers (0 to 100) get two or three of the
            underpayments planted in the calendar's last month (:attr:`Ledger.repeaters`).

    Returns:
        The :class:`Ledger`.

    Raises:
        ValueError: for an argument outside the ranges above.
    """
    _check_arguments(
        seed,
        records,
        months,
        anomaly_rate,
        balance_model,
        zero_balance_rate,
        late_payments_per_month,
        repeat_underpayers,
    )
    start_ms, end_ms = calendar_bounds(start_month, months)
    generator = _Generator(
        seed,
        records,
        start_month,
        months,
        float(anomaly_rate),
        balance_model=balance_model,
        zero_balance_rate=float(zero_balance_rate),
        late_payments_per_month=late_payments_per_month,
        repeat_underpayers=repeat_underpayers,
    )
    return generator.run(start_ms, end_ms)


def _check_arguments(
    seed: object,
    records: object,
    months: object,
    anomaly_rate: object,
    balance_model: object,
    zero_balance_rate: object,
    late_payments_per_month: object,
    repeat_underpayers: object,
) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if isinstance(records, bool) or not isinstance(records, int) or not 0 <= records <= 10**7:
        raise ValueError(f"records must be an integer from 0 to 10,000,000, got {records!r}")
    if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= 120:
        raise ValueError(f"months must be an integer from 1 to 120, got {months!r}")
    if not isinstance(anomaly_rate, int | float) or not 0 <= anomaly_rate <= 0.2:
        raise ValueError(f"anomaly_rate must be a number from 0 to 0.2, got {anomaly_rate!r}")
    if balance_model not in BALANCE_MODELS:
        raise ValueError(
            f"balance_model must be one of {', '.join(BALANCE_MODELS)}, got {balance_model!r}"
        )
    if (
        isinstance(zero_balance_rate, bool)
        or not isinstance(zero_balance_rate, int | float)
        or not 0 <= zero_balance_rate <= 1
    ):
        raise ValueError(
            f"zero_balance_rate must be a number from 0 to 1, got {zero_balance_rate!r}"
        )
    if (
        isinstance(late_payments_per_month, bool)
        or not isinstance(late_payments_per_month, int)
        or not 0 <= late_payments_per_month <= 100
    ):
        raise ValueError(
            "late_payments_per_month must be an integer from 0 to 100, "
            f"got {late_payments_per_month!r}"
        )
    if (
        isinstance(repeat_underpayers, bool)
        or not isinstance(repeat_underpayers, int)
        or not 0 <= repeat_underpayers <= 100
    ):
        raise ValueError(
            f"repeat_underpayers must be an integer from 0 to 100, got {repeat_underpayers!r}"
        )


def calendar_bounds(start_month: str, months: int) -> tuple[int, int]:
    """The calendar as epoch milliseconds: start of ``start_month`` to the end, exclusive.

    Raises:
        ValueError: if ``start_month`` is not ``YYYY-MM`` or not a real month.
    """
    match = _MONTH_RE.fullmatch(start_month) if isinstance(start_month, str) else None
    if not match or not 1 <= int(match.group(2)) <= 12 or int(match.group(1)) < 1971:
        raise ValueError(f"start_month must be YYYY-MM (e.g. 2025-11), got {start_month!r}")
    year, month = int(match.group(1)), int(match.group(2))
    end_year, end_month = divmod(month - 1 + months, 12)
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + end_year, end_month + 1, 1, tzinfo=UTC)
    return _epoch_ms(start), _epoch_ms(end)
