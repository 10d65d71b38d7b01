"""SWIFT MT940 customer statements as banks write them, every line accounted for (private).

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
  supplementary details on the lines after it;
* ``:86:`` the line's information to the account owner (free text, or structured with
  ``/EREF/``, ``/RFB/``, ``EREF+``: the reference is taken from those).

What banks write beside the standard, and is read (each seen in real files, see
``tests/data/real/mt940/MANIFEST.toml``): several statements in one file, whatever their
``:20:``/``:25:`` (each is proven by its own balances, in file order); bank header lines
before a message (Rabobank's ``:940:``, ING's ``0000 01INGBNL2AXXXX00001``, ABN AMRO's
``ABNANL2A`` and ``940``, SOH/ETX control lines, a trailing Ctrl-Z); a transaction type
with a blank (``NIT ``) or none at all (Zenith Bank: ``C N220000,00//19239782213``); a
customer's reference over 16 characters; supplementary details over several lines;
``:86:`` text over many lines, lines in it that look like tags (``:12:11``) or are a lone
``-``, and several ``:86:`` after one line (all kept, references looked for in all of it);
``:86 :`` for ``:86:``; a value date of 30 February (German interest convention: read as
the month's last day); a message closed by `` -``.

Still refused, since it would put a wrong amount in front of a controller: an amount that
is not digits with one decimal comma (``C5OO000,00``), a statement whose opening balance
plus its lines is not its closing balance, a statement without its closing balance (a
truncated file), a mistyped tag outside ``:86:`` text; each error names the file and line.

Why not the ``mt-940`` package: see ``docs/closing.md`` (its ``:61:`` pattern reads
``C5OO000,00`` as 5.00, it accepts a statement without its closing balance, and none of its
errors names a line).
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Final

from txkit.errors import DataFileError
from txkit.inputs._model import WHAT, Balance, Entry, Read, check_amount, check_currency

# ``:86 :`` (a blank before the colon) is written by some banks for ``:86:``.
_TAG: Final = re.compile(r":(?P<tag>[0-9]{2}[A-Z]?|NS) ?:(?P<value>.*)")
_BALANCE: Final = re.compile(
    r"(?P<mark>[CD])(?P<date>[0-9]{6})(?P<cur>[A-Z]{3})(?P<amount>[0-9]{1,20},[0-9]{0,6})"
)
_LINE: Final = re.compile(
    r"(?P<vdate>[0-9]{6})(?P<edate>[0-9]{4})?(?P<mark>RC|RD|C|D)(?P<funds>[A-Z])?"
    r"(?P<amount>[0-9]{1,15},[0-9]{0,6})(?P<type>[NSF][A-Z0-9 ]{3})?"
    r"(?P<custref>(?:(?!//).)*)(?://(?P<bankref>.*))?"
)
_STRUCTURED: Final = (
    re.compile(r"/EREF/([^/\n]+)"),
    re.compile(r"/RFB/([^/\n]+)"),
    re.compile(r"EREF\+([^\s?/]+)"),
)
_ADVICE: Final = "export the statement again from the bank (MT940 as SWIFT lays it out)"
_KNOWN: Final = {"13D", "20", "21", "25", "28", "28C", "34F", "60", "60F", "60M", "61", "62",
                 "62F", "62M", "64", "65", "86", "90C", "90D", "NS"}  # fmt: skip
# Tags whose value may run over several lines; a line after any other tag that is no tag
# is a bank's header line (between messages) or an error (inside a statement).
_MULTILINE: Final = {"61", "86", "NS", "25", "28", "28C"}
# SOH, ETX and Ctrl-Z (end of file on old systems) frame messages in some banks' files.
_CONTROL: Final = "\x01\x03\x1a"
# A tag with a letter where SWIFT has digits (``:6l:``, ``:6O:``, ``:8b:``): a typo, never text.
_MISTYPED: Final = re.compile(
    r":(?![0-9]{2}[A-Z]? ?:|NS:)[0-9][0-9A-Za-z][A-Z]? ?:|:[A-Za-z][0-9][A-Z]? ?:"
)
_ENVELOPE: Final = re.compile(r"^(\{[1-3]:(?:[^{}]|\{[^{}]*\})*\})*(\{4:)?")


def looks_like(text: str) -> bool:
    """Whether the text is an MT940 statement (a ``:20:`` and a balance or line tag)."""
    head = text[:20_000]
    return bool(re.search(r"(?m)^:20:", head)) and bool(re.search(r"(?m)^:(60[FM]|61):", head))


def _fail(path: Path, line: int, problem: str, advice: str = _ADVICE) -> DataFileError:
    return DataFileError(path, problem, advice, lines=[line], what=WHAT)


def _date(path: Path, text: str, line: int, where: str) -> date:
    day = _day(text)
    if day is None:
        raise _fail(path, line, f"{where}: {text!r} is not a date (YYMMDD)")
    return day


@functools.lru_cache(maxsize=4096)
def _day(text: str) -> date | None:
    """A statement's dates repeat: each is worked out once."""
    try:
        year = int(text[:2])
        year = 2000 + year if year < 80 else 1900 + year
        month, day = int(text[2:4]), int(text[4:6])
        last = calendar.monthrange(year, month)[1]
        # 30 February and the like: German banks date interest to a 30-day month's end.
        if last < day <= 31:
            day = last
        return date(year, month, day)
    except (ValueError, calendar.IllegalMonthError):
        return None


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


