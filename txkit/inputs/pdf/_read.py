"""Text PDF bank statements, read with pdfplumber and proven row by row (private).

A PDF statement is a printed page, not data: a figure is a debit or a credit by the column it
stands in, and a row is read only when the running balance proves it. For each page, the words
with their positions (pdfplumber, on pdfminer.six) are grouped into lines; the column header
(``Withdrawal``/``Debit``/``Payments`` and ``Deposit``/``Credit``, and ``Balance``) gives
each amount column's place. A row is a line that starts with a date and ends with its amount
and balance (or debit, credit and balance); the lines right below a row are its narration. Then:

* each amount is a debit or a credit by the column under which it stands, and the balance
  before it plus the signed amount must be the balance the row prints; a row that is not is
  refused, naming its page and row (never "95 % of the rows read");
* the statement's opening balance (printed in its head, or as a ``Balance B/F`` / ``opening
  balance`` row; both must agree where both are printed) starts the chain, and its closing
  balance (``Closing Balance``, a ``closing balance`` or ``New Balance`` row) must be the last
  row's; ``balance carried forward`` rows between pages must be the running balance; printed
  totals of debits and credits (First Bank, UBA, Heritage Bank) must be the rows' sums;
* a statement without an opening balance (Ecobank's) is refused: its first row's direction
  could not be proven.

Layouts read (each found from the text; see ``tests/data/real/pdf/MANIFEST.toml``): Access Bank,
First Bank, United Bank for Africa and Heritage Bank (Nigeria); Safaricom's M-Pesa full
statement (Kenya), newest first, in :mod:`txkit.inputs.pdf._mpesa`. A PDF of another bank, one
without a text layer (a scan), or one that no password opens is refused in one line.

Bounded like every reader: the file within ``TXKIT_MAX_INPUT_MB``; at most :data:`MAX_PAGES`
pages, counted before any is read; every compressed stream inflated within what is left of
``TXKIT_MAX_INPUT_MB`` x 8 for the whole file (the workbook rule), checked while it inflates,
so a small file that inflates to gigabytes stops at the bound, not at the machine's memory;
objects nested past Python's recursion limit refused.

Why pdfplumber: on the public fixtures (ng-bank-parser's Access, Ecobank, First Bank,
Heritage and UBA statements) pdfplumber, pdfminer.six and pypdf all found the same amounts
(docs/benchmarks.md); pypdf was the fastest, but only pdfplumber gives each word's position
without writing a text visitor, which is how a figure's column is told. pdfminer.six (under
it) opens RC4 and AES encrypted files with a password.
"""

from __future__ import annotations

import contextlib
import getpass
import io
import logging
import re
import sys
import zlib
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from txkit.config import MAX_INPUT_VAR, PDF_PASSWORD_VAR, pdf_password_setting
from txkit.errors import DataFileError
from txkit.inputs._content import is_pdf
from txkit.inputs._limits import max_unzipped_bytes
from txkit.inputs._model import Balance, Entry, Read
from txkit.inputs.pdf._mpesa import Mpesa
from txkit.inputs.pdf._page import (
    _A,
    _ADVICE,
    _Columns,
    _fail,
    _Layout,
    _Line,
    _narration,
    _Page,
    _plain,
    _trailing_amounts,
)

#: The most pages read: a longer statement is asked for as CSV, OFX or MT940 instead.
MAX_PAGES: Final = 1_000
_DEBIT: Final = frozenset({"withdrawal", "withdrawals", "debit", "debits", "payments", "dr"})
_CREDIT: Final = frozenset({"deposit", "deposits", "credit", "credits", "lodgements", "cr"})


