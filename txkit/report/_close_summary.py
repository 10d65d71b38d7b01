"""The month's close summary: two A4 pages at most, first in the pack (``00_close_summary.html``).

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
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import polars as pl

from txkit.analysis.exception_lists import LISTS
from txkit.analysis.wallet import DIFFERENCE_SIGN
from txkit.calendar import month_bounds
from txkit.money import format_money
from txkit.notebook import read_downloads
from txkit.register import FLUX_SECTION, signoff_block
from txkit.register import OPEN_STATUSES as REGISTER_OPEN

__all__ = [
    "AVAILABLE_LABELS",
    "CLOSE_SUMMARY",
    "FLUX_SECTION",
    "RECONCILIATION",
    "ROLL_FORWARD",
    "WALLET_LABELS",
    "CloseFigures",
    "FluxLine",
    "close_figures",
    "close_summary_html",
    "period_line",
    "register_states",
    "roll_forward",
    "with_register",
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
    ("Net movement of the month", "_net"),
    ("Closing balance, computed", "closing_computed"),
    ("Closing balance, reported by the last record", "closing_reported"),
    (f"Difference ({DIFFERENCE_SIGN})", "difference"),
)
#: The available balance, in a block of its own: reserves move money between the ledger and
#: the available balance, not in or out of the wallet, so they are not in the net movement
#: (the wallet statement's model, page 06). Each block foots: the lines above a total are in it.
_AVAILABLE_LINES: Final[tuple[tuple[str, str], ...]] = (
    ("Opening available balance", "opening_available"),
    ("Net movement of the month (the ledger's, above)", "_net"),
    ("Reserves held", "reserves_held"),
    ("Reserves released", "reserves_released"),
    ("Closing available balance, computed", "closing_available_computed"),
    ("Closing available balance, reported by the last record", "closing_available_reported"),
    (f"Available difference ({DIFFERENCE_SIGN})", "available_difference"),
)
#: The labels of the wallet's ledger block, in order.
WALLET_LABELS: Final = tuple(label for label, _ in _WALLET_LINES)
#: The labels of the available balance's block, in order.
AVAILABLE_LABELS: Final = tuple(label for label, _ in _AVAILABLE_LINES)


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
    "+ settlement exceptions, net (page 06: bank - settlement)",
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
    #: The register's roll-forward (:func:`roll_forward`): line -> currency -> (items, amount).
    rolled: dict[str, dict[str, tuple[int, Decimal]]] = field(default_factory=dict)


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
    :class:`txkit.inputs.BankStatement`, or None)."""
    notes: list[str] = []
    currencies, lines = _wallet_lines(folder)
    if records is not None:
        currencies, open_lines, note = _open_records_lines(records, currencies)
        lines.extend(open_lines)
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
    notes.extend(_same_money_notes(folder))
    rolled = roll_forward(folder, month)
    return CloseFigures(month, currencies, lines, exceptions, notes, reconciliation, rolled)


_Line = tuple[str, dict[str, Decimal | None]]


def _wallet_lines(folder: Path) -> tuple[list[str], list[_Line]]:
    wallet_path = folder / "wallet_statement.csv"
    wallet = (
        pl.read_csv(wallet_path, infer_schema=False) if wallet_path.exists() else pl.DataFrame()
    )
    currencies = sorted(wallet["currency"].to_list()) if wallet.height else []
    by_currency = {r["currency"]: r for r in wallet.iter_rows(named=True)}
    lines: list[_Line] = []
    for label, column in (*_WALLET_LINES, *_AVAILABLE_LINES):
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


