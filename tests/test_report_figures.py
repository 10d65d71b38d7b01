"""Issue 23's figure rules, each on its own: every figure has one meaning where it stands.

Fast tests on the functions that make the figures; the report's own pages are checked in
``tests/test_report.py`` (``session_report``).
"""

from __future__ import annotations

import ast
import os
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from openpyxl import load_workbook

from tests.factories import collection
from txkit import config
from txkit.analysis import reconcile, reconcile_summary
from txkit.analysis.underpayments import SHORTFALL_NAMES
from txkit.notebook._display import as_run_line
from txkit.notebook._load import LoadInfo
from txkit.notebook.findings import reconcile_findings, underpayment_findings
from txkit.notebook.plots import MIN_POINTS, plot_rate_trends
from txkit.notebook.tables import format_table
from txkit.output import MONEY_FORMAT, write_xlsx
from txkit.report._headlines import exception_headlines, underpayment_headlines
from txkit.report._html import Headline, Section, index_html, needs_action
from txkit.report._kernels import kernel_environment
from txkit.report._plan import sync_range

ROOT = Path(__file__).resolve().parents[1]


# --- 1. one meaning per figure ----------------------------------------------------------------


def _reconciled() -> pl.DataFrame:
    from tests.analysis.analysis_cases import tx_frame

    export = tx_frame(
        [
            collection("SAME", "100.00"),
            collection("ONLY-EXPORT", "250.00"),
            collection("STATUS", "40.00", status="failed"),
            collection("AMOUNT", "100.00"),
            collection("CURRENCY", "100.00", "USD"),
        ]
    )
    orders = pl.DataFrame(
        {
            "reference": ["SAME", "ONLY-ORDERS", "STATUS", "AMOUNT", "CURRENCY"],
            "amount": ["100", "75.5", "40", "90", "300"],
            "currency": ["NGN", "KES", "NGN", "NGN", "NGN"],
            "status": ["successful"] * 5,
            "date": [date(2026, 1, 2)] * 5,
        }
    ).with_columns(pl.col("amount").cast(pl.Decimal(38, 2)))
    return reconcile(export, orders)


def test_the_difference_column_says_what_is_at_stake_on_missing_and_status_rows() -> None:
    """A missing reference or a status mismatch showed ``difference 0.00`` (or nothing) while a
    whole payment was in question: ``at_stake`` holds the amount, in the row's one currency."""
    result = _reconciled()
    at_stake = {r: v for r, v in result.select("reference", "at_stake").iter_rows()}
    assert at_stake == {
        "SAME": Decimal("0.00"),
        "ONLY-EXPORT": Decimal("250.00"),  # the export's payment the orders lack
        "ONLY-ORDERS": Decimal("-75.50"),  # the order the export lacks: money not received
        # difference 0.00, yet the payment failed while its order says paid: 40.00 NGN short
        "STATUS": Decimal("-40.00"),
        "AMOUNT": Decimal("10.00"),
        "CURRENCY": None,  # two currencies: nothing is subtracted
    }
    status = result.row(by_predicate=pl.col("reference") == "STATUS", named=True)
    assert status["difference"] == Decimal("0.00")
    # Shown with its own currency, also where only the order's side has one.
    table = repr(format_table(result, key=["reference", "category", "at_stake"], rows=10))
    assert "-75.50 KES" in table and "250.00 NGN" in table


def test_a_sum_of_one_side_says_which_side() -> None:
    result = _reconciled()
    findings = reconcile_findings(result, reconcile_summary(result))
    currency = next(f for f in findings if "different currency" in f)
    # The export paid in USD, the order was in NGN: the orders' side is summed in NGN.
    assert "(the orders' side: 300.00 NGN)" in currency
    missing = next(f for f in findings if "not in the orders" in f)
    assert "(the export's side: 250.00 NGN)" in missing
    amount = next(f for f in findings if "different amount" in f)
    assert "(difference: 10.00 NGN)" in amount


def test_shortfall_figures_are_named_for_what_they_are() -> None:
    mom = pl.DataFrame(
        {
            "currency": ["NGN"],
            "collections": [100],
            "prev_collections": [90],
            "underpayments": [7],
            "prev_underpayments": [5],
            "underpayment_rate": [0.07],
            "prev_underpayment_rate": [0.05],
            "shortfall": [Decimal("60703.00")],
            "prev_shortfall": [Decimal("50000.00")],
        }
    )
    labels = [h.label for h in underpayment_headlines(mom)]
    assert "Gross shortfall of underpayments, NGN" in labels
    assert not any(label.startswith("Shortfall") for label in labels)
    by_currency = pl.DataFrame(
        {
            "currency": ["NGN"],
            "underpayments": [7],
            "overpayments": [8],
            "underpayment_rate": [0.0021],
            "shortfall": [Decimal("60703.00")],
            "excess": [Decimal("51433.89")],
            "net_shortfall": [Decimal("9269.11")],
        }
    )
    flagged = pl.DataFrame({"original_in_export": [True]})
    (line,) = underpayment_findings(flagged, by_currency, pl.DataFrame())
    assert f"{SHORTFALL_NAMES['shortfall']} 60,703.00 NGN" in line
    assert f"{SHORTFALL_NAMES['net_shortfall']} 9,269.11 NGN" in line