_MON: Final = r"(?:JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)"
LAYOUTS: Final = (
    _Layout(
        "Access Bank (Nigeria)",
        re.compile(r"Copyright\(c\)\d{4} Access Bank"),
        re.compile(rf"[0-9]{{2}}-{_MON}-[0-9]{{2}}\b"),
        ("%d-%b-%y",),
        re.compile(r"^([0-9]{10}) Opening Balance", re.MULTILINE),
        re.compile(r"Account Currency ([A-Z]{3})\b"),
        opening=re.compile(rf"Opening Balance {_A}"),
        closing=re.compile(rf"Closing Balance {_A}"),
    ),
    _Layout(
        "First Bank (Nigeria)",
        re.compile(r"banking with FirstBank|not from FirstBank"),
        re.compile(rf"[0-9]{{2}}-{_MON}-[0-9]{{2}}\b"),
        ("%d-%b-%y",),
        re.compile(r"Account No: ?([0-9X]+)"),
        re.compile(r"Currency: ?([A-Z]{3})\b"),
        opening=re.compile(rf"Opening Balance: ?{_A}"),
        closing=re.compile(rf"Closing Balance: ?{_A}"),
        debits=re.compile(rf"Total Debit {_A}"),
        credits=re.compile(rf"Total Credit {_A}"),
    ),
    _Layout(
        "United Bank for Africa (Nigeria)",
        re.compile(r"United Bank for Africa"),
        re.compile(r"[0-9]{2}-[0-9]{2}-[0-9]{4}\b"),
        ("%d-%m-%Y",),
        re.compile(r"Account Number ?: ?([0-9X]+)"),
        re.compile(r"Currency: ?([A-Z]{3})\b"),
        debits=re.compile(rf"Total Debit/Total Credit/New Balance {_A} {_A} {_A}"),
        credits=re.compile(rf"Total Debit/Total Credit/New Balance {_A} {_A} {_A}"),
    ),
    _Layout(
        "Heritage Bank (Nigeria)",
        re.compile(r"HB Contact Centre|@hbng\.com"),
        re.compile(r"[0-9]{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4}\b"),
        ("%d %b %Y",),
        re.compile(r"account number ([0-9X]+)"),
        re.compile(r"\bcurrency ([A-Z]{3})\b"),
        debits=re.compile(rf"debit turnover {_A}"),
        credits=re.compile(rf"credit turnover {_A}"),
    ),
    _Layout(
        "Ecobank (Nigeria)",
        re.compile(r"ecobank\.com|EcoBank :"),
        re.compile(rf"[0-9]{{2}}-{_MON}-[0-9]{{4}}\b"),
        ("%d-%b-%Y",),
        re.compile(r"Account Number ([0-9]+)"),
        re.compile(r"Currency ([A-Z]{3})\b"),
        refused="prints no opening or closing balance of the period (only today's available "
        "balance), so its first row's direction cannot be proven by a balance",
    ),
    _Layout(
        "Safaricom M-Pesa full statement (Kenya)",
        re.compile(r"M-?PESA FULL STATEMENT"),
        re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\b"),
        ("%Y-%m-%d %H:%M:%S",),
        re.compile(r"Mobile Number:? ?([0-9*+]+)"),
        re.compile(r"\b(KES)\b"),  # not printed: see _MPESA_CURRENCY
        newest_first=True,
    ),
)
# Rows that are balances, not entries: the opening, the closing, one carried between pages.
_OPENING_ROW: Final = re.compile(r"(?i)^(?:balance b/f|opening balance|balance brought forward)\b")
_CLOSING_ROW: Final = re.compile(r"(?i)^(?:closing balance|total debit/total credit/new balance)")
_CARRIED_ROW: Final = re.compile(r"(?i)^balance carried forward\b")
_BALANCE_ROW: Final = re.compile(
    "|".join(p.pattern.replace("(?i)", "") for p in (_OPENING_ROW, _CLOSING_ROW, _CARRIED_ROW)),
    re.IGNORECASE,
)


def looks_like(data: bytes) -> bool:
    """Whether the bytes are a PDF (its header within the first 1,024 bytes, as readers allow)."""
    return is_pdf(data)


class _Inflated(Exception):
    """A compressed stream inflated past the bound."""


