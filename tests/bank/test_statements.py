"""Bank statements as banks write them: hand-written MT940, camt.053 and CSV samples laid out
as published, and bad files that must fail in one line naming the line or element."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from txkit.errors import DataFileError
from txkit.inputs import parse_mapping, read_statement, read_statements

DATA = Path(__file__).resolve().parent.parent / "data" / "bank"
MT940 = DATA / "multi_currency.mt940"
CAMT = DATA / "multi_currency.camt053.xml"
CSV = DATA / "bank_export.csv"
CSV_COLUMNS = (
    "date=Transaction Date,value_date=Value Date,narration=Narration,reference=Reference,"
    "debit=Debit,credit=Credit,balance=Balance,currency=Currency,date_format=%d/%m/%Y,"
    "thousands=comma"
)
BOOKED = [
    ("NGN", "500000.00", False, "TXK-1A2B3C4D5E6F"),
    ("NGN", "-500000.00", True, "TXK-1A2B3C4D5E6F"),
    ("NGN", "749947.50", False, None),
    ("NGN", "-25000.00", False, None),
    ("USD", "250.50", False, "TXK-DDDDEEEEFFFF"),
]


def _booked(path: Path, columns: str | None = None) -> list[tuple[str, str, bool, str | None]]:
    entries = read_statement(path, columns=columns).entries.filter(pl.col("booked"))
    return [
        (c, str(a), r, ref)
        for c, a, r, ref in entries.select("currency", "amount", "reversal", "reference").rows()
    ]


@pytest.mark.parametrize("path", [MT940, CAMT], ids=["mt940", "camt053"])
def test_a_multi_currency_statement_with_a_reversal_and_a_structured_reference(
    path: Path,
) -> None:
    statement = read_statement(path)
    assert _booked(path) == BOOKED
    # Each currency's opening plus its entries is its closing balance (proven on reading).
    balances = {
        c: (str(o), str(cl))
        for c, o, cl in statement.balances.select("currency", "opening", "closing").rows()
    }
    assert balances == {"NGN": ("1250000.00", "1974947.50"), "USD": ("1000.00", "1250.50")}
    usd = statement.entries.filter(pl.col("currency") == "USD", pl.col("booked")).row(0, named=True)
    assert str(usd["date"]) == "2026-11-02" and str(usd["value_date"]) == "2026-10-30"


def test_camt_pending_entries_are_kept_but_not_booked() -> None:
    entries = read_statement(CAMT).entries
    pending = entries.filter(~pl.col("booked"))
    assert pending.select("currency", "amount").rows() == [("USD", Decimal("99.00"))]


def test_a_bank_csv_through_a_column_mapping_reads_the_same_entries_and_balances() -> None:
    # Issue 46: a CSV has no reversal mark, yet its "RETURN OF CREDIT" debit of the credit
    # before it is the reversal camt.053 and MT940 mark (it was a bank charge), and its
    # running balance gives each month's opening and closing (the close summary's were blank).
    assert _booked(CSV, CSV_COLUMNS) == BOOKED
    statement = read_statement(CSV, columns=CSV_COLUMNS)
    balances = {
        c: (str(o), str(cl))
        for c, o, cl in statement.balances.select("currency", "opening", "closing").rows()
    }
    assert balances == {"NGN": ("1250000.00", "1974947.50"), "USD": ("1000.00", "1250.50")}
    said = statement.describe()
    assert "1 debit(s) read as the reversal of a credit" in said
    assert "line 3 returns line 2's credit" in said
    assert "2026-10 NGN 1,250,000.00 to 1,974,947.50; 2026-11 USD 1,000.00 to 1,250.50" in said


def test_a_return_of_credit_with_no_credit_before_it_stays_a_debit(tmp_path: Path) -> None:
    path = tmp_path / "statement.csv"
    lines = CSV.read_text().splitlines()
    path.write_text("\n".join([lines[0], *lines[2:]]) + "\n")  # the credit it returns left out
    statement = read_statement(path, columns=CSV_COLUMNS)
    assert not statement.entries["reversal"].any()
    assert "reversal" not in statement.describe()


def test_the_format_comes_from_the_content_not_the_name(tmp_path: Path) -> None:
    for name, source in (("statement.txt", MT940), ("download", CAMT), ("x.sta", CSV)):
        copy = tmp_path / name
        copy.write_bytes(source.read_bytes())
        columns = CSV_COLUMNS if source == CSV else None
        assert read_statement(copy, columns=columns).entries.height == (6 if source == CAMT else 5)


def test_overlapping_statements_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "again.mt940"
    copy.write_bytes(MT940.read_bytes())
    with pytest.raises(DataFileError, match="the statements overlap"):
        read_statements([MT940, copy])


def _mt940_with(old: str, new: str, tmp_path: Path) -> Path:
    text = MT940.read_text()
    assert old in text
    path = tmp_path / "bad.mt940"
    path.write_text(text.replace(old, new, 1))
    return path


def _camt_with(old: str, new: str, tmp_path: Path) -> Path:
    text = CAMT.read_text()
    assert old in text
    path = tmp_path / "bad.xml"
    path.write_text(text.replace(old, new, 1))
    return path


MT940_BAD = {
    # a letter O typed for a zero: the mt-940 package reads this as 5.00
    "letter in amount": (":61:2610011001C500000,00", ":61:2610011001C5OO000,00", 6, "line"),
    "mistyped tag": (":61:2610061006D", ":6l:2610061006D", 13, "unknown tag"),
    "line dropped": (
        ":61:2610061006D25000,00NCHGNONREF//B26100600004\n:86:ACCOUNT MAINTENANCE FEE\n",
        "",
        13,
        "closing balance says",
    ),
    "cut short": (":62F:C261031USD1250,50\n-}\n", "", 24, "cut short"),
    "bad date": (":60F:C260930NGN", ":60F:C261330NGN", 5, "not a date"),
    "no decimal comma": ("C250,50NTRF", "C250.50NTRF", 23, "not a statement line"),
    "text outside a tag": (
        "\n:61:2610301102C250,50",
        "\nGARBAGE\n:61:2610301102C250,50",
        23,
        "text outside any tag",
    ),
}


@pytest.mark.parametrize("case", list(MT940_BAD))
def test_a_bad_mt940_file_fails_in_one_line_naming_the_line(case: str, tmp_path: Path) -> None:
    old, new, line, problem = MT940_BAD[case]
    with pytest.raises(DataFileError) as caught:
        read_statement(_mt940_with(old, new, tmp_path))
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    assert f"line {line}:" in message, message
    assert problem in message and "bad.mt940" in message


CAMT_BAD = {
    "not well formed": ("</Ntry>\n      <Ntry>", "</Ntry>\n      <Ntry", 68, "not well-formed XML"),
    "amount with a comma": (
        '<Amt Ccy="NGN">749947.50</Amt>',
        '<Amt Ccy="NGN">749947,50</Amt>',
        83,
        "<Amt>: '749947,50' is not an amount",
    ),
    "no currency": ('<Amt Ccy="USD">250.50</Amt>', "<Amt>250.50</Amt>", 105, "<Amt Ccy>"),
    "bad credit debit mark": (
        "<CdtDbtInd>DBIT</CdtDbtInd>\n        <RvslInd>",
        "<CdtDbtInd>DEBIT</CdtDbtInd>\n        <RvslInd>",
        69,
        "<CdtDbtInd> is 'DEBIT'",
    ),
    "entry missing": (
        '<Amt Ccy="NGN">25000.00</Amt>\n        <CdtDbtInd>DBIT',
        '<Amt Ccy="NGN">2500.00</Amt>\n        <CdtDbtInd>DBIT',
        26,
        "closing balance says",
    ),
    "a camt.052 report": ("camt.053.001.08", "camt.052.001.08", 2, "intraday account report"),
    "no status": (
        "<Sts><Cd>BOOK</Cd></Sts>\n        <BookgDt><Dt>2026-10-06",
        "<BookgDt><Dt>2026-10-06",
        96,
        "has no <Sts>",
    ),
    "bad booking date": (
        "<BookgDt><Dt>2026-10-05</Dt>",
        "<BookgDt><Dt>05.10.2026</Dt>",
        86,
        "'05.10.2026' is not a date",
    ),
}


@pytest.mark.parametrize("case", list(CAMT_BAD))
def test_a_bad_camt053_file_fails_in_one_line_naming_the_element(case: str, tmp_path: Path) -> None:
    old, new, line, problem = CAMT_BAD[case]
    with pytest.raises(DataFileError) as caught:
        read_statement(_camt_with(old, new, tmp_path))
    message = str(caught.value)
    assert "\n" not in message
    assert f"line {line}:" in message, message
    assert problem in message


def test_xml_with_entities_is_refused_without_resolving_them(tmp_path: Path) -> None:
    path = tmp_path / "evil.xml"
    path.write_text(
        '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02">&x;</Document>'
    )
    with pytest.raises(DataFileError, match="DOCTYPE"):
        read_statement(path)


CSV_BAD = {
    "bad date": ("02/10/2026,02/10/2026", "2026-10-02,02/10/2026", 3, "not a date written as"),
    "thousands none declared": (None, None, 2, "written with decimal dot, thousands none"),
    "both credit and debit": (',,"749,947.50"', ',"1.00","749,947.50"', 4, "exactly one of"),
    "running balance broken": ('"1,999,947.50"', '"1,999,947.00"', 4, "running balance"),
}


@pytest.mark.parametrize("case", list(CSV_BAD))
def test_a_bad_csv_statement_fails_in_one_line_naming_the_line(case: str, tmp_path: Path) -> None:
    old, new, line, problem = CSV_BAD[case]
    path = tmp_path / "bad.csv"
    text = CSV.read_text()
    columns = CSV_COLUMNS
    if old is None:
        columns = CSV_COLUMNS.replace("thousands=comma", "thousands=none")
    else:
        assert old in text
        text = text.replace(old, new, 1)
    path.write_text(text)
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns=columns)
    message = str(caught.value)
    assert "\n" not in message
    assert re.search(rf"lines? {line}\b", message), message
    assert problem in message


def test_a_csv_without_the_mapped_columns_names_them(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"line 1: no column 'Amount'"):
        read_statement(
            CSV, columns="date=Transaction Date,amount=Amount,currency=Currency,narration=Narration"
        )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("date=A,amount=B,credit=C,debit=D", "either amount"),
        ("date=A,colour=B", "unknown key 'colour'"),
        ("date=A,amount", "is not key=Column Name"),
        ("date", "unknown preset 'date'; accepted: banknorwegian, bankzero, capitec, fineco"),
        ("decimal=comma,thousands=comma", "must differ"),
        ("currency=A,account_currency=NGN", "not both"),
    ],
)
def test_a_bad_column_mapping_is_one_line_naming_the_accepted_keys(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_mapping(text)


def test_an_empty_statement_is_not_read_as_a_month_without_credits(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("date,amount,currency,narration\n")
    with pytest.raises(DataFileError, match="no statement lines after it"):
        read_statement(path)


def test_a_damaged_workbook_is_refused_with_how_to_save_it(tmp_path: Path) -> None:
    path = tmp_path / "statement.xlsx"
    path.write_bytes(b"PK\x03\x04...")
    with pytest.raises(DataFileError, match=r"not an \.xlsx workbook.*save it again as \.xlsx"):
        read_statement(path)
