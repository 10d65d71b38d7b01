"""Issue 33: a close pack that tells the truth on every page.

Fast tests on the functions; the tests marked with ``session_report`` read the run's one
report of 2026-10 on the sandbox (slow).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.factories import SessionReport
from txkit.analysis import reconcile
from txkit.analysis.exception_lists import AT_STAKE, LISTS, exception_list
from txkit.register import SECTIONS, register_items

ROOT = Path(__file__).resolve().parents[1]

# --- 1. one definition per exception list -----------------------------------------------------


def _collection(ref: str, amount: str, currency: str = "NGN", status: str = "successful") -> dict:
    return {
        "id": f"t-{ref}",
        "createdAt": datetime(2026, 1, 2, 3, tzinfo=UTC),
        "transType": "collection",
        "status": status,
        "transactionReference": ref,
        "toAmount": amount,
        "toCurrency": currency,
    }


def _reconciled() -> pl.DataFrame:
    from tests.analysis.analysis_cases import tx_frame

    export = tx_frame(
        [
            _collection("SAME", "100.00"),
            _collection("ONLY-EXPORT", "250.00"),
            _collection("STATUS", "107786.00", status="successful"),
            _collection("AMOUNT", "100.00"),
            _collection("CURRENCY", "100.00", "USD"),
        ]
    )
    orders = pl.DataFrame(
        {
            "reference": ["SAME", "ONLY-ORDERS", "STATUS", "AMOUNT", "CURRENCY"],
            "amount": ["100", "31827", "107786", "90", "300"],
            "currency": ["NGN", "NGN", "NGN", "NGN", "KES"],
            "status": ["successful", "successful", "failed", "successful", "successful"],
            "date": [date(2026, 1, 2)] * 5,
        }
    ).with_columns(pl.col("amount").cast(pl.Decimal(38, 2)))
    return reconcile(export, orders)


def _keyed(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    spec = exception_list(name)
    rows = spec.listed(frame)
    key = pl.concat_str([pl.col(c).cast(pl.String) for c in spec.key], separator=":")
    return rows.with_columns(key.alias("key"))


def test_the_register_item_carries_the_amount_at_stake_its_page_shows() -> None:
    """Why 2: the register recorded a status mismatch of 107,786.00 NGN as 0.000000 (its
    ``difference``), not material; the 13 orders missing from the export were −31,827.00 on
    the page and +31,827 in the register. The register's amount is the list's ``at_stake``."""
    keyed = _keyed("reconciliation_mismatches", _reconciled())
    items = register_items(keyed, "reconciliation_mismatches", "2026-01")
    amounts = dict(items.select("key", "amount").iter_rows())
    assert amounts["STATUS:status_mismatch"] == Decimal("107786")
    assert amounts["ONLY-ORDERS:missing_in_export"] == Decimal("-31827")
    assert amounts["ONLY-EXPORT:missing_in_orders"] == Decimal("250")
    assert amounts["AMOUNT:amount_mismatch"] == Decimal("10")
    assert amounts["CURRENCY:currency_mismatch"] is None  # two currencies: nothing subtracted
    page = dict(keyed.select("key", AT_STAKE).iter_rows())
    assert amounts == page
    assert "SAME:matched" not in amounts  # agreed: not listed


def test_an_unknown_bank_credit_and_a_missing_settlement_carry_their_amount() -> None:
    """Why 2: the unknown bank credit of 49,556.37 NGN had no amount in the register."""
    frame = pl.DataFrame(
        {
            "reference": [None, "TXK-1", "TXK-2", "TXK-3"],
            "bank_line": ["s:181", None, "s:12", "s:14"],
            "category": ["unknown_credit", "missing_in_bank", "amount_differs", "matched"],
            "currency": ["NGN"] * 4,
            "settlement_amount": [None, "234516.00", "939.00", "5.00"],
            "bank_amount": ["49556.37", None, "924.00", "5.00"],
            "difference": [None, None, "-15.00", "0.00"],
            "settlement_date": [None, date(2026, 10, 8), date(2026, 10, 23), date(2026, 10, 2)],
            "bank_date": [date(2026, 10, 16), None, date(2026, 10, 23), date(2026, 10, 2)],
        }
    ).with_columns(pl.col("settlement_amount", "bank_amount", "difference").cast(pl.Decimal(38, 2)))
    keyed = _keyed("settlement_exceptions", frame)
    items = register_items(keyed, "settlement_exceptions", "2026-10")
    assert dict(items.select("kind", "amount").iter_rows()) == {
        "unknown_credit": Decimal("49556.37"),
        "missing_in_bank": Decimal("-234516.00"),
        "amount_differs": Decimal("-15.00"),
    }


def test_every_list_is_defined_once_and_everything_derives_from_it() -> None:
    """The register's sections, the trends' names and the pages' lists are the definitions'."""
    import inspect

    import txkit.analysis.trends as trends
    import txkit.notebook._recompute as recompute

    assert {name: x.section for name, x in LISTS.items()} == SECTIONS
    assert "LISTS[" in inspect.getsource(trends.trend_table)
    # Which rows a list holds is said once: no page or recomputation filters them again.
    sources = {"_recompute": inspect.getsource(recompute)} | {
        p.name: p.read_text() for p in sorted((ROOT / "notebooks").glob("[0-9]*.py"))
    }
    for name, source in sources.items():
        for rule in ("AGREED_CATEGORIES", "SETTLEMENT_EXCEPTIONS"):
            assert rule not in source, (name, rule)
    with pytest.raises(ValueError, match="the lists are reconciliation_mismatches"):
        exception_list("reconciliation")


@pytest.mark.report
def test_the_report_register_holds_the_amount_of_every_listed_row(
    session_report: SessionReport,
) -> None:
    """Every register item of the report carries the ``at_stake`` its download (and page) shows,
    with its sign, and materiality is computed on it."""
    folder = session_report.folder
    register = pl.read_csv(folder / "exceptions.csv", infer_schema=False)
    recorded = dict(register.select("key", "amount").iter_rows())
    for name in LISTS:
        if name == "wallet_statement" or not (folder / f"{name}.csv").exists():
            continue
        listed = pl.read_csv(folder / f"{name}.csv", infer_schema=False).filter(
            pl.col("open_status") != "not listed again"
        )
        for key, at_stake in listed.select("key", AT_STAKE).iter_rows():
            page = None if at_stake is None else Decimal(at_stake)
            got = None if recorded.get(key) is None else Decimal(recorded[key])
            assert got == page, (name, key)
    row = register.filter(pl.col("key") == "TXK-3067037698ED:status_mismatch").row(0, named=True)
    assert Decimal(row["amount"]) == Decimal("107786") and row["material"] == "true"
    unknown = register.filter(pl.col("kind") == "unknown_credit")
    assert [Decimal(a) for a in unknown["amount"]] == [Decimal("49556.37")]
    missing = register.filter(pl.col("kind") == "missing_in_export")
    assert all(Decimal(a) < 0 for a in missing["amount"])
