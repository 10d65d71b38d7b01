"""Issue 46, item 4: a property of the readers. For generated CSV and .xlsx statements and
orders files, in every writing of amounts (decimal dot or comma, thousands none, comma, dot,
space, no-break space or apostrophe, declared or left for the file to say), every layout of
the sign (a signed amount, parentheses, a direction column, credit and debit columns with
debits unsigned or negative) and with or without a running balance: what is read is the
file's amount, or the file is refused in one line. Never another number."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import xlsxwriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from txkit.errors import DataFileError
from txkit.inputs import read_statement
from txkit.inputs.orders import read_orders_file

# (decimal, thousands) as the file writes them, and their names in the mapping
_WRITINGS = [
    (".", ""), (",", ""), (".", ","), (",", "."), (",", " "), (",", "\u00a0"), (".", "\u202f"),
    (".", "'"),
]  # fmt: skip
_NAMES = {".": "dot", ",": "comma", "": "none", " ": "space", "\u00a0": "space",
          "\u202f": "space", "'": "apostrophe"}  # fmt: skip
_DIRECTIONS = [("C", "D"), ("CR", "DR"), ("credit", "debit"), ("Kredit", "Debet"), ("cr", "Dr")]
_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

amounts = st.decimals(
    min_value=Decimal("-99999999.99"), max_value=Decimal("99999999.99"), places=2
).filter(lambda a: a != 0)


@dataclass(frozen=True)
class Case:
    amounts: list[Decimal]
    writing: tuple[str, str]
    grouped: list[bool]  # per value: thousands separators written or not
    declared: tuple[str, str] | None  # the mapping's writing (None: the file says)
    layout: str  # signed, parentheses, direction, credit_debit, negative_debits
    balance: bool
    words: tuple[str, str]
    xlsx: str  # "", "text" (cells of text), "numbers" (number cells; signed layout only)


def _write_number(value: Decimal, writing: tuple[str, str], grouped: bool) -> str:
    """|value| as the writing writes it."""
    decimal, thousands = writing
    whole, _, fraction = f"{abs(value):.2f}".partition(".")
    if grouped and thousands:
        head = len(whole) % 3 or 3
        whole = thousands.join(
            [whole[:head]] + [whole[i : i + 3] for i in range(head, len(whole), 3)]
        )
    return f"{whole}{decimal}{fraction}"


def _rows(case: Case) -> tuple[list[str], list[list[object]]]:
    header = ["Date", "Details"]
    if case.layout in ("signed", "parentheses"):
        header.append("Amount")
    elif case.layout == "direction":
        header += ["Type", "Amount"]
    else:
        header += ["In", "Out"]
    if case.balance:
        header.append("Balance")
    rows: list[list[object]] = []
    running = Decimal("1000000.00")
    for i, (amount, grouped) in enumerate(zip(case.amounts, case.grouped, strict=True)):
        text = _write_number(amount, case.writing, grouped)
        row: list[object] = [f"2026-10-{i % 28 + 1:02d}", f"entry {i}"]
        if case.layout == "signed":
            row.append(
                float(amount) if case.xlsx == "numbers" else ("-" if amount < 0 else "") + text
            )
        elif case.layout == "parentheses":
            row.append(f"({text})" if amount < 0 else text)
        elif case.layout == "direction":
            row += [case.words[1] if amount < 0 else case.words[0], text]
        elif amount > 0:
            row += [text, ""]
        else:
            row += ["", ("-" if case.layout == "negative_debits" else "") + text]
        running += amount
        if case.balance:
            row.append(("-" if running < 0 else "") + _write_number(running, case.writing, True))
        rows.append(row)
    return header, rows


def _file(folder: Path, case: Case) -> Path:
    header, rows = _rows(case)
    if not case.xlsx:
        path = folder / "statement.csv"
        lines = [",".join(header)] + [",".join(f'"{c}"' for c in r) for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path
    path = folder / "statement.xlsx"
    with xlsxwriter.Workbook(path) as book:
        sheet = book.add_worksheet("Sheet1")
        sheet.write_row(0, 0, header)
        for r, row in enumerate(rows, start=1):
            for c, value in enumerate(row):
                if isinstance(value, float):
                    sheet.write_number(r, c, value, book.add_format({"num_format": "0.00"}))
                else:
                    sheet.write_string(r, c, str(value))
    return path


def _mapping(case: Case) -> str:
    parts = ["date=Date", "narration=Details", "account_currency=NGN"]
    if case.layout in ("signed", "parentheses"):
        parts.append("amount=Amount")
    elif case.layout == "direction":
        parts += ["amount=Amount", "direction=Type"]
    else:
        parts += ["credit=In", "debit=Out"]
    if case.balance:
        parts.append("balance=Balance")
    if case.declared:
        parts += [f"decimal={_NAMES[case.declared[0]]}", f"thousands={_NAMES[case.declared[1]]}"]
    return ",".join(parts)


_SPACES = " \u00a0\u202f"


def _as_declared(text: str, writing: tuple[str, str]) -> Decimal | None:
    """The test's own reading of an unsigned number in a writing (None: it does not fit):
    thousands in groups of three after the first, digits after the decimal separator."""
    decimal, thousands = writing
    allowed = _SPACES if thousands in _SPACES and thousands else thousands
    whole, sep, fraction = text.rpartition(decimal) if decimal in text else (text, "", "")
    if sep and not (fraction.isdigit() and fraction.isascii()):
        return None
    groups = [whole]
    if allowed:
        for ch in allowed:
            whole = whole.replace(ch, "\0")
        groups = whole.split("\0")
    if not all(g.isdigit() and g.isascii() for g in groups):
        return None
    if len(groups) > 1 and not (1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])):
        return None
    return Decimal("".join(groups) + (f".{fraction}" if sep else ""))


def _same(a: tuple[str, str], b: tuple[str, str]) -> bool:
    def key(w: tuple[str, str]) -> tuple[str, str]:
        return w[0], _NAMES[w[1]]

    return key(a) == key(b)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    values = draw(st.lists(amounts, min_size=1, max_size=12))
    layout = draw(
        st.sampled_from(["signed", "parentheses", "direction", "credit_debit", "negative_debits"])
    )
    xlsx = draw(st.sampled_from(["", "text"] + (["numbers"] if layout == "signed" else [])))
    writing = (".", "") if xlsx == "numbers" else draw(st.sampled_from(_WRITINGS))
    return Case(
        amounts=values,
        writing=writing,
        grouped=draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values))),
        declared=draw(st.none() | st.just(writing) | st.sampled_from(_WRITINGS)),
        layout=layout,
        balance=draw(st.booleans()),
        words=draw(st.sampled_from(_DIRECTIONS)),
        xlsx=xlsx,
    )


@_SETTINGS
@given(cases())
def test_a_statement_reads_as_written_or_is_refused(case: Case) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = _file(Path(folder), case)
        try:
            statement = read_statement(path, columns=_mapping(case))
        except DataFileError as exc:
            message = str(exc)
            assert "\n" not in message
            # Left to the file, a refusal is for values that read two ways; a declared writing
            # other than the file's may be refused for anything; the file's own, never.
            if case.declared is None:
                assert "reads two ways" in message, message
            else:
                assert not _same(case.declared, case.writing), message
            return
    read = [Decimal(str(a)) for a in statement.entries["amount"]]
    if case.declared is None or _same(case.declared, case.writing):
        assert read == case.amounts
        return
    # Read through another writing than the file's: every value is what that writing says
    # (or the file would have been refused), never digits moved otherwise.
    _, rows = _rows(case)
    column = {"signed": 2, "parentheses": 2, "direction": 3}.get(case.layout)
    for got, row in zip(read, rows, strict=True):
        text = str(row[column]) if column is not None else str(row[2] or row[3])
        expected = _as_declared(text.strip("()").lstrip("-"), case.declared)
        assert expected is not None and abs(got) == expected, (text, got)


@_SETTINGS
@given(
    st.lists(amounts, min_size=1, max_size=12),
    st.sampled_from(_WRITINGS),
    st.booleans(),
    st.none() | st.sampled_from(_WRITINGS),
    st.sampled_from(["", "text"]),
)
def test_an_orders_file_reads_as_written_or_is_refused(
    values: list[Decimal],
    writing: tuple[str, str],
    grouped: bool,
    declared: tuple[str, str] | None,
    xlsx: str,
) -> None:
    mapping = "reference=Ref,amount=Total,currency=Cur"
    if declared:
        mapping += f",decimal={_NAMES[declared[0]]},thousands={_NAMES[declared[1]]}"
    texts = [("-" if v < 0 else "") + _write_number(v, writing, grouped) for v in values]
    with tempfile.TemporaryDirectory() as folder:
        if xlsx:
            path = Path(folder) / "orders.xlsx"
            with xlsxwriter.Workbook(path) as book:
                sheet = book.add_worksheet("Orders")
                sheet.write_row(0, 0, ["Ref", "Total", "Cur"])
                for r, text in enumerate(texts, start=1):
                    sheet.write_row(r, 0, [f"R{r}", text, "NGN"])
        else:
            path = Path(folder) / "orders.csv"
            rows = [f'R{i},"{t}",NGN' for i, t in enumerate(texts)]
            path.write_text("Ref,Total,Cur\n" + "\n".join(rows) + "\n", encoding="utf-8")
        try:
            orders = read_orders_file(path, columns=mapping)
        except DataFileError as exc:
            assert "\n" not in str(exc)
            if declared is None:
                assert "reads two ways" in str(exc), str(exc)
            else:  # a declared writing, written so, is read
                assert not _same(declared, writing), str(exc)
            return
    read = [Decimal(str(a)) for a in orders.frame["amount"]]
    if declared is None or _same(declared, writing):
        assert read == values
        return
    for got, text in zip(read, texts, strict=True):
        assert abs(got) == _as_declared(text.lstrip("-"), declared), (text, got)
