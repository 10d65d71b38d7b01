"""The merchant's bank account: monthly statements in CSV, MT940 and camt.053, with truth;
on request also as banks give spreadsheets (``xlsx``: a workbook with title rows, date and
number cells and a total row; ``html-xls``: GTBank's ".xls" download, an HTML table with title
and footer rows, the digits as written), read through the CSV's mapping.

Every successful settlement is credited to the merchant's multi-currency bank account
(account ``0123456789`` at Sandbox Bank) from zero to three business days after it, most
with its reference (as the credit's reference and in its narration), some without (only the
merchant's name: found by amount and date). Each month also has a maintenance fee debit.
With a non-zero ``anomaly_rate`` each month plants one case of each kind where the month has
settlements to plant it on (:data:`BANK_CASES`):

* ``timing_next_month``: a settlement of the month's last day (or its latest) credited on
  the next month's first business day (settlements credited after their month's end by
  their ordinary delay are listed too);
* ``amount_differs``: a credit short by a bank charge;
* ``missing_in_bank``: a settlement never credited, and one credited then reversed (an
  ``RC`` line in MT940, ``RvslInd`` in camt.053, a debit with the reference in CSV);
* ``duplicate_credit``: a settlement credited twice;
* ``unknown_credit``: a credit of no settlement (a supplier's refund);
* ``ambiguous``: a settlement credited without its reference beside another credit of the
  same amount and currency in its window.

A random source of its own draws all of it: the records and orders are the same whatever
the bank does. :attr:`Ledger.bank_cases` lists every settlement and credit that does not
simply match, with its category.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final
from xml.sax.saxutils import escape

from txkit.calendar import month_bounds
from txkit.sandbox._render import MERCHANT_NAME

if TYPE_CHECKING:
    from txkit.sandbox.ledger._state import LedgerState

#: The kinds of planted bank cases (the settlement categories other than ``matched``).
BANK_CASES: Final = (
    "timing_next_month",
    "amount_differs",
    "missing_in_bank",
    "duplicate_credit",
    "unknown_credit",
    "ambiguous",
)
ACCOUNT: Final = "0123456789"
BANK_NAME: Final = "Sandbox Bank"
#: The column mapping of the sandbox's CSV statements (``txkit report --bank-columns``).
CSV_COLUMNS: Final = (
    "date=Transaction Date,value_date=Value Date,narration=Narration,reference=Reference,"
    "debit=Debit,credit=Credit,balance=Balance,currency=Currency,date_format=%d/%m/%Y,"
    "thousands=comma"
)
_OPENING: Final = {"NGN": 250_000_000, "USD": 500_000, "GHS": 1_000_000, "KES": 5_000_000}
_CHARGE: Final = {"NGN": 5_250, "USD": 1_500, "GHS": 1_000, "KES": 10_000, "USDT": 100}
_FEE: Final = {"NGN": 2_500_000, "USD": 2_000, "GHS": 5_000, "KES": 50_000, "USDT": 0}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class _Line:
    day: date
    currency: str
    amount: int  # minor units, signed
    narration: str
    reference: str | None = None
    reversal: bool = False
    value_day: date | None = None
    kind: str = "other"


@dataclass
class BankAccount:
    """The merchant's bank account: every entry, by month, and the planted cases."""

    lines: list[_Line] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    months: list[str] = field(default_factory=list)
    credit_of: dict[int, _Line] = field(default_factory=dict)
    # Each month's lines and each (currency, month)'s sum, built at the first statement (the
    # lines are complete when bank_account returns): otherwise a month's statements in three
    # formats would scan every line for each currency's opening balance (docs/benchmarks.md).
    _by_month: dict[str, list[_Line]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _sums: dict[tuple[str, str], int] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def _month_lines(self, month: str) -> list[_Line]:
        if self._by_month is None:
            self._by_month = {}
            for ln in self.lines:
                key = f"{ln.day.year:04d}-{ln.day.month:02d}"
                self._by_month.setdefault(key, []).append(ln)
                self._sums[(ln.currency, key)] = self._sums.get((ln.currency, key), 0) + ln.amount
        return self._by_month.get(month, [])

    def _opening(self, month: str, currency: str) -> int:
        self._month_lines(month)
        return _OPENING.get(currency, 0) + sum(
            total for (cur, key), total in self._sums.items() if cur == currency and key < month
        )

    def currencies(self) -> list[str]:
        return sorted({ln.currency for ln in self.lines})

    def statement(self, month: str, fmt: str) -> bytes:
        """The month's statement as ``csv``, ``mt940``, ``camt053``, ``xlsx`` or ``html-xls``."""
        lines = sorted(self._month_lines(month), key=lambda ln: (ln.currency, ln.day))
        if fmt == "csv":
            return _csv(self, month, lines)
        if fmt == "mt940":
            return _mt940(self, month, lines)
        if fmt == "camt053":
            return _camt(self, month, lines)
        if fmt in ("xlsx", "html-xls"):
            return _sheet(self, month, lines, html=fmt == "html-xls")
        raise ValueError(
            f"statement format must be csv, mt940, camt053, xlsx or html-xls, got {fmt!r}"
        )


def _day(ms: int) -> date:
    return (_EPOCH + timedelta(milliseconds=ms)).date()


def _business(day: date, days: int) -> date:
    while day.weekday() >= 5:
        day += timedelta(days=1)
    for _ in range(days):
        day += timedelta(days=1)
        while day.weekday() >= 5:
            day += timedelta(days=1)
    return day


def _money(minor: int, sep: str = ".", thousands: str = "") -> str:
    sign = "-" if minor < 0 else ""
    whole, cents = divmod(abs(minor), 100)
    text = f"{whole:,}".replace(",", thousands)
    return f"{sign}{text}{sep}{cents:02d}"


def bank_account(g: LedgerState) -> BankAccount:
    """The bank account of the generated ledger (see the module docstring)."""
    cols = g.cols
    rng = random.Random(f"txkit-bank:{g.seed}")
    account = BankAccount()
    settlements = [
        i
        for i in range(g.n)
        if cols.ttype[i] == "settlement" and cols.status[i] == "successful" and not g.hidden[i]
    ]
    by_month: dict[str, list[int]] = {}
    for i in settlements:
        by_month.setdefault(_day(cols.created[i]).strftime("%Y-%m"), []).append(i)
    plant = g.anomaly_rate > 0
    planted: dict[int, str] = {}
    if plant:
        for month, rows in sorted(by_month.items()):
            _choose_cases(g, rng, month, rows, planted)
    amounts: dict[tuple[str, int], list[date]] = {}
    for i in settlements:
        amounts.setdefault((cols.cur[i], cols.amt[i]), []).append(_day(cols.created[i]))
    for i in settlements:
        _credit(g, rng, account, i, planted.get(i), amounts)
    first = _day(g.start_ms)
    months = [
        m for m in sorted({f"{d.year:04d}-{d.month:02d}" for d in _days(first, _day(g.end_ms - 1))})
    ]
    if plant:
        for month in months:
            _unknown_credit(rng, account, month, amounts)
    for month in months:
        year, mon = int(month[:4]), int(month[5:])
        for currency in ("NGN", "USD", "GHS", "KES"):
            account.lines.append(
                _Line(
                    date(year, mon, 1) + timedelta(days=5),
                    currency,
                    -_FEE[currency],
                    "ACCOUNT MAINTENANCE FEE",
                    kind="fee",
                )
            )
    last = max((ln.day for ln in account.lines), default=first)
    after = f"{last.year:04d}-{last.month:02d}"
    account.months = sorted({*months, after})
    account.lines.sort(key=lambda ln: (ln.day, ln.currency, ln.amount < 0, ln.narration))
    _truth(g, account, settlements, planted)
    return account


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=k) for k in range((last - first).days + 1)]


