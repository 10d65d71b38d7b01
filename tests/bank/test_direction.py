"""Issue 46, item 2: an entry's direction read where the file writes it. A direction column
(Bank Danamon's ``Debet Credit`` = C/D beside an unsigned ``Nilai Transaksi``; DR/CR in
Nigerian exports) is mapped with ``direction=``; a file holding one that the mapping leaves
out is refused naming it (it was read as all credits: 521,386,231 for 85,346,231). A debit
column written negative reads as debits; the running balance proves every sign after the
first line."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement

# Bank Danamon's layout as the issue describes it (direction in a column of its own beside an
# unsigned amount, Indonesian headers, a running balance), with our own values: no public
# Danamon export was found.
DANAMON = (
    "Tanggal Transaksi,Keterangan,Debet Credit,Nilai Transaksi,Saldo\n"
    "01/10/2026,SETORAN TUNAI,C,5000000.00,15000000.00\n"
    "02/10/2026,BIAYA ADMIN,D,15000.00,14985000.00\n"
    "03/10/2026,TRANSFER KELUAR,D,2500000.00,12485000.00\n"
    "04/10/2026,TRANSFER MASUK,C,750000.50,13235000.50\n"
)
COLUMNS = (
    "date=Tanggal Transaksi,narration=Keterangan,amount=Nilai Transaksi,balance=Saldo,"
    "account_currency=IDR,date_format=%d/%m/%Y"
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "statement.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_direction_column_signs_the_amounts_and_is_said(tmp_path: Path) -> None:
    path = _write(tmp_path, DANAMON)
    statement = read_statement(path, columns=f"{COLUMNS},direction=Debet Credit")
    amounts = [Decimal(str(a)) for a in statement.entries["amount"]]
    assert amounts == [Decimal(a) for a in ("5000000", "-15000", "-2500000", "750000.50")]
    assert sum(amounts) == Decimal("3235000.50")
    assert "direction from the column 'Debet Credit' (C credit, D debit)" in statement.describe()


def test_a_direction_column_the_mapping_leaves_out_is_refused_naming_it(tmp_path: Path) -> None:
    # Without the balance (which would refuse the file at line 3 anyway), the file read as
    # all credits before.
    text = "\n".join(",".join(line.split(",")[:4]) for line in DANAMON.splitlines())
    path = _write(tmp_path, text + "\n")
    columns = COLUMNS.replace(",balance=Saldo", "")
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns=columns)
    message = str(caught.value)
    assert "\n" not in message
    assert "column 'Debet Credit' says debit or credit" in message, message
    assert "direction=Debet Credit" in message


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (("CR", "DR"), ["100.00", "-40.00"]),
        (("cr", "dr"), ["100.00", "-40.00"]),
        (("Credit", "Debit"), ["100.00", "-40.00"]),
        (("Kredit", "Debet"), ["100.00", "-40.00"]),
        (("K", "D"), ["100.00", "-40.00"]),
        (("Haben", "Soll"), ["100.00", "-40.00"]),
    ],
)
def test_direction_words_in_any_case(
    tmp_path: Path, words: tuple[str, str], expected: list[str]
) -> None:
    credit, debit = words
    path = _write(
        tmp_path,
        f"Date,Type,Amount,Details\n2026-10-01,{credit},100.00,in\n2026-10-02,{debit},40.00,out\n",
    )
    statement = read_statement(
        path, columns="date=Date,direction=Type,amount=Amount,narration=Details,"
        "account_currency=NGN",
    )  # fmt: skip
    assert [str(a) for a in statement.entries["amount"]] == expected


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("2026-10-02,X,40.00,out", "direction is neither debit nor credit: 'X'"),
        ("2026-10-02,,40.00,out", "direction is neither debit nor credit"),
        ("2026-10-02,CR,-40.00,out", "a negative amount marked as a credit: '-40.00 CR'"),
    ],
)
def test_a_direction_that_does_not_say_or_disagrees_is_refused(
    tmp_path: Path, row: str, problem: str
) -> None:
    path = _write(tmp_path, f"Date,Type,Amount,Details\n2026-10-01,CR,100.00,in\n{row}\n")
    with pytest.raises(DataFileError) as caught:
        read_statement(
            path, columns="date=Date,direction=Type,amount=Amount,narration=Details,"
            "account_currency=NGN",
        )  # fmt: skip
    message = str(caught.value)
    assert re.search(r"\bline 3\b", message) and problem in message, message


def test_a_signed_amount_agreeing_with_its_direction_reads(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "Date,Type,Amount,Details\n2026-10-01,CR,100.00,in\n2026-10-02,DR,-40.00,out\n"
    )
    statement = read_statement(
        path, columns="date=Date,direction=Type,amount=Amount,narration=Details,"
        "account_currency=NGN",
    )  # fmt: skip
    assert [str(a) for a in statement.entries["amount"]] == ["100.00", "-40.00"]


def test_the_running_balance_refuses_a_wrong_direction(tmp_path: Path) -> None:
    # The bank's balance says line 3 is a debit; its direction column says credit.
    path = _write(tmp_path, DANAMON.replace("BIAYA ADMIN,D", "BIAYA ADMIN,C"))
    with pytest.raises(DataFileError, match=r"line 3: the running balance does not follow"):
        read_statement(path, columns=f"{COLUMNS},direction=Debet Credit")


def test_direction_goes_with_an_amount_column() -> None:
    with pytest.raises(ValueError, match="direction goes with amount"):
        read_statement(Path("x.csv"), columns="date=D,credit=C,debit=E,direction=T,narration=N")


@pytest.mark.parametrize(
    ("debits", "expected"),
    [
        (("-40.00", "-2.50"), ["100.00", "-40.00", "-2.50"]),
        (("40.00", "2.50"), ["100.00", "-40.00", "-2.50"]),
    ],
)
def test_a_debit_column_reads_unsigned_or_written_negative(
    tmp_path: Path, debits: tuple[str, str], expected: list[str]
) -> None:
    path = _write(
        tmp_path,
        "Date,In,Out,Balance,Details\n"
        "2026-10-01,100.00,,1100.00,a\n"
        f"2026-10-02,,{debits[0]},1060.00,b\n"
        f"2026-10-03,,{debits[1]},1057.50,c\n",
    )
    statement = read_statement(
        path,
        columns="date=Date,credit=In,debit=Out,balance=Balance,narration=Details,"
        "account_currency=NGN",
    )
    assert [str(a) for a in statement.entries["amount"]] == expected
    assert ("debits written negative in the column 'Out'" in statement.describe()) == (
        debits[0].startswith("-")
    )


def test_a_debit_column_written_both_ways_is_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "Date,In,Out,Details\n2026-10-01,,-40.00,a\n2026-10-02,,-1.00,b\n2026-10-03,,2.50,c\n",
    )
    with pytest.raises(DataFileError) as caught:
        read_statement(
            path, columns="date=Date,credit=In,debit=Out,narration=Details,account_currency=NGN"
        )
    message = str(caught.value)
    assert "line 4" in message and "both negative and unsigned" in message, message
