"""Formatted tables, open-item classification and sentence masking (pure functions)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import polars as pl
import pytest

from txkit.notebook._open_items import classify
from txkit.notebook.tables import format_table
from txkit.privacy import mask_sentences, mask_text


@pytest.mark.slow
def test_format_table_reads_like_a_report() -> None:
    df = pl.DataFrame(
        {
            "reference": ["B", "A", "C"],
            "category": ["amount_mismatch", "amount_mismatch", "missing_in_export"],
            "export_currency": ["NGN", "USD", None],
            "difference": [Decimal("-5.00"), Decimal("-1234567.5"), None],
            "share": [0.853288, 0.1, None],
            "count": [1234567, 2, 3],
            "day": [datetime(2026, 10, d, tzinfo=UTC) for d in (1, 2, 3)],
            "customerEmail": ["ada.test@example.test", None, "bo@example.test"],
        },
        schema_overrides={"difference": pl.Decimal(38, 2)},
    )
    table = format_table(
        df,
        key=["category", "reference"],
        sort=["category", pl.col("difference").abs()],
        descending=[False, True],
        rows=2,
    )
    text = repr(table)
    assert text.splitlines()[0].split()[:2] == ["category", "reference"]
    # Sorted by category, then the size of the difference: A (1,234,567.50) before B (5.00).
    assert text.index("-1,234,567.50 USD") < text.index("-5.00 NGN")
    assert "85.33%" in text and "1,234,567" in text and "2026-10-01" in text
    assert "00:00:00" not in text  # midnight everywhere: the date alone
    assert "a***@example.test" in text and "ada.test" not in text
    assert "Showing the first 2 of 3 rows: 1 left out." in text
    page = table._repr_html_()
    assert "shape:" not in page and "decimal[" not in page and '"NGN"' not in page
    assert "overflow-x:auto" in page and "gt_table" in page
    assert format_table(df.head(0), empty="None this month: all clear.")._repr_html_() == (
        '<p class="txkit-empty">None this month: all clear.</p>'
    )
    unmasked = repr(format_table(df, show_pii=True))
    assert "ada.test@example.test" in unmasked


def test_times_are_kept_when_they_say_something() -> None:
    at = datetime(2026, 10, 1, 14, 5, 9, tzinfo=UTC)
    df = pl.DataFrame({"at": [at], "d": [date(2026, 1, 2)]})
    text = repr(format_table(df))
    assert "2026-10-01 14:05:09" in text and "2026-01-02" in text


def test_classify_new_still_open_resolved() -> None:
    current = pl.DataFrame({"key": ["a:x", "b:y", "c:z"], "amount": [1, 2, 3]})
    previous = {"b:y": "2026-08", "gone:x": "2026-07"}
    marked, counts = classify(current, previous, month="2026-10")
    status = dict(zip(marked["key"], marked["open_status"], strict=True))
    first = dict(zip(marked["key"], marked["first_seen"], strict=True))
    assert status == {"a:x": "new", "b:y": "still open", "c:z": "new", "gone:x": "not listed again"}
    assert first == {"a:x": "2026-10", "b:y": "2026-08", "c:z": "2026-10", "gone:x": "2026-07"}
    assert marked.filter(pl.col("key") == "gone:x")["amount"][0] is None
    assert (counts.open, counts.new, counts.still_open, counts.resolved) == (3, 2, 1, 1)
    assert counts.sentence() == "3 open (2 new, 1 still open); 1 of last month's not listed again"
    _, first_month = classify(current, None, month="2026-10")
    assert not first_month.compared and first_month.new == 3
    with pytest.raises(ValueError, match="unique"):
        classify(pl.DataFrame({"key": ["a", "a"]}), None, month="2026-10")


def test_sentences_are_masked_at_one_point() -> None:
    line = "3 customers; the largest is 1,234.00 NGN (ada.test@example.test, acct 0000012345)."
    assert mask_text(line) == (
        "3 customers; the largest is 1,234.00 NGN (a***@example.test, acct ******2345)."
    )
    kept = "Largest difference: TXK-124F83117034 (108,571,283.63 NGN) on 2026-10-01."
    assert mask_text(kept) == kept
    assert mask_sentences([line], show_pii=True) == [line]


def test_money_at_a_finer_scale_shows_its_significant_digits_exactly() -> None:
    """A column at scale 6 (USDT's micro-units) shows each amount without the column's zeros
    past the cents, and never rounds one."""
    from txkit.notebook.tables import format_value

    shown = {
        v: format_value(Decimal(v), "money", "NGN")
        for v in ("174.460000", "50200.000000", "0.000000", "111.599250", "-12.345678", "5.00")
    }
    assert shown == {
        "174.460000": "174.46 NGN",
        "50200.000000": "50,200.00 NGN",
        "0.000000": "0.00 NGN",
        "111.599250": "111.59925 NGN",
        "-12.345678": "-12.345678 NGN",
        "5.00": "5.00 NGN",
    }
