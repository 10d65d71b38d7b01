"""Fees and tax that do not follow the rule the month's records follow.

Neither the interface document nor the provider's notes state a fee schedule or a tax rate,
so both are read from the data, as the balance model is (tested, not assumed):

* **tax**: per currency, the rate (in basis points of the fee) that most successful records
  with a fee show; it is the currency's rule when it explains at least
  :data:`MIN_SHARE` of them. A record whose ``taxAmount`` differs from ``rate x feeAmount``
  by more than half a cent (any rounding of the exact value) is a ``tax_mismatch``;
* **fee**: per transaction type and currency, either a flat fee (one value on at least
  :data:`MIN_SHARE` of the records) or a percentage of ``toAmount`` (the basis points most
  records show), capped at the fee most of the records below the percentage share (when
  there are such). A record whose ``feeAmount`` differs from the rule's exact value by more
  than half a cent is a ``fee_mismatch``. A group no rule explains for :data:`MIN_SHARE` of
  its records is left out (said in :func:`fee_rules`), never reported as mismatches.

A record with a wrong fee usually carries the tax of that fee: it is a fee mismatch only.
Amounts are exact decimals; currencies are never mixed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, Final

import polars as pl

from txkit.analysis._common import Frame, lazy
from txkit.money import format_money

__all__ = ["MIN_SHARE", "FeeRule", "fee_rules", "fee_tax_mismatches"]

#: The share of a group's records a rule must explain to be taken as the group's rule.
MIN_SHARE: Final = Decimal("0.9")
_HALF_CENT: Final = Decimal("0.005")
_BP: Final = Decimal(10_000)
_MICRO: Final = 10**6  # the money columns' scale: Decimal(38, 6)
_NEEDED: Final = ("id", "createdAt", "status", "transType", "toCurrency", "toAmount",
                  "feeAmount", "taxAmount")  # fmt: skip


@dataclass(frozen=True)
class FeeRule:
    """A group's rule: ``flat`` or ``percent_bp`` (basis points) capped at ``cap``; for the
    tax, ``percent_bp`` of the fee. ``share``: the records it explains, of ``records``."""

    kind: str  # "fee" or "tax"
    trans_type: str | None
    currency: str
    flat: Decimal | None
    percent_bp: int | None
    cap: Decimal | None
    explained: int
    records: int

    def expected(self, base: Decimal) -> Decimal:
        """The rule's exact value for a ``toAmount`` (fee) or a fee (tax)."""
        if self.flat is not None:
            return self.flat
        value = base * Decimal(self.percent_bp or 0) / _BP
        return value if self.cap is None else min(value, self.cap)

    def describe(self) -> str:
        """``collection NGN: 1.40 % of toAmount, capped at 2,000.00 NGN (4,120 of 4,130)``
        (money with its currency code, as everywhere)."""
        head = f"{self.trans_type} {self.currency}" if self.trans_type else f"tax {self.currency}"
        if self.flat is not None:
            rule = f"flat {format_money(self.flat, self.currency)}"
        else:
            base = "of the fee" if self.kind == "tax" else "of toAmount"
            rule = f"{Decimal(self.percent_bp or 0) / 100:.2f} % {base}"
            if self.cap is not None:
                rule += f", capped at {format_money(self.cap, self.currency)}"
        return f"{head}: {rule} ({self.explained:,} of {self.records:,} records)"


def _fits(value: Decimal, expected: Decimal) -> bool:
    return abs(value - expected) <= _HALF_CENT


def _mask(
    part: pl.DataFrame, expr: pl.Expr, each: Callable[[Any, Any], bool], *columns: str
) -> pl.Series:
    """``expr`` on ``part``'s records, exact in the columns' decimals; where an amount is too
    large for polars' 38 digits (an overflow), ``each`` of ``columns``' values, record by record."""
    try:
        return part.select(expr.alias("mask")).to_series()
    except pl.exceptions.ComputeError:
        values = zip(*(part[c].to_list() for c in columns), strict=True)
        return pl.Series("mask", [each(*v) for v in values], pl.Boolean)


