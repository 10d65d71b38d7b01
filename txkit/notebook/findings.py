"""The "what to look at" sentences of the notebooks, computed from the analysis results.

Each function takes what an analysis function returned and says, in plain words with exact
amounts, what deserves a look first. Nothing here is written by hand per month.
"""

from __future__ import annotations

import polars as pl

from txkit.analysis.exception_lists import rate_text
from txkit.analysis.reconcile import AGREED_CATEGORIES, NEAR_MATCH_CATEGORIES, UNPAID_CATEGORIES
from txkit.analysis.underpayments import COUNTED_STATUSES, SHORTFALL_NAMES
from txkit.money import format_money, format_sums
from txkit.notebook._close import settlement_findings, wallet_findings

__all__ = [
    "AGREED_CATEGORIES",
    "balance_findings",
    "reconcile_findings",
    "settlement_findings",
    "trend_findings",
    "underpayment_findings",
    "underpayment_scope",
    "wallet_differences_totals",
    "wallet_findings",
]


_MEANING = {
    "missing_in_export": "expected by the orders but absent from the export",
    "missing_in_orders": "in the export but not in the orders",
    "amount_mismatch": "with a different amount on each side",
    "currency_mismatch": "with a different currency on each side",
    "status_mismatch": "with a different status on each side",
    "duplicate_reference": "whose reference occurs more than once",
    "paid_in_parts": "matched as orders paid in parts (amount-sum rule: allocate each payment)",
    "grouped": "matched as one collection covering several orders (allocate it)",
}


def _largest_each(frame: pl.DataFrame, currency: str, ties: list[str]) -> list[dict]:
    """Equal differences go to the first by ``ties``, whatever the rows' order; currencies never
    compared."""
    rows = frame.sort(
        [pl.col(currency), pl.col("difference").abs(), *ties],
        descending=[False, True, *([False] * len(ties))],
        nulls_last=True,
    )
    return list(rows.unique(currency, keep="first", maintain_order=True).iter_rows(named=True))


def _match_rate(result: pl.DataFrame) -> list[str]:
    """The share matched exactly, over the references reconciled: attempts never paid nor
    ordered are outside it (there was nothing to reconcile), counted in a line of their own."""
    unpaid = result.filter(pl.col("category").cast(pl.String).is_in(UNPAID_CATEGORIES)).height
    total = result.height - unpaid
    matched = result.filter(pl.col("category") == "matched").height
    out = [
        f"{matched:,} of {total:,} references match exactly ({matched / total:.1%})."
        if total
        else "No reference of this month was paid or ordered."
    ]
    if unpaid:
        out.append(
            f"{unpaid:,} payment attempt(s) never paid (failed, declined, abandoned or "
            "expired) that no order expects: nothing at stake, not exceptions, outside the rate."
        )
    return out


def reconcile_findings(result: pl.DataFrame, summary: pl.DataFrame) -> list[str]:
    """Findings of a reconciliation (``reconcile`` and ``reconcile_summary`` results)."""
    if result.height == 0:
        return ["Neither the export nor the orders hold a collection for this month."]
    out = _match_rate(result)
    agreed = (
        result.filter(pl.col("category").cast(pl.String).is_in(NEAR_MATCH_CATEGORIES))
        .group_by(pl.col("category").cast(pl.String))
        .len()
        .sort("category")
    )
    if agreed.height:
        listed = ", ".join(f"{n:,} {c}" for c, n in agreed.iter_rows())
        out.append(
            f"{int(agreed['len'].sum()):,} more agree across the month's ends or within the amount "
            f"tolerance ({listed}): not exceptions."
        )
    for category, meaning in _MEANING.items():
        rows = summary.filter(pl.col("category") == category)
        if rows.height == 0:
            continue
        count = int(rows["references"].sum())
        # What is at stake: the difference for a different amount; the export's amount when
        # the orders lack the reference; else the amount the merchant expected.
        side = {"amount_mismatch": "difference", "missing_in_orders": "export_amount"}.get(
            category, "order_amount"
        )
        # The summary's currency is the export's, else the order's; a currency mismatch's
        # orders' amounts are in the orders' currencies: summed per order currency, never
        # labelled with the export's. A row without this side has nothing at stake on it.
        currency = (
            pl.col("order_currency")
            if category == "currency_mismatch"
            else pl.coalesce("export_currency", "order_currency")
        )
        amounts = format_sums(
            result.filter((pl.col("category") == category) & pl.col(side).is_not_null()).select(
                side, currency.alias("currency")
            ),
            side,
        )
        # A sum of one side says which side (a currency mismatch has two currencies: the
        # orders' amounts are summed in the orders' currency, never added to the export's).
        named = {"difference": "difference", "export_amount": "the export's side"}.get(
            side, "the orders' side"
        )
        at_stake = f" ({named}: {amounts})" if amounts else ""
        out.append(f"{count:,} reference(s) {meaning}{at_stake}.")
    biggest = result.filter(pl.col("difference").is_not_null() & (pl.col("difference") != 0))
    if biggest.height:
        listed = "; ".join(
            f"{row['reference']} ({format_money(row['difference'], row['export_currency'])})"
            for row in _largest_each(biggest, "export_currency", ["reference"])
        )
        out.append(f"Largest amount difference in each currency: {listed}.")
    return out


