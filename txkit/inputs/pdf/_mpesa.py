"""Safaricom's M-Pesa full statement PDF (Kenya), proven row by row newest first (private).

The rows are found as the other layouts' are (:mod:`txkit.inputs.pdf._page`: words by their
place, the column header telling Paid In from Withdrawn); what differs is the order and the
proof, so it has its own reader: see :class:`Mpesa`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from txkit.inputs._model import Balance, Entry, Read
from txkit.inputs.pdf._page import (
    _A,
    _Columns,
    _fail,
    _Layout,
    _Line,
    _narration,
    _Page,
    _plain,
    _trailing_amounts,
)

#: An M-Pesa (Kenya) wallet holds Kenya shillings only; its statement never prints a currency.
_MPESA_CURRENCY: Final = "KES"
_MPESA_ROW: Final = re.compile(
    r"([A-Z0-9]{10}) ([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}) "
)
_MPESA_READ: Final = "Completed"
#: Transaction Status values of attempts that moved no money: left out and counted.
_MPESA_LEFT_OUT: Final = frozenset({"Failed", "Pending", "Cancelled", "Declined", "Expired"})
_MPESA_TOTAL: Final = re.compile(rf"^TOTAL:? {_A} {_A}$", re.MULTILINE)


@dataclass
class _Held:
    """A row read, to be proven once all are: in a newest-first statement a row's balance is
    proven by the row printed below it (the one before it in time)."""

    where: str
    balance: Decimal
    signed: Decimal | None  # None: a row left out (its Transaction Status not Completed)
    time: str


#: The most rows sharing one completion time whose orders are all tried (6! = 720).
_MAX_SAME_TIME: Final = 6


class Mpesa:
    """Safaricom's M-Pesa full statement: rows newest first (Receipt No., Completion Time,
    Details, Transaction Status, Paid In, Withdrawn, Balance) and a summary on page 1.

    In the file's own order, a row's balance minus its movement is the balance the row below
    it must print (a row left out, not Completed, prints the balance unchanged); a row that the
    row below does not prove is refused naming its page and row. Rows sharing one completion
    time (a Fuliza overdraft and the payment it funds, a charge and its transfer) are printed
    in any order: such a group is proven in the order its balances follow, if one does, and
    the load line counts the rows proven so. The oldest row has no row below: its amount is
    proven by the summary's TOTAL paid in and paid out, which must be the rows' sums (and the
    sum of the summary's lines by transaction type). The statement prints no opening balance:
    it is the oldest row's balance before its movement."""

    def __init__(self, path: Path, layout: _Layout, text: str) -> None:
        self.path, self.layout, self.text = path, layout, text
        account = layout.account.search(text)
        self.account = account.group(1) if account else None
        self.columns: _Columns | None = None
        self.rows: list[_Held] = []
        self.skipped = self.reordered = 0
        self.paid_in = self.withdrawn = Decimal(0)
        self.opening: Decimal | None = None
        self.tail: float | None = None
        self.result = Read("pdf")

    def read(self, pages: list[_Page]) -> Read:
        """Every row of every page, proven; the statement's balance and a note."""
        for page in pages:
            row = 0
            self.tail = None
            for line in page.lines:
                row += self._line(page.number, row, line)
        return self._close()

    def _line(self, page: int, row: int, line: _Line) -> int:
        """1 when ``line`` is a row (read or left out), else 0."""
        columns = _mpesa_columns(line)
        if columns is not None:
            self.columns = columns
            return 0
        start = _MPESA_ROW.match(line.text)
        if start is None:
            entries = self.result.entries
            height = max(w["bottom"] - w["top"] for w in line.words)
            if (
                entries
                and self.tail is not None
                and line.top - self.tail <= 2 * height
                and _narration(line)
            ):
                entries[-1].narration = f"{entries[-1].narration or ''} {line.text}".strip()
                self.tail = line.top
            return 0
        where = f"page {page}, row {row + 1} ({line.text[:60]!r})"
        amounts = _trailing_amounts(line)
        words = line.text[start.end() :].split()
        words = words[: len(words) - len(amounts)]
        status = words[-1].title() if words else ""  # COMPLETED in Safaricom's print
        if len(amounts) < 2 or status not in _MPESA_LEFT_OUT | {_MPESA_READ}:
            raise _fail(
                self.path,
                f"{where}: not a row of Details, Transaction Status ({_MPESA_READ}, or "
                f"{', '.join(sorted(_MPESA_LEFT_OUT))}: left out), an amount and a balance",
            )
        if self.columns is None:
            raise _fail(self.path, f"{where}: no column header (Paid In, Withdrawn, Balance) "
                        "above it")  # fmt: skip
        balance = Decimal(_plain(amounts[-1]["text"]))
        if status != _MPESA_READ:
            self.skipped += 1
            self.tail = None  # a left-out row's narration is not an entry's
            self.rows.append(_Held(where, balance, None, start.group(2)))
            return 1
        signed = self._amount(amounts, self.columns, where)
        self.rows.append(_Held(where, balance, signed, start.group(2)))
        if signed > 0:
            self.paid_in += signed
        else:
            self.withdrawn -= signed
        self.result.entries.append(
            Entry(
                line=len(self.result.entries) + 1,
                currency=_MPESA_CURRENCY,
                date=datetime.strptime(start.group(2), "%Y-%m-%d %H:%M:%S").date(),
                amount=format(signed, "f"),
                reference=start.group(1),
                narration=" ".join(words[:-1]) or None,
                account=self.account,
            )
        )
        self.tail = line.top
        return 1

    def _prove_all(self) -> tuple[Decimal, Decimal]:
        """Every row proven from the oldest (the file's last) up: the opening and closing."""
        rows = self.rows[::-1]
        running: Decimal | None = None
        early: list[_Held] = []  # rows left out before the oldest Completed one
        at = 0
        while at < len(rows):
            row = rows[at]
            if row.signed is None:
                if running is None:
                    early.append(row)
                else:
                    self._unchanged(row, running)
                at += 1
                continue
            end = at + 1
            while end < len(rows) and rows[end].signed is not None and rows[end].time == row.time:
                end += 1
            running = self._prove(rows[at:end], running)
            at = end
        if running is None:
            raise _fail(self.path, f"is a {self.layout.name} with no Completed row")
        opening = self.opening if self.opening is not None else running
        for row in early:
            self._unchanged(row, opening)
        return opening, running

    def _prove(self, group: list[_Held], running: Decimal | None) -> Decimal:
        """Rows sharing a completion time (oldest first as printed) proven in the printed
        order, else in the first other order whose balances follow; the balance after them."""
        orders = itertools.permutations(group) if len(group) <= _MAX_SAME_TIME else [group]
        for order in orders:
            before = running
            for row in order:
                signed = row.signed or Decimal(0)
                if before is not None and before + signed != row.balance:
                    break
                before = row.balance
            else:
                if list(order) != group:
                    self.reordered += len(group)
                if running is None:
                    self.opening = order[0].balance - (order[0].signed or Decimal(0))
                return order[-1].balance
        before = running if running is not None else group[0].balance - (group[0].signed or 0)
        for row in group:  # the printed order's first break, named
            signed = row.signed or Decimal(0)
            if before + signed != row.balance:
                raise _fail(
                    self.path,
                    f"{row.where}: the balance printed below it (before it in time), "
                    f"{before:,}, and its {'paid in' if signed > 0 else 'withdrawal'} of "
                    f"{abs(signed):,} make {before + signed:,}, but the row says "
                    f"{row.balance:,}: its rows cannot all be proven, so none is read",
                )
            before = row.balance
        raise AssertionError("unreachable: the printed order was proven")

    def _unchanged(self, out: _Held, balance: Decimal) -> None:
        if out.balance != balance:
            raise _fail(
                self.path,
                f"{out.where}: a row left out (not Completed) prints the balance "
                f"{out.balance:,}, but the balance then was {balance:,}",
            )

    def _amount(self, amounts: list[dict[str, Any]], columns: _Columns, where: str) -> Decimal:
        """The row's signed amount by its column: Paid In a credit, Withdrawn a debit (M-Pesa
        writes it negative; written positive, its column says the same)."""
        moved = [(columns.of(w), Decimal(_plain(w["text"]))) for w in amounts[:-1]]
        moved = [(side, value) for side, value in moved if value != 0 or len(moved) == 1]
        if len(moved) != 1 or moved[0][0] == "unclear":
            raise _fail(self.path, f"{where}: which column its amount stands in (Paid In or "
                        "Withdrawn) is not clear")  # fmt: skip
        side, value = moved[0]
        if side == "credit" and value < 0:
            raise _fail(self.path, f"{where}: a negative figure {value:,} under Paid In")
        return abs(value) if side == "credit" else -abs(value)

    def _close(self) -> Read:
        path, name, result = self.path, self.layout.name, self.result
        entries = result.entries
        opening, closing = self._prove_all()
        total = _MPESA_TOTAL.search(self.text)
        if total is None:
            raise _fail(path, f"is a {name} whose summary TOTAL (paid in, paid out) was not "
                        "found: its oldest row's amount cannot be proven")  # fmt: skip
        paid_in, paid_out = (abs(Decimal(_plain(total.group(i)))) for i in (1, 2))
        for printed, added, what in (
            (paid_in, self.paid_in, "paid in"),
            (paid_out, self.withdrawn, "withdrawn"),
        ):
            if printed != added:
                raise _fail(path, f"its Completed rows' {what} add up to {added:,}, but its "
                            f"summary prints a TOTAL of {printed:,}")  # fmt: skip
        self._types(self.text[: total.start()], paid_in, paid_out)
        # Newest first: the oldest row is the last; the balance record runs in time.
        result.balances.append(
            Balance(
                None,
                self.account,
                _MPESA_CURRENCY,
                format(opening, "f"),
                entries[-1].date,
                len(entries),
                format(closing, "f"),
                entries[0].date,
                1,
            )
        )
        left = (
            f"; {self.skipped:,} row{'s' if self.skipped != 1 else ''} not Completed (failed "
            "or pending) left out"
            if self.skipped
            else ""
        )
        if self.reordered:
            left += (
                f"; {self.reordered:,} rows sharing a completion time proven in the order their "
                "balances follow, not the printed one"
            )
        result.notes.append(
            f"{name} PDF: {len(entries):,} row{'s' if len(entries) != 1 else ''}, newest "
            "first, each proven by the running balance (the oldest by the summary's TOTAL) "
            f"from {opening:,} to {closing:,} {_MPESA_CURRENCY}{left}"
        )
        return result

    def _types(self, head: str, paid_in: Decimal, paid_out: Decimal) -> None:
        """The summary's lines by transaction type (in ``head``, the text above its TOTAL)
        must add up to its TOTAL."""
        lines = re.findall(
            rf"^[A-Za-z][A-Za-z0-9 -]*(?:\([A-Za-z ]+\))?:? {_A} {_A}$", head, re.MULTILINE
        )
        if not lines:
            return
        ins = sum(abs(Decimal(_plain(a))) for a, _ in lines)
        outs = sum(abs(Decimal(_plain(b))) for _, b in lines)
        if (ins, outs) != (paid_in, paid_out):
            raise _fail(self.path, f"its summary's lines by transaction type add up to {ins:,} "
                        f"paid in and {outs:,} paid out, not its TOTAL of {paid_in:,} and "
                        f"{paid_out:,}")  # fmt: skip


def _mpesa_columns(line: _Line) -> _Columns | None:
    """M-Pesa's header: ``Paid in`` (two words), ``Withdrawn`` (Safaricom's print wraps it:
    ``Withdraw`` on the header's line) and ``Balance``, any case."""
    words = line.words
    texts = [w["text"].lower() for w in words]
    if "balance" not in texts or "paid" not in texts:
        return None
    out = next((w for w, t in zip(words, texts, strict=True) if t.startswith("withdraw")), None)
    if out is None:
        return None
    paid = texts.index("paid")
    end = words[paid + 1] if paid + 1 < len(words) and texts[paid + 1] == "in" else words[paid]
    return _Columns((out["x0"] + out["x1"]) / 2, (words[paid]["x0"] + end["x1"]) / 2)