def _choose_cases(
    g: LedgerState, rng: random.Random, month: str, rows: list[int], planted: dict[int, str]
) -> None:
    """Away from the month's ends, except the timing case."""
    cols = g.cols
    last_day = max(_day(cols.created[i]) for i in rows)
    month_end = _month_end(month)
    on_last = [i for i in rows if _day(cols.created[i]) == month_end] or [
        i for i in rows if _day(cols.created[i]) == last_day
    ]
    if on_last:
        planted[rng.choice(on_last)] = "timing_next_month"
    middle = [
        i for i in rows if i not in planted and 5 <= _day(cols.created[i]).day <= month_end.day - 8
    ]
    rng.shuffle(middle)
    for kind in ("amount_differs", "missing_in_bank", "reversed", "duplicate_credit", "ambiguous"):
        if middle:
            planted[middle.pop()] = kind


def _month_end(month: str) -> date:
    return month_bounds(month)[1]


def _credit(
    g: LedgerState,
    rng: random.Random,
    account: BankAccount,
    i: int,
    case: str | None,
    amounts: dict[tuple[str, int], list[date]],
) -> None:
    cols = g.cols
    day = _day(cols.created[i])
    ref, cur, amount = cols.ref[i], cols.cur[i], cols.amt[i]
    u = rng.random()
    lag = 0 if u < 0.6 else 1 if u < 0.9 else 2 if u < 0.98 else 3
    with_ref = rng.random() < 0.85
    # Without its reference a credit is found by amount: only when no other settlement of the
    # same amount and currency is near (else it would be an unplanted ambiguous case).
    alone = sum(abs((d - day).days) <= 12 for d in amounts[(cur, amount)]) == 1
    if case is not None or not alone:
        with_ref = case != "ambiguous"
    if case == "timing_next_month":
        when = _business(_month_end(day.strftime("%Y-%m")) + timedelta(days=1), 0)
    else:
        when = _business(day, lag)
    if case == "missing_in_bank":
        return
    narration = f"SETTLEMENT {MERCHANT_NAME.upper()}" + (f" {ref}" if with_ref else "")
    credited = amount - (_CHARGE[cur] if case == "amount_differs" else 0)
    line = _Line(when, cur, credited, narration, ref if with_ref else None, value_day=day,
                 kind="settlement")  # fmt: skip
    account.lines.append(line)
    account.credit_of[i] = line
    if case == "duplicate_credit":
        account.lines.append(
            _Line(
                _business(when, 1), cur, credited, narration, ref, value_day=day, kind="duplicate"
            )
        )
    if case == "reversed":
        account.lines.append(
            _Line(
                _business(when, 1),
                cur,
                -credited,
                f"RETURN OF CREDIT {ref}",
                ref,
                reversal=True,
                kind="reversal",
            )
        )
    if case == "ambiguous":
        account.lines.append(
            _Line(_business(day, 1), cur, amount, "TRANSFER FROM SANDBOX CUSTOMER", kind="decoy")
        )


