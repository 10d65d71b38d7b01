"""OFX/QFX statements: real downloads (``tests/data/real/ofx/MANIFEST.toml``) read as their
sources assert, each statement proven by its ledger balance or said unproven, and every
malformed file refused in one line naming the file and line."""

from __future__ import annotations

import tomllib
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.analysis.analysis_cases import load_case
from tests.analysis.test_close import AFTER, BEFORE, MONTH, _month
from tests.factories import invoke_cli
from txkit.analysis.settlements import match_settlements
from txkit.errors import DataFileError
from txkit.inputs import BankStatement, read_statement, read_statements

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real" / "ofx"
_RECORDS = tomllib.loads((REAL / "MANIFEST.toml").read_text(encoding="utf-8"))["file"]


@pytest.mark.parametrize("record", [pytest.param(r, id=r["file"]) for r in _RECORDS])
def test_a_real_ofx_file_reads_as_its_source_asserts(record: dict[str, Any]) -> None:
    path = REAL / record["file"]
    if "refused" in record:
        with pytest.raises(DataFileError) as caught:
            read_statement(path)
        message = str(caught.value)
        assert "\n" not in message and record["refused"] in message, message
        return
    statement = read_statement(path)
    entries, balances = statement.entries, statement.balances
    assert statement.files == {str(path): "ofx"}
    amounts = [Decimal(str(a)) for a in entries["amount"]]
    assert entries.height == record["entries"]
    if "account" in record:
        assert set(entries["account"]) == {record["account"]}
    if "currency" in record:
        assert set(entries["currency"]) == {record["currency"]}
    if "amounts" in record:
        assert amounts == [Decimal(a) for a in record["amounts"]]
    if "amount_sum" in record:
        assert sum(amounts, Decimal(0)) == Decimal(record["amount_sum"])
    if "first_narration" in record:
        assert entries["narration"][0].startswith(record["first_narration"])
    # One balance per statement: the closing is the file's LEDGERBAL, the opening the closing
    # less the entries (frames() proves the sum), said in a note.
    assert balances.height == 1
    closing = Decimal(str(balances["closing"][0]))
    assert closing == Decimal(record["closing"])
    assert Decimal(str(balances["opening"][0])) + sum(amounts, Decimal(0)) == closing
    assert any("each opening is worked out as the closing less the entries" in n
               for n in statement.notes)  # fmt: skip
    if "running" in record:
        day, amount, after = record["running"]
        # countary's arithmetic (see the manifest): the closing less the entries before.
        running = [closing - sum(amounts[:i], Decimal(0)) for i in range(len(amounts))]
        at = [
            i
            for i, d in enumerate(entries["date"])
            if d == date.fromisoformat(day) and amounts[i] == Decimal(amount)
        ]
        assert len(at) == 1 and running[at[0]] == Decimal(after)


_HEAD = "OFXHEADER:100\nDATA:OFXSGML\nVERSION:102\nSECURITY:NONE\nENCODING:USASCII\nCHARSET:1252\nCOMPRESSION:NONE\nOLDFILEUID:NONE\nNEWFILEUID:NONE\n\n"  # noqa: E501


def _stmt(
    account: str, currency: str, trns: list[str], ledger: str | None, month: str = "10"
) -> str:
    body = "".join(
        f"<STMTTRN><TRNTYPE>OTHER<DTPOSTED>2026{month}0{i + 1}<TRNAMT>{amt}<FITID>{account}-{i}"
        f"<NAME>Payout {i}</STMTTRN>\n"
        for i, amt in enumerate(trns)
    )
    bal = f"<LEDGERBAL><BALAMT>{ledger}<DTASOF>2026{month}28</LEDGERBAL>\n" if ledger else ""
    return (
        f"<STMTTRNRS><TRNUID>1<STATUS><CODE>0<SEVERITY>INFO</STATUS><STMTRS><CURDEF>{currency}\n"
        f"<BANKACCTFROM><BANKID>058<ACCTID>{account}<ACCTTYPE>CHECKING</BANKACCTFROM>\n"
        f"<BANKTRANLIST><DTSTART>2026{month}01<DTEND>2026{month}28\n{body}</BANKTRANLIST>\n{bal}"
        "</STMTRS></STMTTRNRS>\n"
    )


def _ofx(tmp_path: Path, *statements: str, name: str = "s.ofx") -> Path:
    path = tmp_path / name
    path.write_text(
        _HEAD + "<OFX><BANKMSGSRSV1>\n" + "".join(statements) + "</BANKMSGSRSV1></OFX>\n",
        encoding="ascii",
    )
    return path


