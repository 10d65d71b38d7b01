"""The month's close summary: one A4 page, first in the pack (``00_close_summary.html``).

Per currency (a column each, never added across): the wallet's opening and closing balance,
money in and out by type (conversions on both sides), fees and tax, reserves, the net
movement, the value of the records still open, the settlements in transit, the bank's closing
balance and its charges and other debits, then the exceptions at stake per list (material
first) and the signature block. Every figure comes from what the report's pages wrote (the
wallet statement, the settlements, the exception lists' definitions) or from the store at the
table version the pages read, never computed a second way.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import polars as pl

from txkit.analysis.exception_lists import LISTS
from txkit.analysis.wallet import DIFFERENCE_SIGN
from txkit.calendar import month_bounds
from txkit.money import format_money
from txkit.notebook import read_downloads
from txkit.register import signoff_block

__all__ = [
    "CLOSE_SUMMARY",
    "RECONCILIATION",
    "CloseFigures",
    "close_figures",
    "close_summary_html",
]

#: The close summary's file in the report folder (first in the pack by its name).
CLOSE_SUMMARY: Final = "00_close_summary.html"
#: Statuses of a record that is not final yet (its status can still change).
OPEN_STATUSES: Final = ("pending", "processing", "ongoing", "initiated", "verified")

#: The wallet statement's lines as the summary names them, in order (``None``: a heading).
_WALLET_LINES: Final[tuple[tuple[str, str | None], ...]] = (
    ("Opening balance (ledger)", "opening_ledger"),
    ("Money in: collections", "collections"),
    ("Money in: conversions into the currency", "conversions_in"),
    ("Money out: transfers", "transfers"),
    ("Money out: settlements to the bank", "settlements"),
    ("Money out: conversions out of the currency", "conversions_out"),
    ("Fees", "fees"),
    ("Tax on fees", "tax"),
    ("Reserves held", "reserves_held"),
    ("Reserves released", "reserves_released"),
    ("Net movement of the month", "_net"),
    ("Closing balance, computed", "closing_computed"),
    ("Closing balance, reported by the last record", "closing_reported"),
    (f"Difference ({DIFFERENCE_SIGN})", "difference"),
)


#: The bank reconciliation's lines, per currency: the bank's opening balance, plus what the
#: wallet paid out to it, less what had not arrived by the month's end, plus earlier months'
#: settlements that did, plus what page 06's settlement exceptions put at stake (bank -
#: settlement), plus the bank's own debits, is the bank's expected closing balance; the
#: statement's closing balance less it is the unexplained difference (+: the bank holds more).
#: The wallet's own balance is not in the bank account, so it is not a line of it.
RECONCILIATION: Final[tuple[str, ...]] = (
    "Bank opening balance (statement)",
    "+ settlements paid from the wallet in the month",
    "- settlements in transit at the month's end",
    "+ earlier settlements credited in the month",
    "+ settlement exceptions at stake (page 06: bank - settlement)",
    "+ bank charges and other debits",
    "= expected bank closing balance",
    "Bank closing balance (statement)",
    "Unexplained difference (bank - expected; +: the bank holds more)",
)


@dataclass(frozen=True)
class CloseFigures:
    """The summary's figures, per currency (text amounts, exact)."""

    month: str
    currencies: list[str]
    #: line -> currency -> amount (None: not known for that currency)
    lines: list[tuple[str, dict[str, Decimal | None]]]
    #: (list title, currency, items, amount at stake, material items)
    exceptions: list[tuple[str, str, int, Decimal, int | None]]
    notes: list[str]
    #: The wallet's settlements carried to the bank's closing balance (:data:`RECONCILIATION`);
    #: empty without a bank statement or the settlements page's download.
    reconciliation: list[tuple[str, dict[str, Decimal | None]]] = field(default_factory=list)


def _decimal(value: Any) -> Decimal | None:
    return None if value is None or value == "" else Decimal(str(value))


