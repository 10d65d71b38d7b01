"""SWIFT MT940 customer statements, read strictly, every line accounted for (private).

The layout (SWIFT MT940, as banks send it to corporate customers): a message per statement,
optionally in SWIFT's envelope (``{1:...}{2:...}{4:`` ... ``-}``); tags at the start of a
line, a tag's value running to the next tag:

* ``:20:`` the statement's reference (it starts a statement), ``:25:`` the account,
  ``:28C:`` statement and sequence number;
* ``:60F:``/``:60M:`` the opening balance, ``:62F:``/``:62M:`` the closing balance
  (``C``/``D``, ``YYMMDD``, currency, amount with a decimal comma), ``:64:``/``:65:``
  available balances (read, not used);
* ``:61:`` a statement line: value date ``YYMMDD``, optional entry date ``MMDD``, the mark
  (``C`` credit, ``D`` debit, ``RC`` reversal of a credit, ``RD`` reversal of a debit), an
  optional funds code, the amount, the transaction type (``N``/``S``/``F`` and three
  characters), the customer's reference up to ``//``, the bank's reference, and optional
  supplementary details on the next line;
* ``:86:`` the line's information to the account owner (free text, or structured with
  ``/EREF/``, ``/RFB/``, ``EREF+``: the reference is taken from those).

Why not the ``mt-940`` package: its ``:61:`` pattern reads ``C5OO000,00`` (a letter O typed
for a zero) as an amount of 5.00, a mistyped tag (``:6l:``) loses the line without a word,
and a statement without its closing balance reads as complete; none of its errors names a
line. Here every ``:61:`` must match the layout exactly, a text line outside a tag is an
error, and each statement's opening balance plus its lines must equal its closing balance
(:func:`txkit.bank._model.frames`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Final

from txkit.bank._model import WHAT, Balance, Entry, Read, check_amount, check_currency
from txkit.errors import DataFileError

_TAG: Final = re.compile(r":(?P<tag>[0-9]{2}[A-Z]?|NS):(?P<value>.*)")
_BALANCE: Final = re.compile(
    r"(?P<mark>[CD])(?P<date>[0-9]{6})(?P<cur>[A-Z]{3})(?P<amount>[0-9,]{1,15})"
)
_LINE: Final = re.compile(
    r"(?P<vdate>[0-9]{6})(?P<edate>[0-9]{4})?(?P<mark>RC|RD|C|D)(?P<funds>[A-Z])?"
    r"(?P<amount>[0-9]{1,12},[0-9]{0,6})(?P<type>[NSF][A-Z0-9]{3})"
    r"(?P<custref>(?:(?!//)[^\n]){0,16})(?://(?P<bankref>[^\n]{0,16}))?"
    r"(?:\n(?P<supp>[^\n]{0,34}))?"
)
_STRUCTURED: Final = (
    re.compile(r"/EREF/([^/\n]+)"),
    re.compile(r"/RFB/([^/\n]+)"),
    re.compile(r"EREF\+([^\s?/]+)"),
)
_ADVICE: Final = "export the statement again from the bank (MT940 as SWIFT lays it out)"
_KNOWN: Final = {"13D", "20", "21", "25", "28", "28C", "34F", "60F", "60M", "61", "62F", "62M",
                 "64", "65", "86", "90C", "90D", "NS"}  # fmt: skip


def looks_like(text: str) -> bool:
    """Whether the text is an MT940 statement (a ``:20:`` and a balance or line tag)."""
    head = text[:20_000]
    return bool(re.search(r"(?m)^:20:", head)) and bool(re.search(r"(?m)^:(60[FM]|61):", head))


def _fail(path: Path, line: int, problem: str, advice: str = _ADVICE) -> DataFileError:
    return DataFileError(path, problem, advice, lines=[line], what=WHAT)


def _date(path: Path, text: str, line: int, where: str) -> date:
    try:
        year = int(text[:2])
        return date(2000 + year if year < 80 else 1900 + year, int(text[2:4]), int(text[4:6]))
    except ValueError:
        raise _fail(path, line, f"{where}: {text!r} is not a date (YYMMDD)") from None


def _amount(path: Path, text: str, line: int, where: str, negative: bool) -> str:
    whole, _, fraction = text.partition(",")
    if text.count(",") != 1 or not whole:
        raise _fail(
            path,
            line,
            f"{where}: {text!r} is not an MT940 amount (digits with one decimal comma, "
            "e.g. 1500,00)",
        )
    plain = whole.lstrip("0") or "0"
    if fraction:
        plain += "." + fraction
    check_amount(path, plain, line, where)
    return "-" + plain if negative and plain.strip("0.") else plain


def _tags(path: Path, text: str) -> list[tuple[int, str, str]]:
    """``(line, tag, value)`` for every tag, continuation lines joined with ``\\n``.

    The SWIFT envelope (``{1:...}{4:``, ``-}``, ``{5:...}``) is skipped; any other text that
    is not inside a tag is an error.
    """
    out: list[tuple[int, str, str]] = []
    open_tag = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if line.startswith("{"):
            # A header line: blocks 1-3 and the opening of block 4 (its text may follow).
            rest = re.sub(r"^(\{[1-3]:(?:[^{}]|\{[^{}]*\})*\})*(\{4:)?", "", line)
            open_tag = False
            if not rest or rest.startswith("{5:"):
                continue
            line = rest
        if line in ("-}", "-") or line.startswith("-}{5:"):
            open_tag = False
            continue
        if not line.strip():
            continue
        match = _TAG.fullmatch(line)
        if match and match.group("tag") in _KNOWN | {"60", "62"}:
            out.append((number, match.group("tag"), match.group("value")))
            open_tag = True
        elif match or line.startswith(":"):
            raise _fail(
                path,
                number,
                f"unknown tag {line.split(':')[1] if line.count(':') > 1 else line!r}",
                "MT940 tags are :20:, :25:, :28C:, :60F:, :61:, :86:, :62F:, :64:, :65: "
                "(check for a typo, e.g. a letter l for a 1)",
            )
        elif open_tag:
            tag_line, tag, value = out[-1]
            out[-1] = (tag_line, tag, value + "\n" + line)
        else:
            raise _fail(path, number, f"text outside any tag: {line[:40]!r}")
    return out


@dataclass
class _Reader:
    """Where the walk through a file's tags stands: the statement, its account, its open
    balance and its last statement line (which a ``:86:`` describes)."""

    path: Path
    result: Read
    statement: str | None = None
    account: str | None = None
    balance: Balance | None = None
    entry: Entry | None = None

    def start(self, number: int, value: str) -> None:
        """``:20:``: a new statement (the one before it must have closed)."""
        if self.balance is not None and self.balance.closing is None:
            raise _fail(
                self.path,
                number,
                f"statement {self.statement} has no closing balance (:62F:) before the next one",
            )
        self.statement, self.account, self.balance, self.entry = value.strip(), None, None, None

    def opening(self, number: int, tag: str, value: str) -> None:
        """``:60F:``: the opening balance."""
        path = self.path
        b = _BALANCE.fullmatch(value.strip())
        if b is None:
            raise _fail(
                path,
                number,
                f":{tag}: {value.strip()!r} is not a balance (C or D, YYMMDD, currency, "
                "amount, e.g. C261031NGN1500,00)",
            )
        currency = check_currency(path, b.group("cur"), number, f":{tag}:")
        self.balance = Balance(
            self.statement,
            self.account,
            currency,
            _amount(path, b.group("amount"), number, f":{tag}:", b.group("mark") == "D"),
            _date(path, b.group("date"), number, f":{tag}:"),
            number,
        )
        self.result.balances.append(self.balance)

    def line(self, number: int, value: str) -> None:
        """``:61:``: a statement line."""
        if self.balance is None:
            raise _fail(self.path, number, "a statement line (:61:) before the opening balance")
        self.entry = _statement_line(
            self.path, number, value, self.balance, self.account, self.statement
        )
        self.result.entries.append(self.entry)

    def details(self, value: str) -> None:
        """``:86:``: the last statement line's narration (and reference, when structured)."""
        entry = self.entry
        if entry is not None and entry.narration is None:
            details = value.strip()
            entry.narration = " ".join(details.split("\n"))
            reference = _structured(details)
            if reference:
                entry.reference = reference

    def closing(self, number: int, tag: str, value: str) -> None:
        """``:62F:``: the closing balance, in the opening balance's currency."""
        path, balance = self.path, self.balance
        b = _BALANCE.fullmatch(value.strip())
        if balance is None or b is None:
            raise _fail(
                path,
                number,
                f":{tag}: {value.strip()!r} is not a closing balance after an opening one",
            )
        if b.group("cur") != balance.currency:
            raise _fail(
                path,
                number,
                f":{tag}: closing balance in {b.group('cur')}, opening in {balance.currency}",
            )
        balance.closing = _amount(
            path, b.group("amount"), number, f":{tag}:", b.group("mark") == "D"
        )
        balance.closing_date = _date(path, b.group("date"), number, f":{tag}:")
        balance.closing_line = number
        self.entry = None


