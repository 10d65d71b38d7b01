"""Issue 46, item 3: a spreadsheet's value is the one the workbook means, or refused naming
the cell. A formula's saved value is believed only where the workbook does not ask for it to
be recalculated on opening (xlsxwriter saves 0 for ``=2*5`` and asks: Excel shows 10, txkit
read 0.00); a shared-string index out of range (``-1`` read the last string) is refused; the
dates before 1900-03-01 of Excel's 1900 system are not a day early."""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from pathlib import Path

import pytest
import xlsxwriter

from txkit.errors import DataFileError
from txkit.inputs import read_table
from txkit.inputs.sheets._xlsx import shown_date


def _formula_book(path: Path, *, saved: float | None = None) -> Path:
    with xlsxwriter.Workbook(path) as book:
        sheet = book.add_worksheet("Orders")
        sheet.write_row(0, 0, ["reference", "amount", "currency"])
        sheet.write_row(1, 0, ["A-1"])
        if saved is None:
            sheet.write_formula(1, 1, "=2*5")
        else:
            sheet.write_formula(1, 1, "=2*5", None, saved)
        sheet.write_string(1, 2, "NGN")
    return path


def _rewrite(path: Path, part: str, change: tuple[bytes, bytes]) -> Path:
    """The workbook with one part edited (what another program would have saved)."""
    with zipfile.ZipFile(path) as book:
        parts = {i.filename: book.read(i.filename) for i in book.infolist()}
    assert change[0] in parts[part], parts[part][:400]
    parts[part] = parts[part].replace(*change)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        for name, data in parts.items():
            book.writestr(name, data)
    return path


def _read(path: Path) -> list[str]:
    table = read_table(path, columns=["reference", "amount", "currency"], required=["amount"])
    return table.frame["amount"].to_list()


def test_a_formula_the_workbook_asks_to_recalculate_is_refused_naming_its_cell(
    tmp_path: Path,
) -> None:
    path = _formula_book(tmp_path / "orders.xlsx")  # saved value 0, fullCalcOnLoad
    assert b'fullCalcOnLoad="1"' in zipfile.ZipFile(path).read("xl/workbook.xml")
    with pytest.raises(DataFileError) as caught:
        _read(path)
    message = str(caught.value)
    assert "\n" not in message
    assert "cell Orders!B2 (amount) is a formula whose saved value ('0')" in message, message
    assert "fullCalcOnLoad" in message


def test_a_formulas_saved_value_is_read_where_no_recalculation_is_asked(tmp_path: Path) -> None:
    path = _formula_book(tmp_path / "orders.xlsx", saved=10)
    path = _rewrite(path, "xl/workbook.xml", (b' fullCalcOnLoad="1"', b""))
    assert _read(path) == ["10"]


@pytest.mark.parametrize("index", ["-1", "7", "x", ""])
def test_a_shared_string_index_out_of_range_is_refused(tmp_path: Path, index: str) -> None:
    path = tmp_path / "orders.xlsx"
    with xlsxwriter.Workbook(path) as book:
        sheet = book.add_worksheet("Orders")
        sheet.write_row(0, 0, ["reference", "amount", "currency"])
        sheet.write_row(1, 0, ["A-1", 12.5, "NGN"])
    # the reference cell A2 points at the shared string 3 ('A-1'); make it point elsewhere
    with zipfile.ZipFile(path) as book:
        xml = book.read("xl/worksheets/sheet1.xml")
    found = re.search(rb'<c r="A2" t="s"><v>([0-9]+)</v>', xml)
    assert found is not None
    _rewrite(path, "xl/worksheets/sheet1.xml", (found.group(0), found.group(0).replace(
        b"<v>" + found.group(1), b"<v>" + index.encode())))  # fmt: skip
    with pytest.raises(DataFileError) as caught:
        read_table(path, columns=["reference", "amount", "currency"], required=["reference"])
    assert "cell Orders!A2 (reference) refers to shared string" in str(caught.value)


@pytest.mark.parametrize(
    ("serial", "shown"),
    [
        ("1", "1900-01-01"),
        ("31", "1900-01-31"),
        ("59", "1900-02-28"),
        ("61", "1900-03-01"),
        ("45961", "2025-10-31"),
        ("59.5", "1900-02-28 12:00:00"),
        ("0.25", "06:00:00"),
    ],
)
def test_excel_1900_dates_before_march_1900_are_the_day_excel_shows(
    serial: str, shown: str
) -> None:
    assert shown_date(serial, False) == (shown, None)


def test_the_1900_02_29_that_never_was_is_refused() -> None:
    _, problem = shown_date("60", False)
    assert problem is not None and "1900-02-29" in problem


def test_a_workbook_dated_in_january_1900_reads_its_dates(tmp_path: Path) -> None:
    path = tmp_path / "statement.xlsx"
    with xlsxwriter.Workbook(path) as book:
        sheet = book.add_worksheet("Sheet1")
        day = book.add_format({"num_format": "yyyy-mm-dd"})
        sheet.write_row(0, 0, ["date", "amount", "currency"])
        sheet.write_datetime(1, 0, dt.datetime(1900, 1, 15), day)  # xlsxwriter writes 15
        sheet.write_number(1, 1, 5)
        sheet.write_string(1, 2, "NGN")
    table = read_table(path, columns=["date", "amount", "currency"], required=["date"])
    assert table.frame["date"].to_list() == ["1900-01-15"]