def close_figures(
    folder: Path,
    month: str,
    *,
    records: pl.LazyFrame | None,
    bank: Any | None,
    material: Mapping[str, int] | None = None,
) -> CloseFigures:
    """The summary's figures from the report folder's downloads, the month's records (lazy,
    the store at the pages' table version) and the bank statements (a
    :class:`txkit.bank.BankStatement`, or None)."""
    notes: list[str] = []
    currencies, lines = _wallet_lines(folder)
    if records is not None:
        currencies, line, note = _open_records_line(records, currencies)
        lines.append(line)
        notes.extend(note)
    settlements_path = folder / "settlements.csv"
    settled = pl.DataFrame()
    if settlements_path.exists():
        settled = pl.read_csv(settlements_path, infer_schema=False)
        lines.append(_transit_line(settled, currencies))
    if bank is not None:
        bank_lines, note = _bank_lines(bank, month, currencies)
        lines.extend(bank_lines)
        notes.extend(note)
    else:
        notes.append("No bank statement was given: the bank's balance and charges are not shown.")
    reconciliation = (
        _reconciliation(month, currencies, dict(lines), settled, bank)
        if bank is not None and settlements_path.exists()
        else []
    )
    if reconciliation:
        notes.extend(_reconciliation_notes(settled))
    exceptions = _exception_lines(folder, material)
    return CloseFigures(month, currencies, lines, exceptions, notes, reconciliation)


_Line = tuple[str, dict[str, Decimal | None]]


def _wallet_lines(folder: Path) -> tuple[list[str], list[_Line]]:
    wallet_path = folder / "wallet_statement.csv"
    wallet = (
        pl.read_csv(wallet_path, infer_schema=False) if wallet_path.exists() else pl.DataFrame()
    )
    currencies = sorted(wallet["currency"].to_list()) if wallet.height else []
    by_currency = {r["currency"]: r for r in wallet.iter_rows(named=True)}
    lines: list[_Line] = []
    for label, column in _WALLET_LINES:
        row: dict[str, Decimal | None] = {}
        for code in currencies:
            values = by_currency[code]
            if column == "_net":
                closing, opening = (
                    _decimal(values.get("closing_computed")),
                    _decimal(values.get("opening_ledger")),
                )
                row[code] = None if closing is None or opening is None else closing - opening
            else:
                row[code] = _decimal(values.get(column))
        lines.append((label, row))
    return currencies, lines


def _open_records_line(
    records: pl.LazyFrame, currencies: list[str]
) -> tuple[list[str], _Line, list[str]]:
    still = (
        records.filter(pl.col("status").cast(pl.String).is_in(OPEN_STATUSES))
        .group_by(pl.col("toCurrency").cast(pl.String).alias("currency"))
        .agg(pl.col("toAmount").sum().alias("amount"), pl.len().alias("n"))
        .collect()
    )
    open_rows = {r["currency"]: r for r in still.iter_rows(named=True)}
    currencies = sorted(set(currencies) | set(open_rows))
    line = (
        "Value of the records still open (status can change)",
        {c: open_rows[c]["amount"] if c in open_rows else Decimal(0) for c in currencies},
    )
    counted = ", ".join(f"{r['n']:,} {c}" for c, r in sorted(open_rows.items()))
    notes = [f"Records still open ({', '.join(OPEN_STATUSES)}): {counted}."] if counted else []
    return currencies, line, notes


def _transit_line(settled: pl.DataFrame, currencies: list[str]) -> _Line:
    transit = settled.filter(pl.col("category") == "timing_next_month")
    sums: dict[str, Decimal | None] = {c: Decimal(0) for c in currencies}
    for code, amount in transit.select("currency", "settlement_amount").iter_rows():
        sums[code] = (sums.get(code) or Decimal(0)) + Decimal(amount)
    return ("Settlements in transit (credited after the month)", sums)


def _bank_lines(bank: Any, month: str, currencies: list[str]) -> tuple[list[_Line], list[str]]:
    first, last = month_bounds(month)
    balances = bank.balances.filter(pl.col("closing_date").is_between(first, last))
    closing = {
        r["currency"]: r["closing"] for r in balances.sort("closing_date").iter_rows(named=True)
    }
    debits = bank.entries.filter(
        (pl.col("direction") == "debit")
        & pl.col("date").is_between(first, last)
        & ~pl.col("reversal").fill_null(False)
    )
    charges: dict[str, Decimal | None] = {c: Decimal(0) for c in currencies}
    listed = []
    for row in debits.iter_rows(named=True):
        charges[row["currency"]] = (charges.get(row["currency"]) or Decimal(0)) + row["amount"]
        listed.append(
            f"{row['date']} {format_money(row['amount'], row['currency'])} "
            f"({row['narration'] or 'no narration'})"
        )
    notes = [f"Bank debits: {'; '.join(listed)}."] if listed else []
    lines: list[_Line] = [
        ("Bank closing balance (statement)", {c: closing.get(c) for c in currencies}),
        ("Bank charges and other debits", charges),
    ]
    return lines, notes