def _unknown_credit(
    rng: random.Random, account: BankAccount, month: str, amounts: dict[tuple[str, int], list[date]]
) -> None:
    year, mon = int(month[:4]), int(month[5:])
    day = _business(date(year, mon, 10 + int(rng.random() * 8)), 0)
    # Odd kobo: no settlement (whole naira) has this amount.
    amount = (10_000 + int(rng.random() * 90_000)) * 100 + 37
    account.lines.append(
        _Line(day, "NGN", amount, "REFUND FROM SANDBOX SUPPLIER LTD", kind="unknown")
    )


def _truth(
    g: LedgerState, account: BankAccount, settlements: list[int], planted: dict[int, str]
) -> None:
    cols = g.cols
    for i in settlements:
        day = _day(cols.created[i])
        case = planted.get(i)
        entry = {
            "reference": cols.ref[i],
            "id": cols.oid[i],
            "currency": cols.cur[i],
            "settlement_date": day.isoformat(),
            "amount": _money(cols.amt[i]),
        }
        if case == "reversed":
            account.cases.append({**entry, "kind": "missing_in_bank", "detail": "reversed"})
        elif case in ("missing_in_bank", "duplicate_credit", "ambiguous"):
            account.cases.append({**entry, "kind": case})
        elif case == "amount_differs":
            account.cases.append(
                {**entry, "kind": case, "difference": _money(-_CHARGE[cols.cur[i]])}
            )
        else:
            bank_day = account.credit_of[i].day
            if bank_day.strftime("%Y-%m") != day.strftime("%Y-%m"):
                account.cases.append(
                    {**entry, "kind": "timing_next_month", "bank_date": bank_day.isoformat()}
                )
    for ln in account.lines:
        if ln.kind == "unknown":
            account.cases.append(
                {
                    "kind": "unknown_credit",
                    "reference": None,
                    "id": None,
                    "currency": ln.currency,
                    "bank_date": ln.day.isoformat(),
                    "amount": _money(ln.amount),
                }
            )


# -- writers --------------------------------------------------------------------------------


def _csv(account: BankAccount, month: str, lines: list[_Line]) -> bytes:
    out = ["Transaction Date,Value Date,Narration,Reference,Debit,Credit,Balance,Currency"]
    for currency in account.currencies():
        balance = account._opening(month, currency)
        for ln in (x for x in lines if x.currency == currency):
            balance += ln.amount
            debit = _money(-ln.amount, thousands=",") if ln.amount < 0 else ""
            credit = _money(ln.amount, thousands=",") if ln.amount > 0 else ""
            out.append(
                ",".join(
                    [
                        ln.day.strftime("%d/%m/%Y"),
                        (ln.value_day or ln.day).strftime("%d/%m/%Y"),
                        ln.narration,
                        ln.reference or "",
                        f'"{debit}"' if debit else "",
                        f'"{credit}"' if credit else "",
                        f'"{_money(balance, thousands=",")}"',
                        currency,
                    ]
                )
            )
    return ("\n".join(out) + "\n").encode()


