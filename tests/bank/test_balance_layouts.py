"""Issue 46, item 5: running balances as banks write them. Each file here is built in the
exact layout of a real bank's export with our own values (the public exports found were
anonymised past use or not published): an M-Pesa statement (newest first, ``Withdrawn``
written negative), a Bank of Ireland download (a balance at the end of each day only), a
value date left empty."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement

# M-Pesa full statement converted to CSV: newest first, Withdrawn negative, Balance after.
MPESA = (
    "Receipt No.,Completion Time,Details,Transaction Status,Paid In,Withdrawn,Balance\n"
    "RJ41XYZ005,2026-10-05 18:02:11,Merchant Payment to SHOP,Completed,,-250.00,1930.00\n"
    "RJ41XYZ004,2026-10-04 09:15:40,Funds received from JOHN,Completed,1500.00,,2180.00\n"
    "RJ41XYZ003,2026-10-03 12:00:05,Pay Bill Charge,Completed,,-20.00,680.00\n"
    "RJ41XYZ002,2026-10-02 16:45:00,Customer Transfer to MARY,Completed,,-300.00,700.00\n"
    "RJ41XYZ001,2026-10-01 08:00:00,Funds received from PAUL,Completed,1000.00,,1000.00\n"
)
MPESA_COLUMNS = (
    "date=Completion Time,narration=Details,reference=Receipt No.,credit=Paid In,"
    "debit=Withdrawn,balance=Balance,account_currency=KES,date_format=%Y-%m-%d %H:%M:%S"
)

# Bank of Ireland: Date, Details, Debit, Credit, Balance; the balance on a day's last line.
BOI = (
    "Date,Details,Debit,Credit,Balance\n"
    "01/10/2026,OPENING TRANSFER,,1000.00,1000.00\n"
    "02/10/2026,CARD PAYMENT A,12.50,,\n"
    "02/10/2026,CARD PAYMENT B,7.50,,980.00\n"
    "03/10/2026,SALARY,,500.00,\n"
    "03/10/2026,RENT,400.00,,\n"
    "03/10/2026,FEE,1.00,,1079.00\n"
)
BOI_COLUMNS = (
    "date=Date,narration=Details,debit=Debit,credit=Credit,balance=Balance,"
    "account_currency=EUR,date_format=%d/%m/%Y"
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "statement.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_newest_first_statement_with_negative_withdrawals_reads(tmp_path: Path) -> None:
    statement = read_statement(_write(tmp_path, MPESA), columns=MPESA_COLUMNS)
    amounts = [Decimal(str(a)) for a in statement.entries["amount"]]
    assert amounts == [Decimal(a) for a in ("-250", "1500", "-20", "-300", "1000")]
    assert "debits written negative in the column 'Withdrawn'" in statement.describe()


def test_a_newest_first_break_is_named_at_its_line_with_that_orders_arithmetic(
    tmp_path: Path,
) -> None:
    # Line 4's balance (the 3 October charge) is damaged: 690.00 for 680.00. Read in time,
    # from the bottom up, line 5's 700.00 plus line 4's -20.00 is not 690.00: line 4 is named
    # (read top-down with oldest-first arithmetic, line 2 was).
    text = MPESA.replace("Completed,,-20.00,680.00", "Completed,,-20.00,690.00")
    with pytest.raises(DataFileError) as caught:
        read_statement(_write(tmp_path, text), columns=MPESA_COLUMNS)
    message = str(caught.value)
    assert re.search(r"\bline 4\b", message), message
    assert "newest first: 700.00 + -20.00 is not 690.00" in message, message


def test_a_balance_on_some_lines_is_checked_where_written(tmp_path: Path) -> None:
    statement = read_statement(_write(tmp_path, BOI), columns=BOI_COLUMNS)
    assert sum(Decimal(str(a)) for a in statement.entries["amount"]) == Decimal("1079.00")
    assert "a balance on 3 of 6 lines, checked where written" in statement.describe()


def test_a_partial_balance_that_does_not_follow_is_refused_at_its_line(tmp_path: Path) -> None:
    text = BOI.replace("FEE,1.00,,1079.00", "FEE,1.00,,1080.00")
    with pytest.raises(DataFileError) as caught:
        read_statement(_write(tmp_path, text), columns=BOI_COLUMNS)
    message = str(caught.value)
    assert re.search(r"\bline 7\b", message), message
    assert "oldest first: 980.00 + 99.00 is not 1,080.00" in message, message


def test_an_empty_value_date_is_no_date(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "Date,Value Date,Details,Amount\n"
        "01/10/2026,01/10/2026,a,10.00\n"
        "02/10/2026,,authorised card payment,-5.00\n",
    )
    statement = read_statement(
        path,
        columns="date=Date,value_date=Value Date,narration=Details,amount=Amount,"
        "account_currency=EUR,date_format=%d/%m/%Y",
    )
    assert [str(d) if d else None for d in statement.entries["value_date"]] == ["2026-10-01", None]
    bad = path.read_text().replace("02/10/2026,,", "02/10/2026,2 Oct,")
    path.write_text(bad)
    with pytest.raises(DataFileError, match=r"line 3: value_date is not a date"):
        read_statement(
            path,
            columns="date=Date,value_date=Value Date,narration=Details,amount=Amount,"
            "account_currency=EUR,date_format=%d/%m/%Y",
        )


def test_page_footers_at_page_breaks_and_repeated_headers_are_skipped(tmp_path: Path) -> None:
    # An M-Pesa statement converted from its PDF: each page ends "Page N of M" and the next
    # starts with the header again.
    lines = MPESA.splitlines()
    pages = [lines[0], *lines[1:3], "Page 1 of 2,,,,,,", lines[0], *lines[3:], "Page 2 of 2,,,,,,"]
    statement = read_statement(_write(tmp_path, "\n".join(pages) + "\n"), columns=MPESA_COLUMNS)
    assert statement.entries.height == 5
    said = statement.describe()
    assert "2 total or footer lines skipped (lines 4 and 9: 'Page 1 of 2'; 'Page 2 of 2')" in said
    assert "1 line(s) repeating the header skipped" in said


def test_a_footer_in_the_middle_without_a_page_break_is_refused(tmp_path: Path) -> None:
    lines = MPESA.splitlines()
    middle = [lines[0], *lines[1:3], "Page 1 of 2,,,,,,", *lines[3:]]
    with pytest.raises(DataFileError, match=r"line 4: date is not a date"):
        read_statement(_write(tmp_path, "\n".join(middle) + "\n"), columns=MPESA_COLUMNS)