def test_several_accounts_and_currencies_are_each_proven_by_their_own_ledger(
    tmp_path: Path,
) -> None:
    path = _ofx(
        tmp_path,
        _stmt("0123", "NGN", ["1500.50", "-20.25"], "10480.25"),
        _stmt("0456", "USD", ["12.000001"], "12.000001"),
        name="two.qfx",
    )
    statement = read_statement(path)
    rows = statement.balances.sort("currency").select("account", "currency", "opening", "closing")
    assert rows.rows() == [
        ("0123", "NGN", Decimal("9000.000000"), Decimal("10480.250000")),
        ("0456", "USD", Decimal("0"), Decimal("12.000001")),
    ]
    # Exact: six decimals kept, never through a float; the entries' lines are the file's.
    assert [str(a) for a in statement.entries["amount"]] == ["1500.500000", "-20.250000",
                                                             "12.000001"]  # fmt: skip
    assert statement.entries["line"].to_list() == [15, 16, 23]
    assert statement.entries.filter(pl.col("currency") == "USD")["account"].to_list() == ["0456"]


def test_a_statement_without_a_ledger_balance_is_read_and_said_unproven(tmp_path: Path) -> None:
    statement = read_statement(_ofx(tmp_path, _stmt("0123", "NGN", ["5.00"], None)))
    assert statement.balances.height == 0 and statement.entries.height == 1
    assert any("that none is missing could not be proven" in n for n in statement.notes)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("<TRNAMT>1500.50", "<TRNAMT>1,500.50"), r"line 15: .*'1,500.50' is not an amount"),
        (("<TRNAMT>1500.50", "<TRNAMT>"), r"line 15: .*has no amount"),
        (("<DTPOSTED>20261001", "<DTPOSTED>2026-10-01"), r"line 15: .*is not a date"),
        (
            ("<NAME>Payout 0", "<CURRENCY><CURSYM>USD<CURRATE>1</CURRENCY>"),
            r"line 15: .*an amount "
            "in USD \\(<CURRENCY>\\) on a statement in NGN",
        ),
        (("</OFX>\n", "\n"), r"does not end with </OFX>: the file is cut short"),
        (("<CODE>0<SEVERITY>INFO", "<CODE>2000<SEVERITY>ERROR"), r"reports error 2000"),
        (("OFXHEADER:100", "OFXHEADER:1OO"), r"line 1: has no valid OFX header"),
        (("<OFX><BANKMSGSRSV1>", "<OFX></OFX></OFX><BANKMSGSRSV1>"), "an end tag without"),
        (("</STMTRS>", "</STMTRS>text"), r"not well-formed OFX \(Tail text 'text'"),
    ],
)
def test_a_damaged_ofx_file_is_refused_in_one_line(
    tmp_path: Path, change: tuple[str, str], problem: str
) -> None:
    path = _ofx(tmp_path, _stmt("0123", "NGN", ["1500.50", "-20.25"], "10480.25"))
    text = path.read_text(encoding="ascii")
    assert change[0] in text
    path.write_text(text.replace(change[0], change[1], 1), encoding="ascii")
    with pytest.raises(DataFileError, match=problem) as caught:
        read_statement(path)
    assert "\n" not in str(caught.value)


def test_the_same_ofx_entries_in_two_files_are_refused_as_overlapping(tmp_path: Path) -> None:
    one = _ofx(tmp_path, _stmt("0123", "NGN", ["1500.50"], "1500.50"), name="a.ofx")
    two = _ofx(tmp_path, _stmt("0123", "NGN", ["1500.50"], "1500.50"), name="b.ofx")
    with pytest.raises(DataFileError, match="the statements overlap"):
        read_statements([one, two])


