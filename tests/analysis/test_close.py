"""Closing the month on the sandbox: settlements against its bank statements, the wallet
statement, partial and grouped payments. Each finds exactly what the ledger planted (its
ground truth) and nothing else, for several seeds."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.analysis.analysis_cases import SEEDS, Case, load_case
from txkit.analysis.balances import balance_breaks
from txkit.analysis.reconcile import reconcile
from txkit.analysis.settlements import match_settlements, settlement_summary
from txkit.analysis.wallet import (
    LEDGER_ACTIVITY,
    wallet_differences,
    wallet_statement,
    wallet_statement_and_differences,
)
from txkit.inputs import read_statements
from txkit.sandbox.ledger import schedule_fee, schedule_tax
from txkit.sandbox.ledger._bank import CSV_COLUMNS

MONTH, BEFORE, AFTER = "2026-06", "2026-05", "2026-07"
FORMATS = {
    "csv": ".csv", "mt940": ".mt940", "camt053": ".camt053.xml", "xlsx": ".xlsx",
    "html-xls": ".xls",
}  # fmt: skip


def _month(frame: pl.DataFrame, *months: str) -> pl.DataFrame:
    return frame.filter(pl.col("createdAt").dt.strftime("%Y-%m").is_in(list(months)))


def _statements(case: Case, tmp_path: Path, fmt: str) -> object:
    paths = []
    for month in (MONTH, AFTER):
        path = tmp_path / f"statement_{month}{FORMATS[fmt]}"
        path.write_bytes(case.ledger.bank_statement(month, fmt))
        paths.append(path)
    sheet = fmt in ("csv", "xlsx", "html-xls")
    return read_statements(paths, columns=CSV_COLUMNS if sheet else None)


def _planted_bank_cases(case: Case) -> set[tuple[str, str]]:
    out = set()
    for e in case.ledger.bank_cases:
        day = e.get("settlement_date") or e["bank_date"]
        if day[:7] == MONTH:
            out.add((e["kind"], e["reference"] or e["amount"]))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_settlements_find_exactly_the_planted_bank_cases(seed: int, tmp_path: Path) -> None:
    case = load_case(seed, 0.01)
    statement = _statements(case, tmp_path, "camt053")
    result = match_settlements(_month(case.frame, BEFORE, MONTH), statement, month=MONTH)
    found = {
        (c, r if r is not None else str(a))
        for c, r, a in result.filter(pl.col("category") != "matched")
        .select(pl.col("category").cast(pl.String), "reference", "bank_amount")
        .rows()
    }
    planted = _planted_bank_cases(case)
    assert {k for k, _ in planted} >= {
        "amount_differs", "missing_in_bank", "duplicate_credit", "unknown_credit", "ambiguous",
        "timing_next_month",
    }  # fmt: skip
    assert found == planted
    # Every settlement of the month has a row, and nothing is summed across currencies.
    settled = _month(case.frame, MONTH).filter(
        (pl.col("transType") == "settlement") & (pl.col("status") == "successful")
    )
    assert set(settled["transactionReference"]) <= set(result["reference"].drop_nulls())
    differs = result.filter(pl.col("category") == "amount_differs")
    truth = {e["reference"]: Decimal(e["difference"]) for e in case.ledger.bank_cases
             if e["kind"] == "amount_differs"}  # fmt: skip
    assert all(truth[r] == d for r, d in differs.select("reference", "difference").rows())
    summary = settlement_summary(result)
    assert summary["rows"].sum() == result.height


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "mt940", "xlsx", "html-xls"])
def test_every_statement_format_gives_the_same_matching(fmt: str, tmp_path: Path) -> None:
    case = load_case(2, 0.01)
    records = _month(case.frame, BEFORE, MONTH)
    columns = ["reference", "category", "rule", "bank_amount", "bank_date", "difference"]
    camt = match_settlements(records, _statements(case, tmp_path, "camt053"), month=MONTH)
    other = match_settlements(records, _statements(case, tmp_path, fmt), month=MONTH)
    assert other.select(columns).equals(camt.select(columns))


def test_a_clean_ledger_matches_every_settlement(tmp_path: Path) -> None:
    case = load_case(1, 0.0)
    result = match_settlements(
        _month(case.frame, BEFORE, MONTH), _statements(case, tmp_path, "mt940"), month=MONTH
    )
    assert set(result["category"].cast(pl.String)) <= {"matched", "timing_next_month"}
    assert {
        (c, r)
        for c, r in result.filter(pl.col("category") != "matched")
        .select(pl.col("category").cast(pl.String), "reference")
        .rows()
    } == _planted_bank_cases(case)


def _expected_differences(case: Case) -> dict[str, Decimal]:
    """Per wallet: what the planted balance anomalies make the statement's difference."""
    frame = case.frame
    ok = frame.filter(pl.col("status") == "successful")
    sides = pl.concat(
        [
            ok.filter(pl.col("transType").is_in(["collection", "conversion"])).select(
                "id", "createdAt", pl.col("toCurrency").alias("w"), pl.lit(1).alias("s")
            ),
            ok.filter(pl.col("transType").is_in(["transfer", "settlement", "conversion"])).select(
                "id",
                "createdAt",
                pl.when(pl.col("transType") == "conversion")
                .then("fromCurrency")
                .otherwise("toCurrency")
                .alias("w"),
                pl.lit(0).alias("s"),
            ),
        ]
    ).sort("createdAt", "id", "s")
    month = sides.filter(pl.col("createdAt").dt.strftime("%Y-%m") == MONTH)
    before = sides.filter(pl.col("createdAt").dt.strftime("%Y-%m") < MONTH)
    closing = dict(month.group_by("w").agg(pl.col("id").last()).iter_rows())
    opening = dict(before.group_by("w").agg(pl.col("id").last()).iter_rows())
    out: dict[str, Decimal] = {}
    for e in case.ledger.ground_truth:
        w = e["currency"]
        if e["kind"] == "missing_from_export" and e["createdAt"][:7] == MONTH:
            minor = int(Decimal(e["amount"]) * 100)
            fee = schedule_fee("collection", w, minor)
            net = minor - fee - schedule_tax(fee)
            out[w] = out.get(w, Decimal(0)) + Decimal(net).scaleb(-2)
        if e["kind"] == "bad_balance":
            off = Decimal(e["reported"]) - Decimal(e["expected"])
            if closing.get(w) == e["id"]:
                out[w] = out.get(w, Decimal(0)) + off
            if opening.get(w) == e["id"]:
                out[w] = out.get(w, Decimal(0)) - off
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rate", [0.0, 0.03])
def test_the_wallet_statement_ties_out_but_for_the_planted_anomalies(
    seed: int, rate: float
) -> None:
    case = load_case(seed, rate)
    statement = wallet_statement(
        _month(case.frame, MONTH), month=MONTH, history=_month(case.frame, BEFORE)
    )
    expected = _expected_differences(case)
    assert statement["note"].null_count() == statement.height, statement["note"].to_list()
    for row in statement.iter_rows(named=True):
        assert row["difference"] == expected.get(row["currency"], Decimal(0)), row["currency"]
        assert row["unexplained"] == 0
        activity = sum(row[c] for c in LEDGER_ACTIVITY)
        assert row["opening_ledger"] + activity == row["closing_computed"]
    if rate == 0:
        assert (statement["difference"] == 0).all()
        assert (statement["available_difference"] == 0).all()
    items = wallet_differences(
        _month(case.frame, MONTH), month=MONTH, history=_month(case.frame, BEFORE)
    )
    ledger = (
        items.filter(pl.col("side") == "ledger")
        .group_by("currency")
        .agg(pl.col("contribution").sum())
    )
    assert dict(ledger.iter_rows()) == {c: d for c, d in expected.items() if d}
    # Each break once (page 06 listed a chain gap on both sides: its contributions added to
    # twice the difference), on the side the balance checks (page 04) give it.
    assert items.select("currency", "id", "where", "kind").is_duplicated().sum() == 0
    breaks = balance_breaks(
        _month(case.frame, MONTH), history=_month(case.frame, BEFORE), model="auto"
    )
    sides = {(r["id"], r["kind"]): r["side"] for r in breaks.iter_rows(named=True)}
    for item in items.filter(pl.col("where") == "in the month").iter_rows(named=True):
        assert sides[(item["id"], item["kind"])] == item["side"], item
    both = items.group_by("currency").agg(pl.col("contribution").sum())
    available = dict(statement.select("currency", "available_difference").iter_rows())
    for currency, total in both.iter_rows():
        assert total == available[currency], currency
    # Page 06 reads both at once: the same two tables.
    together = wallet_statement_and_differences(
        _month(case.frame, MONTH), month=MONTH, history=_month(case.frame, BEFORE)
    )
    assert together[0].equals(statement) and together[1].equals(items)