def _open_records_lines(
    records: pl.LazyFrame, currencies: list[str]
) -> tuple[list[str], list[_Line], list[str]]:
    pending = records.filter(pl.col("status").cast(pl.String).is_in(OPEN_STATUSES))
    kind = pl.col("transType").cast(pl.String)
    # Each side of a record in its own currency, as money in and out are measured (page 01):
    # a conversion is money out of its fromCurrency and money in to its toCurrency.
    sides = pl.concat(
        [
            pending.filter(kind.is_in(["collection", "conversion"])).select(
                pl.col("toCurrency").cast(pl.String).alias("currency"),
                pl.col("toAmount").alias("amount"),
                pl.lit("in").alias("direction"),
            ),
            pending.filter(kind.is_in(["transfer", "settlement"])).select(
                pl.col("toCurrency").cast(pl.String).alias("currency"),
                pl.col("toAmount").alias("amount"),
                pl.lit("out").alias("direction"),
            ),
            pending.filter((kind == "conversion") & pl.col("fromCurrency").is_not_null()).select(
                pl.col("fromCurrency").cast(pl.String).alias("currency"),
                pl.col("fromAmount").alias("amount"),
                pl.lit("out").alias("direction"),
            ),
        ],
        how="vertical_relaxed",
    )
    still = sides.group_by("currency", "direction").agg(pl.col("amount").sum()).collect()
    sums = {(r["currency"], r["direction"]): r["amount"] for r in still.iter_rows(named=True)}
    counts = (
        pending.group_by(pl.col("toCurrency").cast(pl.String).alias("currency")).len().collect()
    )
    open_rows = {r["currency"]: r["len"] for r in counts.iter_rows(named=True)}
    currencies = sorted(set(currencies) | {c for c, _ in sums})
    lines = [
        (
            OPEN_IN,
            {c: Decimal(sums.get((c, "in")) or 0) for c in currencies},
        ),
        (
            OPEN_OUT,
            {c: -Decimal(sums.get((c, "out")) or 0) for c in currencies},
        ),
    ]
    counted = ", ".join(f"{n:,} {c}" for c, n in sorted(open_rows.items()))
    notes = [f"Records still open ({', '.join(OPEN_STATUSES)}): {counted}."] if counted else []
    return currencies, lines, notes


#: The records still open, by direction (money in positive, money out negative).
OPEN_IN: Final = "Records still open, money in: collections, conversions into (status can change)"
OPEN_OUT: Final = (
    "Records still open, money out: transfers, settlements, conversions out (status can change)"
)


def _same_money_notes(folder: Path) -> list[str]:
    """A wallet difference and the balance breaks that make it are the same money: said, so
    the two rows of the exceptions are not added (each list's own amount stands)."""
    path = folder / "wallet_statement.csv"
    if not path.is_file():
        return []
    wallet = pl.read_csv(path, infer_schema=False)
    if "explained_by" not in wallet.columns:
        return []
    out = []
    for row in wallet.iter_rows(named=True):
        explained = _decimal(row.get("explained"))
        if not explained or not row.get("explained_by"):
            continue
        breaks = len([p for p in row["explained_by"].split("; ") if p.strip()])
        out.append(
            f"Wallet statement {row['currency']}: {format_money(explained, row['currency'])} of "
            f"its difference is made of {breaks:,} balance break(s) listed under Balance breaks: "
            "the same money in two lists, not to be added."
        )
    return out


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
    notes += _blank_balance_notes(bank, [c for c in currencies if closing.get(c) is None])
    lines: list[_Line] = [
        ("Bank closing balance (statement)", {c: closing.get(c) for c in currencies}),
        ("Bank charges and other debits", charges),
    ]
    return lines, notes


def _blank_balance_notes(bank: Any, blank: list[str]) -> list[str]:
    """Why the bank's closing balance (and so the wallet to bank) is blank, per currency."""
    notes = []
    for code in blank:
        mine = bank.entries.filter(pl.col("currency") == code)
        closes = bank.balances.filter(pl.col("currency") == code)
        if mine.height == 0:
            why = "the bank statements hold no line in it"
        elif closes.height == 0:
            files = ", ".join(sorted({Path(f).name for f in mine["file"]}))
            why = (
                f"its statement ({files}) gives no opening or closing balance: a CSV or "
                "spreadsheet statement gives them through its running balance column, mapped "
                "as balance=... and written on every line"
            )
        else:
            dates = ", ".join(sorted({str(d) for d in closes["closing_date"]}))
            why = f"no statement of it closes in the month (they close on {dates})"
        notes.append(
            f"Bank closing balance in {code} is blank, and so is its wallet to bank: {why}."
        )
    return notes


#: The roll-forward's lines, in order (the last is the total of the others, signed).
ROLL_FORWARD: Final = (
    "Opening items (open at the month's start)",
    "+ new in the month",
    "- cleared in the month",
    "- written off in the month",
    "= closing items (open at the month's end)",
)