@dataclass
class _Tag:
    """A tag as found: its line, name and value lines (continuations appended, joined once)."""

    line: int
    tag: str
    lines: list[str] = field(default_factory=list)

    @property
    def value(self) -> str:
        return "\n".join(self.lines)


def _tags(path: Path, text: str) -> Iterator[_Tag]:
    """Streamed (a large file is never held as tags); the SWIFT envelope, control characters and
    header lines skipped."""
    # ``between``: no statement open (before the first, or after a closing balance), where
    # banks write header lines; ``open_tag``: the tag continuation lines belong to.
    between = True
    open_tag: _Tag | None = None
    pending: _Tag | None = None  # the tag being read (its value may run on)
    for number, raw in enumerate(_lines(text), start=1):
        line = raw.strip(_CONTROL).rstrip()
        if line.startswith("{"):
            rest = _ENVELOPE.sub("", line)
            open_tag, between = None, True
            if not rest or rest.startswith("{5:"):
                continue
            line = rest
        if not line.strip(_CONTROL + " "):
            continue
        if line.startswith("-}") or (line.strip() == "-" and between):
            # The end of a message (``-`` alone; `` -`` too).
            open_tag, between = None, True
            continue
        match = _TAG.fullmatch(line) if line.startswith(":") else None
        tag = match.group("tag") if match else None
        if match and tag in _KNOWN:
            if pending is not None:
                yield pending
            open_tag = pending = _Tag(number, tag, [match.group("value")])  # type: ignore[arg-type]
            if tag == "20":
                between = False
            elif tag in ("62F", "62M", "62"):
                between = True
            continue
        open_tag = _untagged(path, number, line, match, open_tag, between)
    if pending is not None:
        yield pending


_TAGS_ADVICE: Final = (
    "MT940 tags are :20:, :25:, :28C:, :60F:, :61:, :86:, :62F:, :64:, :65: "
    "(check for a typo, e.g. a letter l for a 1)"
)


def _untagged(
    path: Path,
    number: int,
    line: str,
    match: re.Match[str] | None,
    open_tag: _Tag | None,
    between: bool,
) -> _Tag | None:
    """The open tag's continuation, a bank's header line between messages, else an error naming
    the line."""
    if line.startswith(":") and match is None and _MISTYPED.match(line):
        # ``:6l:`` (a letter l for a 1): a tag lost here would lose a statement line.
        raise _fail(path, number, f"unknown tag {line.split(':')[1]!r}", _TAGS_ADVICE)
    if open_tag is not None and open_tag.tag in _MULTILINE and not between:
        # ``:86:`` text runs on, whatever it looks like (``:12:11``, ``:00:00/``, a lone
        # ``-``): only a known tag ends it.
        open_tag.lines.append(line)
    elif open_tag is not None and open_tag.tag == "86" and between:
        open_tag.lines.append(line)
    elif between:
        # A bank's header line before a message (``:940:``, ``ABNANL2A``, ``940 00``).
        return None
    elif match or line.startswith(":"):
        raise _fail(
            path,
            number,
            f"unknown tag {line.split(':')[1] if line.count(':') > 1 else line!r}",
            _TAGS_ADVICE,
        )
    else:
        raise _fail(path, number, f"text outside any tag: {line[:40]!r}")
    return open_tag