@contextlib.contextmanager
def _bounded_inflate(limit: int) -> Iterator[None]:
    """pdfminer inflates each stream whole (``zlib.decompress``): within this block, every
    stream it inflates counts against ``limit`` bytes for the file, and inflating stops as
    soon as the total would pass it."""
    from pdfminer import pdftypes

    left = [limit]

    class _Zlib:
        error = zlib.error
        decompressobj = staticmethod(zlib.decompressobj)

        @staticmethod
        def decompress(data: bytes) -> bytes:
            inflater = zlib.decompressobj()
            out = inflater.decompress(data, left[0] + 1)
            if len(out) > left[0] or inflater.unconsumed_tail:
                raise _Inflated
            left[0] -= len(out)
            return out

    real = pdftypes.zlib
    pdftypes.zlib = _Zlib  # type: ignore[assignment]
    # pdfminer logs what it skips in a damaged page (a text matrix it cannot read) as
    # warnings, which would print to the terminal in many lines: what counts is whether every
    # row is then proven, said in one line.
    quiet = logging.getLogger("pdfminer")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        yield
    finally:
        pdftypes.zlib = real
        quiet.setLevel(level)


def read(path: Path, data: bytes) -> Read:
    """Every row of a text PDF statement, each proven by the running balance (see above)."""
    limit = max_unzipped_bytes()
    try:
        with _bounded_inflate(limit):
            pages, private = _pages(path, data)
    except _Inflated:
        raise _fail(
            path,
            f"holds compressed streams that inflate past {limit / 1024 / 1024:,.0f} MB "
            f"({MAX_INPUT_VAR} x 8): not a bank statement",
            "check that it is the right file",
        ) from None
    except RecursionError:
        raise _fail(path, "nests its objects too deep to be read: not a bank statement",
                    "check that it is the right file") from None  # fmt: skip
    text = "\n".join(line.text for page in pages for line in page.lines)
    if not text.strip():
        raise _fail(
            path,
            "has no text layer (a scanned image): its figures cannot be read",
            "download the statement as a text PDF from the bank's online banking (or as "
            "CSV, OFX or MT940); a scan is never read by guessing its digits",
        )
    layout = next((x for x in LAYOUTS if x.mark.search(text)), None)
    if layout is None:
        known = ", ".join(x.name for x in LAYOUTS if x.refused is None)
        raise _fail(
            path,
            f"is a PDF statement of a layout not known (known: {known})",
            "download the statement as CSV, OFX or MT940 (a layout is added only with its "
            "rows proven on a real file)",
        )
    if layout.refused:
        raise _fail(path, f"is a {layout.name} statement, which {layout.refused}", _ADVICE)
    reader = Mpesa if layout.newest_first else _Statement
    result = reader(path, layout, text).read(pages)
    result.private = private
    return result


def _password_error(exc: BaseException) -> bool:
    return "PDFPasswordIncorrect" in f"{type(exc).__name__} {exc!r}"


def _open(path: Path, data: bytes) -> tuple[Any, bool]:
    """The opened PDF, and whether a password opened it: a protected one with
    ``TXKIT_PDF_PASSWORD`` or a password asked on a terminal (never a flag: see
    :data:`txkit.config.PDF_PASSWORD_VAR`)."""
    import pdfplumber

    given = pdf_password_setting()
    # The empty password first: many statements are encrypted only against copying (UBA's),
    # and open without one whatever TXKIT_PDF_PASSWORD says (it may be another file's).
    for password in ["", given] if given is not None else [""]:
        try:
            return pdfplumber.open(io.BytesIO(data), password=password), bool(password)
        except Exception as exc:  # pdfplumber wraps pdfminer's errors in its own
            if not _password_error(exc):
                message = " ".join(f"{exc}".split())[:120] or type(exc).__name__
                raise _fail(path, f"is not a readable PDF ({message})", _ADVICE) from None
    if given is not None:
        raise _fail(path, f"is password-protected and {PDF_PASSWORD_VAR} does not open it",
                    f"set {PDF_PASSWORD_VAR} to this file's password")  # fmt: skip
    if sys.stdin is not None and sys.stdin.isatty():
        password = getpass.getpass(f"Password of {path.name}: ")
        try:
            return pdfplumber.open(io.BytesIO(data), password=password), bool(password)
        except Exception as exc:
            if _password_error(exc):
                raise _fail(path, "is password-protected and the password given does not "
                            "open it", "run again with its password") from None  # fmt: skip
            raise _fail(path, "is not a readable PDF", _ADVICE) from None
    raise _fail(
        path,
        "is password-protected",
        f"set {PDF_PASSWORD_VAR} to its password (or run txkit on a terminal to be asked)",
    )


