"""OFX and QFX statements (1.x SGML and 2.x XML), read with ofxtools' parser (private).

The layout (OFX 1.0.2 to 2.2, as banks' "download for Money/Quicken" writes it): a header
(``OFXHEADER:100`` and eight more lines, or ``<?xml ...?><?OFX OFXHEADER="200" ...?>``), then
``<OFX>`` with one ``STMTTRNRS/STMTRS`` (bank account) or ``CCSTMTTRNRS/CCSTMTRS`` (credit
card) per account:

* ``CURDEF`` the statement's currency, ``BANKACCTFROM/ACCTID`` (``CCACCTFROM/ACCTID``) the
  account, ``BANKTRANLIST`` (``DTSTART``, ``DTEND``) holding the ``STMTTRN`` entries:
  ``TRNAMT`` (signed: credits positive), ``DTPOSTED`` (booking), ``DTAVAIL`` (value),
  ``FITID`` (the bank's id), ``REFNUM``, ``NAME``/``PAYEE``, ``MEMO``, ``CURRENCY`` (an
  amount in another currency: refused, since it cannot be added to the statement's);
* ``LEDGERBAL`` (``BALAMT``, ``DTASOF``) the closing balance. OFX gives no opening balance:
  the opening is worked out as the closing balance less the entries (said in a note; with
  the next month's statement of the account, :func:`txkit.inputs.read_statements` checks that
  its opening is this one's closing); a statement without
  ``LEDGERBAL`` is read unproven, and a note says so.

Several accounts (and currencies) in one file are read as several statements, each with its
own balance. ``BANKTRANLISTP`` (pending entries, OFX 2.2) is left out and counted in a note.

Why ofxtools, and only its parser: compared on the public test files (ofxparse's 24 fixtures,
ofxtools' 5, Capitec's and FNB/RMB's own downloads from ``hoogenbj/countary``), ofxtools'
parser (a tag lexer feeding an ElementTree; it expands no entity and reads no DTD) read every
bank and card statement of them; ofxparse read them too but through BeautifulSoup's HTML
parser (a misnested or truncated file is silently reshaped) and was last released in 2021.
ofxtools' typed models (``convert``) were not used: they refuse real downloads (a 10-digit
``BANKID``, a card statement without ``LEDGERBAL``) and recurse past Python's limit on
investment statements. Amounts are read here from their text (``Decimal`` digits, never a
float), with the OFX spec's decimal point or comma.
"""

from __future__ import annotations

import io
import re
from datetime import date
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Final
from xml.etree import ElementTree as ET
from xml.sax.saxutils import unescape

from txkit.errors import DataFileError
from txkit.inputs._model import WHAT, Balance, Entry, Read, check_amount, check_currency

_ADVICE: Final = "download the statement again from the bank as OFX (Money/Quicken)"
_AMOUNT: Final = re.compile(r"[+-]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+)")
_DATE: Final = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})")
# What a file must start with to be OFX (after a byte-order mark and blank lines): a 1.x
# header, a 2.x header after the XML declaration, or the body itself (refused: no header).
_LOOKS: Final = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*(?:OFXHEADER\s*:|<\?xml[^>]{0,200}\?>\s*<\?OFX|<OFX>)"
)
# A DOCTYPE or entity declaration: an OFX statement never has one (entities that expand are
# how a small file becomes gigabytes in a parser that resolves them).
_DECLARATION: Final = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_END: Final = re.compile(rb"</OFX>\s*\Z")
#: The deepest an OFX tree goes is 8 (OFX/BANKMSGSRSV1/STMTTRNRS/STMTRS/BANKTRANLIST/STMTTRN/
#: CURRENCY/CURSYM); a deeper one is not a statement.
MAX_DEPTH: Final = 32
_ENTITIES: Final = {"&quot;": '"', "&apos;": "'", "&nbsp;": " "}


def looks_like(data: bytes) -> bool:
    """Whether the bytes start as an OFX or QFX file does."""
    return bool(_LOOKS.match(data[:4096]))


def _fail(path: Path, line: int | None, problem: str, advice: str = _ADVICE) -> DataFileError:
    return DataFileError(path, problem, advice, lines=[line] if line else [], what=WHAT)


class _Lines:
    """The line of each ``<TAG>`` in the file, in order (ofxtools' tree keeps no line)."""

    def __init__(self, data: bytes, tags: tuple[str, ...]) -> None:
        pattern = re.compile(rb"<(" + b"|".join(t.encode() for t in tags) + rb")>")
        self.found: dict[str, list[int]] = {t: [] for t in tags}
        line, last = 1, 0
        for match in pattern.finditer(data):
            line += data.count(b"\n", last, match.start())
            last = match.start()
            self.found[match.group(1).decode()].append(line)

    def index(self, root: ET.Element) -> dict[int, int]:
        """Each element's line by its id: the n-th element of a tag is the n-th ``<TAG>``
        (both in document order); a file where the counts differ (a tag in a CDATA section)
        gives no line for that tag rather than a wrong one."""
        lines: dict[int, int] = {}
        for tag, found in self.found.items():
            elements = list(root.iter(tag))
            if len(elements) == len(found):
                lines.update((id(e), n) for e, n in zip(elements, found, strict=True))
        return lines