def underpayment_scope(month: str) -> str:
    """What every underpayment table of ``month`` counts, for the page's "as run" line."""
    statuses = ", ".join(f"`{s}`" for s in COUNTED_STATUSES)
    return (
        f"counted in every table: flagged collections with status {statuses}; original "
        f"references are looked up in {month} and in the history"
    )


#: References a sentence names before it says "and N more" (the table lists every one).
NAMED = 5


def _named(flagged: pl.DataFrame) -> str:
    shown = [
        f"{row['transactionReference']} (original {row['original_reference']})"
        for row in flagged.sort("transactionReference").head(NAMED).iter_rows(named=True)
    ]
    more = flagged.height - len(shown)
    tail = f" and {more:,} more (the flagged payments above, original_in_export no)" if more else ""
    return ", ".join(shown) + tail


def underpayment_findings(
    flagged: pl.DataFrame, by_currency: pl.DataFrame, repeats: pl.DataFrame
) -> list[str]:
    """Findings of the underpayment analysis (``underpayments``, a summary by currency, and
    ``repeat_shortfalls``)."""
    if flagged.height == 0:
        return ["No under- or overpayment was recorded this month."]
    out = []
    for row in by_currency.iter_rows(named=True):
        if not (row.get("underpayments") or row.get("overpayments")):
            continue
        parts = [f"{row['currency']}: {row.get('underpayments', 0):,} underpayment(s)"]
        if row.get("overpayments"):
            parts.append(f"{row['overpayments']:,} overpayment(s)")
        text = ", ".join(parts)
        if row.get("successful_collections"):  # the index's words (rate_text)
            underpaid = rate_text(
                row.get("underpayments") or 0,
                {row["currency"]: row["successful_collections"]},
                "successful collections",
            )
            text += f"; underpaid: {underpaid}"
        if row.get("shortfall") is not None:
            shortfall = format_money(row["shortfall"], row["currency"])
            text += f"; {SHORTFALL_NAMES['shortfall']} {shortfall}"
        if row.get("overpayments") and row.get("net_shortfall") is not None:
            text += (
                f", {SHORTFALL_NAMES['net_shortfall']} "
                f"{format_money(row['net_shortfall'], row['currency'])}"
            )
        out.append(text + ".")
    orphans = flagged.filter(~pl.col("original_in_export"))
    if orphans.height:
        out.append(
            f"{orphans.height:,} flagged payment(s) refer to an original reference found "
            "neither in this month nor in the history loaded (an older month, or a record the "
            f"export lacks): check {_named(orphans)}."
        )
    if repeats.height:
        # repeat_shortfalls' order picks the largest; per currency, as amounts of different
        # currencies are never compared.
        tops = repeats.unique("currency", keep="first", maintain_order=True).sort(
            "currency", nulls_last=True, maintain_order=True
        )
        listed = "; ".join(
            f"{format_money(top['total_shortfall'], top['currency'])} over "
            f"{top['underpayments']} payments ({top['customerEmail']})"
            for top in tops.iter_rows(named=True)
        )
        out.append(
            f"{repeats.height:,} customer(s) underpaid more than once; the largest total in "
            f"each currency: {listed}."
        )
    return out


