"""Issue 46, item 5: a description continued on a row written short. DBS/POSB's export
(header ``Transaction Date,Transaction Code,Description,Transaction Ref1,...,Debit Amount,
Credit Amount``, as public parsers of it write it) continues a long description on a row of
its own written ``,,text``: fewer fields than the header, its text in the description column.
It is joined to the entry above as the same row written full width is, and said; a short row
holding anything else is still refused with its line. Built in that layout with our own
values."""

from __future__ import annotations

from pathlib import Path

import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement

HEADER = (
    "Transaction Date,Transaction Code,Description,Transaction Ref1,Transaction Ref2,"
    "Transaction Ref3,Status,Debit Amount,Credit Amount\n"
)
COLUMNS = (
    "date=Transaction Date,reference=Transaction Ref1,narration=Description,debit=Debit Amount,"
    "credit=Credit Amount,account_currency=SGD,date_format=%d %b %Y"
)


def _write(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "dbs.csv"
    path.write_text(HEADER + rows, encoding="utf-8")
    return path


def test_a_short_continuation_row_is_joined_to_the_description_above(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "01 Oct 2026,ICT,PAYNOW TRANSFER FROM,INV-1001,ACME PTE LTD,,Settled,,1500.00\n"
        ",,ACME PTE LTD OCTOBER INVOICE\n"
        "02 Oct 2026,POS,NETS PURCHASE,R-77,,,Settled,25.00,\n",
    )
    statement = read_statement(path, columns=COLUMNS)
    assert statement.entries["narration"].to_list() == [
        "PAYNOW TRANSFER FROM ACME PTE LTD OCTOBER INVOICE",
        "NETS PURCHASE",
    ]
    assert [str(a) for a in statement.entries["amount"]] == ["1500.00", "-25.00"]
    assert "1 continuation line(s) joined to the Description above" in statement.describe()


@pytest.mark.parametrize("row", [",,,ACME PTE LTD\n", "03 Oct 2026,POS\n"])
def test_a_short_row_that_is_not_a_continuation_is_refused(tmp_path: Path, row: str) -> None:
    path = _write(
        tmp_path, "01 Oct 2026,ICT,PAYNOW TRANSFER FROM,INV-1001,,,Settled,,1500.00\n" + row
    )
    with pytest.raises(DataFileError, match=r"line 3: a record has 2|line 3: a record has 4"):
        read_statement(path, columns=COLUMNS)