def read(path: Path, text: str) -> Read:
    """Every statement of an MT940 file, checked line by line (see the module docstring)."""
    reader = _Reader(path, Read("mt940"))
    tags = _tags(path, text)
    if not any(tag == "20" for _, tag, _ in tags):
        raise _fail(path, 1, "no statement (:20:) in the file")
    for number, tag, value in tags:
        if tag == "20":
            reader.start(number, value)
            continue
        if reader.statement is None:
            raise _fail(path, number, f":{tag}: before the first statement (:20:)")
        if tag == "25":
            reader.account = value.strip()
        elif tag in ("60F", "60M", "60"):
            reader.opening(number, tag, value)
        elif tag == "61":
            reader.line(number, value)
        elif tag == "86":
            reader.details(value)
        elif tag in ("62F", "62M", "62"):
            reader.closing(number, tag, value)
    if reader.balance is not None and reader.balance.closing is None:
        last = tags[-1][0]
        raise _fail(
            path,
            last,
            f"statement {reader.statement} ends without its closing balance (:62F:): the file "
            "is cut short",
        )
    return reader.result


def _statement_line(
    path: Path,
    number: int,
    value: str,
    balance: Balance,
    account: str | None,
    statement: str | None,
) -> Entry:
    first, _, rest = value.partition("\n")
    match = _LINE.fullmatch(first.strip() + ("\n" + rest if rest else ""))
    if match is None:
        raise _fail(
            path,
            number,
            f":61: {first.strip()[:40]!r} is not a statement line (YYMMDD[MMDD], C, D, RC or RD, "
            "amount with a decimal comma, a type such as NTRF, references)",
        )
    mark = match.group("mark")
    value_date = _date(path, match.group("vdate"), number, ":61: value date")
    booked = value_date
    if match.group("edate"):
        month, day = int(match.group("edate")[:2]), int(match.group("edate")[2:])
        year = value_date.year
        if month == 12 and value_date.month == 1:
            year -= 1
        elif month == 1 and value_date.month == 12:
            year += 1
        try:
            booked = date(year, month, day)
        except ValueError:
            raise _fail(
                path, number, f":61: entry date {match.group('edate')!r} is not a date (MMDD)"
            ) from None
    # RC (a credit reversed) takes money out; RD (a debit reversed) puts it back.
    negative = mark in ("D", "RC")
    amount = _amount(path, match.group("amount"), number, ":61: amount", negative)
    custref = (match.group("custref") or "").strip()
    return Entry(
        line=number,
        currency=balance.currency,
        date=booked,
        value_date=value_date,
        amount=amount,
        reversal=mark.startswith("R"),
        reference=custref if custref and custref.upper() != "NONREF" else None,
        bank_reference=(match.group("bankref") or "").strip() or None,
        narration=None,
        account=account,
        statement=statement,
    )


def _structured(details: str) -> str | None:
    """The structured reference of an ``:86:`` (``/EREF/``, ``/RFB/``, ``EREF+``), if any."""
    flat = details.replace("\n", "")
    for pattern in _STRUCTURED:
        found = pattern.search(flat)
        if found and found.group(1).strip() and found.group(1).strip().upper() != "NOTPROVIDED":
            return found.group(1).strip()
    return None
