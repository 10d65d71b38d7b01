"""``txkit report --bank-statement`` with OFX and PDF statements, end to end (a real process,
the real settlements notebook): the sandbox's own camt.053 statements written again as OFX
and printed again in UBA's layout give the shared report's settlements, row for row."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.bank.test_ofx import _ofx_from
from tests.bank.test_pdf import _uba_from
from tests.factories import REPORT_MONTH, SessionReport, invoke_cli
from txkit.inputs import read_statement

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
