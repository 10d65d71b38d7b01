"""The trends table: each currency's row holds that currency's breaks and match rate, never the
month's total (2026-10 showed ``breaks 18`` on every currency row; NGN had 14, KES 1)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import polars as pl

from txkit.analysis import trend_table
from txkit.notebook import count_by_currency, report_history
from txkit.notebook._downloads import Destination, ExceptionList, publish_exceptions


def _metrics(month: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"month": [month] * 3, "currency": ["KES", "NGN", "USD"], "records": [5, 9, 2]}
    )


def _publish(folder: Path, month: str) -> None:
    breaks = pl.DataFrame({"id": [f"b{i}" for i in range(15)], "currency": ["NGN"] * 14 + ["KES"]})
    to = Destination(month, folder)
    publish_exceptions(breaks, ExceptionList("balance_breaks", "Balance breaks", ["id"]), to)
    reconciled = pl.DataFrame(
        {
            "reference": [f"r{i}" for i in range(10)],
            "category": ["matched"] * 7 + ["missing_in_export", "amount_mismatch", "unknown"],
            "export_currency": ["NGN"] * 6 + ["KES", None, "KES", "NGN"],
            "order_currency": ["NGN"] * 6 + ["KES", "USD", "KES", None],
            "difference": [Decimal(0)] * 7 + [Decimal("5.00"), Decimal("1.50"), Decimal("2.00")],
        }
    )
    mismatches = reconciled.filter(pl.col("category") != "matched")
    publish_exceptions(
        mismatches,
        ExceptionList(
            "reconciliation_mismatches",
            "Reconciliation mismatches",
            ["reference", "category"],
            population=count_by_currency(reconciled),
        ),
        Destination(month, folder),
    )


def test_each_currency_row_holds_its_own_breaks_and_match_rate(tmp_path: Path) -> None:
    folder = tmp_path / "reports" / "2026-10"
    folder.mkdir(parents=True)
    _publish(folder, "2026-10")
    history = report_history(tmp_path / "reports")
    table = trend_table(_metrics("2026-10"), history).sort("currency")
    assert table["breaks"].to_list() == [1, 14, 0]
    # KES: 2 references, 1 mismatch; NGN: 7 references, 1 mismatch; USD: 1 reference missing.
    assert table["match_rate"].to_list() == [0.5, 1 - 1 / 7, 0.0]
    # The month's totals are still there, on their own rows (currency null).
    total = history.filter(pl.col("currency").is_null())
    assert dict(zip(total["list"], total["rows"], strict=True)) == {
        "balance_breaks": 15,
        "reconciliation_mismatches": 3,
    }


def test_a_report_without_per_currency_figures_leaves_them_unknown(tmp_path: Path) -> None:
    """A list that records no per-currency figures (no currency): null, not the month total."""
    folder = tmp_path / "reports" / "2026-09"
    folder.mkdir(parents=True)
    _publish(folder, "2026-09")
    for path in folder.glob("*.download.json"):
        entry = json.loads(path.read_text())
        entry.pop("rows_by_currency"), entry.pop("population_by_currency")
        path.write_text(json.dumps(entry))
    table = trend_table(_metrics("2026-09"), report_history(tmp_path / "reports"))
    assert table["breaks"].to_list() == [None] * 3
    assert table["match_rate"].to_list() == [None] * 3
