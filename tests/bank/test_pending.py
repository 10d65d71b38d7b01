"""Issue 46, item 5: pending lines. Revolut's account statement writes a card payment still
authorised as a line with ``State`` PENDING, no ``Completed Date`` and no balance; mapped with
``state=State`` it is left out and counted in the load line (as camt.053's PDNG entries are),
never read as booked; without the mapping the file is refused, saying how. The file is built
in Revolut's exact layout with our own values."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement

REVOLUT = (
    "Type,Product,Started Date,Completed Date,Description,Amount,Fee,Currency,State,Balance\n"
    "TOPUP,Current,2026-10-01 09:00:00,2026-10-01 09:00:05,Top-Up by *1234,500.00,0.00,EUR,"
    "COMPLETED,500.00\n"
    "CARD_PAYMENT,Current,2026-10-02 12:30:00,2026-10-03 08:00:00,Coffee Shop,-3.50,0.00,EUR,"
    "COMPLETED,496.50\n"
    "CARD_PAYMENT,Current,2026-10-03 18:00:00,,Online Store,-25.00,0.00,EUR,PENDING,\n"
    "TRANSFER,Current,2026-10-03 19:00:00,,To JOHN,-40.00,0.00,EUR,DECLINED,\n"
    "CARD_PAYMENT,Current,2026-10-04 10:00:00,,Bakery,-2.10,0.00,EUR,pending,\n"
)
COLUMNS = (
    "date=Completed Date,narration=Description,amount=Amount,currency=Currency,"
    "balance=Balance,date_format=%Y-%m-%d %H:%M:%S"
)


def _write(tmp_path: Path, text: str = REVOLUT) -> Path:
    path = tmp_path / "account-statement.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_pending_and_declined_lines_are_left_out_and_counted(tmp_path: Path) -> None:
    statement = read_statement(_write(tmp_path), columns=f"{COLUMNS},state=State")
    assert [Decimal(str(a)) for a in statement.entries["amount"]] == [
        Decimal("500.00"),
        Decimal("-3.50"),
    ]
    said = statement.describe()
    assert "2 pending line(s) left out (lines 4, 6)" in said, said
    assert "1 never booked line(s) left out (lines 5)" in said, said


def test_without_the_state_the_dateless_lines_are_refused_saying_how(tmp_path: Path) -> None:
    with pytest.raises(DataFileError) as caught:
        read_statement(_write(tmp_path), columns=COLUMNS)
    message = str(caught.value)
    assert "lines 4, 5 and 6: date is not a date" in message, message
    assert "state=State" in message


def test_a_state_not_known_is_refused(tmp_path: Path) -> None:
    text = REVOLUT.replace("EUR,DECLINED,", "EUR,ON HOLD,")
    with pytest.raises(DataFileError, match=r"line 5: state is not one of the states read"):
        read_statement(_write(tmp_path, text), columns=f"{COLUMNS},state=State")
