"""How an amount of money is written for a reader: the one rule every table, sentence and
headline uses.

* **Exact, never rounded.** The amount's own digits, with at least the cents: ``174.46`` for
  ``174.460000`` (a column at scale 6 holds USDT's micro-units; only the zeros go),
  ``111.59925`` as it is, ``5`` as ``5.00``. Never through a float.
* **Thousands separators:** ``108,571,283.63``.
* **Amount, then the currency code:** ``1,234.50 NGN`` (the established order of the pages'
  tables).
* **Signed on request** (a difference): ``+0.63339 USD``, ``-125.03925 NGN``; zero is ``0.00``
  with no sign (``-0.00`` too).
* **To the cent, with the exact amount beside it, on request** (``to_cent``, for sentences
  that compare amounts computed to a fraction of a cent, as fee rules give): ``+0.63 USD
  (exact: +0.63339)``, half up; an amount in whole cents is written once, and so is one in a
  currency whose unit is finer than a cent (USDT's micro-units). Stated, never a silent
  rounding.
* **Rounded only to the currency's minor units, half up** (:func:`minor_units`,
  :func:`in_minor_units`): where an amount computed to a fraction of a cent (a fee rule's
  expected fee) becomes money someone is owed, as a fee mismatch's amount at stake; the
  same rule ``to_cent`` writes.
* **A missing amount is never 0:** it reads ``unknown`` (``unknown NGN``); a sentence that has
  nothing to say about it leaves it out instead.
* **Sums per currency, never across currencies** (:func:`money_sums`, :func:`format_sums`),
  listed by currency code; in a grouped frame :func:`sum_in_currency`: the sum of a group's
  amounts that are in the group's currency, **blank (null) when there is none** (a figure that
  was not compared, or is in another currency, is never ``0.00``).

Rates and percentages are not money: they keep their own formats.
"""

from __future__ import annotations

import decimal
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

import polars as pl

__all__ = [
    "DECIMAL_DIGITS",
    "FINER_THAN_CENTS",
    "UNKNOWN",
    "format_money",
    "format_sums",
    "in_minor_units",
    "minor_units",
    "money_sums",
    "sum_in_currency",
    "wide_decimal_context",
]

UNKNOWN: Final = "unknown"
#: Currencies whose smallest unit is finer than a cent: ``to_cent`` leaves their digits alone.
FINER_THAN_CENTS: Final = frozenset({"USDT", "USDC"})
_CENTS: Final = Decimal("0.01")
#: Significant digits of Decimal arithmetic once txkit is imported: a money column holds at
#: most 38 (``Decimal(38, scale)``, :mod:`txkit.schema`); Python's default 28 rounded a sum of
#: 299 amounts of 99999999999999999999.999999 USDT and refused to write 10^26 NGN to the cent
#: (``InvalidOperation``). 80 holds the sum of any number of such amounts, or a product of two.
DECIMAL_DIGITS: Final = 80


def wide_decimal_context() -> None:
    """Widen this thread's Decimal context and the default of threads started later to
    :data:`DECIMAL_DIGITS` (never narrowed): every amount the schema accepts is exact in sums
    and in writing. Called when :mod:`txkit.money` is imported (every txkit entry point)."""
    for context in (decimal.getcontext(), decimal.DefaultContext):
        context.prec = max(context.prec, DECIMAL_DIGITS)


wide_decimal_context()


def _digits(amount: Decimal) -> Decimal:
    """Only zeros past the cents are dropped, or added up to two decimals: exact either way."""
    if amount.as_tuple().exponent >= -2:
        return amount.quantize(_CENTS)
    trimmed = amount.normalize()
    return trimmed if trimmed.as_tuple().exponent < -2 else amount.quantize(_CENTS)


def minor_units(value: Decimal, currency: str | None) -> Decimal:
    """``value`` in the currency's smallest unit: to the cent, half up (away from zero), except
    a currency whose unit is finer than a cent (:data:`FINER_THAN_CENTS`), left as it is. The
    one rounding rule of the package: a fee rule's fraction of a cent is never money anyone
    can be owed or pay."""
    if currency in FINER_THAN_CENTS or value.as_tuple().exponent >= -2:
        return value
    return value.quantize(_CENTS, rounding=ROUND_HALF_UP)


def in_minor_units(amount: pl.Expr, currency: pl.Expr) -> pl.Expr:
    """:func:`minor_units` for a column of amounts and a column of their currencies (polars'
    ``half_away_from_zero`` is ``ROUND_HALF_UP``); the column keeps its scale."""
    return (
        pl.when(currency.cast(pl.String).is_in(sorted(FINER_THAN_CENTS)))
        .then(amount)
        .otherwise(amount.round(2, mode="half_away_from_zero"))
    )