def balance_findings(breaks: pl.DataFrame, summary: pl.DataFrame) -> list[str]:
    """Findings of the balance-after checks (``balance_breaks`` and ``balance_summary``)."""
    checked = int(summary["checked"].sum()) if summary.height else 0
    unverifiable = int(summary["unverifiable"].sum()) if summary.height else 0
    out = [
        f"{checked:,} balance-after values checked, {unverifiable:,} unverifiable "
        f"(no earlier value, reserves held from before the data, or fields missing), "
        f"{breaks.height:,} break(s)."
    ]
    if checked == 0:  # no all-clear from nothing
        out.append("No balance-after value could be checked: nothing is said about the balances.")
        return out
    if breaks.height == 0:
        out.append(
            f"Every one of the {checked:,} checked balances follows the balance model exactly."
        )
        return out
    explain = {
        "chain_gap": "the ledger jumps by what a missing record would explain; look for a "
        "record the export lacks just before",
        "bad_value": "one record's value is off and the chain resumes after it",
        "reserve_mismatch": "available differs from ledger minus the reserves held",
        "other": "does not fit a known pattern",
    }
    counts = breaks.group_by("kind", "currency").len().sort(["kind", "currency"])
    for row in counts.iter_rows(named=True):
        kind = str(row["kind"])
        out.append(
            f"{row['len']:,} {kind} break(s) in {row['currency']}: {explain.get(kind, kind)}."
        )
    # Equal differences: the earliest break (the balance checks' own order).
    listed = "; ".join(
        f"{worst['id']} ({worst['field']}), off by "
        f"{format_money(worst['difference'], worst['currency'])}"
        for worst in _largest_each(breaks, "currency", ["createdAt", "id", "field"])
    )
    out.append(f"Largest break in each currency: {listed}.")
    return out


def trend_findings(table: pl.DataFrame) -> list[str]:
    """Findings of the trends (``txkit.analysis.trends.trend_table``): the last month against the
    months before it, per currency, and the months that stand out."""
    if table.height == 0:
        return ["The store holds no month yet: run `txkit sync` or `txkit report`."]
    months = sorted(table["month"].unique().to_list())
    last = months[-1]
    out = [f"{len(months)} month(s), {months[0]} to {last}."]
    for currency in sorted(table["currency"].drop_nulls().unique().to_list()):
        rows = table.filter(pl.col("currency") == currency).sort("month")
        now = rows.filter(pl.col("month") == last)
        before = rows.filter(pl.col("month") != last)
        if now.height == 0 or before.height == 0:
            continue
        incoming = now["incoming"][0]
        if incoming is None:  # not known: no sentence rather than a 0
            continue
        average = sum(v or 0 for v in before["incoming"].to_list()) / before.height
        if average:
            change = (float(incoming) - float(average)) / float(average)
            out.append(
                f"{currency}: money in {format_money(incoming, currency)} in {last}, {change:+.1%} "
                f"against the average of the {before.height} month(s) before."
            )
    total = (
        table.group_by("month")
        .agg(pl.col("successful").sum(), pl.col("records").sum())
        .with_columns(rate=pl.col("successful") / pl.col("records"))
        .sort("rate", "month")
    )
    low = total.row(0, named=True)
    out.append(f"Lowest success rate: {low['month']} ({low['rate']:.1%} of all records).")
    flagged = table.filter(
        pl.col("underpayment_rate").is_not_null() & (pl.col("underpayments") > 0)
    )
    if flagged.height:
        top = flagged.sort(
            ["underpayment_rate", "month", "currency"], descending=[True, False, False]
        ).row(0, named=True)
        out.append(
            f"Highest underpayment rate: {top['currency']} in {top['month']} "
            f"({top['underpayment_rate']:.2%} of successful collections, shortfall "
            f"{format_money(top['shortfall'], top['currency'])})."
        )
    # The match rate is per currency (trend_table): the lowest names its currency.
    matched = table.filter(pl.col("match_rate").is_not_null())
    if matched.height:
        worst = matched.sort(["match_rate", "month", "currency"], nulls_last=True).row(
            0, named=True
        )
        where = f" in {worst['currency']}" if worst["currency"] is not None else ""
        out.append(
            f"Lowest match rate among the {matched['month'].n_unique()} reported month(s): "
            f"{worst['month']}{where} ({worst['match_rate']:.2%} of references)."
        )
    return out


def wallet_differences_totals(items: pl.DataFrame, statement: pl.DataFrame) -> str:
    """The line under page 06's differences: per wallet, what its rows add to beside each
    difference (the ledger rows: the ledger's; ledger and available rows: the available's)."""
    parts = []
    for row in statement.iter_rows(named=True):
        currency = row["currency"]
        available = row["available_difference"]
        if row["difference"] is None or (row["difference"] == 0 and available in (None, 0)):
            continue
        mine = items.filter(pl.col("currency") == currency)
        ledger = mine.filter(pl.col("side") == "ledger")["contribution"].sum()
        both = mine["contribution"].sum()
        parts.append(
            f"{currency}: ledger rows {format_money(ledger, currency)} "
            f"(difference {format_money(row['difference'], currency)}), ledger and available "
            f"rows {format_money(both, currency)} (available difference "
            f"{'not stated' if available is None else format_money(available, currency)})"
        )
    if not parts:
        return "**What the rows add to:** no wallet has a difference."
    return "**What the rows add to:** " + "; ".join(parts) + "."
