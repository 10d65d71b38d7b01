"""Notebook 08's "what to look at": fee and tax mismatches with exact amounts per currency.

Kept apart from :mod:`txkit.notebook.findings` (notebooks 01-06's sentences)."""

from __future__ import annotations

import polars as pl

from txkit.analysis.fees import FeeRule
from txkit.money import format_money, format_sums

__all__ = ["fee_findings"]


def fee_findings(mismatches: pl.DataFrame, rules: list[FeeRule | str]) -> list[str]:
    """Sentences: the fee mismatches and the tax mismatches (count, net difference per
    currency, the largest in each currency), and the groups no rule explains."""
    out = []
    for kind, what in (("fee_mismatch", "fee"), ("tax_mismatch", "tax")):
        part = mismatches.filter(pl.col("kind") == kind)
        if part.is_empty():
            continue
        # Per currency (amounts of different currencies are never compared); equal
        # differences: the first id, whatever the rows' order.
        tops = part.sort(
            ["currency", pl.col("difference").abs(), "id"], descending=[False, True, False]
        ).unique("currency", keep="first", maintain_order=True)
        largest = "; ".join(
            f"{top['id']} ({top['transType']}, "
            f"{format_money(top['difference'], top['currency'], signed=True, to_cent=True)} "
            "against "
            f"{top['rule']})"
            for top in tops.iter_rows(named=True)
        )
        out.append(
            f"{part.height:,} records charged a {what} off its rule (reported − expected: "
            f"{format_sums(part, 'difference', signed=True, to_cent=True)}); the largest in each "
            "currency: "
            f"{largest}."
        )
    out += [f"Not checked: {r}." for r in rules if isinstance(r, str)]
    checked = sum(r.records for r in rules if not isinstance(r, str) and r.kind == "fee")
    if not checked:  # no all-clear from nothing
        return out or ["No fee or tax could be checked: no record of the month follows a rule."]
    return out or [f"Every fee and tax of the month's {checked:,} records follows its rule."]
