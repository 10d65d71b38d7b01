"""Text PDF statements: real Nigerian banks' PDFs (``tests/data/real/pdf/MANIFEST.toml``) read
row by row, each row proven by the running balance, or refused naming the page and row; a
statement in UBA's exact layout with our own figures shows each refusal; a password from the
environment or a terminal's prompt, never a flag."""

from __future__ import annotations

import getpass
import sys
import tomllib
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.analysis.analysis_cases import load_case
from tests.analysis.test_close import AFTER, BEFORE, MONTH, _month
from tests.bank.pdf_files import MPESA_ROWS, MPESA_SUMMARY, Placed, mpesa_pdf, scanned_pdf, text_pdf
from tests.factories import invoke_cli
from txkit.analysis.settlements import match_settlements
from txkit.errors import DataFileError
from txkit.inputs import BankStatement, read_statement, read_statements

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real" / "pdf"
_RECORDS = tomllib.loads((REAL / "MANIFEST.toml").read_text(encoding="utf-8"))["file"]


@pytest.fixture(autouse=True)
def _no_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TXKIT_PDF_PASSWORD", raising=False)


@pytest.mark.parametrize("record", [pytest.param(r, id=r["file"]) for r in _RECORDS])
def test_a_real_pdf_statement_reads_as_it_prints_or_is_refused_naming_its_row(
    record: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = REAL / record["file"]
    if "password" in record:
        monkeypatch.setenv("TXKIT_PDF_PASSWORD", record["password"])
    if "refused" in record:
        with pytest.raises(DataFileError) as caught:
            read_statement(path)
        message = str(caught.value)
        assert "\n" not in message and record["refused"] in message, message
        assert record.get("refused_also", "") in message
        return
    statement = read_statement(path)
    entries, balances = statement.entries, statement.balances
    assert statement.files == {str(path): "pdf"}
    assert entries.height == record["entries"]
    assert set(entries["account"]) == {record["account"]}
    assert set(entries["currency"]) == {record.get("currency", "NGN")}
    amounts = [Decimal(str(a)) for a in entries["amount"]]
    assert sum(a for a in amounts if a < 0) == -Decimal(record["debits"])
    assert sum(a for a in amounts if a > 0) == Decimal(record["credits"])
    assert balances.select("opening", "closing").rows() == [
        (Decimal(record["opening"]), Decimal(record["closing"]))
    ]
    day, amount = record["first"]
    assert (entries["date"][0], amounts[0]) == (date.fromisoformat(day), Decimal(amount))
    assert any("each proven by the running balance" in n for n in statement.notes)


# UBA's layout (its column header, its "Balance B/F" and "Total Debit/Total Credit/New Balance"
# rows, dates as 01-06-2015), with our own figures: where each column's header stands.
_X = {"date": 30, "text": 90, "value": 440, "debit": 540, "credit": 620, "balance": 720}


def _header(y: float) -> list[Placed]:
    return [(_X["date"], y, "Date"), (_X["text"], y, "Description"), (_X["value"] - 10, y,
            "Val Date"), (_X["debit"], y, "Debit"), (_X["credit"], y, "Credit"),
            (_X["balance"], y, "Balance")]  # fmt: skip


def _uba(
    rows: list[tuple[str, str, str, str]],
    *,
    opening: str = "1,000.00",
    closing: tuple[str, str, str] | None = None,
    per_page: int = 3,
    currency: str = "NGN",
    first: str = "01-10-2026",
    last: str = "31-10-2026",
) -> bytes:
    """rows: (date DD-MM-YYYY or DD of October 2026, text, 'debit' or 'credit', "amount
    balance"), ``per_page`` rows a page under the column header repeated on each."""
    pages: list[list[Placed]] = []
    for start in range(0, len(rows), per_page):
        y = 520.0
        page = [
            (30, 570, "Monthly Account Statement of Transactions"),
            (30, 550, f"Account Number : 2054000001 Currency: {currency} BVN: -"),
            (30, 30, "All correspondence ... United Bank for Africa Plc, 57, Marina Lagos"),
        ]
        page += _header(y)
        if start == 0:
            y -= 14
            page += [(_X["date"], y, first), (_X["text"], y, "Balance B/F"),
                     (_X["balance"], y, opening)]  # fmt: skip
        for day, text, column, amount_balance in rows[start : start + per_page]:
            amount, balance = amount_balance.split()
            day = day if len(day) > 2 else f"{day}-10-2026"
            y -= 14
            page += [(_X["date"], y, day), (_X["text"], y, text), (_X["value"], y, day),
                     (_X[column], y, amount), (_X["balance"], y, balance)]  # fmt: skip
        pages.append(page)
    if closing is not None:
        debit, credit, new = closing
        y = 100
        pages[-1] += [(_X["date"], y, last), (_X["text"], y,
                      "Total Debit/Total Credit/New Balance"), (_X["debit"], y, debit),
                      (_X["credit"], y, credit), (_X["balance"], y, new)]  # fmt: skip
    return text_pdf(pages, landscape=True)


_ROWS = [
    ("02", "NIP FROM PAYSTACK SETTLEMENT", "credit", "150,000.00 151,000.00"),
    ("03", "SMS ALERT CHARGE", "debit", "4.00 150,996.00"),
    ("05", "TRF TO SUPPLIER LTD", "debit", "50,000.50 100,995.50"),
    ("09", "NIP FROM PAYSTACK SETTLEMENT", "credit", ".50 100,996.00"),
    ("12", "POS PURCHASE", "debit", "101,000.00 -4.00"),
]
_CLOSING = ("151,004.50", "150,000.50", "-4.00")


def test_a_statement_in_ubas_layout_is_read_exactly_across_pages(tmp_path: Path) -> None:
    path = tmp_path / "october.pdf"
    path.write_bytes(_uba(_ROWS, closing=_CLOSING))
    statement = read_statement(path)
    entries = statement.entries
    assert [str(a) for a in entries["amount"]] == ["150000.00", "-4.00", "-50000.50", "0.50",
                                                   "-101000.00"]  # fmt: skip
    assert entries["direction"].to_list() == ["credit", "debit", "debit", "credit", "debit"]
    assert entries["date"].to_list()[-1] == date(2026, 10, 12)
    assert entries["narration"].to_list()[0] == "NIP FROM PAYSTACK SETTLEMENT"
    assert entries["line"].to_list() == [1, 2, 3, 4, 5]
    assert statement.balances.select("opening", "closing").rows() == [
        (Decimal("1000.00"), Decimal("-4.00"))
    ]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        # A balance misprinted (or misread) on the second page's second row.
        (
            lambda r: r.__setitem__(4, ("12", "POS PURCHASE", "debit", "101,000.00 -4.01")),
            r"page 2, row 2 \('12-10-2026 POS PURCHASE .*make -4.00, but the row says -4.01: "
            r"its rows cannot all be proven",
        ),
        # An amount standing in the other column: the balance does not follow.
        (
            lambda r: r.__setitem__(1, ("03", "SMS ALERT CHARGE", "credit", "4.00 150,996.00")),
            r"page 1, row 2 .*its credit of 4.00 make 151,004.00, but the row says 150,996.00",
        ),
        # A row missing (a page cut short): the next row does not follow.
        (
            lambda r: r.pop(2),
            r"page 1, row 3 \('09-10-2026 .*make 150,996.50, but the row says "
            r"100,996.00",
        ),
    ],
)
def test_a_row_that_the_running_balance_does_not_prove_is_refused_naming_page_and_row(
    tmp_path: Path, change: Any, problem: str
) -> None:
    rows = list(_ROWS)
    change(rows)
    path = tmp_path / "october.pdf"
    path.write_bytes(_uba(rows, closing=_CLOSING))
    with pytest.raises(DataFileError, match=problem) as caught:
        read_statement(path)
    assert "\n" not in str(caught.value)


