"""Issue 46, items 5 and 7: the presets of the African layouts of the corpus (Capitec, Bank
Zero, FNB/RMB, M-Pesa), each read from ``tests/data/real/bank-csv`` (MANIFEST.toml: source,
commit, licence, or built here in the bank's layout with our own values) with its preset found
from the file's content and said in the load line; a file whose own figures do not add up is
refused at its line. M-Pesa's page footers are its preset's rule: a line at a page break that
is not one is refused with its line, never skipped as a guess."""

from __future__ import annotations

import re
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import xlsxwriter

from txkit.errors import DataFileError
from txkit.inputs import read_statement

CORPUS = Path(__file__).resolve().parent.parent / "data" / "real" / "bank-csv"


def _records() -> list[Any]:
    files = tomllib.loads((CORPUS / "MANIFEST.toml").read_text(encoding="utf-8"))["file"]
    return [pytest.param(r, id=r["file"]) for r in files if "preset" in r]


@pytest.mark.parametrize("record", _records())
def test_a_file_is_read_through_its_preset_found_from_its_content(record: dict[str, Any]) -> None:
    path = CORPUS / record["file"]
    columns = f"account_currency={record['currency']}"
    if "refused" in record:
        with pytest.raises(DataFileError) as caught:
            read_statement(path, columns=columns)
        message = str(caught.value)
        assert re.search(rf"\b{record['refused']}:", message), message
        assert "running balance does not follow" in message and "\n" not in message
        return
    statement = read_statement(path, columns=columns)
    said = statement.describe()
    assert f"columns: the {record['preset']} preset, found from the file's header" in said
    amounts = [Decimal(str(a)) for a in statement.entries["amount"]]
    assert len(amounts) == record["entries"]
    assert sum(amounts, Decimal(0)) == Decimal(record["amount_sum"])
    by_mapping = read_statement(path, columns=record["columns"])
    assert by_mapping.entries.equals(statement.entries)


def test_capitecs_real_file_reads_as_its_source_asserts_without_its_broken_balance() -> None:
    # countary asserts 32 lines and the line posted 18/04/2023; its balance column breaks
    # where the publisher removed lines, so the source's values are checked without it.
    record = next(r.values[0] for r in _records() if r.id.startswith("countary_Capitec"))
    statement = read_statement(CORPUS / record["file"], columns=record["columns"])
    entries = statement.entries
    assert entries.height == record["entries"]
    day, narration, amount = record["line"]
    found = [
        (str(d), n, Decimal(str(a)))
        for d, n, a in zip(entries["date"], entries["narration"], entries["amount"], strict=True)
        if str(d) == day
    ]
    # a description holding "Total" is an entry: it has a date
    assert found == [(day, narration, Decimal(amount))]


def test_fnbs_common_header_is_found_only_under_its_title(tmp_path: Path) -> None:
    text = (CORPUS / "built_fnb_account_transaction_history.csv").read_text(encoding="utf-8")
    path = tmp_path / "untitled.csv"
    path.write_text(text.replace("ACCOUNT TRANSACTION HISTORY", "HISTORY"), encoding="utf-8")
    with pytest.raises(DataFileError, match="no column"):
        read_statement(path, columns="account_currency=ZAR")
    named = read_statement(path, columns="fnb,account_currency=ZAR")
    assert named.entries.height == 4


def _mpesa(tmp_path: Path, old: str, new: str) -> Path:
    text = (CORPUS / "built_mpesa_full_statement.csv").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "mpesa.csv"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_mpesas_page_footer_is_skipped_and_another_line_there_is_refused(tmp_path: Path) -> None:
    statement = read_statement(
        CORPUS / "built_mpesa_full_statement.csv", columns="mpesa,account_currency=KES"
    )
    said = statement.describe()
    assert "2 total or footer lines skipped (lines 9 and 14: 'Page 1 of 2'; 'Page 2 of 2')" in said
    assert "1 line(s) repeating the header skipped" in said
    # a "printed" line at the page break: a summary word the general rule skipped; M-Pesa's
    # layout writes no such line there
    path = _mpesa(tmp_path, "Page 1 of 2,,,,,,", "Printed by agent 42,,,,,,")
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns="mpesa,account_currency=KES")
    message = str(caught.value)
    assert re.search(r"\bline 9: a line at a page break is not this bank's page footer", message)
    assert "'Page N of M'" in message and "\n" not in message