def _fit_mask(part: pl.DataFrame, rule: FeeRule, value: str, base: str) -> pl.Series:
    """Per record of ``part``, whether ``value`` is within half a cent of the rule's exact
    value for ``base`` (:meth:`FeeRule.expected`, :func:`_fits`), on the columns:
    ``|value - base x bp / 10,000| <= 0.005`` is ``|10,000 value - bp x base| <= 50``."""
    v, b = pl.col(value), pl.col(base)
    if rule.flat is not None:
        fits = (v - rule.flat).abs() <= _HALF_CENT
    else:
        scaled = b * (rule.percent_bp or 0)
        fits = (v * _BP - scaled).abs() <= _HALF_CENT * _BP
        if rule.cap is not None:  # the cap is the rule where it is below the percentage
            fits = (
                pl.when(scaled <= rule.cap * _BP)
                .then(fits)
                .otherwise((v - rule.cap).abs() <= _HALF_CENT)
            )
    return _mask(part, fits, lambda x, y: _fits(x, rule.expected(y)), value, base)


def _counts(part: pl.DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """Each distinct value (or tuple of values) of ``columns`` once, with its record count
    last: the rules weigh values by count rather than read every record."""
    return part.group_by(*columns).len().rows()


def _mode(counted: list[tuple[Any, int]]) -> Any:
    # The most common value; ties go to the smaller, so the choice does not depend on order.
    top = max(n for _, n in counted)
    return min(v for v, n in counted if n == top)


def _best_bp(part: pl.DataFrame, value: str, base: str) -> int | None:
    """Basis points explaining most of ``part``'s (value, base) pairs within half a cent (the
    smaller on a tie); not a ratio's mode: a fee's tax rounded to the cent (USD 0.29 on 3.90)
    shows 744 bp, not 750."""
    runs = _runs(part.filter(pl.col(base) > 0), value, base)
    runs = runs.filter((pl.col("hi") >= pl.col("lo")) & (pl.col("hi") >= 0))
    # Each pair's run of rates, as +1 where it starts and -1 after it ends: the depth after
    # the steps at a rate is how many pairs that rate explains, up to the next step.
    steps = pl.concat(
        [
            runs.select(pl.col("lo").clip(lower_bound=0).alias("at"), pl.lit(1).alias("step")),
            runs.select((pl.col("hi") + 1).alias("at"), pl.lit(-1).alias("step")),
        ]
    )
    depth = (
        steps.group_by("at")
        .agg(pl.col("step").sum())
        .sort("at")
        .select("at", pl.col("step").cum_sum().alias("depth"), pl.col("at").shift(-1).alias("end"))
    )
    top = depth["depth"].max()
    if top is None or top <= 0:
        return None
    # The roundest rate of the first widest-covered run (USDT taxes: 744 to 754 bp explain
    # all 69 records; 750 bp is the rate, its middle 749 read as "7.49 %").
    at, _, end = depth.filter(pl.col("depth") == top).row(0)
    return _roundest(int(at), int(at) + 1 if end is None else int(end))


def _runs(pairs: pl.DataFrame, value: str, base: str) -> pl.DataFrame:
    """Per pair (base > 0), the basis points within half a cent of ``value``: ``lo`` =
    ceil((value - 0.005) x 10,000 / base) to ``hi`` = floor((value + 0.005) x 10,000 / base),
    in whole numbers of millionths (the columns' scale), so exact; amounts beyond polars'
    digits go pair by pair in Python's whole numbers."""
    scaled = _BP * _MICRO
    b = (pl.col(base) * _MICRO).cast(pl.Int128)
    low = ((pl.col(value) - _HALF_CENT) * scaled).cast(pl.Int128)
    high = ((pl.col(value) + _HALF_CENT) * scaled).cast(pl.Int128)
    try:
        # The ceiling of n / b is (n + b - 1) // b for b > 0 (// rounds down, as in Python).
        return pairs.select(((low + b - 1) // b).alias("lo"), (high // b).alias("hi"))
    except pl.exceptions.ComputeError:  # a decimal overflow
        with localcontext() as exact:
            exact.prec = 100  # 38 digits times 10^10, never rounded
            rows = []
            for v, d in zip(pairs[value].to_list(), pairs[base].to_list(), strict=True):
                whole = int(d * _MICRO)
                rows.append(
                    (
                        -(-int((v - _HALF_CENT) * scaled) // whole),
                        int((v + _HALF_CENT) * scaled) // whole,
                    )
                )
        return pl.DataFrame(rows, schema={"lo": pl.Int128, "hi": pl.Int128}, orient="row")


def _roundest(first: int, end: int) -> int:
    """Multiple of the coarsest step (100, 50, 25, 10, 5, 1 bp) nearest the run's middle (the
    smaller on a tie)."""
    middle = Decimal(first + end - 1) / 2
    for step in (100, 50, 25, 10, 5, 1):
        multiples = range(-(-first // step) * step, end, step)
        if multiples:
            return min(multiples, key=lambda bp: (abs(bp - middle), bp))
    return first


def _fee_rule(part: pl.DataFrame, trans_type: str, currency: str) -> FeeRule | None:
    records = part.height
    flat = _mode(_counts(part, "feeAmount"))
    flat_rule = FeeRule("fee", trans_type, currency, flat, None, None, 0, records)
    explained = int(_fit_mask(part, flat_rule, "feeAmount", "feeAmount").sum())
    if explained >= MIN_SHARE * records:
        return FeeRule("fee", trans_type, currency, flat, None, None, explained, records)
    priced = part.filter(pl.col("toAmount") > 0)
    if priced.is_empty():
        return None
    bp = _best_bp(priced, "feeAmount", "toAmount")
    if bp is None:
        return None
    # The fees below the percentage by more than half a cent: fee < toAmount x bp - 0.005.
    below = priced.filter(
        _mask(
            priced,
            pl.col("feeAmount") * _BP < pl.col("toAmount") * bp - _HALF_CENT * _BP,
            lambda fee, to: fee < to * bp / _BP - _HALF_CENT,
            "feeAmount",
            "toAmount",
        )
    )
    cap = _mode(_counts(below, "feeAmount")) if below.height else None
    rule = FeeRule("fee", trans_type, currency, None, bp, cap, 0, records)
    explained = int(_fit_mask(part, rule, "feeAmount", "toAmount").sum())
    rule = FeeRule("fee", trans_type, currency, None, bp, cap, explained, records)
    return rule if explained >= MIN_SHARE * records else None


def _tax_rule(part: pl.DataFrame, currency: str) -> FeeRule | None:
    charged = part.filter(pl.col("feeAmount") > 0)
    if charged.is_empty():
        return None
    bp = _best_bp(charged, "taxAmount", "feeAmount")
    if bp is None:
        return None
    rule = FeeRule("tax", None, currency, None, bp, None, 0, charged.height)
    explained = int(_fit_mask(charged, rule, "taxAmount", "feeAmount").sum())
    rule = FeeRule("tax", None, currency, None, bp, None, explained, charged.height)
    return rule if explained >= MIN_SHARE * charged.height else None


def _records(transactions: Frame) -> pl.DataFrame:
    lf = lazy(transactions, "transactions", "fee_tax_mismatches")
    schema = lf.collect_schema()
    missing = [c for c in _NEEDED if c not in schema]
    if missing:
        raise ValueError(
            f"fee_tax_mismatches: missing columns {missing}; pass a frame from "
            "txkit.load_transactions (it has every column)"
        )
    return lf.filter(
        (pl.col("status") == "successful")
        & pl.col("feeAmount").is_not_null()
        & pl.col("taxAmount").is_not_null()
        & pl.col("toAmount").is_not_null()
    ).select(
        pl.col("id").cast(pl.String),
        "createdAt",
        pl.col("transType").cast(pl.String),
        pl.col("toCurrency").cast(pl.String).alias("currency"),
        *[pl.col(c).cast(pl.Decimal(38, 6)) for c in ("toAmount", "feeAmount", "taxAmount")],
        *([pl.col("transactionReference").cast(pl.String)]
          if "transactionReference" in schema else []),
    ).collect()  # fmt: skip


def fee_rules(transactions: Frame) -> list[FeeRule | str]:
    """The rules read from the records: one :class:`FeeRule` per fee group (transaction type
    and currency) and per currency's tax, or a sentence for a group no rule explains."""
    return _rules_of(_records(transactions))


def _groups(frame: pl.DataFrame, *by: str) -> list[tuple[Any, pl.DataFrame]]:
    """The records of each value of ``by``, in the order of the values (records keep theirs)."""
    parts = frame.partition_by(*by, maintain_order=True, as_dict=True)
    return sorted(parts.items(), key=lambda item: item[0])


def _rules_of(frame: pl.DataFrame) -> list[FeeRule | str]:
    out: list[FeeRule | str] = []
    for (trans_type, currency), part in _groups(frame, "transType", "currency"):
        rule = _fee_rule(part, trans_type, currency)
        out.append(rule or f"{trans_type} {currency}: no flat fee or percentage explains "
                   f"{MIN_SHARE:.0%} of its {part.height:,} records; not checked")  # fmt: skip
    for (currency,), part in _groups(frame, "currency"):
        rule = _tax_rule(part, currency)
        out.append(rule or f"tax {currency}: no rate explains {MIN_SHARE:.0%} of its records; "
                   "not checked")  # fmt: skip
    return out


_SCHEMA: Final = {
    "id": pl.String,
    "transactionReference": pl.String,
    "createdAt": pl.Datetime("us", "UTC"),
    "transType": pl.String,
    "currency": pl.String,
    "kind": pl.String,
    "field": pl.String,
    "toAmount": pl.Decimal(38, 6),
    "expected": pl.Decimal(38, 6),
    "reported": pl.Decimal(38, 6),
    "difference": pl.Decimal(38, 6),
    "rule": pl.String,
}


def fee_tax_mismatches(
    transactions: Frame, rules: Sequence[FeeRule | str] | None = None
) -> pl.DataFrame:
    """Successful records whose fee or tax does not follow their group's rule
    (:func:`fee_rules`).

    Args:
        transactions: the export (eager or lazy); needs ``id``, ``createdAt``, ``status``,
            ``transType``, ``toCurrency``, ``toAmount``, ``feeAmount``, ``taxAmount``.
        rules: what :func:`fee_rules` returned for the same ``transactions`` (None: read
            here); a notebook that shows the rules passes them rather than read them twice.

    Returns:
        One row per record and ``kind`` (``fee_mismatch``, else ``tax_mismatch``): ``id``,
        ``transactionReference``, ``createdAt``, ``transType``, ``currency``, ``kind``,
        ``field`` (``feeAmount`` or ``taxAmount``), ``toAmount``, ``expected`` (the rule's
        exact value), ``reported``, ``difference`` (reported - expected), ``rule``; sorted by
        ``createdAt`` then ``id``.

    Raises:
        ValueError: not a frame, or a required column is missing.
    """
    frame = _records(transactions).with_row_index("_at")
    by_group = {
        (r.kind, r.trans_type, r.currency): r
        for r in (_rules_of(frame) if rules is None else rules)
        if isinstance(r, FeeRule)
    }
    # The records that break a rule, found on the columns; each then read as before.
    flagged = []
    for (trans_type, currency), part in _groups(frame, "transType", "currency"):
        bad = pl.repeat(False, part.height, eager=True)
        fee = by_group.get(("fee", trans_type, currency))
        tax = by_group.get(("tax", None, currency))
        if fee is not None:
            bad = bad | ~_fit_mask(part, fee, "feeAmount", "toAmount")
        if tax is not None:
            bad = bad | ~_fit_mask(part, tax, "taxAmount", "feeAmount")
        flagged.append(part.filter(bad))
    rows = pl.concat(flagged).sort("_at").to_dicts() if flagged else []
    out = []
    for row in rows:
        fee = by_group.get(("fee", row["transType"], row["currency"]))
        tax = by_group.get(("tax", None, row["currency"]))
        found = None
        if fee is not None and not _fits(row["feeAmount"], fee.expected(row["toAmount"])):
            found = ("fee_mismatch", "feeAmount", fee, fee.expected(row["toAmount"]))
        elif tax is not None and not _fits(row["taxAmount"], tax.expected(row["feeAmount"])):
            found = ("tax_mismatch", "taxAmount", tax, tax.expected(row["feeAmount"]))
        if found is None:
            continue
        kind, field, rule, expected = found
        reported = row[field]
        out.append(
            {
                "id": row["id"],
                "transactionReference": row.get("transactionReference"),
                "createdAt": row["createdAt"],
                "transType": row["transType"],
                "currency": row["currency"],
                "kind": kind,
                "field": field,
                "toAmount": row["toAmount"],
                "expected": expected.quantize(Decimal("0.000001"), ROUND_HALF_UP),
                "reported": reported,
                "difference": (reported - expected).quantize(Decimal("0.000001"), ROUND_HALF_UP),
                "rule": rule.describe().split(" (", 1)[0],
            }
        )
    return pl.DataFrame(out, schema=_SCHEMA).sort("createdAt", "id")
