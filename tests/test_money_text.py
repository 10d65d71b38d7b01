"""Money as a reader sees it: one rule (txkit.money) in every sentence, headline and table.

The same amounts go through every function that writes money for a person: scale 2 and scale 6
(USDT's micro-units), negative, zero, missing and large (thousands separators). Each must read
exactly as :func:`txkit.money.format_money` writes it: exact (never rounded to cents), amount
then currency code, a missing amount never shown as 0, sums per currency never added across
currencies, and "the largest" chosen per currency.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.analysis.analysis_cases import tx_frame
from txkit.analysis.fees import FeeRule
from txkit.analysis.overview import explore_findings
from txkit.analysis.reconcile import describe_matching, reconcile_summary
from txkit.inputs import BankStatement
from txkit.money import format_money, format_sums, money_sums
from txkit.notebook import register_findings
from txkit.notebook._close import (
    settlement_findings,
    wallet_differences_line,
    wallet_findings,
    wallet_headlines,
)
from txkit.notebook.findings import (
    balance_findings,
    reconcile_findings,
    trend_findings,
    underpayment_findings,
)
from txkit.notebook.findings_fees import fee_findings
from txkit.notebook.tables import format_table, format_value
from txkit.register._materiality import Materiality
from txkit.report._headlines import explore_headlines, underpayment_headlines

D = Decimal
MONTH = "2026-06"


# -- the rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "currency", "signed", "text"),
    [
        (D("174.460000"), "USDT", False, "174.46 USDT"),  # scale 6: only the zeros go
        (D("111.599250"), "NGN", False, "111.59925 NGN"),  # never rounded to cents
        (D("0.000001"), "USDT", True, "+0.000001 USDT"),
        (D("1234567.50"), "NGN", False, "1,234,567.50 NGN"),
        (D("-1234567.5"), "NGN", False, "-1,234,567.50 NGN"),
        (D("-0.250001"), "USDT", True, "-0.250001 USDT"),
        (D("5"), None, False, "5.00"),  # at least the cents
        (12, "KES", False, "12.00 KES"),
        ("3.1", "GHS", True, "+3.10 GHS"),
        (D("0.000000"), "USDT", True, "0.00 USDT"),  # zero has no sign
        (D("-0.00"), "NGN", False, "0.00 NGN"),
        (None, "NGN", False, "unknown NGN"),  # never 0
        (None, None, True, "unknown"),
    ],
)
def test_format_money(value: object, currency: str | None, signed: bool, text: str) -> None:
    assert format_money(value, currency, signed=signed) == text


def test_money_is_never_a_float() -> None:
    with pytest.raises(TypeError, match="money must be a Decimal, an int or a decimal string"):
        format_money(0.1, "USD")


def test_sums_are_per_currency_sorted_and_say_what_is_missing() -> None:
    frame = pl.DataFrame(
        {
            "amount": [D("1000.50"), D("0.000001"), None, D("-2.25"), None, D("7")],
            "currency": ["USDT", "USDT", "NGN", "NGN", "KES", None],
        },
        schema={"amount": pl.Decimal(38, 6), "currency": pl.String},
    )
    assert money_sums(frame, "amount") == [
        ("KES", None, 1),
        ("NGN", D("-2.25"), 1),
        ("USDT", D("1000.500001"), 0),
        (None, D("7"), 0),
    ]
    assert format_sums(frame, "amount", signed=True) == (
        "unknown KES, -2.25 NGN and 1 unknown, +1,000.500001 USDT, +7.00"
    )
    assert format_sums(frame.head(0), "amount") == ""


def test_a_table_cell_follows_the_rule() -> None:
    assert format_value(D("174.460000"), "money", "USDT") == "174.46 USDT"
    assert format_value(D("-1234567.891234"), "money") == "-1,234,567.891234"
    assert format_value(None, "money", "NGN") is None  # an empty cell, not 0
    table = format_table(
        pl.DataFrame(
            {"amount": [D("111.599250"), D("5.000000")], "currency": ["NGN", "USDT"]},
            schema={"amount": pl.Decimal(38, 6), "currency": pl.String},
        ),
        sort=[],
    )
    assert table.frame["amount"].to_list() == ["111.59925 NGN", "5.00 USDT"]


# -- the index's headlines --------------------------------------------------------------------


def _mom() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "currency": ["NGN", "USDT", "KES"],
            "records": [10, 4, None],
            "prev_records": [10, 4, 3],
            "successful": [9, 4, None],
            "prev_successful": [9, 4, 3],
            "incoming": [D("1234567.500000"), D("0.000001"), None],
            "prev_incoming": [D("1.00"), D("1.00"), D("3.00")],
            "outgoing": [D("-0.00"), D("174.460000"), None],
            "prev_outgoing": [None, D("1.00"), None],
            "collections": [9, 4, None],
            "prev_collections": [9, 4, 3],
            "underpayments": [1, 2, None],
            "prev_underpayments": [1, 1, 1],
            "underpayment_rate": [0.1, 0.5, None],
            "prev_underpayment_rate": [0.1, 0.25, 0.3],
            "shortfall": [D("111.599250"), D("0.250001"), None],
            "prev_shortfall": [D("1.00"), D("1.00"), D("1.00")],
        },
        schema_overrides={
            c: pl.Decimal(38, 6)
            for c in ("incoming", "prev_incoming", "outgoing", "prev_outgoing", "shortfall")
        }
        | {"prev_shortfall": pl.Decimal(38, 6)},
    )


def test_headlines_write_money_by_the_rule() -> None:
    money = {h.label: h.value for h in explore_headlines(_mom()) if h.label.startswith("Money")}
    assert money == {
        "Money in, NGN (successful)": "1,234,567.50 NGN",
        "Money in, USDT (successful)": "0.000001 USDT",
        "Money out, USDT (successful)": "174.46 USDT",
        # KES has no record this month: said so, never "0 KES".
        "Money in, KES (successful)": "no records",
    }
    shortfall = {h.label: h.value for h in underpayment_headlines(_mom()) if "hortfall" in h.label}
    assert shortfall == {
        "Gross shortfall of underpayments, NGN": "111.59925 NGN",
        "Gross shortfall of underpayments, USDT": "0.250001 USDT",
        "Gross shortfall of underpayments, KES": "no records",
    }


# -- notebook 01: the overview ----------------------------------------------------------------


def test_explore_findings_write_money_by_the_rule() -> None:
    frame = tx_frame(
        [
            {
                "id": "a",
                "status": "successful",
                "transType": "collection",
                "toCurrency": "USDT",
                "toAmount": "1234.500001",
                "feeAmount": "0.000001",
                "createdAt": "2026-06-01T10:00:00Z",
            },
            {
                "id": "b",
                "status": "successful",
                "transType": "collection",
                "toCurrency": "USDT",
                "toAmount": "174.460000",
                "feeAmount": "0",
                "createdAt": "2026-06-02T10:00:00Z",
            },
        ],
        money_scale=6,
    )
    lines = explore_findings(frame)
    assert lines[1] == (
        "USDT: 2 successful records moving 1,408.960001 USDT; fees 0.000001 USDT (0.00%)."
    )
    assert (
        lines[2]
        == "Busiest USDT day by amount: 2026-06-01 with 1 successful records (1,234.500001 USDT)."
    )


# -- notebook 02: reconciliation ---------------------------------------------------------------


def _reconciled() -> pl.DataFrame:
    rows = [
        # reference, category, export currency, order currency, export, order, difference
        ("r1", "amount_mismatch", "NGN", "NGN", "1000000.00", "1001000.50", "-1000.50"),
        ("r2", "amount_mismatch", "NGN", "NGN", "10.00", "9.99", "0.01"),
        ("r3", "amount_mismatch", "USDT", "USDT", "174.460001", "174.460000", "0.000001"),
        ("r4", "missing_in_orders", "USDT", None, "111.599250", None, None),
        ("r5", "currency_mismatch", "NGN", "USDT", "5.00", "5.000001", None),
        ("r6", "missing_in_export", None, "KES", None, "0.00", None),
    ]
    columns = ["reference", "category", "export_currency", "order_currency", "export_amount",
               "order_amount", "difference"]  # fmt: skip
    data = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
    for c in ("export_amount", "order_amount", "difference"):
        data[c] = [None if v is None else D(v) for v in data[c]]
    return pl.DataFrame(
        data,
        schema_overrides={c: pl.Decimal(38, 6) for c in columns[4:]},
    )


def test_reconcile_findings_write_money_by_the_rule_and_the_largest_per_currency() -> None:
    result = _reconciled()
    lines = reconcile_findings(result, reconcile_summary(result))
    assert lines[1:] == [
        "1 reference(s) expected by the orders but absent from the export "
        "(the orders' side: 0.00 KES).",
        "1 reference(s) in the export but not in the orders (the export's side: 111.59925 USDT).",
        "3 reference(s) with a different amount on each side "
        "(difference: -1,000.49 NGN, 0.000001 USDT).",
        "1 reference(s) with a different currency on each side (the orders' side: 5.000001 USDT).",
        # -1,000.50 NGN is not compared with 0.000001 USDT: one per currency.
        "Largest amount difference in each currency: r1 (-1,000.50 NGN); r3 (0.000001 USDT).",
    ]


def test_an_amount_tolerance_is_written_by_the_rule() -> None:
    lines = describe_matching(
        _reconciled(), month=MONTH, amount_tolerance={"USDT": D("0.000500"), "NGN": 1}
    )
    assert lines[1].startswith("Differences up to 1.00 NGN, 0.0005 USDT are amount_within")


# -- notebook 03: underpayments ---------------------------------------------------------------


def test_underpayment_findings_write_money_by_the_rule_and_the_largest_per_currency() -> None:
    flagged = pl.DataFrame({"original_in_export": [True]})
    by_currency = pl.DataFrame(
        {
            "currency": ["NGN", "USDT"],
            "successful_collections": [4, 4],
            "underpayments": [2, 1],
            "overpayments": [1, 0],
            "underpayment_rate": [0.5, 0.25],
            "shortfall": [D("1234567.500000"), D("0.000001")],
            "net_shortfall": [D("-0.000000"), None],
        },
        schema_overrides={"shortfall": pl.Decimal(38, 6), "net_shortfall": pl.Decimal(38, 6)},
    )
    # repeat_shortfalls' order: the largest total first, across currencies.
    repeats = pl.DataFrame(
        {
            "currency": ["NGN", "NGN", "USDT"],
            "total_shortfall": [D("1234567.50"), D("20.00"), D("0.000002")],
            "underpayments": [2, 2, 2],
            "customerEmail": ["a***@x", "b***@x", "c***@x"],
        },
        schema_overrides={"total_shortfall": pl.Decimal(38, 6)},
    )
    lines = underpayment_findings(flagged, by_currency, repeats)
    assert lines == [
        "NGN: 2 underpayment(s), 1 overpayment(s); underpaid: 2 of 4 successful collections, "
        "NGN (50.00%); gross shortfall of underpayments 1,234,567.50 NGN, net shortfall (gross "
        "shortfall less the excess of overpayments) 0.00 NGN.",
        "USDT: 1 underpayment(s); underpaid: 1 of 4 successful collections, USDT (25.00%); "
        "gross shortfall of underpayments 0.000001 USDT.",
        "3 customer(s) underpaid more than once; the largest total in each currency: "
        "1,234,567.50 NGN over 2 payments (a***@x); 0.000002 USDT over 2 payments (c***@x).",
    ]


# -- notebook 04: balances --------------------------------------------------------------------


def test_balance_findings_write_money_by_the_rule_and_the_largest_per_currency() -> None:
    rows = [("NGN", "b1", "-1000000.00"), ("NGN", "b2", "3.00"), ("USDT", "b3", "0.000001")]
    breaks = pl.DataFrame(
        {
            "currency": [r[0] for r in rows],
            "id": [r[1] for r in rows],
            "field": ["toBalanceAfterLedger"] * 3,
            "createdAt": [datetime(2026, 6, 1, i, tzinfo=UTC) for i in range(3)],
            "difference": [D(r[2]) for r in rows],
            "kind": ["other"] * 3,
        },
        schema_overrides={"difference": pl.Decimal(38, 6)},
    )
    lines = balance_findings(breaks, pl.DataFrame({"checked": [10], "unverifiable": [0]}))
    assert lines[-1] == (
        "Largest break in each currency: b1 (toBalanceAfterLedger), off by -1,000,000.00 NGN; "
        "b3 (toBalanceAfterLedger), off by 0.000001 USDT."
    )


# -- notebook 05: trends ----------------------------------------------------------------------


def test_trend_findings_write_money_by_the_rule() -> None:
    table = pl.DataFrame(
        {
            "month": ["2026-05", "2026-05", MONTH, MONTH],
            "currency": ["NGN", "USDT", "NGN", "USDT"],
            "records": [10, 10, 10, 10],
            "successful": [10, 10, 10, 10],
            "incoming": [D("1000.00"), D("1.00"), D("1234567.500000"), None],
            "underpayment_rate": [None, None, 0.1, None],
            "underpayments": [0, 0, 1, 0],
            "shortfall": [D("0"), D("0"), D("111.599250"), D("0")],
            "match_rate": [None, None, None, None],
        },
        schema_overrides={
            "incoming": pl.Decimal(38, 6),
            "shortfall": pl.Decimal(38, 6),
            "match_rate": pl.Float64,
        },
    )
    lines = trend_findings(table)
    # USDT's money in is not known in the last month: no sentence, rather than 0.
    assert lines[1] == (
        "NGN: money in 1,234,567.50 NGN in 2026-06, +123356.8% against the average of the "
        "1 month(s) before."
    )
    assert not any(line.startswith("USDT: money in") for line in lines)
    assert lines[-1] == (
        "Highest underpayment rate: NGN in 2026-06 (10.00% of successful collections, "
        "shortfall 111.59925 NGN)."
    )


# -- notebook 06: the close (wallet statement, settlements) -----------------------------------


def _statement() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "currency": ["GHS", "NGN", "USDT", "KES"],
            "closing_reported": [D("10.00"), D("1234567.50"), D("174.460000"), None],
            "closing_computed": [D("10.00"), D("1234568.00"), D("174.460001"), None],
            "difference": [D("0.000000"), D("-0.50"), D("-0.000001"), None],
            "explained_by": ["", "a record the export lacks", "rounding", ""],
            "unexplained": [None, D("-0.50"), None, None],
            "available_difference": [D("0.000001"), None, None, None],
            "note": ["", "", "", "no record before the month"],
        },
        schema_overrides={
            c: pl.Decimal(38, 6)
            for c in (
                "closing_reported",
                "closing_computed",
                "difference",
                "unexplained",
                "available_difference",
            )
        },
    )


def test_the_close_writes_money_by_the_rule() -> None:
    statement = _statement()
    # Amount then currency, as everywhere (it was "GHS 0.000000, NGN -0.500000, ...").
    assert wallet_differences_line(statement) == (
        "**Difference of each statement** (reported - computed; +: the wallet reports more "
        "than its records explain): 0.00 GHS, -0.50 NGN, -0.000001 USDT."
    )
    assert [h["value"] for h in wallet_headlines(statement)] == [
        "0.00 GHS",
        "-0.50 NGN",
        "-0.000001 USDT",
        "not stated",
    ]
    assert wallet_findings(statement) == [
        "Wallets that tie out to 0.00 (opening + activity = closing): GHS.",
        "Wallet GHS: the available balance differs by 0.000001 GHS ().",
        "Wallet NGN does not tie out: the closing balance reported is 1,234,567.50 NGN, the "
        "month's records make it 1,234,568.00 NGN; difference -0.50 NGN, explained by a record "
        "the export lacks. Unexplained: -0.50 NGN.",
        "Wallet USDT does not tie out: the closing balance reported is 174.46 USDT, the "
        "month's records make it 174.460001 USDT; difference -0.000001 USDT, explained by "
        "rounding.",
        "Wallet KES: not stated (no record before the month).",
    ]


def test_settlement_findings_sum_per_currency_by_the_rule() -> None:
    result = pl.DataFrame(
        {
            "settlement_id": ["s1", "s2", "s3", None],
            "category": ["amount_differs", "amount_differs", "missing_in_bank", "unknown_credit"],
            "currency": ["USDT", "NGN", "NGN", "NGN"],
            "settlement_amount": [D("174.460000"), D("1000000.00"), D("2500.50"), None],
            "bank_amount": [D("174.459999"), D("999999.00"), None, D("0.00")],
            "difference": [D("-0.000001"), D("-1.00"), None, None],
        },
        schema_overrides={
            c: pl.Decimal(38, 6) for c in ("settlement_amount", "bank_amount", "difference")
        },
    )
    statement = BankStatement(entries=pl.DataFrame(), balances=pl.DataFrame())
    assert settlement_findings(result, statement)[1:] == [
        "2 credited with another amount (-1.00 NGN, -0.000001 USDT).",
        "1 not found on the bank statement (2,500.50 NGN).",
        "1 bank credit(s) that match no settlement (0.00 NGN).",
    ]


# -- notebook 07: the register ----------------------------------------------------------------


def test_register_findings_sum_per_currency_by_the_rule() -> None:
    n = 4
    view = pl.DataFrame(
        {
            "key": ["a", "b", "c", "d"],
            "section": ["reconciliation"] * n,
            "kind": ["amount_mismatch"] * n,
            "currency": ["NGN", "NGN", "USDT", "KES"],
            "amount": [D("-1234567.50"), D("0.50"), D("0.000001"), None],
            "status": ["open"] * n,
            "owner": ["ana"] * n,
            "material": [True] * n,
            "age_days": [100, 90, 80, 70],
            "age_bucket": ["90+", "90+", "61-90", "61-90"],
            "first_month": ["2026-02"] * n,
            "resolved_month": [None] * n,
        },
        schema_overrides={"amount": pl.Decimal(38, 6), "resolved_month": pl.String},
    )
    # Absolute amounts per currency; KES's amount is not known: said so, never 0.
    assert register_findings(view, MONTH)[0] == (
        "4 material items older than 60 days have no explanation (unknown KES, "
        "1,234,568.00 NGN, 0.000001 USDT); the oldest, a (reconciliation, 100 days), first "
        "listed in 2026-02."
    )


# -- notebook 08: fees ------------------------------------------------------------------------


def test_fee_findings_write_money_by_the_rule_and_the_largest_per_currency() -> None:
    rows = [("f1", "NGN", "-125.039250"), ("f2", "NGN", "1000.00"), ("f3", "USDT", "0.000001")]
    mismatches = pl.DataFrame(
        {
            "id": [r[0] for r in rows],
            "transType": ["transfer"] * 3,
            "currency": [r[1] for r in rows],
            "kind": ["fee_mismatch"] * 3,
            "difference": [D(r[2]) for r in rows],
            "rule": ["the rule"] * 3,
        },
        schema_overrides={"difference": pl.Decimal(38, 6)},
    )
    assert fee_findings(mismatches, []) == [
        # To the cent with the exact digits beside (a fee rule's sub-cent value); USDT's
        # micro-units as they are.
        "3 records charged a fee off its rule (reported − expected: +874.96 NGN (exact: "
        "+874.96075), +0.000001 USDT); the largest in each currency: f2 (transfer, +1,000.00 NGN "
        "against the rule); f3 (transfer, +0.000001 USDT against the rule)."
    ]


def test_a_fee_rule_and_the_materiality_are_written_by_the_rule() -> None:
    rule = FeeRule(kind="fee", trans_type="collection", currency="NGN", flat=None,
                   percent_bp=140, cap=D("2000"), explained=4120, records=4130)  # fmt: skip
    assert rule.describe() == (
        "collection NGN: 1.40 % of toAmount, capped at 2,000.00 NGN (4,120 of 4,130 records)"
    )
    flat = FeeRule(kind="fee", trans_type="transfer", currency="USDT", flat=D("0.100001"),
                   percent_bp=None, cap=None, explained=1, records=1)  # fmt: skip
    assert flat.describe() == "transfer USDT: flat 0.100001 USDT (1 of 1 records)"
    materiality = Materiality(absolute={"USDT": D("50.000000"), "NGN": D("50000")})
    assert materiality.describe().startswith(
        "Material: an item whose amount at stake (its absolute value) reaches the greater of "
        "50,000.00 NGN, 50.00 USDT (per currency) and 5 % of the total at stake of the same "
        "section's items listed in the month"
    )


# -- a reopened month's changes (txkit exceptions, the index) ---------------------------------


def test_a_revisions_totals_are_written_by_the_rule(tmp_path: Path) -> None:
    from txkit.register._sign import compare_reports
    from txkit.register._state import ITEMS_SUFFIX

    def report(name: str, rows: list[tuple[str, str, str | None]]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "report.json").write_text('{"table_version": 1, "rows": 3}')
        pl.DataFrame(
            {
                "key": [r[0] for r in rows],
                "currency": [r[1] for r in rows],
                "amount": [None if r[2] is None else D(r[2]) for r in rows],
            },
            schema={"key": pl.String, "currency": pl.String, "amount": pl.Decimal(38, 6)},
        ).write_parquet(folder / f"balance_breaks{ITEMS_SUFFIX}")
        return folder

    before = report("r1", [("a", "NGN", "1234567.50"), ("b", "USDT", "0.000001")])
    after = report("r2", [("a", "NGN", "1234567.50"), ("c", "NGN", "0.50"), ("d", "KES", None)])
    assert compare_reports(before, after) == [
        "balance_breaks: 2 -> 3 items; added c, d; removed b",
        "balance_breaks total none -> unknown KES",
        "balance_breaks total 1,234,567.50 NGN -> 1,234,568.00 NGN",
        "balance_breaks total 0.000001 USDT -> none",
    ]