def _exception_lines(
    folder: Path, material: Mapping[str, int] | None
) -> list[tuple[str, str, int, Decimal, int | None]]:
    exceptions = []
    for name, entry in read_downloads(folder).items():
        if name not in LISTS or entry.get("kind") == "table":
            continue
        section = LISTS[name].section
        stake = entry.get("at_stake_by_currency") or {}
        per_currency = entry.get("rows_by_currency") or {}
        for code, amount in sorted(stake.items()):
            exceptions.append(
                (
                    entry["title"],
                    code,
                    int(per_currency.get(code, 0)),
                    Decimal(amount),
                    None if material is None else material.get(section, 0),
                )
            )
    exceptions.sort(key=lambda e: (-(e[4] or 0), e[0], -e[3], e[1]))
    return exceptions


def _reconciliation(
    month: str,
    currencies: list[str],
    lines: Mapping[str, Mapping[str, Decimal | None]],
    settled: pl.DataFrame,
    bank: Any,
) -> list[tuple[str, dict[str, Decimal | None]]]:
    """None where the bank has no statement of the currency: nothing to reconcile, never 0."""
    first, last = month_bounds(month)
    # The opening of the first statement that closes in the month (its opening date is the
    # day before the month starts).
    closed = bank.balances.filter(pl.col("closing_date").is_between(first, last))
    opening = {
        r["currency"]: r["opening"]
        for r in closed.sort("closing_date", descending=True).iter_rows(named=True)
    }
    closing = dict(lines["Bank closing balance (statement)"])
    paid = lines["Money out: settlements to the bank"]
    charges = lines["Bank charges and other debits"]
    amounts = ("settlement_amount", "bank_amount", "difference")
    money = pl.Decimal(38, _scale(settled, amounts))  # the digits the page wrote, exactly
    rows = settled.with_columns(
        pl.col("settlement_amount", "bank_amount", "difference").cast(money),
        pl.col("settlement_date", "bank_date").str.to_date(),
    )
    at_stake = LISTS["settlement_exceptions"].listed(rows)
    transit = rows.filter(pl.col("category") == "timing_next_month")
    earlier = rows.filter(
        (pl.col("category") == "matched")
        & (pl.col("settlement_date") < first)
        & pl.col("bank_date").is_between(first, last)
    )

    def total(frame: pl.DataFrame, column: str, code: str) -> Decimal:
        return Decimal(frame.filter(pl.col("currency") == code)[column].sum() or 0)

    out: dict[str, dict[str, Decimal | None]] = {label: {} for label in RECONCILIATION}
    for code in currencies:
        if opening.get(code) is None or closing.get(code) is None or paid.get(code) is None:
            for label in RECONCILIATION:
                out[label][code] = None
            continue
        parts = [
            Decimal(opening[code]),
            -Decimal(paid[code] or 0),
            -total(transit, "settlement_amount", code),
            total(earlier, "settlement_amount", code),
            total(at_stake, "at_stake", code),
            Decimal(charges.get(code) or 0),
        ]
        expected = sum(parts, Decimal(0))
        values = [*parts, expected, Decimal(closing[code]), Decimal(closing[code]) - expected]
        for label, value in zip(RECONCILIATION, values, strict=True):
            out[label][code] = value
    return [(label, out[label]) for label in RECONCILIATION]


def _reconciliation_notes(settled: pl.DataFrame) -> list[str]:
    ambiguous = settled.filter(pl.col("category") == "ambiguous") if settled.height else settled
    if not ambiguous.height:
        return []
    return [
        "Wallet to bank: the credits that fit an ambiguous settlement (page 06, for a person "
        "to choose) are in the bank's balance but credited to no settlement, so they stay in "
        "the unexplained difference until one is chosen."
    ]