def test_a_cut_table_says_how_many_rows_it_leaves_out_and_links_the_download() -> None:
    df = pl.DataFrame({"day": list(range(31)), "amount": [Decimal("1.00")] * 31})
    table = format_table(df, rows=10, download="daily_volume")
    assert "Showing the first 10 of 31 rows: 21 left out." in repr(table)
    page = table._repr_html_()
    assert "21 left out" in page
    assert 'href="daily_volume.csv"' in page and 'href="daily_volume.xlsx"' in page
    whole = format_table(df, rows=31, download="daily_volume")
    assert "left out" not in whole._repr_html_() and "daily_volume" not in whole._repr_html_()


def test_money_does_not_wrap_in_an_untrusted_notebook() -> None:
    """JupyterLab drops an untrusted notebook's <style>: the money cells' no-wrap is inline."""
    df = pl.DataFrame({"currency": ["NGN"], "amount": [Decimal("108571283.63")]})
    page = format_table(df)._repr_html_()
    cell = page[page.index("108,571,283.63 NGN") - 200 : page.index("108,571,283.63 NGN")]
    assert 'style="white-space:nowrap!important' in cell


# --- 2. what needs action ---------------------------------------------------------------------


def _entry(rows: int, new: int, compared: bool = True) -> dict:
    counts = {"open": rows, "new": new, "still_open": rows - new, "resolved": 0}
    return {"title": "Balance breaks", "rows": rows, "counts": counts | {"compared": compared}}


def test_only_new_or_growing_exceptions_need_action() -> None:
    (same,) = exception_headlines(_entry(5, 0), {"rows": 5})
    (fewer,) = exception_headlines(_entry(4, 0), {"rows": 5})
    (grew,) = exception_headlines(_entry(6, 0), {"rows": 5})
    (fresh,) = exception_headlines(_entry(5, 2), {"rows": 5})
    (first,) = exception_headlines(_entry(3, 3, compared=False), None)
    (empty,) = exception_headlines(_entry(0, 0, compared=False), None)
    assert [h.look for h in (same, fewer, grew, fresh, first, empty)] == [
        False,
        False,
        True,
        True,
        True,
        False,
    ]


def test_the_index_opens_with_what_needs_action_and_ends_with_the_notes() -> None:
    sections = [
        Section("01 · Export", "01_explore.html", ["fine"], [Headline("Transactions", "9")]),
        Section(
            "04 · Balances", "04_balance_checks.html", [], [Headline("Breaks", "18", "+3", True)]
        ),
    ]
    assert [h.label for _, h in needs_action(sections)] == ["Breaks"]
    page = index_html(
        "2026-10", sections, show_pii=False, freshness="Data: 9 rows", source="the sandbox"
    )
    action = page.index("What needs action")
    assert action < page.index("01 · Export") < page.index("<footer")
    assert page.index("<footer") < page.index("Customer data:") < page.index("Source:")
    assert '<a href="04_balance_checks.html">Breaks</a>: 18 (+3)' in page


# --- 4. Excel -----------------------------------------------------------------------------------


def test_excel_downloads_read_like_an_analysts_own_sheet(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "key": ["TXK-AAAAAAAAAAAAAAAA:missing_in_orders", "TXK-B:amount_mismatch"],
            "note": ["x", "y"],
            "at_stake": [Decimal("78.00"), Decimal("1234567.5")],
            "currency": ["NGN", "NGN"],
            "reference": ["TXK-A", "TXK-B"],
            "createdAt": [datetime(2026, 10, 3, 14, 5, 9), datetime(2026, 10, 4, 1, 2, 3)],
            "category": ["missing_in_orders", "amount_mismatch"],
        },
        schema_overrides={"at_stake": pl.Decimal(38, 2)},
    )
    path = tmp_path / "list.xlsx"
    write_xlsx(
        df, path, sheet="list", first=["reference", "at_stake", "currency", "createdAt", "category"]
    )
    sheet = load_workbook(path).active
    header = [c.value for c in sheet[1]]
    assert header == ["reference", "at_stake", "currency", "createdAt", "category", "note", "key"]
    money, stamp = sheet["B2"], sheet["D2"]
    assert money.value == 78 and money.number_format == MONEY_FORMAT
    assert sheet["B3"].value == 1234567.5 and sheet["B3"].number_format == MONEY_FORMAT
    assert isinstance(stamp.value, datetime) and stamp.number_format == "yyyy-mm-dd hh:mm:ss"
    assert sheet.column_dimensions["D"].width >= 19  # no ### for a timestamp
    assert sheet.freeze_panes == "A2"
    (table,) = sheet.tables.values()  # filters on every column
    assert table.ref == "A1:G3" and table.autoFilter.ref == "A1:G3"
    assert sheet.page_setup.orientation == "landscape"
    # one page wide (1 is the file format's default, left out), as many long as it takes
    assert (sheet.page_setup.fitToWidth or 1) == 1 and sheet.page_setup.fitToHeight == 0
    assert sheet.sheet_properties.pageSetUpPr.fitToPage
    assert sheet.print_title_rows == "$1:$1"  # the header on every printed page