def _mt940(account: BankAccount, month: str, lines: list[_Line]) -> bytes:
    out: list[str] = []
    yymm = month[2:4] + month[5:7]
    for number, currency in enumerate(account.currencies(), start=1):
        opening = account._opening(month, currency)
        mine = [x for x in lines if x.currency == currency]
        start = date(int(month[:4]), int(month[5:]), 1) - timedelta(days=1)
        end = _month_end(month)
        closing = opening + sum(x.amount for x in mine)
        out += [
            "{1:F01SNDBNGLAXXXX0000000000}{2:O940"
            + f"1200{end:%y%m%d}SNDBNGLAXXXX0000000000"
            + f"{end:%y%m%d}1200N"
            + "}{4:",
            f":20:STMT{yymm}{currency}",
            f":25:NG/{ACCOUNT}",
            f":28C:{int(yymm):05d}/{number:03d}",
            f":60F:{'C' if opening >= 0 else 'D'}{start:%y%m%d}{currency}"
            + _money(abs(opening), ","),
        ]
        for k, ln in enumerate(mine, start=1):
            mark = ("RC" if ln.reversal else "D") if ln.amount < 0 else "C"
            value = ln.value_day or ln.day
            kind = "NCHG" if ln.kind == "fee" else "NTRF"
            custref = (ln.reference or "NONREF")[:16]
            out.append(
                f":61:{value:%y%m%d}{ln.day:%m%d}{mark}{_money(abs(ln.amount), ',')}{kind}"
                f"{custref}//B{ln.day:%y%m%d}{k:05d}"
            )
            details = f"/EREF/{ln.reference}/REMI/{ln.narration}" if ln.reference else ln.narration
            out.append(":86:" + details[:65])
            if len(details) > 65:
                out.append(details[65:130])
        out += [
            f":62F:{'C' if closing >= 0 else 'D'}{end:%y%m%d}{currency}"
            + _money(abs(closing), ","),
            "-}",
        ]
    return ("\n".join(out) + "\n").encode()


def _camt(account: BankAccount, month: str, lines: list[_Line]) -> bytes:
    end = _month_end(month)
    start = date(int(month[:4]), int(month[5:]), 1)
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08">',
        "  <BkToCstmrStmt>",
        f"    <GrpHdr><MsgId>SNDB-{month}</MsgId><CreDtTm>{end}T23:59:00Z</CreDtTm></GrpHdr>",
        "    <Stmt>",
        f"      <Id>STMT-{month}</Id>",
        f"      <FrToDt><FrDtTm>{start}T00:00:00Z</FrDtTm>"
        f"<ToDtTm>{end}T23:59:59Z</ToDtTm></FrToDt>",
        f"      <Acct><Id><Othr><Id>{ACCOUNT}</Id></Othr></Id>"
        f"<Nm>{escape(MERCHANT_NAME.upper())}</Nm></Acct>",
    ]
    for currency in account.currencies():
        opening = account._opening(month, currency)
        closing = opening + sum(x.amount for x in lines if x.currency == currency)
        for code, value, day in (
            ("OPBD", opening, start - timedelta(days=1)),
            ("CLBD", closing, end),
        ):
            parts.append(
                f"      <Bal><Tp><CdOrPrtry><Cd>{code}</Cd></CdOrPrtry></Tp>"
                f'<Amt Ccy="{currency}">{_money(abs(value))}</Amt>'
                f"<CdtDbtInd>{'CRDT' if value >= 0 else 'DBIT'}</CdtDbtInd>"
                f"<Dt><Dt>{day}</Dt></Dt></Bal>"
            )
    for k, ln in enumerate(lines, start=1):
        mark = "CRDT" if ln.amount > 0 else "DBIT"
        reversal = "<RvslInd>true</RvslInd>" if ln.reversal else ""
        value = f"<ValDt><Dt>{ln.value_day}</Dt></ValDt>" if ln.value_day else ""
        refs = ""
        if ln.reference:
            refs = (
                f"<NtryDtls><TxDtls><Refs><EndToEndId>{ln.reference}</EndToEndId></Refs>"
                f"<RmtInf><Strd><CdtrRefInf><Ref>{ln.reference}</Ref></CdtrRefInf></Strd>"
                "</RmtInf></TxDtls></NtryDtls>"
            )
        parts.append(
            f'      <Ntry><Amt Ccy="{ln.currency}">{_money(abs(ln.amount))}</Amt>'
            f"<CdtDbtInd>{mark}</CdtDbtInd>{reversal}<Sts><Cd>BOOK</Cd></Sts>"
            f"<BookgDt><Dt>{ln.day}</Dt></BookgDt>{value}"
            f"<AcctSvcrRef>B{ln.day:%y%m%d}{k:05d}</AcctSvcrRef>{refs}"
            f"<AddtlNtryInf>{escape(ln.narration)}</AddtlNtryInf></Ntry>"
        )
    parts += ["    </Stmt>", "  </BkToCstmrStmt>", "</Document>"]
    return ("\n".join(parts) + "\n").encode()