def _access(rows: list[tuple[str, str, str, str]], opening: str, closing: str) -> bytes:
    """Access Bank's layout (its head's opening and closing balances, its column header, its
    dates as 31-JUL-15 twice, its footer), with our own figures; the figures right-aligned
    under their headers as Access prints them. rows: (date, text, column, amount balance)."""
    right = {"debit": 444, "credit": 498, "balance": 562}

    def at(column: str, y: float, text: str) -> Placed:
        return (right[column] - 4.45 * len(text), y, text)

    page: list[Placed] = [
        (40, 800, "Account Statement"),
        (40, 785, f"0691594561 Opening Balance {opening}"),
        (40, 770, f"Account Name Closing Balance {closing}"),
        (40, 755, f"Account Currency NGN Book Balance {closing}"),
        (40, 700, "Value Date"), (100, 700, "Description"), (388, 700, "Withdrawal"),
        (461, 700, "Deposit"), (524, 700, "Balance"),
    ]  # fmt: skip
    y = 690.0
    for day, text, column, amount_balance in rows:
        amount, balance = amount_balance.split()
        y -= 14
        page += [(40, y, f"{day} {day}"), (150, y, text), at(column, y, amount),
                 at("balance", y, balance)]  # fmt: skip
    page += [(200, y - 20, "**********End of Statement**********"),
             (40, 40, "Copyright(c)2011 Access Bank Page 1")]  # fmt: skip
    return text_pdf([page])


