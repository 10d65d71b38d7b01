"""One underpayment rule: the same records with messy flags give one number on every path that
shows an underpayment figure (notebook 03's functions, the trends, the index headlines)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import polars as pl
import pytest

from txkit.analysis import month_over_month, monthly_metrics, underpayment_summary, underpayments
from txkit.report._headlines import underpayment_headlines

FLAGS = [" underpayment ", "UnderPayment", "UNDERPAYMENT", "underpayment\t", "overpayment ", None]


def _records(currency: str, scale: int) -> pl.DataFrame:
    """Six successful collections (four underpaid under messy spellings, one overpaid, one plain)
    and one failed underpaid collection, which no figure counts."""
    unit = Decimal(1).scaleb(-scale)
    rows = []
    for i, flag in enumerate([*FLAGS, " underpayment "]):
        expected = Decimal(100) + i * unit
        paid = expected - (Decimal(3) + unit if flag and "under" in flag.lower() else 0)
        if flag and "over" in flag.lower():
            paid = expected + 5
        rows.append(
            {
                "id": f"t{i}",
                "createdAt": datetime(2026, 10, 3 + i, tzinfo=UTC),
                "transType": "collection",
                "status": "failed" if i == len(FLAGS) else "successful",
                "transactionReference": f"ref{i}",
                "toAmount": paid,
                "feeAmount": Decimal(0),
                "toCurrency": currency,
                "customerEmail": f"c{i}@example.com",
                "meta.paymentCollectionType": flag,
                "meta.existingTransaction.expectedAmount": expected,
                "meta.existingTransaction.reference": None,
                "meta.bankName": "Bank",
                "meta.paymentChannel": "card",
            }
        )
    return pl.DataFrame(
        rows,
        schema_overrides={
            "toAmount": pl.Decimal(38, scale),
            "feeAmount": pl.Decimal(38, scale),
            "meta.existingTransaction.expectedAmount": pl.Decimal(38, scale),
            "meta.existingTransaction.reference": pl.String,
            "createdAt": pl.Datetime("us", "UTC"),
        },
    )


@pytest.mark.parametrize(("currency", "scale"), [("NGN", 2), ("USDT", 6)])
def test_messy_flags_give_one_underpayment_count_and_shortfall_everywhere(
    currency: str, scale: int
) -> None:
    df = _records(currency, scale)
    unit = Decimal(1).scaleb(-scale)
    shortfall = 4 * (Decimal(3) + unit)  # exact at the money's own scale, never rounded

    listed = underpayments(df).filter(pl.col("type") == "UNDERPAYMENT")
    assert listed.height == 4
    assert sum(listed["shortfall"].to_list(), Decimal(0)) == shortfall

    summary = underpayment_summary(df, by="currency").row(0, named=True)
    assert summary["underpayments"] == 4

    metrics = monthly_metrics(df.with_columns(month=pl.lit("2026-10")))
    row = metrics.row(0, named=True)
    assert (row["underpayments"], row["collections"], row["shortfall"]) == (4, 6, shortfall)

    shown = {h.label: h.value for h in underpayment_headlines(month_over_month(metrics, "2026-10"))}
    # The rate with its denominator, as page 03 says it (issue 33).
    assert shown[f"Underpayments, {currency}"] == (
        f"4 of 6 successful collections, {currency} (66.67%)"
    )
    gross = shown[f"Gross shortfall of underpayments, {currency}"]
    assert gross.replace(",", "").startswith(str(shortfall).rstrip("0"))