def _pages(path: Path, data: bytes) -> tuple[list[_Page], bool]:
    pdf, private = _open(path, data)
    try:
        from pdfminer.pdfpage import PDFPage
        from pdfminer.pdftypes import resolve1
        from pdfplumber.page import Page

        count = resolve1(resolve1(pdf.doc.catalog.get("Pages")) or {}).get("Count", 0)
        count = count if isinstance(count, int) else 0  # a damaged count: pages are counted
        if count > MAX_PAGES:
            raise _fail(path, f"says it has {count:,} pages, over the {MAX_PAGES:,} read",
                        "download the statement as CSV, OFX or MT940")  # fmt: skip
        pages: list[_Page] = []
        for number, page in enumerate(PDFPage.create_pages(pdf.doc), start=1):
            if number > MAX_PAGES:
                raise _fail(path, f"has over {MAX_PAGES:,} pages (it says {count:,})",
                            "download the statement as CSV, OFX or MT940")  # fmt: skip
            plumbed = Page(pdf, page, page_number=number, initial_doctop=0)
            pages.append(_Page(number, _lines(plumbed.extract_words())))
        return pages, private
    except (DataFileError, _Inflated, RecursionError):
        raise
    except Exception as exc:  # pdfminer's many parse errors on a damaged file
        cause = _cause(exc)
        if cause is not None:
            raise cause from None
        message = " ".join(f"{exc}".split())[:120] or type(exc).__name__
        raise _fail(path, f"is not a readable PDF ({message})", _ADVICE) from None
    finally:
        with contextlib.suppress(Exception, RecursionError):
            pdf.close()