def test_a_statement_in_access_banks_layout_is_read_exactly(tmp_path: Path) -> None:
    path = tmp_path / "access.pdf"
    path.write_bytes(
        _access(
            [
                ("01-OCT-26", "NIP/PAYSTACK/TXK-1", "credit", "150,000.00 456,523.03"),
                ("02-OCT-26", "SMS ALERT CHARGES", "debit", "4.00 456,519.03"),
                ("31-OCT-26", "TAX Deducted", "debit", "101.53 456,417.50"),
            ],
            opening="306,523.03",
            closing="456,417.50",
        )
    )
    statement = read_statement(path)
    assert [str(a) for a in statement.entries["amount"]] == ["150000.00", "-4.00", "-101.53"]
    assert statement.entries["date"].to_list() == [date(2026, 10, 1), date(2026, 10, 2),
                                                   date(2026, 10, 31)]  # fmt: skip
    assert set(statement.entries["account"]) == {"0691594561"}
    assert statement.balances.select("opening", "closing").rows() == [
        (Decimal("306523.03"), Decimal("456417.50"))
    ]
    path.write_bytes(
        _access(
            [("01-OCT-26", "NIP/PAYSTACK/TXK-1", "credit", "150,000.00 456,523.03")],
            opening="306,523.03",
            closing="456,523.30",
        )
    )
    with pytest.raises(DataFileError, match="its last row's balance 456,523.03 is not its "
                       "closing balance 456,523.30: a row is missing or damaged"):  # fmt: skip
        read_statement(path)


@pytest.mark.parametrize(
    ("closing", "problem"),
    [
        (None, "whose closing balance was not found: that no row is missing cannot be proven"),
        (
            ("151,004.50", "150,000.50", "-4.50"),
            "the closing balance -4.50 is not|its last "
            "row's balance -4.00 is not its closing balance -4.50",
        ),
        (
            ("151,004.50", "150,000.00", "-4.00"),
            "its rows' credits add up to 150,000.50, but "
            "the statement prints a total of 150,000.00",
        ),
    ],
)
def test_a_statement_whose_closing_or_totals_do_not_follow_is_refused(
    tmp_path: Path, closing: tuple[str, str, str] | None, problem: str
) -> None:
    path = tmp_path / "october.pdf"
    path.write_bytes(_uba(_ROWS, closing=closing))
    with pytest.raises(DataFileError, match=problem):
        read_statement(path)


def test_a_scanned_pdf_is_refused_in_one_line_that_says_so(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf())
    with pytest.raises(DataFileError, match=r"scan.pdf: has no text layer \(a scanned image\)"):
        read_statement(path)


def test_a_pdf_of_another_layout_is_refused_naming_the_layouts_read(tmp_path: Path) -> None:
    path = tmp_path / "other.pdf"
    path.write_bytes(text_pdf([[(40, 800, "Some Bank Statement"), (40, 780, "Balance 10.00")]]))
    with pytest.raises(DataFileError, match=r"a layout not known \(known: Access Bank \(Nige"):
        read_statement(path)


def test_a_damaged_pdf_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.pdf"
    path.write_bytes(_uba(_ROWS, closing=_CLOSING)[:300])
    with pytest.raises(DataFileError) as caught:
        read_statement(path)
    assert "\n" not in str(caught.value) and "cut.pdf" in str(caught.value)


_FIRST_BANK = REAL / "ngbankparser_firstbank-pdf-valid.pdf"


def test_a_protected_pdf_without_a_password_says_how_to_give_one() -> None:
    with pytest.raises(DataFileError, match="is password-protected; set TXKIT_PDF_PASSWORD to "
                       r"its password \(or run txkit on a terminal to be asked\)"):  # fmt: skip
        read_statement(_FIRST_BANK)


def test_a_wrong_password_from_the_environment_is_said_without_showing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TXKIT_PDF_PASSWORD", "s3cr3t-guess")
    with pytest.raises(DataFileError, match="TXKIT_PDF_PASSWORD does not open it") as caught:
        read_statement(_FIRST_BANK)
    assert "s3cr3t" not in str(caught.value)


