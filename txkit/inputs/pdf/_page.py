"""What the PDF readers share (private): a page's lines of placed words, a layout's marks,
amount columns told by their header's place, and the one-line refusal."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from txkit.errors import DataFileError
from txkit.inputs._model import WHAT

_AMOUNT: Final = re.compile(r"-?(?:[0-9]{1,3}(?:,[0-9]{3})*|[0-9]+)?\.[0-9]{2}")


_ADVICE: Final = "download the statement again from the bank (or as CSV, OFX or MT940)"


@dataclass(frozen=True)
class _Layout:
    """What tells one bank's statement: its mark, a row's date, its heads and closing lines."""

    name: str
    mark: re.Pattern[str]
    date: re.Pattern[str]  # at the start of a row; its text parsed with ``formats``
    formats: tuple[str, ...]
    account: re.Pattern[str]
    currency: re.Pattern[str]
    opening: re.Pattern[str] | None = None  # in the statement's head
    closing: re.Pattern[str] | None = None
    debits: re.Pattern[str] | None = None  # printed total of the debits
    credits: re.Pattern[str] | None = None
    refused: str | None = None  # why this layout cannot be proven
    #: Rows newest first, each with its receipt and completion time (M-Pesa's full statement).
    newest_first: bool = False


_A: Final = r"(-?(?:[0-9]{1,3}(?:,[0-9]{3})*|[0-9]+)?\.[0-9]{2})"


def _fail(path: Path, problem: str, advice: str = _ADVICE) -> DataFileError:
    return DataFileError(path, problem, advice, what=WHAT)


@dataclass
class _Line:
    text: str
    top: float
    words: list[dict[str, Any]]


@dataclass
class _Page:
    number: int
    lines: list[_Line] = field(default_factory=list)


def _plain(text: str) -> str:
    """An amount's plain digits: thousands commas gone, a leading point given its zero."""
    plain = text.replace(",", "")
    return plain.replace("-.", "-0.") if plain.startswith("-.") else (
        "0" + plain if plain.startswith(".") else plain
    )  # fmt: skip


@dataclass
class _Columns:
    """Where a page's debit, credit and balance columns stand (the header's word centres)."""

    debit: float
    credit: float

    def of(self, word: dict[str, Any]) -> str:
        """``debit`` or ``credit`` by the side of the line halfway between the two headers on
        which the figure's centre stands; ``unclear`` within a point of that line."""
        centre = (word["x0"] + word["x1"]) / 2
        half = (self.debit + self.credit) / 2
        if abs(centre - half) < 1:
            return "unclear"
        return "debit" if (centre < half) == (self.debit < half) else "credit"


def _trailing_amounts(line: _Line) -> list[dict[str, Any]]:
    """The amounts at the end of a line (at most three: debit, credit, balance)."""
    found: list[dict[str, Any]] = []
    for word in reversed(line.words):
        if len(found) == 3 or not _AMOUNT.fullmatch(word["text"]):
            break
        found.insert(0, word)
    return found


def _narration(line: _Line) -> bool:
    """Whether a line without a date continues the row above (not a page's footer)."""
    text = line.text.strip()
    return bool(text) and not re.match(
        r"(?i)(page\b|\*+ ?end of statement|end of statement|copyright|please examine)", text
    )