def test_txkit_report_reads_an_ofx_statement_by_its_content_and_names_its_error(
    tmp_path: Path,
) -> None:
    """Through the CLI (a real process): a damaged OFX is refused before any sync, with its
    line; before this reader it was read as CSV ("no column 'date' ... 'OFXHEADER:100'")."""
    path = _ofx(tmp_path, _stmt("0123", "NGN", ["1,500.50"], "1500.50"), name="october.qfx")
    done = invoke_cli("report", "--month", "2026-10", "--store", "store", "--out", "out",
                      "--notebooks", str(ROOT / "notebooks"), "--bank-statement", str(path),
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "october.qfx, line 15: <STMTRS> 0123 <STMTTRN> <TRNAMT>: " \
        "'1,500.50' is not an amount" in lines[0], lines  # fmt: skip
    assert not (tmp_path / "store").exists()


def _ofx_from(statement: BankStatement) -> str:
    """The statement written as an OFX 2.x download: one STMTRS per currency, each entry's
    exact amount, dates, reference (REFNUM), narration (MEMO) and bank reference (FITID)."""
    parts = []
    for row in statement.balances.iter_rows(named=True):
        mine = statement.entries.filter(pl.col("currency") == row["currency"])
        trns = "".join(
            f"<STMTTRN><TRNTYPE>{'CREDIT' if e['amount'] > 0 else 'DEBIT'}</TRNTYPE>"
            f"<DTPOSTED>{e['date']:%Y%m%d}</DTPOSTED>"
            + (f"<DTAVAIL>{e['value_date']:%Y%m%d}</DTAVAIL>" if e["value_date"] else "")
            + f"<TRNAMT>{e['amount']}</TRNAMT><FITID>{e['bank_reference']}</FITID>"
            + (f"<REFNUM>{e['reference']}</REFNUM>" if e["reference"] else "")
            + f"<MEMO>{e['narration']}</MEMO></STMTTRN>\n"
            for e in mine.iter_rows(named=True)
        )
        parts.append(
            f"<STMTTRNRS><TRNUID>1</TRNUID><STATUS><CODE>0</CODE><SEVERITY>INFO</SEVERITY>"
            f"</STATUS><STMTRS><CURDEF>{row['currency']}</CURDEF><BANKACCTFROM><BANKID>058"
            f"</BANKID><ACCTID>{row['account']}</ACCTID><ACCTTYPE>CHECKING</ACCTTYPE>"
            f"</BANKACCTFROM><BANKTRANLIST><DTSTART>{row['opening_date']:%Y%m%d}</DTSTART>"
            f"<DTEND>{row['closing_date']:%Y%m%d}</DTEND>\n{trns}</BANKTRANLIST><LEDGERBAL>"
            f"<BALAMT>{row['closing']}</BALAMT><DTASOF>{row['closing_date']:%Y%m%d}</DTASOF>"
            "</LEDGERBAL></STMTRS></STMTTRNRS>\n"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<?OFX OFXHEADER="200" VERSION="220" '
        'SECURITY="NONE" OLDFILEUID="NONE" NEWFILEUID="NONE"?>\n<OFX><BANKMSGSRSV1>\n'
        + "".join(parts)
        + "</BANKMSGSRSV1></OFX>\n"
    )


@pytest.mark.slow
def test_the_sandboxs_statement_as_ofx_gives_the_same_matching_as_its_camt053(
    tmp_path: Path,
) -> None:
    """The sandbox's bank statements (four currencies, a reversal, every planted case) read
    as camt.053 and written again as OFX: the same settlements matched, the same way."""
    case = load_case(2, 0.01)
    camt_paths, ofx_paths = [], []
    for month in (MONTH, AFTER):
        camt = tmp_path / f"statement_{month}.camt053.xml"
        camt.write_bytes(case.ledger.bank_statement(month, "camt053"))
        ofx = tmp_path / f"statement_{month}.qfx"
        ofx.write_text(_ofx_from(read_statement(camt)), encoding="utf-8")
        camt_paths.append(camt)
        ofx_paths.append(ofx)
    from_camt, from_ofx = read_statements(camt_paths), read_statements(ofx_paths)
    assert from_ofx.balances.height == 8  # four currencies, two months: each proven
    records = _month(case.frame, BEFORE, MONTH)
    columns = ["reference", "category", "rule", "bank_amount", "bank_date", "difference"]
    camt_matching = match_settlements(records, from_camt, month=MONTH)
    ofx_matching = match_settlements(records, from_ofx, month=MONTH)
    assert set(camt_matching["category"].cast(pl.String)) > {"matched", "amount_differs"}
    assert ofx_matching.select(columns).equals(camt_matching.select(columns))


def test_two_ofx_months_of_one_account_must_follow_one_another(tmp_path: Path) -> None:
    """OFX has no opening balance: the next month's (its closing less its entries) proves the
    previous month complete, or names the gap."""
    october = _ofx(tmp_path, _stmt("0123", "NGN", ["1500.50"], "2500.50"), name="oct.ofx")
    november = _ofx(tmp_path, _stmt("0123", "NGN", ["-500.00"], "2000.50", "11"), name="nov.ofx")
    read = read_statements([november, october])
    assert "oct.ofx is proven complete by nov.ofx's opening balances (0123 NGN)" in read.notes
    gap = _ofx(tmp_path, _stmt("0123", "NGN", ["-500.00"], "1900.50", "11"), name="nov.ofx")
    with pytest.raises(
        DataFileError,
        match=r"nov.ofx: account 0123 NGN: its opening balance, "
        r"2,400.50 \(its closing less its entries\), is not the closing balance "
        r"2,500.50 of oct.ofx: entries between the two statements are missing",
    ):
        read_statements([october, gap])  # fmt: skip
    # Another account or currency is its own chain.
    dollars = _ofx(tmp_path, _stmt("0123", "USD", ["5.00"], "99.00"), name="usd.ofx")
    assert read_statements([october, dollars]).balances.height == 2