def read(path: Path, data: bytes) -> Read:
    """Every bank and card statement of an OFX file (see the module docstring)."""
    # Imported here: ofxtools loads all its models and its client when imported,
    # which every other use of txkit.inputs would pay for.
    from ofxtools.header import OFXHeaderError
    from ofxtools.Parser import OFXTree

    if _DECLARATION.search(data):
        raise _fail(path, None, "declares a DOCTYPE or entities, which an OFX statement never has")
    tree = OFXTree()
    try:
        # Blank lines before the header (ofxparse's fixture has 12) are skipped here: ofxtools
        # looks at the first 8 lines only.
        tree.parse(io.BytesIO(data.removeprefix(b"\xef\xbb\xbf").lstrip()))
    except OFXHeaderError as exc:
        first = str(exc).split("\n", 1)[0].split(" - <", 1)[0][:80]
        raise _fail(path, 1, f"has no valid OFX header ({first})") from None
    except IndexError:  # ofxtools' stack of open tags, popped by an end tag without its start
        raise _fail(
            path, None, "is not well-formed OFX (an end tag without its start tag)"
        ) from None
    except (ET.ParseError, SyntaxError, UnicodeDecodeError, LookupError, ValueError) as exc:
        message = " ".join(str(exc).split())[:160]
        raise _fail(path, None, f"is not well-formed OFX ({message})") from None
    if not _END.search(data.rstrip(b"\x00\x1a")):
        raise _fail(path, data.count(b"\n") + 1, "does not end with </OFX>: the file is cut short")
    root = tree.getroot()
    if root is None or root.tag != "OFX":
        raise _fail(path, 1, "holds no <OFX> element")
    _check_depth(path, root)
    lines = _Lines(data, ("STMTRS", "CCSTMTRS", "STMTTRN", "LEDGERBAL"))
    _check_status(path, root)
    result = Read("ofx")
    index = lines.index(root)
    pending = 0
    statements = [e for e in root.iter() if e.tag in ("STMTRS", "CCSTMTRS")]
    for stmt in statements:
        pending += _statement(path, stmt, index, result)
    if not statements:
        investment = root.find(".//INVSTMTRS") is not None
        raise _fail(
            path,
            1,
            "holds an investment statement (<INVSTMTRS>), not a bank or card statement"
            if investment
            else "holds no bank or card statement (<STMTRS> or <CCSTMTRS>)",
            "download the bank account's statement (not investments or the account list)",
        )
    if result.balances:
        result.notes.append(
            "OFX gives closing (ledger) balances only: each opening is worked out as the "
            "closing less the entries"
        )
    if pending:
        result.notes.append(f"{pending:,} pending entries (BANKTRANLISTP) left out")
    return result


def _check_depth(path: Path, root: ET.Element) -> None:
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _fail(path, None, f"nests elements {MAX_DEPTH} deep or more (<{element.tag}>): "
                        "not an OFX statement")  # fmt: skip
        stack.extend((child, depth + 1) for child in element)


def _check_status(path: Path, root: ET.Element) -> None:
    """A response whose status is an error (sign-on refused, no such account) holds no
    statement: said with the bank's own message."""
    for holder in root.iter():
        status = holder.find("STATUS")
        if status is None:
            continue
        code = (status.findtext("CODE") or "").strip()
        if code in ("", "0"):
            continue
        message = (status.findtext("MESSAGE") or status.findtext("SEVERITY") or "").strip()
        said = f": {unescape(message, _ENTITIES)!r}" if message else ""
        raise _fail(
            path,
            None,
            f"<{holder.tag}> reports error {code}{said}: the bank sent no statement",
            "download the statement again from the bank",
        )


def _text(element: ET.Element, name: str) -> str | None:
    value = element.findtext(name)
    value = value.strip() if value else None
    return unescape(value, _ENTITIES) if value else None


def _date(path: Path, text: str | None, line: int, where: str) -> date | None:
    if text is None:
        return None
    found = _DATE.match(text)
    try:
        if not found:
            raise ValueError
        return date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    except ValueError:
        raise _fail(path, line, f"{where}: {text!r} is not a date (YYYYMMDD...)") from None