# --- 6. trends ----------------------------------------------------------------------------------


def test_the_report_syncs_the_trends_months_inside_the_sandbox_calendar() -> None:
    calendar = (date(2025, 11, 1), date(2026, 10, 31))
    assert sync_range("2026-10", calendar) == calendar  # twelve months, nothing after October
    assert sync_range("2026-03", calendar) == (date(2025, 11, 1), date(2026, 4, 3))
    # A service's calendar is not known: only the history (an empty window before its first
    # record cannot be proven complete), and the trends say how many months the store holds.
    since, until = sync_range("2026-10")
    assert since == date(2026, 7, 1) and until == date(2026, 11, 3)
    assert config.TREND_MONTHS - 1 >= config.HISTORY_MONTHS
    no_records = r"^no records of 2026-11: the sandbox covers 2025-11 to 2026-10$"
    with pytest.raises(ValueError, match=no_records):
        sync_range("2026-11", calendar)


def test_a_one_point_series_is_not_drawn() -> None:
    import matplotlib

    matplotlib.use("Agg")
    table = pl.DataFrame(
        {
            "month": ["2026-09", "2026-10", "2026-10"],
            "currency": ["NGN", "NGN", "USD"],
            "success_rate": [0.9, 0.91, 0.5],
            "fee_rate": [0.01, 0.01, 0.02],
            "underpayment_rate": [None, None, None],
            "match_rate": [None, 0.99, 0.98],
        },
        schema_overrides={"underpayment_rate": pl.Float64},
    )
    fig = plot_rate_trends(table)
    success, _, underpaid, match = fig.axes[:4]
    assert [line.get_label() for line in success.get_lines()] == ["NGN"]  # USD: one month
    assert MIN_POINTS == 2 and match.get_lines() == []
    assert any("Fewer than two months" in t.get_text() for t in match.texts)
    assert any("Fewer than two months" in t.get_text() for t in underpaid.texts)


# --- 5. pages read like a report ----------------------------------------------------------------


def test_the_as_run_line_names_the_store_and_version_only() -> None:
    month = LoadInfo(
        month="2026-10",
        first=date(2026, 10, 1),
        last=date(2026, 10, 31),
        source="the store data/store/sandbox at table version 3 (data from x)",
        rows=6624,
        store="data/store/sandbox",
        version=3,
    )
    history = LoadInfo(
        month="2026-10", first=None, last=None, source="", rows=1, kind="history",
        note="History: 15,012 transactions of 2026-07 to 2026-09",
    )  # fmt: skip
    line = as_run_line(month, history)
    assert line == (
        "**As run:** 6,624 transactions of 2026-10 from the store data/store/sandbox, table "
        "version 3; 15,012 transactions of 2026-07 to 2026-09."
    )
    assert "\n" not in line


# --- issue 21 item 4: the report's steps ----------------------------------------------------------


def test_run_report_reads_as_named_steps_of_at_most_80_lines() -> None:
    tree = ast.parse((ROOT / "txkit" / "report" / "_run.py").read_text(encoding="utf-8"))
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}

    def code_lines(node: ast.FunctionDef) -> int:  # its lines, the docstring left out
        lines = node.end_lineno - node.lineno + 1
        doc = node.body[0]
        if isinstance(doc, ast.Expr) and isinstance(getattr(doc, "value", None), ast.Constant):
            lines -= doc.end_lineno - doc.lineno + 1
        return lines

    long = {name: n for name, node in functions.items() if (n := code_lines(node)) > 80}
    assert long == {}
    # `run` holds the month (issue 34's lock), `_run` takes the steps once it is held, and
    # `_render` those that read the store's version under its lease (issue 48).
    called = {
        n.func.id
        for name in ("run", "_run", "_render")
        for n in ast.walk(functions[name])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    steps = {"plan_report", "sync_for_report", "stage", "run_notebooks", "attach_downloads"}
    assert steps | {"add_headlines", "write_index", "publish"} <= called
    source = ast.unparse(tree)
    assert "os.environ[" not in source and "os.environ.pop" not in source


def test_kernels_get_their_variables_without_changing_this_process(tmp_path: Path) -> None:
    before = dict(os.environ)
    env = kernel_environment(tmp_path / "data")
    assert env == {
        config.PROGRESS_VAR: "0",
        config.DATA_DIR_VAR: str((tmp_path / "data").resolve()),
    }
    assert dict(os.environ) == before


def test_one_data_folder_when_working_in_the_notebooks_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JupyterLab starts a kernel in ``notebooks/``: the sandbox cache and the store are the
    project's, not a second copy under ``notebooks/data/``."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.delenv(config.DATA_DIR_VAR, raising=False)
    monkeypatch.chdir(tmp_path / "notebooks")
    assert config.data_dir() == tmp_path / "data"
    monkeypatch.chdir(tmp_path)
    assert config.data_dir() == Path("data")
