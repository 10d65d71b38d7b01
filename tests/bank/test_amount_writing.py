"""Issue 46, item 1: an amount is read as the file writes it, or refused with its line and
value. The decimal separator is declared (``decimal=``) or found from the file's own values
and said in the load line; a value that fits no single reading is refused, never read as
another number (``1.234,56`` was 1.23456 with thousands=comma, ``1,5`` was 15.00)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement
from txkit.inputs.orders import read_orders_file

BANK = "date=Date,amount=Amount,narration=Details,account_currency=NGN"


def _statement(tmp_path: Path, amounts: list[str]) -> Path:
    path = tmp_path / "statement.csv"
    rows = [f'2026-10-{i + 1:02d},"{a}",line {i + 1}' for i, a in enumerate(amounts)]
    path.write_text("Date,Amount,Details\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _amounts(path: Path, columns: str) -> list[Decimal]:
    return [Decimal(str(a)) for a in read_statement(path, columns=columns).entries["amount"]]


@pytest.mark.parametrize(
    ("writing", "value"),
    [
        ("thousands=comma", "1.234,56"),
        ("thousands=comma", "1,2"),
        ("thousands=comma", "-1,5"),
        ("decimal=comma,thousands=dot", "1,234.56"),
        ("decimal=comma,thousands=dot", "1.23"),
        ("decimal=dot,thousands=none", "1,50"),
        ("decimal=comma", "12.50"),
    ],
)
def test_a_value_that_does_not_fit_the_declared_writing_is_refused_with_its_line(
    tmp_path: Path, writing: str, value: str
) -> None:
    path = _statement(tmp_path, ["100", value, "7"])
    with pytest.raises(DataFileError) as caught:
        _amounts(path, f"{BANK},{writing}")
    message = str(caught.value)
    assert "\n" not in message
    assert re.search(r"\bline 3\b", message), message
    assert value in message and "written with decimal" in message, message


@pytest.mark.parametrize(
    ("writing", "values", "expected"),
    [
        ("thousands=comma", ["1,234.56", "1,234,567", "12"], ["1234.56", "1234567", "12"]),
        ("decimal=comma,thousands=dot", ["1.234,56", "1,5", "-0,01"], ["1234.56", "1.5", "-0.01"]),
        # PayPal writes thousands with a no-break space; French software with U+202F.
        ("decimal=comma,thousands=space", ["1\u00a0234,56", "2\u202f000,00", "3 000"],
         ["1234.56", "2000.00", "3000"]),
        ("decimal=dot,thousands=apostrophe", ["1'234.50", "(12.00)"], ["1234.50", "-12.00"]),
    ],
)  # fmt: skip
def test_a_value_in_the_declared_writing_reads_as_written(
    tmp_path: Path, writing: str, values: list[str], expected: list[str]
) -> None:
    path = _statement(tmp_path, values)
    assert _amounts(path, f"{BANK},{writing}") == [Decimal(e) for e in expected]


@pytest.mark.parametrize(
    ("values", "expected", "said"),
    [
        (["1,234.56", "12.00"], ["1234.56", "12.00"], "decimal dot, thousands comma"),
        (["1.234,56", "12,50"], ["1234.56", "12.50"], "decimal comma, thousands dot"),
        (["12,50", "-3,00"], ["12.50", "-3.00"], "decimal comma"),
        (["1\u00a0234,56", "9,99"], ["1234.56", "9.99"], "decimal comma, thousands space"),
    ],
)
def test_an_undeclared_writing_is_found_from_the_file_and_said(
    tmp_path: Path, values: list[str], expected: list[str], said: str
) -> None:
    path = _statement(tmp_path, values)
    statement = read_statement(path, columns=BANK)
    assert [Decimal(str(a)) for a in statement.entries["amount"]] == [Decimal(e) for e in expected]
    assert f"amounts read with {said} (found from the file, not declared)" in statement.describe()


def test_the_default_writing_needs_no_word(tmp_path: Path) -> None:
    # Decimal dot without thousands is the documented default, and proven: 12.50 fits no
    # decimal comma writing.
    statement = read_statement(_statement(tmp_path, ["12.50", "-3", "100"]), columns=BANK)
    assert "found from the file" not in statement.describe()


@pytest.mark.parametrize("values", [["1,234"], ["1.500", "2.250"], ["1,234", "1"]])
def test_an_undeclared_writing_that_reads_two_ways_is_refused(
    tmp_path: Path, values: list[str]
) -> None:
    path = _statement(tmp_path, values)
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns=BANK)
    message = str(caught.value)
    assert "reads two ways" in message and re.search(r"\blines? 2\b", message), message
    assert "declare" in message


def test_a_balance_is_read_in_the_same_writing(tmp_path: Path) -> None:
    path = tmp_path / "statement.csv"
    path.write_text(
        "Date,Amount,Balance,Details\n"
        '2026-10-01,"1.000,00","11.000,00",a\n'
        '2026-10-02,"-1,5","10.998,50",b\n',
        encoding="utf-8",
    )
    statement = read_statement(path, columns=f"{BANK},balance=Balance")
    assert [str(a) for a in statement.entries["amount"]] == ["1000.00", "-1.50"]


@pytest.mark.parametrize(
    ("columns", "values", "expected", "refused"),
    [
        ("thousands=comma", ["1,234.50", "7"], ["1234.50", "7.00"], None),
        ("thousands=comma", ["1.234,56", "7"], None, "1.234,56"),
        ("thousands=comma", ["7", "1,5"], None, "1,5"),
        ("decimal=comma,thousands=dot", ["1,234.56"], None, "1,234.56"),
        ("", ["1.234,56", "7,10"], ["1234.56", "7.10"], None),
        ("", ["1,234"], None, "reads two ways"),
    ],
)
def test_orders_amounts_follow_the_same_rule(
    tmp_path: Path, columns: str, values: list[str], expected: list[str] | None, refused: str | None
) -> None:
    path = tmp_path / "orders.csv"
    rows = [f'R{i},"{v}",NGN' for i, v in enumerate(values)]
    path.write_text("Ref,Total,Cur\n" + "\n".join(rows) + "\n", encoding="utf-8")
    mapping = "reference=Ref,amount=Total,currency=Cur" + (f",{columns}" if columns else "")
    if refused:
        with pytest.raises(DataFileError, match=re.escape(refused)):
            read_orders_file(path, columns=mapping)
        return
    orders = read_orders_file(path, columns=mapping)
    assert [Decimal(str(a)) for a in orders.frame["amount"]] == [Decimal(e) for e in expected or []]
    if not columns:
        assert "amounts read with decimal comma, thousands dot" in orders.describe()


@pytest.mark.parametrize(
    ("late", "refused", "said"),
    [
        # 1500 reads alike in every writing; the last value, past the first rows another
        # writing is tried on, still decides: 1.500 reads two ways, 12.5 only with a decimal
        # dot, 12,5 only with a decimal comma.
        ("1.500", "reads two ways", None),
        ("12.5", None, None),
        ("12,5", None, "decimal comma"),
    ],
)
def test_a_value_past_the_first_rows_still_decides_the_writing(
    tmp_path: Path, late: str, refused: str | None, said: str | None
) -> None:
    path = tmp_path / "orders.csv"
    rows = [f'R{i},"{v}",NGN' for i, v in enumerate(["1500"] * 1500 + [late])]
    path.write_text("Ref,Total,Cur\n" + "\n".join(rows) + "\n", encoding="utf-8")
    mapping = "reference=Ref,amount=Total,currency=Cur"
    if refused:
        with pytest.raises(DataFileError) as caught:
            read_orders_file(path, columns=mapping)
        assert refused in str(caught.value) and re.search(r"\bline 1502\b", str(caught.value))
        return
    orders = read_orders_file(path, columns=mapping)
    assert orders.frame["amount"][-1] == Decimal(late.replace(",", "."))
    if said:
        assert f"amounts read with {said}" in orders.describe()
    else:
        assert "found from the file" not in orders.describe()