def test_a_pdf_encrypted_against_copying_only_opens_whatever_the_password_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """UBA's statement is encrypted with an empty password: a password set for another file
    (First Bank's) must not stop it."""
    monkeypatch.setenv("TXKIT_PDF_PASSWORD", "19856")
    statement = read_statement(REAL / "ngbankparser_uba-pdf-valid.pdf")
    assert statement.entries.height == 57


def test_on_a_terminal_the_password_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "19856"

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(getpass, "getpass", answer)
    statement = read_statement(_FIRST_BANK)
    assert asked == [f"Password of {_FIRST_BANK.name}: "] and statement.entries.height == 31


def test_txkit_report_refuses_a_protected_pdf_in_one_line_before_anything_else(
    tmp_path: Path,
) -> None:
    """Through the CLI (a real process, no terminal): before this reader, every PDF was
    refused as "a PDF document, not text"."""
    done = invoke_cli("report", "--month", "2026-10", "--store", "store", "--out", "out",
                      "--notebooks", str(ROOT / "notebooks"), "--bank-statement",
                      str(_FIRST_BANK), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        "firstbank-pdf-valid.pdf: is password-protected; set TXKIT_PDF_PASSWORD to its "
        "password (or run txkit on a terminal to be asked)"
    ), lines


@pytest.mark.slow
def test_the_sandboxs_statement_printed_as_uba_pdfs_gives_the_same_entries_and_matching(
    tmp_path: Path,
) -> None:
    """The sandbox's bank statements (four currencies, a reversal, every planted case) read
    as camt.053 and printed again in UBA's layout, one PDF per currency and month (25 rows a
    page): every entry read back with its date, exact amount and narration, each proven, and
    the same settlements matched the same way (the references found as words of the
    narration: a PDF has no reference column)."""
    case = load_case(2, 0.01)
    camt_paths, pdf_paths = [], []
    for month in (MONTH, AFTER):
        camt = tmp_path / f"statement_{month}.camt053.xml"
        camt.write_bytes(case.ledger.bank_statement(month, "camt053"))
        camt_paths.append(camt)
        statement = read_statement(camt)
        for row in statement.balances.iter_rows(named=True):
            pdf = tmp_path / f"statement_{month}_{row['currency']}.pdf"
            pdf.write_bytes(_uba_from(statement, row))
            pdf_paths.append(pdf)
    from_camt, from_pdf = read_statements(camt_paths), read_statements(pdf_paths)
    key = ["currency", "date", "amount"]
    camt_rows = from_camt.entries.sort(key, maintain_order=True).select(
        *key, pl.col("narration").str.slice(0, _NARRATION)
    )
    pdf_rows = from_pdf.entries.sort(key, maintain_order=True).select(*key, "narration")
    assert pdf_rows.equals(camt_rows)
    assert from_pdf.balances.height == 8
    records = _month(case.frame, BEFORE, MONTH)
    columns = ["reference", "category", "rule", "bank_amount", "bank_date", "difference"]
    camt_matching = match_settlements(records, from_camt, month=MONTH)
    pdf_matching = match_settlements(records, from_pdf, month=MONTH)
    assert set(camt_matching["category"].cast(pl.String)) > {"matched", "amount_differs"}
    assert pdf_matching.select(columns).equals(camt_matching.select(columns))


#: The narration printed (the description column's width in the layout written here).
_NARRATION = 60


def _money(value: Decimal) -> str:
    return f"{value:,.2f}"


def _uba_from(statement: BankStatement, row: dict[str, Any]) -> bytes:
    """One currency of a statement printed in UBA's layout (amounts as the bank prints them)."""
    mine = statement.entries.filter(pl.col("currency") == row["currency"])
    running, rows = Decimal(str(row["opening"])), []
    for e in mine.iter_rows(named=True):
        amount = Decimal(str(e["amount"]))
        running += amount
        side = "credit" if amount > 0 else "debit"
        rows.append((f"{e['date']:%d-%m-%Y}", e["narration"][:_NARRATION], side,
                     f"{_money(abs(amount))} {_money(running)}"))  # fmt: skip
    amounts = [Decimal(str(a)) for a in mine["amount"]]
    totals = (_money(-sum(a for a in amounts if a < 0)), _money(sum(a for a in amounts if a > 0)),
              _money(running))  # fmt: skip
    return _uba(rows, opening=_money(Decimal(str(row["opening"]))), closing=totals,
                per_page=25, currency=row["currency"], first=f"{row['opening_date']:%d-%m-%Y}",
                last=f"{row['closing_date']:%d-%m-%Y}")  # fmt: skip