_CSS: Final = (
    "body{font-family:sans-serif;font-size:9pt;margin:1.5rem auto;max-width:64rem;"
    "line-height:1.3}h1{font-size:15pt;margin:0 0 .2rem}h2{font-size:11pt;margin:.7rem 0 .2rem}"
    "table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}"
    "td,th{padding:1px 5px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}"
    "td:first-child,th:first-child{text-align:left;white-space:normal}"
    "tr.total td{font-weight:bold;border-top:1px solid #555}"
    ".meta{color:#444;font-size:8pt}.sign td{height:2.2em;text-align:left;border:none}"
    ".sign td.line{border-bottom:1px solid #000;width:30%}"
    "@page{size:A4;margin:12mm 12mm 16mm 12mm;"
    "@bottom-left{content:'Close summary MONTH';font:8pt sans-serif;color:#444}"
    "@bottom-right{content:'page ' counter(page) ' of ' counter(pages);"
    "font:8pt sans-serif;color:#444}}"
    # Printed, the page must hold one A4 sheet with the sign-off block at its foot.
    "@media print{body{margin:0;max-width:none;font-size:8.5pt;line-height:1.2}"
    "h2{margin:.45rem 0 .15rem}.sign td{height:1.8em}a{color:#000;text-decoration:none}}"
)
_TOTALS: Final = {"Net movement of the month", "Closing balance, computed"}


def _cell(value: Decimal | None, signed: bool = False) -> str:
    return "" if value is None else html.escape(format_money(value, signed=signed))


def _scale(frame: pl.DataFrame, columns: Sequence[str]) -> int:
    digits = [
        len(value.split(".", 1)[1])
        for column in columns
        for value in frame[column].drop_nulls()
        if "." in value
    ]
    return max(digits, default=0)


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _reconciliation_html(figures: CloseFigures) -> str:
    if not figures.reconciliation:
        return ""
    rows = []
    for label, values in figures.reconciliation:
        css = ' class="total"' if label.startswith("=") else ""
        signed = label.startswith(("+", "-", "Unexplained"))
        cells = "".join(f"<td>{_cell(values.get(c), signed)}</td>" for c in figures.currencies)
        rows.append(f"<tr{css}><td>{html.escape(label)}</td>{cells}</tr>")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in figures.currencies)
    return (
        "<h2>Wallet to bank</h2><table><thead><tr><th></th>"
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def close_summary_html(
    figures: CloseFigures, *, as_run: str = "", signatures: Sequence[str] = ()
) -> str:
    """The page (HTML), printable on one A4 page; ``as_run``: what it read, in a line."""
    month = html.escape(figures.month)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in figures.currencies)
    rows = []
    for label, values in figures.lines:
        css = ' class="total"' if label in _TOTALS else ""
        signed = label.startswith("Difference")
        cells = "".join(f"<td>{_cell(values.get(c), signed)}</td>" for c in figures.currencies)
        rows.append(f"<tr{css}><td>{html.escape(label)}</td>{cells}</tr>")
    # One row per list (material first), its amount at stake under each currency's column.
    by_list: dict[str, dict[str, Any]] = {}
    for title, code, n, amount, material in figures.exceptions:
        entry = by_list.setdefault(title, {"items": 0, "stake": {}, "material": material})
        entry["items"] += n
        entry["stake"][code] = amount
    width = len(figures.currencies) + 3
    exceptions = (
        "".join(
            f"<tr><td>{html.escape(title)}</td><td>{e['items']:,}</td>"
            + "".join(f"<td>{_cell(e['stake'].get(c))}</td>" for c in figures.currencies)
            + f"<td>{_count(e['material'])}</td></tr>"
            for title, e in by_list.items()
        )
        or f'<tr><td colspan="{width}">No exception this month.</td></tr>'
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in figures.notes)
    signed = "".join(f"<p>{html.escape(s)}</p>" for s in signatures)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Close summary {month}</title><style>{_CSS.replace('MONTH', month)}</style>"
        f'</head><body><p class="meta"><a href="index.html">Report {month}</a></p>'
        f"<h1>Close summary {month}</h1>"
        '<p class="meta">Per currency, never added across currencies; amounts exact. The wallet '
        "lines are the wallet statement of page 06 (money in positive, money out negative); "
        "the exceptions' amounts at stake are each list's own (the sum of the absolute amounts "
        "at stake of its items), material items first.</p>"
        f"<h2>Wallet and bank</h2><table><thead><tr><th></th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        + _reconciliation_html(figures)
        + "<h2>Exceptions at stake</h2><table><thead><tr><th>list</th><th>items</th>"
        f"{head}<th>material (section, open)</th></tr></thead>"
        f"<tbody>{exceptions}</tbody></table>"
        f'<ul class="meta">{notes}</ul>'
        + (f'<p class="meta"><strong>As run:</strong> {html.escape(as_run)}.</p>' if as_run else "")
        + f"<h2>Sign-off</h2>{signed}"
        # Between the signature markers: `txkit report sign` fills the lines (register._sign).
        + signoff_block([])
        + "</body></html>\n"
    )
