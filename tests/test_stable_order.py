"""Every table and sentence shown to a user comes out the same whatever the order of the
records it was computed from.

Each function is fed the same records in several shuffled row orders, with ties planted on
purpose (equal counts, equal amounts, equal ages, equal timestamps), and its output must be
identical every time: a page, a download or a "what to look at" line must not change between
two runs on the same data (polars' ``group_by`` gives groups in no fixed order, and its sort
keeps no order among equal keys unless asked). The hand-planted ties run in the quick loop; the
sandbox ledger's whole pipelines (a few seconds) are marked slow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.analysis.analysis_cases import load_case, tx_frame
from txkit.analysis import (
    activity_comparison,
    balance_breaks,
    balance_model_choice,
    balance_model_fit,
    balance_summary,
    describe_balance_models,
    describe_matching,
    duplicate_references,
    fee_rules,
    fee_tax_mismatches,
    month_over_month,
    monthly_metrics,
    not_reported_balances,
    reconcile,
    reconcile_summary,
    repeat_shortfalls,
    trend_table,
    underpayment_summary,
    underpayments,
)
from txkit.analysis.overview import (
    daily_volume,
    explore_findings,
    fee_summary,
    status_mix,
    volume_summary,
)
from txkit.analysis.settlements import match_settlements, settlement_summary
from txkit.analysis.wallet import wallet_differences, wallet_statement
from txkit.inputs import read_statements
from txkit.notebook import owner_counts, register_findings
from txkit.notebook._close import (
    settlement_findings,
    wallet_differences_line,
    wallet_findings,
    wallet_headlines,
    wallet_statement_lines,
)
from txkit.notebook.findings import (
    balance_findings,
    reconcile_findings,
    trend_findings,
    underpayment_findings,
)
from txkit.notebook.findings_fees import fee_findings
from txkit.notebook.tables import format_table
from txkit.report._headlines import explore_headlines, underpayment_headlines

MONTH, BEFORE, AFTER = "2026-06", "2026-05", "2026-07"
SEEDS = (1, 2, 3, 4, 5)


def shuffled(frame: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """The frame as given, reversed, and in several random row orders."""
    yield frame
    yield frame.reverse()
    for seed in SEEDS:
        yield frame.sample(fraction=1.0, shuffle=True, seed=seed)


def same(outputs: list[Any]) -> None:
    """Every output equals the first: frames row by row, anything else with ``==``."""
    first = outputs[0]
    for other in outputs[1:]:
        if isinstance(first, pl.DataFrame):
            assert_frame_equal(other, first)
        else:
            assert other == first


def stable(frame: pl.DataFrame, compute: Callable[[pl.DataFrame], Any]) -> Any:
    """``compute`` on every shuffle of ``frame``; asserts they agree and returns the first."""
    outputs = [compute(f) for f in shuffled(frame)]
    same(outputs)
    return outputs[0]


@pytest.fixture(scope="module")
def records() -> pl.DataFrame:
    """A sandbox ledger with anomalies (underpayments, breaks, fee mismatches, bank cases),
    its month and the month before, as loaded."""
    frame = load_case(1, 0.03, 4_000).frame
    months = pl.col("createdAt").dt.strftime("%Y-%m")
    return frame.filter(months.is_in([BEFORE, MONTH]))


def _at(day: int, second: int = 0) -> datetime:
    return datetime(2026, 6, day, 12, 0, second, tzinfo=UTC)


def _tied_records() -> pl.DataFrame:
    """Records whose statuses, currencies and types tie in count: collection has 3
    ``processing`` and 3 ``pending``; NGN and KES have 3 successful records each; transfer
    and collection fail as often."""
    rows = []
    plan = [
        ("collection", "successful", "NGN", 3),
        ("collection", "successful", "KES", 3),
        ("collection", "processing", "NGN", 3),
        ("collection", "pending", "NGN", 3),
        ("collection", "failed", "NGN", 2),
        ("transfer", "failed", "KES", 2),
        ("transfer", "initiated", "KES", 1),
        ("transfer", "verified", "KES", 1),
    ]
    n = 0
    for trans_type, status, currency, count in plan:
        for _ in range(count):
            n += 1
            rows.append(
                {
                    "id": f"tx{n:03d}",
                    "createdAt": _at(1 + n % 3, n),
                    "transType": trans_type,
                    "status": status,
                    "toCurrency": currency,
                    "toAmount": "100.00",
                    "feeAmount": "1.50",
                    "taxAmount": "0.11",
                }
            )
    return tx_frame(rows)


# -- overview (notebook 01) -------------------------------------------------------------------


def test_status_mix_orders_statuses_of_equal_count_by_name() -> None:
    tied = _tied_records()
    counts = tied.group_by("transType", "status").len()
    assert counts.filter(pl.col("len") == 3).height == 2  # the ties this test is about
    mix = stable(tied, status_mix)
    collection = mix.filter(pl.col("transType") == "collection")["status"].to_list()
    assert collection == ["successful", "pending", "processing", "failed"]


@pytest.mark.slow
def test_the_overview_tables_and_findings_do_not_depend_on_row_order(
    records: pl.DataFrame,
) -> None:
    for frame in (_tied_records(), records):
        stable(frame, volume_summary)
        stable(frame, status_mix)
        stable(frame, daily_volume)
        stable(frame, fee_summary)
        stable(frame, explore_findings)


def test_explore_findings_name_the_main_currency_by_code_on_a_tie() -> None:
    lines = stable(_tied_records(), explore_findings)
    # KES and NGN both have 3 successful records: KES, first by its code, is "main".
    assert lines[1].startswith("KES: 3 successful") and lines[2].startswith("NGN: 3 successful")
    assert lines[3].startswith("Busiest KES day")


# -- reconciliation (notebook 02) -------------------------------------------------------------


@pytest.mark.slow
def test_reconciliation_does_not_depend_on_row_order(records: pl.DataFrame) -> None:
    orders = load_case(1, 0.03, 4_000).ledger.orders

    def run(frame: pl.DataFrame) -> tuple[Any, ...]:
        result = reconcile(frame, orders, month=MONTH)
        summary = reconcile_summary(result)
        return (
            result,
            summary,
            duplicate_references(frame),
            describe_matching(result, month=MONTH),
            reconcile_findings(result, summary),
        )

    outputs = [run(f) for f in shuffled(records)]
    for i in range(5):
        same([o[i] for o in outputs])


def _reconciled(differences: list[str], currency: str = "NGN") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "reference": [f"ref-{i}" for i in range(len(differences))],
            "category": ["amount_mismatch"] * len(differences),
            "export_currency": [currency] * len(differences),
            "order_currency": [currency] * len(differences),
            "export_amount": [Decimal("100.00")] * len(differences),
            "order_amount": [Decimal("100.00") - Decimal(d) for d in differences],
            "difference": [Decimal(d) for d in differences],
        }
    )


def test_the_largest_reconciliation_difference_on_a_tie_is_the_first_reference() -> None:
    result = _reconciled(["5.00", "-5.00", "5.00", "1.00"])
    summary = reconcile_summary(result)
    lines = stable(result, lambda r: reconcile_findings(r, summary))
    assert lines[-1] == "Largest amount difference in each currency: ref-0 (5.00 NGN)."


# -- underpayments (notebook 03) --------------------------------------------------------------


@pytest.mark.slow
def test_underpayments_do_not_depend_on_row_order(records: pl.DataFrame) -> None:
    month = records.filter(pl.col("createdAt").dt.strftime("%Y-%m") == MONTH)

    def run(frame: pl.DataFrame) -> tuple[Any, ...]:
        flagged = underpayments(frame)
        by_currency = underpayment_summary(frame, by="currency")
        repeats = repeat_shortfalls(frame, min_count=1, top=None)
        return (
            flagged,
            by_currency,
            underpayment_summary(frame, by=["currency", "bank", "channel"]),
            repeats,
            activity_comparison(frame),
            underpayment_findings(flagged, by_currency, repeats),
        )

    outputs = [run(f) for f in shuffled(month)]
    for i in range(6):
        same([o[i] for o in outputs])


# -- balances (notebook 04) -------------------------------------------------------------------


@pytest.mark.slow
def test_balance_checks_do_not_depend_on_row_order(records: pl.DataFrame) -> None:
    def run(frame: pl.DataFrame) -> tuple[Any, ...]:
        fit = balance_model_fit(frame)
        choice = balance_model_choice(fit)
        breaks = balance_breaks(frame, model=choice)
        summary = balance_summary(frame, model=choice)
        return (
            fit,
            choice,
            describe_balance_models(choice),
            breaks,
            summary,
            not_reported_balances(frame),
            balance_findings(breaks, summary),
        )

    outputs = [run(f) for f in shuffled(records)]
    for i in range(7):
        same([o[i] for o in outputs])


def _breaks(differences: list[str]) -> pl.DataFrame:
    n = len(differences)
    return pl.DataFrame(
        {
            "currency": ["NGN"] * n,
            "model": ["net"] * n,
            "side": ["ledger"] * n,
            "field": ["toBalanceAfterLedger"] * n,
            "id": [f"b{i}" for i in range(n)],
            "createdAt": [_at(1, i) for i in range(n)],
            "expected": [Decimal("0")] * n,
            "reported": [Decimal(d) for d in differences],
            "difference": [Decimal(d) for d in differences],
            "kind": ["other"] * n,
        }
    )


def test_the_largest_break_on_a_tie_is_the_earliest() -> None:
    breaks = _breaks(["7.00", "-7.00", "3.00", "7.00"])
    summary = pl.DataFrame({"checked": [10], "unverifiable": [0]})
    lines = stable(breaks, lambda b: balance_findings(b, summary))
    assert lines[-1] == (
        "Largest break in each currency: b0 (toBalanceAfterLedger), off by 7.00 NGN."
    )


def test_the_balance_model_sentence_does_not_depend_on_the_choice_table_order() -> None:
    choice = pl.DataFrame(
        {
            "currency": ["KES", "NGN", "GHS", "USD"],
            "model": ["net", "gross", "net", "gross"],
            "checked": [50, 50, 50, 50],
            "fit_rate": [1.0, 0.99, 0.98, 1.0],
            "note": [None, None, None, None],
        },
        schema_overrides={"note": pl.String},
    )
    sentence = stable(choice, describe_balance_models)
    assert sentence.startswith("Balance model, chosen from the data: net for GHS, KES")


@pytest.mark.slow
def test_a_balance_series_drawn_does_not_depend_on_row_order(records: pl.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from txkit.notebook.plots import plot_balance

    # Records sharing a createdAt (the sandbox plants such ties) keep one order on the line.
    assert records.group_by("createdAt").len()["len"].max() > 1
    breaks = balance_breaks(records)

    def drawn(frame: pl.DataFrame) -> tuple[list[Any], list[float]]:
        fig = plot_balance(frame, breaks, currency="NGN")
        line = fig.axes[0].lines[0]
        out = (list(line.get_xdata()), [float(v) for v in line.get_ydata()])
        plt.close(fig)
        return out

    stable(records, drawn)


# -- wallet statement and settlements (notebook 06) -------------------------------------------


@pytest.mark.slow
def test_the_wallet_statement_does_not_depend_on_row_order(records: pl.DataFrame) -> None:
    month = pl.col("createdAt").dt.strftime("%Y-%m") == MONTH
    history = records.filter(~month)

    def run(frame: pl.DataFrame) -> tuple[Any, ...]:
        statement = wallet_statement(frame.filter(month), month=MONTH, history=history)
        return (
            statement,
            wallet_differences(frame.filter(month), month=MONTH, history=history),
            wallet_findings(statement),
            wallet_statement_lines(statement),
            wallet_differences_line(statement),
            wallet_headlines(statement),
        )

    outputs = [run(f) for f in shuffled(records)]
    for i in range(6):
        same([o[i] for o in outputs])


def test_records_of_unknown_types_are_named_in_one_order() -> None:
    rows = [
        {
            "id": f"u{i}",
            "createdAt": _at(2, i),
            "transType": kind,
            "status": "successful",
            "toCurrency": "NGN",
            "toAmount": "10.00",
            "feeAmount": "0.00",
            "taxAmount": "0.00",
            "toBalanceAfterLedger": f"{100 + 10 * i}.00",
        }
        for i, kind in enumerate(["refund", "chargeback", "collection", "refund", "chargeback"])
    ]
    before = {**rows[2], "id": "u-before", "createdAt": datetime(2026, 5, 30, tzinfo=UTC)}
    frame = tx_frame(rows)
    history = tx_frame([before])
    statement = stable(frame, lambda f: wallet_statement(f, month=MONTH, history=history))
    assert "'chargeback'" in statement["note"][0]
    assert statement["note"][0].index("'chargeback'") < statement["note"][0].index("'refund'")


@pytest.mark.slow
def test_settlements_do_not_depend_on_row_order(records: pl.DataFrame, tmp_path: Path) -> None:
    ledger = load_case(1, 0.03, 4_000).ledger
    paths = []
    for month in (MONTH, AFTER):
        path = tmp_path / f"statement_{month}.camt053.xml"
        path.write_bytes(ledger.bank_statement(month, "camt053"))
        paths.append(path)
    statement = read_statements(paths)

    def run(frame: pl.DataFrame) -> tuple[Any, ...]:
        result = match_settlements(frame, statement, month=MONTH)
        return result, settlement_summary(result), settlement_findings(result, statement)

    outputs = [run(f) for f in shuffled(records)]
    for i in range(3):
        same([o[i] for o in outputs])


def test_settlements_with_the_same_category_date_and_reference_keep_one_order() -> None:
    rows = [
        {
            "id": f"s{i}",
            "createdAt": _at(10, i),
            "transType": "settlement",
            "status": "successful",
            "transactionReference": "SET-SAME",
            "toCurrency": "NGN",
            "toAmount": amount,
        }
        for i, amount in enumerate(["500.00", "300.00", "400.00"])
    ]
    entries = pl.DataFrame(
        {
            "file": ["bank.csv"],
            "line": [2],
            "currency": ["NGN"],
            "date": [date(2026, 6, 25)],
            "amount": [Decimal("1.00")],
            "direction": ["credit"],
            "reversal": [False],
            "reference": [None],
            "narration": ["interest"],
            "bank_reference": [None],
            "booked": [True],
        },
        schema_overrides={"reference": pl.String, "bank_reference": pl.String},
    )
    result = stable(tx_frame(rows), lambda f: match_settlements(f, entries, month=MONTH))
    missing = result.filter(pl.col("category") == "missing_in_bank")
    assert missing["settlement_id"].to_list() == ["s0", "s1", "s2"]


# -- trends and the index's headlines (notebook 05) -------------------------------------------


@pytest.mark.slow
def test_trends_and_headlines_do_not_depend_on_row_order(records: pl.DataFrame) -> None:
    history = pl.DataFrame(
        {
            "month": [BEFORE, BEFORE, MONTH, MONTH],
            "list": ["reconciliation_mismatches"] * 4,
            "currency": ["NGN", "KES", "NGN", "KES"],
            "rows": [5, 1, 4, 2],
            "population": [100, 10, 100, 20],
        }
    )

    def run(frame: pl.DataFrame) -> tuple[Any, ...]:
        metrics = monthly_metrics(frame)
        mom = month_over_month(metrics, MONTH)
        table = trend_table(metrics, history)
        return (
            metrics,
            mom,
            table,
            trend_findings(table),
            explore_headlines(mom),
            underpayment_headlines(mom),
        )

    outputs = [run(f) for f in shuffled(records)]
    for i in range(6):
        same([o[i] for o in outputs])


def _trend_rows() -> pl.DataFrame:
    """Two months, two currencies with the same underpayment rate in one month, and a match
    rate of its own per currency."""
    return pl.DataFrame(
        {
            "month": [BEFORE, BEFORE, MONTH, MONTH],
            "currency": ["NGN", "KES", "NGN", "KES"],
            "records": [100, 100, 100, 100],
            "successful": [90, 80, 95, 85],
            "incoming": [Decimal("10.00")] * 4,
            "underpayment_rate": [0.1, 0.1, 0.05, 0.02],
            "underpayments": [10, 10, 5, 2],
            "shortfall": [Decimal("1.50"), Decimal("2.50"), Decimal("1.00"), Decimal("1.00")],
            "match_rate": [0.95, 0.90, 0.99, 0.97],
        }
    )


def test_trend_findings_name_the_currency_of_a_rate() -> None:
    lines = stable(_trend_rows(), trend_findings)
    assert "Highest underpayment rate: KES in 2026-05" in lines[-2]
    assert lines[-1] == (
        "Lowest match rate among the 2 reported month(s): 2026-05 in KES (90.00% of references)."
    )


# -- fees (notebook 08) -----------------------------------------------------------------------


@pytest.mark.slow
def test_fees_do_not_depend_on_row_order(records: pl.DataFrame) -> None:
    def run(frame: pl.DataFrame) -> tuple[Any, ...]:
        rules = fee_rules(frame)
        mismatches = fee_tax_mismatches(frame)
        return [str(r) for r in rules], mismatches, fee_findings(mismatches, rules)

    outputs = [run(f) for f in shuffled(records)]
    for i in range(3):
        same([o[i] for o in outputs])


def _mismatches(differences: list[tuple[str, str]]) -> pl.DataFrame:
    n = len(differences)
    return pl.DataFrame(
        {
            "id": [f"f{i}" for i in range(n)],
            "createdAt": [_at(3, i) for i in range(n)],
            "transType": ["transfer"] * n,
            "currency": [c for c, _ in differences],
            "kind": ["fee_mismatch"] * n,
            "difference": [Decimal(d) for _, d in differences],
            "rule": ["fee transfer"] * n,
        },
        schema_overrides={"difference": pl.Decimal(38, 6)},
    )


def test_the_largest_fee_mismatch_is_chosen_by_id_on_a_tie_and_shown_exactly() -> None:
    part = _mismatches(
        [("USDT", "0.250001"), ("NGN", "-0.250001"), ("USDT", "-0.250001"), ("USDT", "0.000001")]
    )
    lines = stable(part, lambda m: fee_findings(m, []))
    # Every amount exact: NGN to the cent with its exact digits beside (issue 35), USDT's
    # micro-units at their own scale; the largest
    # per currency (f0 and f2 tie in USDT: f0).
    assert lines == [
        "4 records charged a fee off its rule (reported − expected: -0.25 NGN (exact: "
        "-0.250001), +0.000001 USDT); the largest in each currency: f1 (transfer, -0.25 NGN "
        "(exact: -0.250001) against fee transfer); f0 (transfer, +0.250001 USDT against fee "
        "transfer)."
    ]


# -- the register (notebook 07) ---------------------------------------------------------------


def _view() -> pl.DataFrame:
    """Open material items of equal age in two sections, and two resolved in the month."""
    keys = ["r-3", "r-1", "u-2", "u-1", "r-2", "done-b", "done-a"]
    sections = ["reconciliation", "reconciliation", "underpayments", "underpayments",
                "reconciliation", "underpayments", "reconciliation"]  # fmt: skip
    n = len(keys)
    return pl.DataFrame(
        {
            "key": keys,
            "section": sections,
            "kind": ["amount_mismatch"] * n,
            "currency": ["NGN", "KES", "NGN", "NGN", "NGN", "NGN", "NGN"],
            "amount": [Decimal(a) for a in ["10.00", "5.00", "1.00", "2.00", "3.00", "1", "1"]],
            "status": ["open"] * 5 + ["resolved"] * 2,
            "owner": [None, None, "ana", None, "bo", None, None],
            "material": [True] * n,
            "age_days": [120, 120, 120, 95, 30, 10, 10],
            "age_bucket": ["90+", "90+", "90+", "90+", "0-30", "0-30", "0-30"],
            "first_month": ["2026-02"] * 3 + ["2026-03", "2026-05", "2026-06", "2026-06"],
            "resolved_month": [None] * 5 + [MONTH, MONTH],
        },
        schema_overrides={"owner": pl.String, "resolved_month": pl.String},
    )


def test_register_views_do_not_depend_on_row_order() -> None:
    counts = stable(_view(), owner_counts)
    assert counts["owner"].to_list() == ["(none)", "ana", "bo"]
    lines = stable(_view(), lambda v: register_findings(v, MONTH))
    # Three items of 120 days: the oldest named is the first by section, then key.
    assert "the oldest, r-1 (reconciliation, 120 days)" in lines[0]
    assert lines[-1] == f"2 items were resolved in {MONTH}, e.g. done-a."


# -- the tables of every page ------------------------------------------------------------------


@pytest.mark.slow
def test_a_table_keeps_the_given_order_among_rows_its_sort_ties() -> None:
    n = 50_000
    frame = pl.DataFrame(
        {
            "reference": [f"ref-{i:06d}" for i in range(n)],
            "category": [("amount_mismatch", "missing_in_orders")[i % 2] for i in range(n)],
            "difference": [Decimal(i % 3) for i in range(n)],
        }
    )
    table = format_table(
        frame, sort=["category", pl.col("difference").abs()], descending=[False, True], rows=n
    )
    expected = frame.sort(
        ["category", pl.col("difference").abs()], descending=[False, True], maintain_order=True
    )
    assert table.frame["reference"].to_list() == expected["reference"].to_list()