def test_the_pdf_password_is_never_sent_to_a_kernel_in_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A report's kept kernels get txkit's settings as code at each reset; the password (like
    the key) stays in the environment a kernel is started with, so a changed one starts a new
    kernel instead."""
    from txkit.report._kernels import kernel_settings, kernel_setup

    monkeypatch.setenv("TXKIT_PDF_PASSWORD", "s3cr3t-19856")
    assert "s3cr3t" not in kernel_setup(ROOT / "notebooks")
    assert ("TXKIT_PDF_PASSWORD", "s3cr3t-19856") in kernel_settings()


def test_on_a_real_terminal_the_password_is_asked_and_never_echoed() -> None:
    """A real process on a pseudo-terminal (getpass reads /dev/tty): asked once, answered,
    the statement read; what the terminal shows holds the question, not the password."""
    import os
    import pty
    import select

    code = (
        "import sys\nfrom txkit.inputs import read_statement\n"
        f"s = read_statement({str(_FIRST_BANK)!r})\nprint('ROWS', s.entries.height)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    env["PYTHONPATH"] = str(ROOT)
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is the pseudo-terminal
        os.execve(sys.executable, [sys.executable, "-c", code], env)
    shown = b""
    answered = False
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            os.kill(pid, 9)
            pytest.fail(f"no prompt or no end: {shown!r}")
        try:
            chunk = os.read(fd, 1024)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
        if not answered and b"Password of" in shown:
            os.write(fd, b"19856\n")
            answered = True
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, shown
    assert b"Password of ngbankparser_firstbank-pdf-valid.pdf: " in shown
    assert b"ROWS 31" in shown and b"19856" not in shown  # getpass turned the echo off


def test_a_damaged_real_pdf_is_read_whole_and_proven_or_refused_in_one_line_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """UBA's statement with bytes overwritten at random (seeded): each copy is either read
    with every row proven (the damage missed the text) or refused in one line, never read in
    part, and pdfminer's warnings about what it skipped are not logged (on a terminal they
    printed in many lines)."""
    import random

    whole = (REAL / "ngbankparser_uba-pdf-valid.pdf").read_bytes()
    randomly = random.Random(46)
    outcomes = set()
    for trial in range(24):
        data = bytearray(whole)
        for _ in range(randomly.randrange(1, 12)):
            data[randomly.randrange(len(data))] = randomly.randrange(256)
        path = tmp_path / f"damaged{trial}.pdf"
        path.write_bytes(bytes(data))
        try:
            statement = read_statement(path)
        except DataFileError as exc:
            assert "\n" not in str(exc)
            outcomes.add("refused")
        else:
            assert statement.entries.height == 57
            assert statement.balances["closing"].to_list() == [Decimal("9476.66")]
            outcomes.add("read")
    assert outcomes == {"read", "refused"}
    assert not [r for r in caplog.records if r.name.startswith("pdfminer")]


def _mpesa_read(tmp_path: Path, rows: list[tuple[str, ...]] = MPESA_ROWS,
                summary: list[tuple[str, str, str]] = MPESA_SUMMARY) -> BankStatement:  # fmt: skip
    path = tmp_path / "mpesa.pdf"
    path.write_bytes(mpesa_pdf(rows, summary))
    return read_statement(path)


def test_an_mpesa_full_statement_is_read_newest_first_and_its_failed_row_left_out_and_counted(
    tmp_path: Path,
) -> None:
    statement = _mpesa_read(tmp_path)
    entries = statement.entries
    assert [str(a) for a in entries["amount"]] == ["-2000.00", "10000.50", "-199.46", "-13.00",
                                                   "-500.00", "-1200.00", "3450.00"]  # fmt: skip
    assert entries["reference"].to_list()[:3] == ["TJ6A0000G7", "TJ5A0000F6", "TJ5A0000F5"]
    assert "TJ3A0000C3" not in entries["reference"].to_list()  # the Failed row
    assert entries["narration"].to_list()[4] == "Pay Bill to 888880 - KPLC PREPAID Acc. 5400123"
    assert entries["date"].to_list()[0] == date(2026, 10, 6)
    assert set(entries["currency"]) == {"KES"}
    assert statement.balances.select("opening", "closing").rows() == [
        (Decimal("2000.00"), Decimal("11538.04"))
    ]
    (note,) = [n for n in statement.notes if "M-Pesa" in n]
    assert "7 rows, newest first" in note and "from 2,000.00 to 11,538.04 KES" in note
    assert "1 row not Completed (failed or pending) left out" in note
    # The payment and the overdraft repayment of one second, printed the other way round.
    assert "2 rows sharing a completion time proven in the order their balances follow" in note


def _with(
    rows: list[tuple[str, ...]], index: int, column: int, value: str
) -> list[tuple[str, ...]]:
    changed = list(rows)
    row = list(changed[index])
    row[column] = value
    changed[index] = tuple(row)
    return changed


@pytest.mark.parametrize(
    ("rows", "summary", "problem"),
    [
        # A withdrawal's amount tampered (13.00 written 14.00): named at its own row, with the
        # newest-first arithmetic (the balance printed below it plus its movement).
        (
            _with(MPESA_ROWS, 3, 5, "14.00"),
            MPESA_SUMMARY,
            r"page 1, row 4 \('TJ4A0000E5 2026-10-04 .*the balance printed below it \(before it "
            r"in time\), 3,750.00, and its withdrawal of 14.00 make 3,736.00, but the row says "
            r"3,737.00: its rows cannot all be proven",
        ),
        # A row on the second page tampered: its page and its row on that page.
        (
            _with(MPESA_ROWS, 6, 5, "1,300.00"),
            MPESA_SUMMARY,
            r"page 2, row 3 \('TJ2A0000B2 .*withdrawal of 1,300.00 make 4,150.00, but the row "
            r"says 4,250.00",
        ),
        # The oldest row (no row below it) tampered: its summary's TOTAL does not follow.
        (
            _with(MPESA_ROWS, 7, 4, "3,460.00"),
            MPESA_SUMMARY,
            r"its Completed rows' paid in add up to 13,460.50, but its summary prints a TOTAL "
            r"of 13,450.50",
        ),
        # A failed row whose balance moved: it did move money.
        (
            _with(MPESA_ROWS, 5, 6, "-4,750.00"),
            MPESA_SUMMARY,
            r"page 2, row 2 \('TJ3A0000C3 .*a row left out \(not Completed\) prints the balance "
            r"-4,750.00, but the balance then was 4,250.00",
        ),
        # Rows of one second that no order proves: named at the printed order's first break.
        (
            _with(MPESA_ROWS, 2, 5, "199.47"),
            MPESA_SUMMARY,
            r"page 1, row 3 \('TJ5A0000F5 .*the balance printed below it \(before it in time\), "
            r"3,737.00, and its withdrawal of 199.47 make 3,537.53, but the row says 13,538.04",
        ),
        # A withdrawal written negative is a withdrawal (its column says so); under Paid In,
        # a negative figure is refused.
        (
            _with(MPESA_ROWS, 7, 4, "-3,450.00"),
            MPESA_SUMMARY,
            r"page 2, row 4 .*a negative figure -3,450.00 under Paid In",
        ),
        # A status that is neither read nor left out.
        (
            _with(MPESA_ROWS, 0, 3, "Reversing"),
            MPESA_SUMMARY,
            r"page 1, row 1 .*Transaction Status \(Completed, or Cancelled, Declined, Expired, "
            r"Failed, Pending: left out\)",
        ),
        # The summary's lines by type do not make its TOTAL.
        (
            MPESA_ROWS,
            [("SEND MONEY:", "0.00", "1,000.00"), *MPESA_SUMMARY[1:]],
            r"lines by transaction type add up to 13,450.50 paid in and 3,712.46 paid out, not "
            r"its TOTAL of 13,450.50 and 3,912.46",
        ),
        # No summary: the oldest row's amount cannot be proven.
        (MPESA_ROWS, [], r"whose summary TOTAL \(paid in, paid out\) was not found"),
    ],
)
def test_an_mpesa_row_the_balance_does_not_prove_is_refused_naming_page_and_row(
    tmp_path: Path, rows: list[tuple[str, ...]], summary: list[tuple[str, str, str]],
    problem: str,
) -> None:  # fmt: skip
    with pytest.raises(DataFileError, match=problem) as caught:
        _mpesa_read(tmp_path, rows, summary)
    assert "\n" not in str(caught.value)