STANBIC = CORPUS / "bizafrica_stanbiczm_sample.csv"


def test_stanbic_zambias_layout_is_read_and_proven_by_its_balance_rows() -> None:
    # Before: refused at its totals rows ("date is not a date: '600,00', '0,00'"), its
    # description column empty, its opening and closing rows read as entries.
    statement = read_statement(STANBIC, columns="account_currency=ZMW")
    entries = statement.entries
    assert [Decimal(str(a)) for a in entries["amount"]] == [Decimal("-600.00"), Decimal("100.00")]
    assert entries["narration"].to_list()[1] == "AT20038ZADS26671 APPRO COMPTE"
    row = statement.balances.row(0, named=True)
    assert (str(row["opening"]), str(row["closing"])) == ("59258.71", "58758.71")
    assert (row["opening_line"], row["closing_line"]) == (4, 7)
    said = statement.describe()
    assert "the opening and closing balance read from their rows (lines 4 and 7)" in said
    assert "'Debits 600,00'; 'Credits 0,00'" in said
    # its header: "Transaction" over a blank cell over "date", around the names row
    assert "the header is written over lines 1 to 3" in said and "title line" not in said
    assert "2 total or footer lines skipped (lines 8 and 9" in said
    assert "narration read from the column left of its header" in said


def test_a_stanbic_statement_whose_rows_do_not_add_up_is_refused_at_its_closing_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "stanbic.csv"
    text = STANBIC.read_text(encoding="utf-8")
    path.write_text(
        text.replace('Closing balance,,,,"58 758,71"', 'Closing balance,,,,"58 768,71"')
    )
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns="stanbiczm,account_currency=ZMW")
    message = str(caught.value)
    assert re.search(r"\bline 7: .*opening balance 59,258.71 \(line 4\) plus its 2 booked", message)
    assert "58,768.71" in message and "\n" not in message


def _mpesa_sheet(tmp_path: Path, old: str = "", new: str = "") -> Path:
    """The built M-Pesa statement as a workbook, every cell a text cell as the CSV writes it
    (empty cells left out)."""
    text = (CORPUS / "built_mpesa_full_statement.csv").read_text(encoding="utf-8")
    path = tmp_path / "mpesa.xlsx"
    with xlsxwriter.Workbook(path) as book:
        sheet = book.add_worksheet("Sheet1")
        for r, line in enumerate(text.replace(old, new).splitlines()):
            for c, value in enumerate(line.split(",")):
                if value:
                    sheet.write_string(r, c, value)
    return path


def test_mpesas_page_footer_is_its_rule_in_a_sheet_too(tmp_path: Path) -> None:
    # Before: a sheet kept the general rule, where a footer at a page break is an entry
    # ("Sheet1 row 9: date is not a date").
    statement = read_statement(_mpesa_sheet(tmp_path), columns="mpesa,account_currency=KES")
    assert statement.entries.height == 5
    said = statement.describe()
    assert (
        "2 total or footer rows skipped (Sheet1 rows 9 and 14: 'Page 1 of 2'; 'Page 2 of 2')"
        in said
    )
    path = _mpesa_sheet(tmp_path, "Page 1 of 2", "Printed by agent 42")
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns="mpesa,account_currency=KES")
    message = str(caught.value)
    assert re.search(
        r"\bSheet1 row 9: a row at a page break is not this bank's page footer", message
    )
