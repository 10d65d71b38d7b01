"""A file is read as what its bytes are, not what its name says (issue 46, item 1): real
workbooks renamed, CSV text named as a workbook, orders files the same way; a file whose
content is no format read here is refused naming both its name and its content."""

from __future__ import annotations

import datetime as dt
import shutil
import tomllib
import zipfile
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.files.test_sheets import _book, _ods
from txkit.errors import DataFileError
from txkit.inputs import identify_content, read_orders_file, read_statement

REAL = Path(__file__).resolve().parent.parent / "data" / "real"


def _entry(kind: str, name: str) -> dict:
    manifest = tomllib.loads((REAL / kind / "MANIFEST.toml").read_text(encoding="utf-8"))
    return next(e for e in manifest["file"] if e["file"] == name)


@pytest.mark.parametrize(
    ("kind", "name", "content", "renamed"),
    [
        ("xlsx", "handelsbanken_transactions.xlsx", "xlsx", "statement.csv"),
        ("xlsx", "handelsbanken_transactions.xlsx", "xlsx", "statement.ods"),
        ("xlsx", "handelsbanken_transactions.xlsx", "xlsx", "statement.xls"),
        ("xls", "nordea_personkonto.xls", "xls", "statement.xlsx"),
        ("xls", "nordea_personkonto.xls", "xls", "statement.csv"),
        ("html-xls", "gtbank_statement.xls", "html", "statement.xlsx"),
    ],
)
def test_a_real_workbook_renamed_reads_as_its_content_and_says_so(
    tmp_path: Path, kind: str, name: str, content: str, renamed: str
) -> None:
    entry = _entry(kind, name)
    columns = entry["columns"] if "preset" not in entry else entry["preset"]
    original = read_statement(REAL / kind / name, columns=columns)
    path = tmp_path / renamed
    shutil.copyfile(REAL / kind / name, path)
    statement = read_statement(path, columns=columns)
    assert statement.files == {str(path): content}
    assert statement.entries.drop("file").equals(original.entries.drop("file"))
    said = next(n for n in statement.notes if "read by its content" in n)
    assert f"named {Path(renamed).suffix}" in said


def test_csv_text_named_as_a_workbook_is_read_as_csv_and_the_load_line_says_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "statement.xlsx"
    path.write_text(
        "Date,Description,Amount,Currency\n01/10/2026,TXK-1,1500.25,NGN\n", encoding="utf-8"
    )
    statement = read_statement(
        path, columns="date=Date,narration=Description,amount=Amount,currency=Currency,"
        "date_format=%d/%m/%Y",
    )  # fmt: skip
    assert statement.files == {str(path): "csv"}
    assert [str(a) for a in statement.entries["amount"]] == ["1500.25"]
    assert "statement.xlsx: named .xlsx, but it is text: read by its content as CSV" in (
        statement.describe()
    )


def test_an_ods_named_xlsx_reads_as_an_ods(tmp_path: Path) -> None:
    path = _ods(
        tmp_path / "statement.xlsx",
        [["Date", "Description", "Amount", "Currency"], ["01/10/2026", "a", 1500.25, "NGN"]],
    )
    assert identify_content(path) == "ods"
    statement = read_statement(
        path, columns="date=Date,narration=Description,amount=Amount,currency=Currency,"
        "date_format=%d/%m/%Y",
    )  # fmt: skip
    assert statement.files == {str(path): "ods"}
    assert [str(a) for a in statement.entries["amount"]] == ["1500.25"]


def test_a_zip_that_is_no_workbook_is_refused_naming_its_name_and_its_content(
    tmp_path: Path,
) -> None:
    path = tmp_path / "statement.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("statement.csv", "Date,Amount\n2026-10-01,1.00\n")
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns="date=Date,amount=Amount,account_currency=NGN")
    message = str(caught.value)
    assert "named .xlsx" in message and "ZIP archive" in message and "xl/workbook.xml" in message
    assert "\n" not in message


def test_identify_content_reads_the_first_bytes_and_the_zip_directory_only(
    tmp_path: Path,
) -> None:
    kinds = {
        "xlsx": REAL / "xlsx" / "handelsbanken_transactions.xlsx",
        "xls": REAL / "xls" / "nordea_personkonto.xls",
        "html": REAL / "html-xls" / "gtbank_statement.xls",
    }
    for kind, path in kinds.items():
        assert identify_content(path) == kind
    text = tmp_path / "a.xlsx"
    text.write_text("a,b\n1,2\n", encoding="utf-8")
    assert identify_content(text) is None
    parquet = tmp_path / "a.csv"
    pl.DataFrame({"a": [1]}).write_parquet(parquet)
    assert identify_content(parquet) == "parquet"
    # an OLE2 file whose body is cut: identified by its signature, refused by its reader
    ole = tmp_path / "cut.xls"
    ole.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100)
    assert identify_content(ole) == "xls"


ORDERS = [
    ["reference", "amount", "currency", "status", "date"],
    ["A-1", 1500.5, "NGN", "successful", dt.date(2026, 10, 3)],
]


def test_an_orders_workbook_named_csv_is_read_as_a_workbook(tmp_path: Path) -> None:
    path = _book(tmp_path / "orders.csv", ORDERS, {1: "#,##0.00"})
    orders = read_orders_file(path)
    assert orders.frame["amount"].to_list() == [Decimal("1500.50")]
    said = "named .csv, but it is an Excel workbook: read by its content"
    assert any(said in n for n in orders.notes)


def test_orders_csv_named_xlsx_and_parquet_named_csv_are_read_as_their_content(
    tmp_path: Path,
) -> None:
    text = tmp_path / "orders.xlsx"
    text.write_text("reference,amount,currency\nA-1,1500.50,NGN\n", encoding="utf-8")
    orders = read_orders_file(text)
    assert orders.frame["amount"].to_list() == [Decimal("1500.50")]
    said = "named .xlsx, but it is text: read by its content as CSV"
    assert any(said in n for n in orders.notes)
    parquet = tmp_path / "orders.csv"
    pl.DataFrame({"reference": ["A-1"], "amount": ["1500.50"], "currency": ["NGN"]}).write_parquet(
        parquet
    )
    orders = read_orders_file(parquet)
    assert orders.frame["amount"].to_list() == [Decimal("1500.50")]
    assert any("named .csv, but it is Parquet: read by its content" in n for n in orders.notes)


def test_an_orders_file_whose_content_is_no_orders_format_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    path = tmp_path / "orders.csv"
    path.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n")
    with pytest.raises(DataFileError) as caught:
        read_orders_file(path)
    message = str(caught.value)
    assert "named .csv" in message and "PDF" in message and "\n" not in message
    assert ".xlsx" in message  # the accepted formats


def test_identification_is_bounded_by_the_input_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXKIT_MAX_INPUT_MB", "1")
    path = tmp_path / "statement.csv"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 1_100_000)
    with pytest.raises(DataFileError, match="TXKIT_MAX_INPUT_MB") as caught:
        identify_content(path)
    assert "\n" not in str(caught.value)