def _amount(path: Path, text: str | None, line: int, where: str) -> str:
    if text is None:
        raise _fail(path, line, f"{where} has no amount")
    if not _AMOUNT.fullmatch(text):
        raise _fail(
            path,
            line,
            f"{where}: {text!r} is not an amount (digits with one decimal point or comma, no "
            "thousands separator)",
        )
    sign = "-" if text.startswith("-") else ""
    whole, _, fraction = text.lstrip("+-").replace(",", ".").partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    plain = whole + (f".{fraction}" if fraction else "")
    signed = sign + plain if plain != "0" else "0"
    return check_amount(path, signed, line, where)


def _statement(path: Path, stmt: ET.Element, lines: dict[int, int], result: Read) -> int:
    """The statement's entries and balance added to ``result``; its pending entries' count."""
    line = lines.get(id(stmt), 1)
    currency = check_currency(path, _text(stmt, "CURDEF") or "", line, f"<{stmt.tag}> <CURDEF>")
    account = _text(stmt, "BANKACCTFROM/ACCTID") or _text(stmt, "CCACCTFROM/ACCTID")
    trans = stmt.find("BANKTRANLIST")
    start = end = None
    entries: list[Entry] = []
    if trans is not None:
        start, end = _text(trans, "DTSTART"), _text(trans, "DTEND")
    period = f"{start[:8]}-{end[:8]}" if start and end else ""
    statement = f"{account or '(no account)'} {period}".strip()
    where = f"<{stmt.tag}> {account or ''}".rstrip()
    if any(e is not stmt and e.tag in ("STMTRS", "CCSTMTRS") for e in stmt.iter()):
        raise _fail(path, line, f"{where}: another statement starts before this one ends "
                    f"(</{stmt.tag}> or a list's end tag is missing)")  # fmt: skip
    # Below the statement, not its list only: an SGML file may leave </BANKTRANLIST> out
    # (Nubank), and the ledger balance then stands inside the list.
    for tx in stmt.iter("STMTTRN"):
        at = lines.get(id(tx), line)
        entries.append(_entry(path, tx, at, where, currency, account, statement))
    ledger = next(stmt.iter("LEDGERBAL"), None)
    if ledger is None:
        result.notes.append(
            f"statement {statement} ({currency}) has no ledger balance (LEDGERBAL): its entries "
            "are read, but that none is missing could not be proven"
        )
    else:
        at = lines.get(id(ledger), line)
        closing = _amount(path, _text(ledger, "BALAMT"), at, f"{where} <LEDGERBAL> <BALAMT>")
        closing_date = _date(path, _text(ledger, "DTASOF"), at, f"{where} <LEDGERBAL> <DTASOF>")
        with localcontext() as exact:
            exact.prec = 80  # 20 digits and 6 decimals per amount, summed: never rounded
            opening = Decimal(closing) - sum((Decimal(e.amount) for e in entries), Decimal(0))
        opening_text = format(opening.normalize() if opening else Decimal(0), "f")
        balance = Balance(
            statement,
            account,
            currency,
            opening_text,
            _date(path, start, line, f"{where} <DTSTART>"),
            line,
            closing,
            closing_date,
            at,
        )
        for entry in entries:
            entry.balance = balance
        result.balances.append(balance)
    result.entries.extend(entries)
    return sum(1 for _ in stmt.iter("STMTTRNP"))


def _entry(
    path: Path,
    tx: ET.Element,
    line: int,
    where: str,
    currency: str,
    account: str | None,
    statement: str,
) -> Entry:
    other = _text(tx, "CURRENCY/CURSYM")
    if other and other != currency:
        raise _fail(
            path,
            line,
            f"{where} <STMTTRN>: an amount in {other} (<CURRENCY>) on a statement in {currency}",
            "download the account's statement in its own currency (amounts of different "
            "currencies are never added)",
        )
    amount = _amount(path, _text(tx, "TRNAMT"), line, f"{where} <STMTTRN> <TRNAMT>")
    posted = _date(path, _text(tx, "DTPOSTED"), line, f"{where} <STMTTRN> <DTPOSTED>")
    if posted is None:
        raise _fail(path, line, f"{where} <STMTTRN> has no <DTPOSTED>")
    value = _date(path, _text(tx, "DTAVAIL"), line, f"{where} <STMTTRN> <DTAVAIL>")
    texts = [_text(tx, "NAME") or _text(tx, "PAYEE/NAME"), _text(tx, "MEMO")]
    check = _text(tx, "CHECKNUM")
    if check:
        texts.append(f"cheque {check}")
    return Entry(
        line=line,
        currency=currency,
        date=posted,
        amount=amount,
        value_date=value,
        reference=_text(tx, "REFNUM"),
        narration=" ".join(t for t in texts if t) or None,
        bank_reference=_text(tx, "FITID"),
        account=account,
        statement=statement,
    )
