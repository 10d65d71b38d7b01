"""What every statement reader returns: one frame of entries, one of balances (private).

Each reader (CSV, MT940, camt.053) turns a file into :class:`Entry` rows and
:class:`Balance` rows with text amounts, checked as exact plain decimals; :func:`frames`
makes the typed polars frames from them (amounts cast from their digits, never through a
float) and proves, per statement and currency, that the opening balance plus the booked
entries equals the closing balance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import polars as pl

from txkit.errors import DataFileError

#: How a bank statement is named in messages.
WHAT: Final = "bank statement"
#: The most decimals an amount may have (USDT and USDC have six).
MAX_DECIMALS: Final = 6
_PLAIN: Final = re.compile(rf"[+-]?[0-9]{{1,20}}(\.[0-9]{{1,{MAX_DECIMALS}}})?")
_CURRENCY: Final = re.compile(r"[A-Z]{3,4}")

#: The entries frame's columns, in order, with their types (``amount`` is a decimal whose
#: scale is the file's widest, at least 2).
ENTRY_COLUMNS: Final[dict[str, pl.DataType]] = {
    "file": pl.String(),
    "line": pl.UInt32(),
    "format": pl.String(),
    "account": pl.String(),
    "statement": pl.String(),
    "currency": pl.String(),
    "date": pl.Date(),
    "value_date": pl.Date(),
    "amount": pl.Decimal(38, 2),
    "direction": pl.String(),
    "reversal": pl.Boolean(),
    "booked": pl.Boolean(),
    "reference": pl.String(),
    "narration": pl.String(),
    "bank_reference": pl.String(),
}
BALANCE_COLUMNS: Final[dict[str, pl.DataType]] = {
    "file": pl.String(),
    "statement": pl.String(),
    "account": pl.String(),
    "currency": pl.String(),
    "opening_date": pl.Date(),
    "opening": pl.Decimal(38, 2),
    "closing_date": pl.Date(),
    "closing": pl.Decimal(38, 2),
    "entries": pl.UInt32(),
    "opening_line": pl.UInt32(),
    "closing_line": pl.UInt32(),
}


@dataclass(slots=True)
class Entry:
    """One statement line as read: ``amount`` is exact text, signed (credits positive)."""

    line: int
    currency: str
    date: date
    amount: str
    reversal: bool = False
    booked: bool = True
    value_date: date | None = None
    reference: str | None = None
    narration: str | None = None
    bank_reference: str | None = None
    account: str | None = None
    statement: str | None = None
    #: The balance this entry is proven by (MT940: several statements in a file may share
    #: their ``:20:`` and ``:25:``); None: the statement, account and currency's.
    balance: Balance | None = field(default=None, repr=False, compare=False)
    #: The bank entry a detail row belongs to (camt.053: the ``Ntry`` of a batch's
    #: ``TxDtls``), by its line; None: the row is the bank entry.
    group: int | None = None


@dataclass
class Balance:
    """A statement's opening and closing balance in one currency (exact text, signed)."""

    statement: str | None
    account: str | None
    currency: str
    #: None: the statement gives a closing balance only (camt.053 from Wise), unproven.
    opening: str | None
    opening_date: date | None
    opening_line: int
    closing: str | None = None
    closing_date: date | None = None
    closing_line: int | None = None


@dataclass
class Read:
    """What a reader found in one file; ``private``: opened with a password (what it holds is
    then never kept outside it: :mod:`txkit.inputs._kept`)."""

    format: str
    entries: list[Entry] = field(default_factory=list)
    balances: list[Balance] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    private: bool = False


def check_amount(path: Path, text: str, line: int, where: str) -> str:
    """``text`` if it is a plain decimal with at most :data:`MAX_DECIMALS` decimals."""
    if not _PLAIN.fullmatch(text):
        raise DataFileError(
            path,
            f"{where}: {text!r} is not an amount (digits, a decimal point and at most "
            f"{MAX_DECIMALS} decimals)",
            "export the statement again from the bank; amounts are never guessed",
            lines=[line],
            what=WHAT,
        )
    return text


def check_currency(path: Path, text: str, line: int, where: str) -> str:
    """``text`` if it is a 3- or 4-letter currency code."""
    if not _CURRENCY.fullmatch(text or ""):
        raise DataFileError(
            path,
            f"{where}: {text!r} is not a currency code (3 or 4 capital letters, e.g. NGN)",
            "export the statement again from the bank",
            lines=[line],
            what=WHAT,
        )
    return text


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _exact(texts: list[str | None], scale: int) -> pl.Series:
    """Trailing digits only appended, never rounded."""
    return pl.Series(texts, dtype=pl.String).cast(pl.Decimal(38, scale))


