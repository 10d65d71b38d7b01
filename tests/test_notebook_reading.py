"""What the notebooks say reads as an analyst needs it (issue 35): the source first, the
records to check named, each record once, wide tables that say they scroll, amounts computed
to a fraction of a cent written to the cent with their exact digits."""

from __future__ import annotations

import json
import re
from decimal import Decimal as D
from pathlib import Path

import polars as pl
import pytest

from txkit.money import format_money, format_sums
from txkit.notebook._close import _explained_once
from txkit.notebook._source import source_sentence
from txkit.notebook.findings import underpayment_findings
from txkit.notebook.tables import WIDE, format_table

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _first_output(path: Path) -> str:
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/markdown" in data:
                return "".join(data["text/markdown"])
    return ""


def test_every_notebook_begins_with_the_same_source_sentence() -> None:
    sentences = {path.stem: _first_output(path).split("\n")[0] for path in NOTEBOOKS}
    pattern = re.compile(
        r"\*\*Source:\*\* the embedded sandbox \(synthetic data: no TXKIT_SECRET_KEY is "
        r"configured; .*\) · \*\*store:\*\* (.+) · \*\*month:\*\* 2026-10"
    )
    stores = {}
    for name, sentence in sentences.items():
        match = pattern.fullmatch(sentence)
        assert match, (name, sentence)
        stores[name] = match[1]
    assert stores.pop("07_exceptions") == "a temporary one, built for this page"
    assert set(stores.values()) == {"data/store/sandbox"}


def test_the_source_sentence_names_the_service_by_host_and_never_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TXKIT_BASE_URL", "https://api.example.com/v1")
    monkeypatch.setenv("TXKIT_SECRET_KEY", "sk_live_abcdefghijklmnop")
    text = source_sentence("2026-10")
    assert text == (
        "**Source:** the service at api.example.com · **store:** data/store/api.example.com · "
        "**month:** 2026-10"
    )
    assert source_sentence("2026-10", plain=True).startswith("Source: the service at")


def test_each_record_behind_a_statement_difference_is_named_once() -> None:
    listed = "; ".join(
        f"id{i} chain_gap (in the month, {side})"
        for i in range(8)
        for side in ("ledger", "available")
    )
    text = _explained_once(listed)
    assert text.startswith("8 record(s): id0 chain_gap (in the month); id1 chain_gap")
    assert text.count("id0") == 1 and "3 more (04's balance breaks list each)" in text
    assert _explained_once("id9 bad_value (the closing, available)") == (
        "id9 bad_value (the closing, available only)"
    )
    assert _explained_once("rounding") == "rounding"


def test_the_flagged_payments_to_check_are_named() -> None:
    flagged = pl.DataFrame(
        {
            "transactionReference": [f"TXK-{i}" for i in range(7)],
            "original_reference": [f"ORIG-{i}" for i in range(7)],
            "original_in_export": [False] * 7,
        }
    )
    (line,) = [
        s for s in underpayment_findings(flagged, pl.DataFrame(), pl.DataFrame()) if "check" in s
    ]
    assert "check TXK-0 (original ORIG-0), TXK-1 (original ORIG-1)" in line
    assert "TXK-5" not in line and "and 2 more (the flagged payments above" in line


def test_a_wide_table_says_it_scrolls_and_a_narrow_one_does_not() -> None:
    # 01's last table: nine columns, e-mails and ids, wider than the notebook.
    wide = pl.DataFrame({f"column_{i}": ["x" * 20] for i in range(8)})
    assert format_table(wide).width() > WIDE
    shown = format_table(wide)._repr_html_()
    assert "8 columns, the first ones identify each row" in shown
    # Issue 47, Why 8 (cosmetic): "scroll sideways" was printed on paper.
    assert '<span class="txkit-screen-only">: scroll sideways for the rest</span>' in shown
    from txkit.report._html import PAGE_CSS

    printed = PAGE_CSS[PAGE_CSS.index("@media print") :]
    assert ".txkit-screen-only{display:none}" in printed.replace(".txkit-nav,", "")
    narrow = pl.DataFrame({f"c{i}": [1] for i in range(12)})  # many, but narrow
    assert "scroll sideways" not in format_table(narrow)._repr_html_()


def test_a_sub_cent_amount_is_written_to_the_cent_with_its_exact_digits() -> None:
    assert format_money(D("0.63339"), "USD", signed=True, to_cent=True) == (
        "+0.63 USD (exact: +0.63339)"
    )
    assert format_money(D("-0.5325"), "USD", signed=True, to_cent=True) == (
        "-0.53 USD (exact: -0.5325)"
    )
    assert format_money(D("3.850000"), "KES", signed=True, to_cent=True) == "+3.85 KES"
    assert format_money(D("0.000001"), "USDT", signed=True, to_cent=True) == "+0.000001 USDT"
    assert format_money(D("0.63339"), "USD") == "0.63339 USD"  # the default is unchanged
    frame = pl.DataFrame({"d": [D("0.3"), D("0.33339")], "currency": ["USD", "USD"]})
    assert format_sums(frame, "d", signed=True, to_cent=True) == "+0.63 USD (exact: +0.63339)"


def test_the_balance_checks_show_results_before_their_definitions() -> None:
    cells = json.loads((ROOT / "notebooks" / "04_balance_checks.ipynb").read_text())["cells"]
    first = "".join(cells[0]["source"])
    assert "Common to every candidate" not in first and len(first.splitlines()) < 12
    last = "".join(cells[-1]["source"])
    assert last.startswith("## How the balances are checked") and "Common to every" in last