def _lines(text: str) -> Iterator[str]:
    """Not a list of a million lines at once; the caller strips a trailing carriage return."""
    if "\n" not in text:
        text = text.replace("\r", "\n")  # old Mac line ends
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def _balance_value(value: str) -> str:
    """Without the `` -`` that closes a message on the same line."""
    text = value.strip()
    return text[:-1].rstrip() if text.endswith(" -") else text


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
    texts: list[str] = field(default_factory=list)

    def start(self, number: int, value: str) -> None:
        """``:20:``: a new statement (the one before it must have closed)."""
        if self.balance is not None and self.balance.closing is None:
            raise _fail(
                self.path,
                number,
                f"statement {self.statement} has no closing balance (:62F:) before the next one",
            )
        self.finish_entry()
        self.statement, self.account, self.balance = value.strip(), None, None

    def opening(self, number: int, tag: str, value: str) -> None:
        """``:60F:``: the opening balance."""
        path = self.path
        if self.balance is not None and self.balance.closing is None:
            raise _fail(path, number, f":{tag}: a second opening balance before a closing one")
        self.finish_entry()
        b = _BALANCE.fullmatch(_balance_value(value))
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
        if self.balance is None or self.balance.closing is not None:
            raise _fail(self.path, number, "a statement line (:61:) outside an opening and "
                        "closing balance")  # fmt: skip
        self.finish_entry()
        self.entry = _statement_line(
            self.path, number, value, self.balance, self.account, self.statement
        )
        self.result.entries.append(self.entry)

    def details(self, lines: list[str]) -> None:
        """``:86:``: the last statement line's narration (several ``:86:`` are all kept)."""
        if self.entry is not None and lines:
            # A blank at a wrapped line's start is the text's own (banks wrap at 65 characters).
            self.texts.append(lines[0].strip())
            self.texts.extend(lines[1:])

    def finish_entry(self) -> None:
        """The narration of the statement line just read: all its ``:86:`` text, and its
        reference when the text is structured."""
        entry, texts = self.entry, self.texts
        if entry is not None and texts:
            # The :86: text first, then the :61: line's supplementary details.
            texts.append(entry.narration or "")
            entry.narration = " ".join(t for t in texts if t) or None
            reference = _structured("".join(texts))
            if reference:
                entry.reference = reference
        self.entry, self.texts = None, []

    def closing(self, number: int, tag: str, value: str) -> None:
        """``:62F:``: the closing balance, in the opening balance's currency."""
        path, balance = self.path, self.balance
        self.finish_entry()
        b = _BALANCE.fullmatch(_balance_value(value))
        if balance is None or balance.closing is not None or b is None:
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


def read(path: Path, text: str) -> Read:
    """Every statement of an MT940 file, checked line by line (see the module docstring)."""
    reader = _Reader(path, Read("mt940"))
    last = 1
    for t in _tags(path, text):
        number, tag = t.line, t.tag
        last = number
        if tag == "20":
            reader.start(number, t.value)
            continue
        if reader.statement is None:
            raise _fail(path, number, f":{tag}: before the first statement (:20:)")
        if tag == "25":
            reader.account = " ".join(t.value.split())
        elif tag in ("60F", "60M", "60"):
            reader.opening(number, tag, t.value)
        elif tag == "61":
            reader.line(number, t.value)
        elif tag == "86":
            reader.details(t.lines)
        elif tag in ("62F", "62M", "62"):
            reader.closing(number, tag, t.value)
        elif tag not in ("NS",):
            reader.finish_entry()
    reader.finish_entry()
    if reader.statement is None:
        raise _fail(path, 1, "no statement (:20:) in the file")
    if reader.balance is not None and reader.balance.closing is None:
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
    match = _LINE.fullmatch(first.strip())
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
        booked = _date(path, f"{year % 100:02d}{month:02d}{day:02d}", number, ":61: entry date")
    # RC (a credit reversed) takes money out; RD (a debit reversed) puts it back.
    negative = mark in ("D", "RC")
    amount = _amount(path, match.group("amount"), number, ":61: amount", negative)
    custref = (match.group("custref") or "").strip()
    supplementary = " ".join(rest.split())
    return Entry(
        line=number,
        currency=balance.currency,
        date=booked,
        value_date=value_date,
        amount=amount,
        reversal=mark.startswith("R"),
        reference=custref if custref and custref.upper() != "NONREF" else None,
        bank_reference=(match.group("bankref") or "").strip() or None,
        narration=supplementary or None,
        account=account,
        statement=statement,
        balance=balance,
    )


def _structured(flat: str) -> str | None:
    """Looked for across all lines joined without a break: banks wrap a reference anywhere."""
    for pattern in _STRUCTURED:
        for found in pattern.finditer(flat):
            value = found.group(1).strip()
            if value and value.upper() != "NOTPROVIDED":
                return value
    return None