def roll_forward(folder: Path, month: str) -> dict[str, dict[str, tuple[int, Decimal]]]:
    """line -> currency -> (items, sum of their absolute amounts); empty without the
    register's file (a read-only store). An item of an earlier month counts as opening when
    it was still open at the month's start (not resolved before it)."""
    path = folder / REGISTER_FILE
    if not path.is_file():
        return {}
    items = pl.read_csv(path, infer_schema=False)
    needed = {"currency", "amount", "first_month", "status", "resolved_month", "section"}
    if not items.height or not needed <= set(items.columns):  # a file edited by hand
        return {}
    items = items.filter(pl.col("section") != FLUX_SECTION)  # not exceptions: changes
    resolved = pl.col("resolved_month").fill_null("")
    earlier = (pl.col("first_month") < month) & ((resolved == "") | (resolved >= month))
    parts = {
        ROLL_FORWARD[0]: items.filter(earlier),
        ROLL_FORWARD[1]: items.filter(pl.col("first_month") == month),
        ROLL_FORWARD[2]: items.filter((resolved == month) & (pl.col("status") == "resolved")),
        ROLL_FORWARD[3]: items.filter((resolved == month) & (pl.col("status") == "written_off")),
        ROLL_FORWARD[4]: items.filter(pl.col("status").is_in(REGISTER_OPEN)),
    }
    out: dict[str, dict[str, tuple[int, Decimal]]] = {}
    for label, frame in parts.items():
        sums: dict[str, tuple[int, Decimal]] = {}
        for code, amount in frame.select("currency", "amount").iter_rows():
            n, total = sums.get(code or "", (0, Decimal(0)))
            sums[code or ""] = (n + 1, total + (abs(Decimal(amount)) if amount else Decimal(0)))
        out[label] = sums
    return out


#: The month's register as the report wrote it (:func:`txkit.register.summarise`).
REGISTER_FILE: Final = "exceptions.csv"


def with_register(
    figures: CloseFigures, folder: Path, material: Mapping[str, int] | None = None
) -> CloseFigures:
    """``figures`` with the exceptions at stake and the roll-forward of the register the
    report wrote into ``folder`` (read once it is recorded)."""
    return replace(
        figures,
        exceptions=_exception_lines(folder, material),
        rolled=roll_forward(folder, figures.month),
    )


def register_states(folder: Path) -> dict[str, str]:
    """key -> its status in the register the report wrote, with its explanation when it has
    one (``explained: credited on 3 Nov``)."""
    path = folder / REGISTER_FILE
    if not path.is_file():
        return {}
    items = pl.read_csv(path, infer_schema=False)
    if not {"key", "status", "explanation"} <= set(items.columns):
        return {}
    return {
        r["key"]: f"{r['status']}: {r['explanation']}" if r["explanation"] else r["status"]
        for r in items.iter_rows(named=True)
    }


def _exception_lines(
    folder: Path, material: Mapping[str, int] | None
) -> list[tuple[str, str, int, Decimal, int | None]]:
    """Per list and currency: items, amount at stake (sum of the absolute amounts), material
    open items. From the register the report wrote (every list, the wallet statement's too;
    only the items this month's lists hold, so an earlier month's item carried in the register
    is never counted against a list of this month); without one (a read-only store), from the
    lists' downloads."""
    if (folder / REGISTER_FILE).is_file():
        return _register_exception_lines(folder / REGISTER_FILE)
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


