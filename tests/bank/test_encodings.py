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


# Czech and Hungarian letters are letters in Windows-1252 too (ř reads ø, ő reads õ): such a
# file was read as Windows-1252 with only the generic note ("Pøevod z úètu").
CZECH = (
    "Datum;Objem;Měna;Zpráva pro příjemce;Typ\n"
    "01.10.2026;-1250,00;CZK;Převod z účtu Tomáš Dvořák;Bezhotovostní platba\n"
    "02.10.2026;15000,00;CZK;Příchozí úhrada od Jiří Novák;Příjem\n"
)
HUNGARIAN = (
    "Könyvelés dátuma;Összeg;Pénznem;Közlemény\n"
    "2026.10.01;-12500;HUF;Számla kiegyenlítése Kovács Győző\n"
    "2026.10.02;250000;HUF;Átutalás érkezett Szűcs Lőrinc Kft.\n"
)


def test_a_czech_statement_is_read_as_windows_1250_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "pohyby.csv"
    path.write_bytes(CZECH.encode("cp1250"))
    statement = read_statement(
        path,
        columns="date=Datum,amount=Objem,currency=Měna,narration=Zpráva pro příjemce,"
        "date_format=%d.%m.%Y,decimal=comma",
    )
    assert statement.entries["narration"].to_list()[0] == "Převod z účtu Tomáš Dvořák"
    said = statement.describe()
    assert "read as Windows-1250 text (Central European)" in said, said
    assert "its letters are Czech's and no Western language's, e.g. 'Měna', not 'Mìna'" in said


def test_a_hungarian_statement_is_read_as_windows_1250_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "szamla.csv"
    path.write_bytes(HUNGARIAN.encode("cp1250"))
    statement = read_statement(
        path,
        columns="date=Könyvelés dátuma,amount=Összeg,currency=Pénznem,narration=Közlemény,"
        "date_format=%Y.%m.%d",
    )
    assert statement.entries["narration"].to_list()[0] == "Számla kiegyenlítése Kovács Győző"
    said = statement.describe()
    assert (
        "its letters are Hungarian's and no Western language's, e.g. 'Győző', not 'Gyõzõ'" in said
    )


def test_a_norwegian_file_with_letters_windows_1250_also_has_stays_windows_1252(
    tmp_path: Path,
) -> None:
    path = tmp_path / "konto.csv"
    text = "Dato;Beløp;Tekst\n01.10.2026;-12,50;Kjøpt på Bærum\n"
    path.write_bytes(text.encode("cp1252"))
    statement = read_statement(
        path,
        columns="date=Dato,amount=Beløp,narration=Tekst,account_currency=NOK,"
        "date_format=%d.%m.%Y,decimal=comma",
    )
    assert statement.entries["narration"].to_list() == ["Kjøpt på Bærum"]
    assert "read as Windows-1252 text" in statement.describe()