def test_the_wallet_statement_without_history_says_the_opening_is_unknown() -> None:
    case = load_case(1, 0.0)
    statement = wallet_statement(_month(case.frame, MONTH), month=MONTH)
    assert statement["closing_computed"].null_count() == statement.height
    assert all("opening balance is unknown" in n for n in statement["note"])


@pytest.mark.parametrize("seed", SEEDS)
def test_orders_paid_in_parts_and_grouped_collections_are_found_exactly(seed: int) -> None:
    case = load_case(seed, 0.01)
    result = reconcile(case.frame, case.ledger.orders)
    found = {
        (c, r, g)
        for c, r, g in result.filter(
            pl.col("category").cast(pl.String).is_in(["paid_in_parts", "grouped"])
        )
        .select(pl.col("category").cast(pl.String), "reference", "group")
        .rows()
    }
    planted = set()
    for e in case.ledger.order_groups:
        anchor = e["reference"]
        if e["kind"] == "paid_in_parts":
            members = {p["reference"] for p in e["parts"]} | {anchor}
        else:
            members = {o["reference"] for o in e["orders"]} | {anchor}
        planted |= {(e["kind"], m, anchor) for m in members}
    assert planted and found == planted
    anchors = result.filter(pl.col("reference") == pl.col("group"))
    assert (anchors["difference"] == 0).all()
    assert anchors["rule"].str.starts_with("amount-sum").all()
    # The one-to-one reconciliation alone leaves them as mismatches and unknown references.
    plain = reconcile(case.frame, case.ledger.orders, parts=False)
    assert not plain["category"].cast(pl.String).is_in(["paid_in_parts", "grouped"]).any()