def _register_exception_lines(path: Path) -> list[tuple[str, str, int, Decimal, int | None]]:
    register = pl.read_csv(path, infer_schema=False)
    if not register.height:
        return []
    titles = {x.section: x.title for x in LISTS.values()}
    # The flux review's breaches are register items too, shown in their own block.
    listed = register.filter((pl.col("listed") == "true") & (pl.col("section") != FLUX_SECTION))
    still = pl.col("status").is_in(REGISTER_OPEN) & (pl.col("material") == "true")
    counted: dict[tuple[str, str], list[Any]] = {}
    for row in listed.iter_rows(named=True):
        title = titles.get(row["section"], row["section"])
        entry = counted.setdefault((title, row["currency"] or ""), [0, Decimal(0), 0])
        entry[0] += 1
        entry[1] += abs(Decimal(row["amount"])) if row["amount"] else Decimal(0)
    for row in listed.filter(still).iter_rows(named=True):
        title = titles.get(row["section"], row["section"])
        counted[(title, row["currency"] or "")][2] += 1
    material = {t: sum(v[2] for (u, _), v in counted.items() if u == t) for t, _ in counted}
    exceptions = [
        (title, code, n, amount, material[title])
        for (title, code), (n, amount, _) in counted.items()
    ]
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
    notes = _settlement_stake_notes(settled)
    ambiguous = settled.filter(pl.col("category") == "ambiguous") if settled.height else settled
    if not ambiguous.height:
        return notes
    return [
        *notes,
        "Wallet to bank: the credits that fit an ambiguous settlement (page 06, for a person "
        "to choose) are in the bank's balance but credited to no settlement, so they stay in "
        "the unexplained difference until one is chosen.",
    ]


def _settlement_stake_notes(settled: pl.DataFrame) -> list[str]:
    """The settlement exceptions are one set of items: what they put at stake (the sum of
    their absolute amounts, under "Needs action") and what they net to in the wallet to bank
    (bank - settlement, signed) are said side by side where the two differ."""
    if not settled.height:
        return []
    amounts = ("settlement_amount", "bank_amount", "difference")
    money = pl.Decimal(38, _scale(settled, amounts))
    rows = LISTS["settlement_exceptions"].listed(settled.with_columns(pl.col(*amounts).cast(money)))
    out = []
    for code in sorted(set(rows["currency"].drop_nulls())):
        mine = rows.filter(pl.col("currency") == code)["at_stake"].drop_nulls()
        gross = sum((abs(Decimal(v)) for v in mine), Decimal(0))
        net = sum((Decimal(v) for v in mine), Decimal(0))
        if gross != abs(net):
            out.append(
                f"Settlement exceptions {code}: {format_money(gross, code)} at stake (the sum "
                f"of their absolute amounts, under Needs action) nets to "
                f"{format_money(net, code, signed=True)} (bank - settlement) in the wallet "
                "to bank: the same items, shortfalls and excesses offset."
            )
    return out


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
_TOTALS: Final = {
    "Net movement of the month",
    "Closing balance, computed",
    "Closing available balance, computed",
}


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


def period_line(month: str) -> str:
    """The period the figures cover and its time zone, in a sentence (the cut-off)."""
    first, last = month_bounds(month)
    return (
        f"Period: {first.isoformat()} 00:00 to {last.isoformat()} 24:00 UTC (a record belongs "
        "to the month of its createdAt, in UTC; the bank statement's lines are dated in the "
        "bank's own days, as it booked them)."
    )


