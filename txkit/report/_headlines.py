"""The index's headline figures: a few numbers per section, their change, and a status.

Figures of the export itself (volumes in and out, success rate, underpayments and shortfall,
for every currency) come from the store, for the month and the month before
(:func:`txkit.analysis.monthly_metrics`). Exception counts (reconciliation mismatches, flagged
payments, balance breaks) come from this report's downloads and the previous month's report.
Each figure says ``look at this`` when it needs action (an exception list with items new this
month or longer than last month's, a fall in the success rate of more than 5 points, an
underpayment rate up by more than a quarter), else ok; the index lists those first.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import polars as pl

from txkit.analysis.exception_lists import rate_text, rated_apart
from txkit.analysis.underpayments import SHORTFALL_NAMES
from txkit.money import format_money
from txkit.report._html import Headline

__all__ = [
    "completed_rate_headlines",
    "exception_headlines",
    "explore_headlines",
    "orders_headline",
    "underpayment_headlines",
]

_ABSENT = "no records"
_SUCCESS_DROP = 0.05  # a fall of the success rate by more than 5 points
_UNDERPAYMENT_RISE = 1.25  # an underpayment rate up by more than a quarter


def _pct_change(now: Any, before: Any) -> str:
    if before is None:
        return "new this month" if now else ""
    if now is None:
        return "none this month"
    if before == 0:
        return "no change" if now == 0 else "up from 0"
    change = (Decimal(now) - Decimal(before)) / Decimal(before)
    return f"{change:+.1%}" if change else "no change"


def _pt_change(now: float | None, before: float | None) -> str:
    if now is None or before is None:
        return ""
    return f"{(now - before) * 100:+.2f} pt"


def _money(value: Any, currency: str) -> str:
    # A currency absent from the month (month_over_month's full join) has no figure: it says
    # so, never 0.
    return _ABSENT if value is None else format_money(value, currency)


def explore_headlines(mom: pl.DataFrame) -> list[Headline]:
    """Records, success rate and money in and out per currency (every currency, none dropped).

    Args:
        mom: :func:`txkit.analysis.trends.month_over_month` of the month.
    """
    out = []
    records = int(mom["records"].fill_null(0).sum())
    prev_records = int(mom["prev_records"].fill_null(0).sum()) if "prev_records" in mom else 0
    successful = int(mom["successful"].fill_null(0).sum())
    prev_ok = int(mom["prev_successful"].fill_null(0).sum()) if "prev_successful" in mom else 0
    out.append(Headline("Transactions", f"{records:,}", _pct_change(records, prev_records or None)))
    rate = successful / records if records else None
    prev_rate = prev_ok / prev_records if prev_records else None
    out.append(
        Headline(
            "Success rate (all currencies)",
            f"{rate:.2%}" if rate is not None else _ABSENT,
            _pt_change(rate, prev_rate),
            look=rate is not None and prev_rate is not None and prev_rate - rate > _SUCCESS_DROP,
        )
    )
    for row in mom.iter_rows(named=True):
        currency = row["currency"]
        for side, label in (("incoming", "Money in"), ("outgoing", "Money out")):
            now, before = row.get(side), row.get(f"prev_{side}")
            if not now and not before:
                continue
            out.append(
                Headline(
                    f"{label}, {currency} (successful)",
                    _money(now, currency),
                    _pct_change(now, before),
                )
            )
    return out


def underpayment_headlines(mom: pl.DataFrame) -> list[Headline]:
    """Underpayments, their rate and the shortfall per currency with collections."""
    out = []
    for row in mom.iter_rows(named=True):
        if not row.get("collections") and not row.get("prev_collections"):
            continue
        currency = row["currency"]
        count, before = row.get("underpayments") or 0, row.get("prev_underpayments")
        rate, prev_rate = row.get("underpayment_rate"), row.get("prev_underpayment_rate")
        rising = bool(rate and prev_rate is not None and rate > prev_rate * _UNDERPAYMENT_RISE)
        if not count and not before:
            continue
        collections = row.get("collections") or 0
        out.append(
            Headline(
                f"Underpayments, {currency}",
                rate_text(count, {currency: collections}, "successful collections"),
                _pt_change(rate, prev_rate) or _pct_change(count, before),
                look=rising,
            )
        )
        out.append(
            Headline(
                f"{SHORTFALL_NAMES['shortfall'].capitalize()}, {currency}",
                _money(row.get("shortfall"), currency),
                _pct_change(row.get("shortfall"), row.get("prev_shortfall")),
                look=rising,
            )
        )
    return out


def orders_headline(in_month: int, dates: tuple[Any, Any] | None = None) -> Headline:
    """The merchant's orders dated in the month: ``look at this`` when there are none (every
    collection would then be missing in the orders), with the file's dates beside it.

    Args:
        in_month: orders dated in the month (or undated).
        dates: the first and last order date in the file.
    """
    span = f"the file's orders are dated {dates[0]} to {dates[1]}" if dates else ""
    return Headline(
        "Orders in the month (the merchant's file)",
        f"{in_month:,}",
        span if not in_month else "",
        look=in_month == 0,
    )


def exception_headlines(
    entry: Mapping[str, Any], previous: Mapping[str, Any] | None, *, material: int | None = None
) -> list[Headline]:
    """One exception list: its rows (out of what), the change against last month's report.

    Args:
        entry: the list as recorded in this report's ``NAME.download.json``.
        previous: the same list in the previous month's report, or None.
        material: the open material items of its section in the register (None: unknown, and
            any row looks at this); immaterial items stay listed but do not turn it red.
    """
    rows = int(entry["rows"])
    population = entry.get("population")
    value = f"{rows:,}"
    if population:  # the page states the same rate, with the same denominator (rate_text)
        rated = rows if entry.get("rated") is None else int(entry["rated"])
        value = rate_text(
            rated,
            entry.get("population_by_currency") or population,
            entry.get("population_label") or "",
            entry.get("rated_by_currency") or entry.get("rows_by_currency"),
        ) + rated_apart(rows - rated)
    stake = entry.get("at_stake_by_currency")
    if stake:  # the money at stake, per currency (never added across currencies)
        listed = ", ".join(format_money(Decimal(v), c) for c, v in sorted(stake.items()))
        value += f"; at stake {listed}"
        if entry.get("without_amount"):
            value += f" and {entry['without_amount']:,} without an amount at stake"
    if previous is None:
        change = "no previous report"
    else:
        before = int(previous["rows"])
        change = f"{rows - before:+,} (last month {before:,})" if rows != before else "no change"
    counts = entry["counts"]
    new = f", {counts['new']:,} new" if counts.get("compared") else ""
    if material is not None:  # the register decides: material open items only
        value += f"; {material:,} material open in the register"
        return [Headline(f"{entry['title']} (open{new})", value, change, look=material > 0)]
    # Needs action: items new this month, or a list longer than last month's ("look at this"
    # on every non-empty list was always on, so it said nothing).
    grew = previous is not None and rows > int(previous["rows"])
    fresh = counts["new"] > 0 if counts.get("compared") else rows > 0
    return [Headline(f"{entry['title']} (open{new})", value, change, look=grew or fresh)]


def completed_rate_headlines(
    headlines: list[Headline], now: tuple[int, int, int], before: tuple[int, int, int]
) -> list[Headline]:
    """The success rate told apart for completed and still-open records: a month's last days
    hold records whose status can still change (321 in 2026-10 against 7 to 16 before), so the
    rate of every record falls by timing alone. The rate of every record stays, with its
    denominator and the open records named, but only a fall of the completed records' rate by
    more than 5 points looks at this.

    Args:
        headlines: the page's headlines (:func:`explore_headlines`).
        now, before: (completed records, successful, still open) of the month and the one
            before.
    """
    completed, successful, still = now
    rate = successful / completed if completed else None
    prev = before[1] / before[0] if before[0] else None
    out = []
    for headline in headlines:
        if headline.label == "Success rate (all currencies)":
            headline = Headline(
                "Success rate, every record (all currencies)",
                f"{headline.value} ({still:,} still open: the value on the close summary)",
                headline.change,
                look=False,
            )
            out.append(headline)
            out.append(
                Headline(
                    "Success rate, completed records (all currencies)",
                    f"{rate:.2%} of {completed:,}" if rate is not None else _ABSENT,
                    _pt_change(rate, prev),
                    look=rate is not None and prev is not None and prev - rate > _SUCCESS_DROP,
                )
            )
            continue
        out.append(headline)
    return out
