"""Notebook 08's "what to look at": fee and tax mismatches with exact amounts per currency.

Kept apart from :mod:`txkit.notebook.findings` (notebooks 01-06's sentences)."""

from __future__ import annotations

from decimal import Decimal

import polars as pl

from txkit.analysis.fees import FeeRule
from txkit.notebook.tables import format_value

__all__ = ["fee_findings"]


def _signed(value: Decimal) -> str:
    """A difference at its own scale (USDT's micro-units are not rounded to cents), signed."""
    return ("+" if value > 0 else "") + str(format_value(value, "money"))


def _sums(frame: pl.DataFrame) -> str:
    sums: dict[str, Decimal] = {}
    for row in frame.iter_rows(named=True):
        sums[row["currency"]] = sums.get(row["currency"], Decimal(0)) + row["difference"]
    return ", ".join(f"{c} {_signed(v)}" for c, v in sorted(sums.items()))


def fee_findings(mismatches: pl.DataFrame, rules: list[FeeRule | str]) -> list[str]:
    """Sentences: the fee mismatches and the tax mismatches (count, net difference per
    currency, the largest), and the groups no rule explains."""
    out = []
    for kind, what in (("fee_mismatch", "fee"), ("tax_mismatch", "tax")):
        part = mismatches.filter(pl.col("kind") == kind)
        if part.is_empty():
            continue
        # Equal differences: the first id, whatever the rows' order.
        top = part.sort([pl.col("difference").abs(), "id"], descending=[True, False]).row(
            0, named=True
        )
        out.append(
            f"{part.height:,} records charged a {what} off its rule (reported − expected: "
            f"{_sums(part)}); the largest, {top['id']} ({top['transType']}, "
            f"{top['currency']} {_signed(top['difference'])} against {top['rule']})."
        )
    out += [f"Not checked: {r}." for r in rules if isinstance(r, str)]
    return out or ["Every fee and tax of the month follows its rule."]
