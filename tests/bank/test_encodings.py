"""Issue 46, item 5: a Windows-1250 statement (Polish, a Central European bank's export) was
read as Windows-1252 without a word beyond the generic note: ``Przychodz¹cy``. Now the bytes
that are letters only in Windows-1250 (between letters) make it read as Windows-1250, said in
the load line with an example; a Western file stays Windows-1252. Files built in a Polish
bank's layout with our own values."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from txkit.inputs import read_statement

POLISH = (
    "Data operacji;Opis operacji;Kwota;Saldo po operacji\n"
    "01.10.2026;Przelew przychodzący od Łukasz Żółć;100,00;1100,00\n"
    "02.10.2026;Opłata za prowadzenie rachunku;-5,00;1095,00\n"
)
COLUMNS = (
    "date=Data operacji,narration=Opis operacji,amount=Kwota,balance=Saldo po operacji,"
    "account_currency=PLN,date_format=%d.%m.%Y,decimal=comma"
)


def test_a_windows_1250_statement_reads_its_letters_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "historia.csv"
    path.write_bytes(POLISH.encode("cp1250"))
    statement = read_statement(path, columns=COLUMNS)
    assert statement.entries["narration"].to_list() == [
        "Przelew przychodzący od Łukasz Żółć",
        "Opłata za prowadzenie rachunku",
    ]
    assert [Decimal(str(a)) for a in statement.entries["amount"]] == [Decimal(100), Decimal(-5)]
    said = statement.describe()
    assert "read as Windows-1250 text (Central European)" in said, said
    assert "'przychodzący', not 'przychodz¹cy'" in said, said


def test_a_western_file_stays_windows_1252(tmp_path: Path) -> None:
    path = tmp_path / "releve.csv"
    text = "Date;Libellé;Montant\n01/10/2026;Virement reçu société;12,50\n"
    path.write_bytes(text.encode("cp1252"))
    statement = read_statement(
        path,
        columns="date=Date,narration=Libellé,amount=Montant,account_currency=EUR,"
        "date_format=%d/%m/%Y,decimal=comma",
    )
    assert statement.entries["narration"].to_list() == ["Virement reçu société"]
    assert "read as Windows-1252 text" in statement.describe()