def frames(path: Path, read: Read) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The typed entries and balances of one file; every balance proven by its entries.

    Raises:
        DataFileError: a statement whose opening balance plus its booked entries is not its
            closing balance (a truncated or damaged file: the closing balance's line).
    """
    amounts = [e.amount for e in read.entries]
    balance_texts = [b.opening for b in read.balances if b.opening is not None] + [
        b.closing for b in read.balances if b.closing is not None
    ]
    scale = max([2, *map(_decimals, amounts), *map(_decimals, balance_texts)])
    name = str(path)
    entries = _entries_frame(name, read, amounts, scale)
    # Each balance's booked entries, gathered in one pass (a file of 64,000 statements is
    # read in linear time, not entries x statements).
    by_balance: dict[int, list[Decimal]] = {}
    by_key: dict[tuple[str | None, str | None, str], list[Decimal]] = {}
    for e in read.entries:
        if not e.booked:
            continue
        if e.balance is not None:
            by_balance.setdefault(id(e.balance), []).append(Decimal(e.amount))
        else:
            by_key.setdefault((e.statement, e.account, e.currency), []).append(Decimal(e.amount))
    rows = [
        _balance_row(
            path,
            name,
            b,
            by_balance[id(b)]
            if id(b) in by_balance
            else by_key.get((b.statement, b.account, b.currency), []),
        )
        for b in read.balances
    ]
    balances = pl.DataFrame(
        rows,
        schema={**BALANCE_COLUMNS, "opening": pl.String(), "closing": pl.String()},
        orient="row",
    ).with_columns(
        pl.col("opening").cast(pl.Decimal(38, scale)), pl.col("closing").cast(pl.Decimal(38, scale))
    )
    return entries, balances


def _entries_frame(name: str, read: Read, amounts: list[str], scale: int) -> pl.DataFrame:
    entries = pl.DataFrame(
        {
            "file": [name] * len(read.entries),
            "line": [e.line for e in read.entries],
            "format": [read.format] * len(read.entries),
            "account": [e.account for e in read.entries],
            "statement": [e.statement for e in read.entries],
            "currency": [e.currency for e in read.entries],
            "date": [e.date for e in read.entries],
            "value_date": [e.value_date for e in read.entries],
            "amount": _exact(amounts, scale),
            "direction": ["credit" if not a.startswith("-") else "debit" for a in amounts],
            "reversal": [e.reversal for e in read.entries],
            "booked": [e.booked for e in read.entries],
            "reference": [e.reference for e in read.entries],
            "narration": [e.narration for e in read.entries],
            "bank_reference": [e.bank_reference for e in read.entries],
        },
        schema={**ENTRY_COLUMNS, "amount": pl.Decimal(38, scale)},
    )
    # A zero amount is neither: it moves nothing and is never matched.
    return entries.with_columns(
        pl.when(pl.col("amount") == 0)
        .then(pl.lit("none"))
        .otherwise("direction")
        .alias("direction")
    )


def _balance_row(path: Path, name: str, b: Balance, booked: list[Decimal]) -> dict[str, Any]:
    count = len(booked)
    if b.closing is not None and b.opening is not None:
        expected = Decimal(b.opening) + sum(booked, Decimal(0))
        if expected != Decimal(b.closing):
            raise DataFileError(
                path,
                f"statement {b.statement or ''} {b.currency}: the opening balance "
                f"{Decimal(b.opening):,} (line {b.opening_line}) plus its {count:,} booked "
                f"entries is {expected:,}, but the closing balance says "
                f"{Decimal(b.closing):,}".replace("statement  ", "statement "),
                "entries are missing or damaged: export the statement again from the bank "
                "(nothing is matched against a statement that does not add up)",
                lines=[b.closing_line or b.opening_line],
                what=WHAT,
            )
    return {
        "file": name,
        "statement": b.statement,
        "account": b.account,
        "currency": b.currency,
        "opening_date": b.opening_date,
        "opening": b.opening,
        "closing_date": b.closing_date,
        "closing": b.closing,
        "entries": count,
        "opening_line": b.opening_line,
        "closing_line": b.closing_line,
    }