def test_two_sets_that_fit_are_never_guessed() -> None:
    from datetime import UTC, datetime

    def tx(ref: str, amount: str, day: int) -> dict:
        return {
            "id": ref.lower(),
            "createdAt": datetime(2026, 10, day, 12, tzinfo=UTC),
            "transType": "collection",
            "status": "successful",
            "transactionReference": ref,
            "toAmount": Decimal(amount),
            "toCurrency": "NGN",
            "customerEmail": "a@example.test",
        }

    frame = pl.DataFrame(
        [tx("P1", "40.00", 3), tx("P2", "60.00", 3), tx("P3", "60.00", 4)],
        schema_overrides={"toAmount": pl.Decimal(38, 2)},
    )
    orders = pl.DataFrame(
        {
            "reference": ["INV-1"],
            "amount": [Decimal("100.00")],
            "currency": ["NGN"],
            "customer": ["A@example.test"],
        },
        schema_overrides={"amount": pl.Decimal(38, 2)},
    ).with_columns(pl.lit(datetime(2026, 10, 3).date()).alias("date"))
    result = reconcile(frame, orders)
    row = result.filter(pl.col("reference") == "INV-1").row(0, named=True)
    assert row["category"] == "missing_in_export" and row["other_candidates"] == 2
    one = reconcile(frame.filter(pl.col("id") != "p3"), orders)
    assert set(one["category"].cast(pl.String)) == {"paid_in_parts"}
    assert one.filter(pl.col("reference") == "INV-1")["rule"][0] == "amount-sum + date window"