def _sheet(account: BankAccount, month: str, lines: list[_Line], *, html: bool) -> bytes:
    first, last = month_bounds(month)
    titles = [
        f"{BANK_NAME.upper()} PLC CUSTOMER STATEMENT {MERCHANT_NAME.upper()}",
        f"Account No: {ACCOUNT}",
        f"Period: {first:%d/%b/%Y} To {last:%d/%b/%Y}",
    ]
    header = [
        "Transaction Date", "Value Date", "Narration", "Reference", "Debit", "Credit",
        "Balance", "Currency",
    ]  # fmt: skip
    rows: list[list[object]] = []
    totals: list[list[object]] = []
    for currency in account.currencies():
        balance = account._opening(month, currency)
        debits = credits = 0
        for ln in (x for x in lines if x.currency == currency):
            balance += ln.amount
            debits += -ln.amount if ln.amount < 0 else 0
            credits += ln.amount if ln.amount > 0 else 0
            rows.append([
                ln.day, ln.value_day or ln.day, ln.narration, ln.reference or "",
                -ln.amount if ln.amount < 0 else None, ln.amount if ln.amount > 0 else None,
                balance, currency,
            ])  # fmt: skip
        totals.append([f"Total {currency}", None, None, None, debits, credits, None, currency])
        totals.append(
            [f"Closing Balance {currency}", None, None, None, None, None, balance, currency]
        )
    footer = ["PLEASE ADDRESS ALL ENQUIRIES TO", f"{BANK_NAME.upper()} PLC"]
    if html:
        return _html_sheet(titles, header, rows + totals, footer)
    return _xlsx_sheet(titles, header, rows + totals, footer)


def _html_sheet(
    titles: list[str], header: list[str], rows: list[list[object]], footer: list[str]
) -> bytes:
    def cell(value: object) -> str:
        if isinstance(value, int):
            return f"<td>{_money(value, thousands=',')}</td>"
        if isinstance(value, date):
            return f"<td>{value:%d/%m/%Y}</td>"
        return f"<td>{escape(str(value or ''))}</td>"

    width = len(header)
    out = ['<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Statement</title></head>',
           '<body><table width="100%">']  # fmt: skip
    out += [f'<tr><td colspan="{width}">{escape(t)}</td></tr>' for t in titles]
    out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>")
    out += ["<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows]
    out += [f'<tr><td colspan="{width}">{escape(t)}</td></tr>' for t in footer]
    out.append("</table></body></html>")
    return "\n".join(out).encode()


def _xlsx_sheet(
    titles: list[str], header: list[str], rows: list[list[object]], footer: list[str]
) -> bytes:
    import io

    import xlsxwriter

    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer, {"in_memory": True}) as book:
        sheet = book.add_worksheet("Statement")
        money = book.add_format({"num_format": "#,##0.00"})
        day = book.add_format({"num_format": "dd/mm/yyyy"})
        at = 0
        for title in titles:
            sheet.write_string(at, 0, title)
            at += 1
        at += 1  # a blank row, as banks leave one
        sheet.write_row(at, 0, header)
        for row in rows:
            at += 1
            for col, value in enumerate(row):
                if isinstance(value, date):
                    sheet.write_datetime(at, col, datetime.combine(value, datetime.min.time()), day)
                elif isinstance(value, int):
                    # a double holds every amount here exactly enough to show its two decimals
                    sheet.write_number(at, col, float(money_text(value)), money)
                elif value:
                    sheet.write_string(at, col, str(value))
        at += 1
        for text in footer:
            at += 1
            sheet.write_string(at, 0, text)
    return buffer.getvalue()


def money_text(minor: int) -> Decimal:
    """Minor units as an exact decimal (for tests)."""
    return Decimal(minor).scaleb(-2)