def format_money(
    value: Any, currency: str | None = None, *, signed: bool = False, to_cent: bool = False
) -> str:
    """One amount as a person reads it (see the module docstring).

    Args:
        value: a ``Decimal``, an ``int`` or a decimal string; None for a missing amount.
        currency: the amount's currency code, written after the amount; None for none.
        signed: write ``+`` before a positive amount (a difference).
        to_cent: an amount with digits past the cent is written to the cent (half up), its
            exact digits beside it.

    Returns:
        ``1,234.50 NGN``, ``+0.63339 USD``, ``0.00``; ``unknown NGN`` for None;
        ``+0.63 USD (exact: +0.63339)`` with ``to_cent``.

    Raises:
        TypeError: for a float (money is never a float: its digits are not the amount's).
    """
    if value is None:
        text = UNKNOWN
    else:
        if isinstance(value, float | bool):
            raise TypeError(
                f"money must be a Decimal, an int or a decimal string, got {type(value).__name__} "
                f"{value!r}"
            )
        amount = Decimal(value)
        if amount == 0:
            amount = abs(amount)  # -0.00 reads 0.00
        exact = _digits(amount)
        sign = "+" if signed and amount > 0 else ""
        text = f"{sign}{exact:,}"
        if to_cent and exact.as_tuple().exponent < -2 and currency not in FINER_THAN_CENTS:
            cents = minor_units(exact, currency)
            shown = f"{'+' if signed and cents > 0 else ''}{abs(cents) if cents == 0 else cents:,}"
            named = f"{shown} {currency}" if currency else shown
            return f"{named} (exact: {text})"
    return f"{text} {currency}" if currency else text


def money_sums(
    frame: pl.DataFrame, amount: str, currency: str = "currency"
) -> list[tuple[str | None, Decimal | None, int]]:
    """Exact sums of ``amount`` per ``currency``, never added across currencies.

    Returns:
        ``(currency, sum of the known amounts, number of missing amounts)`` per currency,
        sorted by currency code (a missing currency last); the sum is None when every
        amount of the currency is missing (never 0).
    """
    sums: dict[str | None, Decimal | None] = {}
    missing: dict[str | None, int] = {}
    for code, value in frame.select(currency, amount).iter_rows():
        sums.setdefault(code, None)
        missing[code] = missing.get(code, 0) + (value is None)
        if value is not None:
            sums[code] = (sums[code] or Decimal(0)) + Decimal(value)
    order = sorted(sums, key=lambda c: (c is None, c or ""))
    return [(c, sums[c], missing[c]) for c in order]


def format_sums(
    frame: pl.DataFrame,
    amount: str,
    currency: str = "currency",
    *,
    signed: bool = False,
    to_cent: bool = False,
) -> str:
    """The sums of :func:`money_sums` as text: ``1,234.50 NGN, 0.63339 USD``. A currency
    with missing amounts says so (``12.00 NGN and 2 unknown``); a row without a currency is
    summed apart, without a code.

    Args:
        frame: the rows to sum.
        amount: the money column.
        currency: the column of each row's currency code.
        signed: write ``+`` before a positive sum (differences).
        to_cent: each sum to the cent with its exact digits beside it (:func:`format_money`).
    """
    parts = []
    for code, total, missing in money_sums(frame, amount, currency):
        text = format_money(total, code, signed=signed, to_cent=to_cent)
        parts.append(f"{text} and {missing:,} {UNKNOWN}" if missing and total is not None else text)
    return ", ".join(parts)


def sum_in_currency(
    amount: str, currency: str | None = None, *, group_currency: str = "currency"
) -> pl.Expr:
    """An aggregation for a frame grouped by ``group_currency``: the exact sum of ``amount``
    over the rows whose own ``currency`` is the group's, null when no row has such an amount.

    polars' ``sum`` of no values is 0, which a page then showed as a ``0.00`` difference
    where nothing was compared, and a group keyed by one side's currency summed the other
    side's amounts of other currencies under it (a currency mismatch's orders: KES and USD
    labelled NGN). Use it in ``group_by(..., group_currency).agg(...)``.

    Args:
        amount: the money column.
        currency: the column of each row's currency for ``amount``; None: the amount is in the
            group's currency on every row.
        group_currency: the grouping key that names the group's currency.
    """
    value = pl.col(amount)
    if currency is not None:
        value = pl.when(pl.col(currency) == pl.col(group_currency)).then(value)
    return pl.when(value.count() > 0).then(value.sum()).alias(amount)
