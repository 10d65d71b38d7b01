"""``txkit report --bank-statement`` with OFX and PDF statements, end to end (a real process,
the real settlements notebook): the sandbox's own camt.053 statements written again as OFX
and printed again in UBA's layout give the shared report's settlements, row for row."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.bank.test_ofx import _ofx_from
from tests.bank.test_pdf import _uba_from
from tests.factories import REPORT_MONTH, SessionReport, invoke_cli
from txkit.inputs import BankStatement, read_statement, read_statements
from txkit.report._close_summary import close_figures

ROOT = Path(__file__).resolve().parents[2]
_SAME = ["reference", "currency", "settlement_amount", "bank_amount", "settlement_date",
         "bank_date", "category", "rule", "difference"]  # fmt: skip


@pytest.mark.slow
def test_txkit_report_matches_ofx_and_pdf_statements_as_the_sandboxs_camt053(
    session_report: SessionReport, tmp_path: Path
) -> None:
    data = session_report.copy_data(tmp_path)
    (bank,) = (data / "sandbox/cache").glob("*/bank")
    given: dict[str, list[Path]] = {"ofx": [], "pdf": []}
    for month in (REPORT_MONTH, "2026-11"):
        statement = read_statement(bank / f"statement_{month}.camt053.xml")
        given["ofx"].append(tmp_path / f"statement_{month}.qfx")
        given["ofx"][-1].write_text(_ofx_from(statement), encoding="utf-8")
        for row in statement.balances.iter_rows(named=True):
            if statement.entries.filter(pl.col("currency") == row["currency"]).height:
                given["pdf"].append(tmp_path / f"statement_{month}_{row['currency']}.pdf")
                given["pdf"][-1].write_bytes(_uba_from(statement, row))
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(ROOT / "notebooks" / "06_settlements.ipynb", books)
    expected = pl.read_csv(session_report.folder / "settlements.csv", infer_schema=False)
    assert set(expected["category"]) > {"matched", "amount_differs", "missing_in_bank"}
    for kind, paths in given.items():
        flags = [part for path in paths for part in ("--bank-statement", str(path))]
        done = invoke_cli("report", "--month", REPORT_MONTH, "--notebooks", str(books),
                          "--out", f"out_{kind}", *flags, cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"({kind})" in done.stdout + done.stderr
        got = pl.read_csv(tmp_path / f"out_{kind}/{REPORT_MONTH}/settlements.csv",
                          infer_schema=False)  # fmt: skip
        assert got.select(_SAME).equals(expected.select(_SAME)), kind


_CSV_COLUMNS = (
    "date=Date,value_date=Value Date,currency=Currency,amount=Amount,reference=Reference,"
    "narration=Narration,bank_reference=Bank Reference,balance=Balance"
)


def _csv_from(statement: BankStatement) -> str:
    """The statement written as a bank's CSV download: its booked entries by date, each with
    the running balance of its currency after it (from the statement's opening), and no
    reversal mark (a reversal is only its narration, as a CSV writes it)."""
    opening = {
        r["currency"]: r["opening"]
        for r in statement.balances.sort("closing_date", descending=True).iter_rows(named=True)
    }
    running = dict(opening)
    lines = ["Date,Value Date,Currency,Amount,Reference,Narration,Bank Reference,Balance"]
    booked = statement.entries.filter(pl.col("booked")).sort("date", maintain_order=True)
    for e in booked.iter_rows(named=True):
        running[e["currency"]] += e["amount"]
        cells = [str(e["date"]), str(e["value_date"] or ""), e["currency"], str(e["amount"]),
                 e["reference"] or "", e["narration"] or "", e["bank_reference"] or "",
                 str(running[e["currency"]])]  # fmt: skip
        lines.append(",".join(f'"{c}"' for c in cells))
    return "\n".join(lines) + "\n"


def _camt_and_csv(session_report: SessionReport, tmp_path: Path) -> tuple[list[Path], list[Path]]:
    (bank,) = (session_report.workdir / "data/sandbox/cache").glob("*/bank")
    camt = [bank / f"statement_{month}.camt053.xml" for month in (REPORT_MONTH, "2026-11")]
    csv = []
    for path in camt:
        csv.append(tmp_path / path.name.replace(".camt053.xml", ".csv"))
        csv[-1].write_text(_csv_from(read_statement(path)), encoding="utf-8")
    return camt, csv


def test_a_csv_statement_gives_the_close_summary_the_bank_figures_camt053_gives(
    session_report: SessionReport, tmp_path: Path
) -> None:
    """Issue 46: with a CSV statement the bank closing balance and the wallet to bank were
    blank, with no note, and the CSV's "RETURN OF CREDIT" was counted as a bank charge. The
    sandbox's camt.053 statements written as CSV now give the same block, line for line."""
    camt, csv = _camt_and_csv(session_report, tmp_path)
    by_camt = close_figures(session_report.folder, REPORT_MONTH, records=None,
                            bank=read_statements(camt))  # fmt: skip
    by_csv = close_figures(session_report.folder, REPORT_MONTH, records=None,
                           bank=read_statements(csv, columns=_CSV_COLUMNS))  # fmt: skip
    assert by_camt.reconciliation and by_csv.reconciliation == by_camt.reconciliation
    for label in ("Bank closing balance (statement)", "Bank charges and other debits"):
        assert dict(by_csv.lines)[label] == dict(by_camt.lines)[label], label
    closing = dict(by_csv.lines)["Bank closing balance (statement)"]
    banked = set(read_statements(csv, columns=_CSV_COLUMNS).entries["currency"])
    assert banked and all(closing[c] is not None for c in banked & set(closing))
    # a reversal is not a bank charge in either: the charges are the bank's own debits
    assert any("RETURN OF CREDIT" in (n or "") for n in read_statements(camt).entries["narration"])


def test_a_blank_bank_balance_says_why(session_report: SessionReport, tmp_path: Path) -> None:
    _, csv = _camt_and_csv(session_report, tmp_path)
    columns = _CSV_COLUMNS.removesuffix(",balance=Balance")
    figures = close_figures(session_report.folder, REPORT_MONTH, records=None,
                            bank=read_statements(csv, columns=columns))  # fmt: skip
    closing = dict(figures.lines)["Bank closing balance (statement)"]
    banked = set(read_statements(csv, columns=columns).entries["currency"]) & set(closing)
    assert banked and all(closing[c] is None for c in banked)
    for code in closing:
        note = next(n for n in figures.notes if n.startswith(f"Bank closing balance in {code}"))
        why = (
            "gives no opening or closing balance"
            if code in banked
            else "the bank statements hold no line in it"
        )
        assert why in note and ("balance=..." in note) == (code in banked), note


@pytest.mark.slow
def test_txkit_report_with_csv_statements_writes_the_bank_figures(
    session_report: SessionReport, tmp_path: Path
) -> None:
    _, csv = _camt_and_csv(session_report, tmp_path)
    data = session_report.copy_data(tmp_path)
    assert data.exists()
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(ROOT / "notebooks" / "06_settlements.ipynb", books)
    flags = [part for path in csv for part in ("--bank-statement", str(path))]
    done = invoke_cli("report", "--month", REPORT_MONTH, "--notebooks", str(books), "--out", "out",
                      "--bank-columns", _CSV_COLUMNS, *flags, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = pl.read_csv(tmp_path / f"out/{REPORT_MONTH}/close_summary.csv", infer_schema=False)
    expected = pl.read_csv(session_report.folder / "close_summary.csv", infer_schema=False)
    for label in ("Bank closing balance (statement)", "Bank charges and other debits"):
        mine, theirs = (
            sorted(
                (c, Decimal(a))
                for c, a in f.filter(pl.col("line") == label).select("currency", "amount").rows()
            )
            for f in (got, expected)
        )
        assert mine and mine == theirs, label