def _table(figures: CloseFigures, lines: Sequence[_Line], head: str) -> str:
    rows = []
    for label, values in lines:
        css = ' class="total"' if label in _TOTALS else ""
        signed = "difference" in label.lower() and "(" in label
        cells = "".join(f"<td>{_cell(values.get(c), signed)}</td>" for c in figures.currencies)
        rows.append(f"<tr{css}><td>{html.escape(label)}</td>{cells}</tr>")
    return f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _roll_forward_html(figures: CloseFigures, head: str) -> str:
    if not figures.rolled:
        return ""
    codes = sorted({c for sums in figures.rolled.values() for c in sums} | set(figures.currencies))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in codes)
    rows = []
    for label in ROLL_FORWARD:
        sums = figures.rolled.get(label, {})
        cells = "".join(
            f"<td>{sums[c][0]:,} · {_cell(sums[c][1])}</td>" if c in sums else "<td>0</td>"
            for c in codes
        )
        css = ' class="total"' if label.startswith("=") else ""
        rows.append(f"<tr{css}><td>{html.escape(label)}</td>{cells}</tr>")
    return (
        "<h2>Register roll-forward (items · their amounts at stake)</h2><table><thead><tr>"
        f"<th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


#: A flux breach as the page shows it: line, currency, previous, now, change, change in %,
#: the register's key of its explanation.
FluxLine = tuple[str, str, Decimal, Decimal, Decimal, str, str]


def _exceptions_rows(figures: CloseFigures) -> str:
    """One row per list (material first), its amount at stake under each currency's column."""
    by_list: dict[str, dict[str, Any]] = {}
    for title, code, n, amount, material in figures.exceptions:
        entry = by_list.setdefault(title, {"items": 0, "stake": {}, "material": material})
        entry["items"] += n
        entry["stake"][code] = amount
    width = len(figures.currencies) + 3
    return (
        "".join(
            f"<tr><td>{html.escape(title)}</td><td>{e['items']:,}</td>"
            + "".join(f"<td>{_cell(e['stake'].get(c))}</td>" for c in figures.currencies)
            + f"<td>{_count(e['material'])}</td></tr>"
            for title, e in by_list.items()
        )
        or f'<tr><td colspan="{width}">No exception this month.</td></tr>'
    )


def _flux_html(note: str, breaches: Sequence[FluxLine]) -> str:
    if not note:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(line)}</td><td>{html.escape(code)}</td><td>{_cell(was)}</td>"
        f"<td>{_cell(now)}</td><td>{_cell(change, signed=True)}</td><td>{html.escape(pct)}</td>"
        f"<td>{html.escape(key)}</td></tr>"
        for line, code, was, now, change, pct, key in breaches
    )
    table = (
        "<table><thead><tr><th>figure</th><th>currency</th><th>previous</th><th>this month</th>"
        f"<th>change</th><th>%</th><th>explain as</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else ""
    )
    return f'<h2>Flux review</h2><p class="meta">{html.escape(note)}</p>{table}'


def close_summary_html(
    figures: CloseFigures,
    *,
    as_run: str = "",
    signatures: Sequence[str] = (),
    flux: tuple[str, Sequence[FluxLine]] = ("", ()),
) -> str:
    """The page (HTML), printable on two A4 pages; ``as_run``: what it read, in a line. What
    needs action (the exceptions at stake) comes first, then the wallet's ledger balance and
    its available balance (each block foots), then the figures beside them."""
    month = html.escape(figures.month)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in figures.currencies)
    wallet = [line for line in figures.lines if line[0] in WALLET_LABELS]
    available = [line for line in figures.lines if line[0] in AVAILABLE_LABELS]
    other = [
        line
        for line in figures.lines
        if line[0] not in WALLET_LABELS and line[0] not in AVAILABLE_LABELS
    ]
    exceptions = _exceptions_rows(figures)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in figures.notes)
    signed = "".join(f"<p>{html.escape(s)}</p>" for s in signatures)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Close summary {month}</title><style>{_CSS.replace('MONTH', month)}</style>"
        f'</head><body><p class="meta"><a href="index.html">Report {month}</a></p>'
        f"<h1>Close summary {month}</h1>"
        f'<p class="meta"><strong>{html.escape(period_line(figures.month))}</strong></p>'
        '<p class="meta">Per currency, never added across currencies; amounts exact. The wallet '
        "lines are the wallet statement of page 06 (money in positive, money out negative); "
        "the exceptions' amounts at stake are each list's own (the sum of the absolute amounts "
        "at stake of its items), material items first.</p>"
        "<h2>Needs action: exceptions at stake</h2><table><thead><tr><th>list</th>"
        f"<th>items</th>{head}<th>material (open)</th></tr></thead>"
        f"<tbody>{exceptions}</tbody></table>"
        + _flux_html(*flux)
        + _roll_forward_html(figures, head)
        + f"<h2>Wallet: ledger balance</h2>{_table(figures, wallet, head)}"
        + (
            f"<h2>Wallet: reserves and the available balance</h2>{_table(figures, available, head)}"
            if available
            else ""
        )
        + (
            f"<h2>Open records, transit and bank</h2>{_table(figures, other, head)}"
            if other
            else ""
        )
        + _reconciliation_html(figures)
        + f'<ul class="meta">{notes}</ul>'
        + (f'<p class="meta"><strong>As run:</strong> {html.escape(as_run)}.</p>' if as_run else "")
        + f"<h2>Sign-off</h2>{signed}"
        # Between the signature markers: `txkit report sign` fills the lines (register._sign).
        + signoff_block([])
        + "</body></html>\n"
    )
