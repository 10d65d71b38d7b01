"""The close summary as data a bookkeeper posts from.

* :func:`close_summary_frame`, :func:`write_close_files`: every figure of the close summary,
  one row per line and currency, as ``close_summary.csv`` and ``close_summary.xlsx`` beside
  its page: the block, the line, the exact amount, its sign stated in words, and for a
  movement of the wallet the debit or credit of the wallet's own account.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import polars as pl

from txkit.calendar import month_bounds
from txkit.output import atomic_path, csv_safe, write_xlsx
from txkit.report._close_summary import (
    AVAILABLE_LABELS,
    RECONCILIATION,
    WALLET_LABELS,
    CloseFigures,
)

__all__ = [
    "CLOSE_CSV",
    "CLOSE_XLSX",
    "close_summary_frame",
    "write_close_files",
]

CLOSE_CSV: Final = "close_summary.csv"
CLOSE_XLSX: Final = "close_summary.xlsx"
_TIME_ZONE: Final = "UTC"


#: The wallet's movements: the lines posted as debits and credits. Every sign text starts with
#: a word: a CSV cell starting with "+" or "-" is written with a leading "'" (formula guard).
_POSTED: Final = "positive: into the wallet (debit the wallet), negative: out of it (credit it)"


def _sign(block: str, label: str) -> str:
    if label.startswith("Net movement"):
        return "the total of the movements above (+: the balance grew)"
    if block == "Wallet: ledger balance" and label not in _BALANCES:
        return _POSTED
    if block == "Wallet: available balance" and label.startswith(("Reserves", "Net")):
        return "positive: into the available balance, negative: out of it"
    if "difference" in label.lower():
        return label[label.index("(") + 1 : -1] if "(" in label else "positive: more than expected"
    if block == "Wallet to bank":
        return "as the line's own sign (+ added, - deducted)" if label[0] in "+-" else "balance"
    if label.startswith("Records still open"):
        return "positive: money in, negative: money out (memo: its status can change)"
    if block == "Register roll-forward":
        return "items and the sum of their absolute amounts at stake"
    return "balance" if "balance" in label.lower() else "memo, as reported"


_BALANCES: Final = {
    "Opening balance (ledger)",
    "Net movement of the month",
    "Closing balance, computed",
    "Closing balance, reported by the last record",
}


def close_summary_frame(figures: CloseFigures) -> pl.DataFrame:
    """One row per line and currency (the currencies never added): ``month``, ``period``,
    ``block``, ``line``, ``currency``, ``amount`` (exact), ``debit``, ``credit`` (the wallet
    account's, for its movements), ``items`` (the roll-forward's), ``sign`` (in words)."""
    first, last = month_bounds(figures.month)
    period = f"{first.isoformat()} to {last.isoformat()} ({_TIME_ZONE})"
    blocks: list[tuple[str, list[tuple[str, dict[str, Decimal | None]]]]] = [
        ("Wallet: ledger balance", [x for x in figures.lines if x[0] in WALLET_LABELS]),
        ("Wallet: available balance", [x for x in figures.lines if x[0] in AVAILABLE_LABELS]),
        (
            "Open records, transit and bank",
            [x for x in figures.lines if x[0] not in WALLET_LABELS + AVAILABLE_LABELS],
        ),
        ("Wallet to bank", [x for x in figures.reconciliation if x[0] in RECONCILIATION]),
    ]
    rows: list[dict[str, Any]] = []
    for block, lines in blocks:
        for label, values in lines:
            for code in figures.currencies:
                amount = values.get(code)
                if amount is None:
                    continue
                sign = _sign(block, label)
                posted = sign == _POSTED
                rows.append(
                    {
                        "block": block,
                        "line": label,
                        "currency": code,
                        "amount": amount,
                        "debit": amount if posted and amount > 0 else None,
                        "credit": -amount if posted and amount < 0 else None,
                        "items": None,
                        "sign": sign,
                    }
                )
    for title, code, n, amount, material in figures.exceptions:
        rows.append({"block": "Exceptions at stake", "line": f"{title} (material: {material})",
                     "currency": code, "amount": amount, "debit": None, "credit": None,
                     "items": n, "sign": "the sum of the absolute amounts at stake"})  # fmt: skip
    for label, sums in figures.rolled.items():
        for code, (n, amount) in sorted(sums.items()):
            rows.append({"block": "Register roll-forward", "line": label, "currency": code,
                         "amount": amount, "debit": None, "credit": None, "items": n,
                         "sign": _sign("Register roll-forward", label)})  # fmt: skip
    scale = max((_exponent(r["amount"]) for r in rows), default=2)
    money = pl.Decimal(38, scale)
    schema = {"block": pl.String, "line": pl.String, "currency": pl.String, "amount": money,
              "debit": money, "credit": money, "items": pl.Int64, "sign": pl.String}  # fmt: skip
    frame = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return frame.select(
        pl.lit(figures.month).alias("month"), pl.lit(period).alias("period"), pl.all()
    )


def _exponent(amount: Decimal | None) -> int:
    return 2 if amount is None else max(2, -int(amount.normalize().as_tuple().exponent))


def write_close_files(folder: Path, frame: pl.DataFrame) -> None:
    """``close_summary.csv`` and ``close_summary.xlsx`` in ``folder``, each written whole or
    not at all (the report's one Excel writer: A4 landscape, money formatted)."""
    safe = csv_safe(frame)
    with atomic_path(folder / CLOSE_CSV) as tmp:
        safe.write_csv(tmp)
    with atomic_path(folder / CLOSE_XLSX) as tmp:
        write_xlsx(safe, tmp, sheet="Close summary", last=())