def _cause(exc: BaseException) -> BaseException | None:
    """The bound or the recursion limit met under pdfplumber's wrapping of pdfminer's errors."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 20:
        one = todo.pop()
        if isinstance(one, _Inflated | RecursionError):
            return one
        seen.append(one)
        todo += [a for a in one.args if isinstance(a, BaseException)]
        todo += [e for e in (one.__cause__, one.__context__) if e is not None]
    return None


def _lines(words: list[dict[str, Any]]) -> list[_Line]:
    """Words on one baseline (within 2 points) as a line, left to right."""
    lines: list[_Line] = []
    for word in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        if lines and abs(lines[-1].top - word["top"]) <= 2:
            lines[-1].words.append(word)
        else:
            lines.append(_Line("", word["top"], [word]))
    for line in lines:
        line.words.sort(key=lambda w: w["x0"])
        line.text = " ".join(w["text"] for w in line.words)
    return lines


def _columns(line: _Line) -> _Columns | None:
    words = [w["text"].lower() for w in line.words]
    if "balance" not in words:
        return None
    debit = next((w for w in line.words if w["text"].lower() in _DEBIT), None)
    credit = next((w for w in line.words if w["text"].lower() in _CREDIT), None)
    if debit is None or credit is None:
        return None
    return _Columns((debit["x0"] + debit["x1"]) / 2, (credit["x0"] + credit["x1"]) / 2)


class _Statement:
    """One statement's rows, proven one by one against its running balance."""

    def __init__(self, path: Path, layout: _Layout, text: str) -> None:
        self.path, self.layout, self.text = path, layout, text
        account = layout.account.search(text)
        self.account = account.group(1) if account else None
        found = layout.currency.search(text)
        if found is None:
            raise _fail(path, f"is a {layout.name} statement whose currency was not found in "
                        "its head")  # fmt: skip
        self.currency = found.group(1)
        self.opening = self._head(layout.opening)
        self.closing = self._head(layout.closing)
        self.running = self.opening
        self.columns: _Columns | None = None
        self.closed = False
        #: Where the last row or its narration's last line stands on the page (None: no row yet).
        self.tail: float | None = None
        self.debits = self.credits = Decimal(0)
        self.result = Read("pdf")

    def _head(self, pattern: re.Pattern[str] | None, group: int = 1) -> Decimal | None:
        found = pattern.search(self.text) if pattern else None
        return Decimal(_plain(found.group(group))) if found else None

    def _date(self, text: str) -> date:
        for fmt in self.layout.formats:
            with contextlib.suppress(ValueError):
                return datetime.strptime(text.title() if "%b" in fmt else text, fmt).date()
        raise _fail(self.path, f"{text!r} is not a date of this layout", _ADVICE)

    def read(self, pages: list[_Page]) -> Read:
        """Every row of every page, proven; the statement's balance and a note."""
        for page in pages:
            rows_before = len(self.result.entries)
            self.tail = None
            for line in page.lines:
                self._line(page.number, len(self.result.entries) - rows_before, line)
        return self._close()

    def _line(self, page: int, rows_on_page: int, line: _Line) -> None:
        found = _columns(line)
        if found is not None:
            self.columns = found
            return
        start = self.layout.date.match(line.text)
        amounts = _trailing_amounts(line)
        # A balance row may come without a date (First Bank's "Balance B/F").
        balance_row = bool(amounts) and _BALANCE_ROW.match(line.text) is not None
        if (start is None or not amounts) and not balance_row:
            # A row's narration goes on in the lines right below it (a page's footer and the
            # next page's head are further away).
            entries = self.result.entries
            height = max(w["bottom"] - w["top"] for w in line.words)
            if (
                entries
                and not self.closed
                and self.tail is not None
                and line.top - self.tail <= 2 * height
                and _narration(line)
            ):
                entries[-1].narration = f"{entries[-1].narration or ''} {line.text}".strip()
                self.tail = line.top
            return
        rest = line.text[start.end() :].strip() if start else line.text
        where = f"page {page}, row {rows_on_page + 1} ({line.text[:60]!r})"
        if _OPENING_ROW.match(rest) or _CARRIED_ROW.match(rest) or _CLOSING_ROW.match(rest):
            self._balance_row(rest, Decimal(_plain(amounts[-1]["text"])), where)
        elif self.closed:
            raise _fail(self.path, f"{where}: a row after the closing balance")
        elif start is None:
            raise _fail(self.path, f"{where}: a row without its date")
        else:
            self._row(start, rest, amounts, where)
            self.tail = line.top

    def _balance_row(self, rest: str, value: Decimal, where: str) -> None:
        """An opening, carried-forward or closing row: checked against the head and the chain."""
        path = self.path
        if _OPENING_ROW.match(rest):
            if self.opening is not None and value != self.opening:
                raise _fail(path, f"{where}: the opening balance {value:,} is not the "
                            f"{self.opening:,} in the statement's head")  # fmt: skip
            if self.result.entries:
                raise _fail(path, f"{where}: an opening balance after the first row")
            self.opening = self.running = value
        elif _CARRIED_ROW.match(rest):
            if value != self.running:
                raise _fail(path, f"{where}: the balance carried forward {value:,} is not the "
                            f"running balance {self.running}")  # fmt: skip
        else:
            if self.closing is not None and value != self.closing:
                raise _fail(path, f"{where}: the closing balance {value:,} is not the "
                            f"{self.closing:,} in the statement's head")  # fmt: skip
            self.closing, self.closed = value, True

    def _row(self, start: re.Match[str], rest: str, amounts: list[dict[str, Any]],
             where: str) -> None:  # fmt: skip
        """An entry, proven: the balance before it plus its amount (signed by its column) is
        the balance it prints."""
        path, running = self.path, self.running
        if running is None:
            raise _fail(path, f"{where}: no opening balance before the first row, so its "
                        "direction cannot be proven")  # fmt: skip
        if self.columns is None:
            raise _fail(path, f"{where}: no column header (debit, credit, balance) above it")
        signed, balance = self._amount(amounts, self.columns, where)
        if running + signed != balance:
            raise _fail(
                path,
                f"{where}: the balance before it, {running:,}, and its "
                f"{'credit' if signed > 0 else 'debit'} of {abs(signed):,} make "
                f"{running + signed:,}, but the row says {balance:,}: its rows cannot all be "
                "proven, so none is read",
            )
        self.running = balance
        if signed > 0:
            self.credits += signed
        else:
            self.debits -= signed
        later = self.layout.date.search(rest)
        self.result.entries.append(
            Entry(
                line=len(self.result.entries) + 1,
                currency=self.currency,
                date=self._date(start.group(0)),
                amount=format(signed, "f"),
                value_date=self._date(later.group(0)) if later else None,
                narration=_narration_of(rest, later, amounts) or None,
                account=self.account,
            )
        )

    def _amount(
        self, amounts: list[dict[str, Any]], columns: _Columns, where: str
    ) -> tuple[Decimal, Decimal]:
        """The row's signed amount (by its column) and the balance it prints."""
        if len(amounts) not in (2, 3):
            raise _fail(self.path, f"{where}: {len(amounts)} amounts where an amount and a "
                        "balance are printed")  # fmt: skip
        balance = Decimal(_plain(amounts[-1]["text"]))
        moved = [(columns.of(w), Decimal(_plain(w["text"]))) for w in amounts[:-1]]
        moved = [(side, value) for side, value in moved if value != 0 or len(moved) == 1]
        sides = {side for side, _ in moved}
        if len(moved) != 1 or "unclear" in sides or moved[0][1] < 0:
            raise _fail(self.path, f"{where}: which column its amount stands in (debit or "
                        "credit) is not clear")  # fmt: skip
        side, value = moved[0]
        return (value if side == "credit" else -value), balance

    def _close(self) -> Read:
        """The closing balance and the printed totals checked; the statement's balance row."""
        path, name, result = self.path, self.layout.name, self.result
        opening, closing, running = self.opening, self.closing, self.running
        if opening is None or running is None:
            raise _fail(path, f"is a {name} statement with no row and no opening balance")
        if closing is None:
            raise _fail(path, f"is a {name} statement whose closing balance was not found: "
                        "that no row is missing cannot be proven")  # fmt: skip
        if running != closing:
            raise _fail(path, f"its last row's balance {running:,} is not its closing balance "
                        f"{closing:,}: a row is missing or damaged")  # fmt: skip
        layout = self.layout
        credits_group = 2 if layout.credits and "New Balance" in layout.credits.pattern else 1
        for total, added, what in (
            (self._head(layout.debits), self.debits, "debits"),
            (self._head(layout.credits, credits_group), self.credits, "credits"),
        ):
            if total is not None and total != added:
                raise _fail(path, f"its rows' {what} add up to {added:,}, but the statement "
                            f"prints a total of {total:,}")  # fmt: skip
        entries = result.entries
        result.balances.append(
            Balance(
                None,
                self.account,
                self.currency,
                format(opening, "f"),
                entries[0].date if entries else None,
                1,
                format(closing, "f"),
                entries[-1].date if entries else None,
                len(entries),
            )
        )
        result.notes.append(
            f"{name} PDF: {len(entries):,} row{'s' if len(entries) != 1 else ''}, each proven "
            "by the running balance from "
            f"{opening:,} to {closing:,} {self.currency}"
        )
        return result


def _narration_of(rest: str, later: re.Match[str] | None, amounts: list[dict[str, Any]]) -> str:
    """The row's own text: after its date, without the value date and the amounts."""
    words = rest.split()
    words = words[: len(words) - len(amounts)] if amounts else words
    text = " ".join(words)
    if later is not None:
        text = text.replace(later.group(0), " ", 1)
    return " ".join(text.split())
