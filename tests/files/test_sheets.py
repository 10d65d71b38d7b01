"""Spreadsheets read exactly (each amount the decimal its cell shows) and tables found where
people put them: title rows above the header, totals and footers below, a header over two
rows, descriptions continued on the next row, amounts written ``0.01USD``.

The CSV layouts are reproductions of what banks write (no public file with these constructs
was found within the search budget); the real files are in test_real_sheets.py."""

from __future__ import annotations

import datetime as dt
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
import xlsxwriter

from txkit.errors import DataFileError
from txkit.inputs import read_csv_table, read_statement, read_table
from txkit.inputs.sheets._xlsx import _Format, shown_number

COLUMNS = "date=Date,narration=Description,amount=Amount,currency=Currency,date_format=%d/%m/%Y"


def _book(path: Path, rows: list[list[object]], formats: dict[int, str] | None = None) -> Path:
    """A workbook of one sheet: ``rows`` from A1, column ``i`` in number format
    ``formats[i]``; a datetime cell formatted dd/mm/yyyy."""
    with xlsxwriter.Workbook(path) as book:
        sheet = book.add_worksheet("Sheet1")
        styles = {i: book.add_format({"num_format": f}) for i, f in (formats or {}).items()}
        day = book.add_format({"num_format": "dd/mm/yyyy"})
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if isinstance(value, dt.date):
                    sheet.write_datetime(r, c, dt.datetime.combine(value, dt.time()), day)
                elif isinstance(value, str):
                    sheet.write_string(r, c, value)
                elif value is not None:
                    sheet.write_number(r, c, value, styles.get(c))
    return path


def test_an_xlsx_statement_reads_each_amount_as_the_decimal_its_cell_shows(tmp_path: Path) -> None:
    path = _book(
        tmp_path / "statement.xlsx",
        [
            ["ACME BANK PLC", None, None, None],
            ["Statement of account 0123456789", None, None, None],
            ["Date", "Description", "Amount", "Currency"],
            [dt.date(2026, 10, 1), "TXK-1A2B3C4D5E6F settlement", 1500, "NGN"],
            [dt.date(2026, 10, 2), "fees", 0.1 + 0.2, "NGN"],  # 0.30000000000000004, shows 0.30
            [dt.date(2026, 10, 3), "transfer", 1234567.89, "NGN"],
            [dt.date(2026, 10, 4), "typed as text", "-20.10", "NGN"],
            ["Total", None, 1234568.09 + 1500, None],
        ],
        {2: "#,##0.00"},
    )
    statement = read_statement(path, columns=COLUMNS)
    entries = statement.entries
    assert [str(a) for a in entries["amount"]] == ["1500.00", "0.30", "1234567.89", "-20.10"]
    assert all(isinstance(a, Decimal) for a in entries["amount"])
    assert [str(d) for d in entries["date"]] == [
        "2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04",
    ]  # fmt: skip
    assert statement.files == {str(path): "xlsx"}
    notes = " ".join(statement.notes)
    assert "2 title rows skipped (Sheet1 rows 1 and 2" in notes
    assert "1 total or footer row skipped (Sheet1 row 8: 'Total" in notes


def test_a_cell_that_holds_more_than_it_shows_is_refused_with_its_address(tmp_path: Path) -> None:
    path = _book(
        tmp_path / "statement.xlsx",
        [
            ["Date", "Description", "Amount", "Currency"],
            [dt.date(2026, 10, 1), "ok", 10, "NGN"],
            [dt.date(2026, 10, 2), "rounded by its format", 1234.567, "NGN"],
        ],
        {2: "0.00"},
    )
    with pytest.raises(DataFileError) as caught:
        read_statement(path, columns=COLUMNS)
    message = str(caught.value)
    assert "cell Sheet1!C3 (Amount) holds 1234.567 but shows 1234.57" in message
    assert "\n" not in message


def test_more_than_15_significant_digits_is_refused_and_a_column_not_read_is_not(
    tmp_path: Path,
) -> None:
    rows = [
        ["Date", "Description", "Amount", "Currency", "Card"],
        [dt.date(2026, 10, 1), "big", 12345678901234567, "NGN", 1],
    ]
    with pytest.raises(DataFileError, match=r"cell Sheet1!C2 \(Amount\) holds .*15 significant"):
        read_statement(_book(tmp_path / "a.xlsx", rows), columns=COLUMNS)
    rows = [
        ["Date", "Description", "Amount", "Currency", "Card"],
        [dt.date(2026, 10, 1), "a card number typed as a number", 12, "NGN", 1234567890123456789],
    ]
    statement = read_statement(_book(tmp_path / "b.xlsx", rows), columns=COLUMNS)
    assert statement.entries["amount"][0] == Decimal(12)


@pytest.mark.parametrize(
    ("stored", "fmt", "shown", "refused"),
    [
        ("0.30000000000000004", _Format("fixed", 2), "0.30", False),
        ("1500", _Format("fixed", 2), "1500.00", False),
        ("-0.5", _Format("fixed", 0), "-1", True),  # halves away from zero, as shown
        ("0.305", _Format("fixed", 2), "0.31", True),
        ("0.125", _Format("percent", 1), "12.5%", False),
        ("0.30000000000000004", _Format("general"), "0.3", False),
        ("123456789012345678", _Format("general"), "123456789012345678", True),
        ("1.2345678901234568E+16", _Format("fixed", 0), "12345678901234568", True),
        ("1E-3", _Format("general"), "0.001", False),
    ],
)
def test_shown_number(stored: str, fmt: _Format, shown: str, refused: bool) -> None:
    text, problem = shown_number(stored, fmt)
    assert text == shown and (problem is not None) == refused


def test_a_bank_csv_with_title_lines_a_total_and_a_closing_line(tmp_path: Path) -> None:
    path = tmp_path / "statement.csv"
    path.write_text(
        "ACME BANK PLC\n"
        "Statement of account,0123456789\n"
        "Period,01/10/2026 - 31/10/2026\n"
        "\n"
        "Date,Description,Amount,Currency\n"
        "01/10/2026,TXK-1A2B3C4D5E6F settlement,1500.00,NGN\n"
        "02/10/2026,TOTAL filling station Lekki,-20.00,NGN\n"
        "Total,,1480.00,\n"
        "Closing balance,,2480.00,NGN\n"
        "Generated on 01/11/2026 09:00\n",
        encoding="utf-8",
    )
    statement = read_statement(path, columns=COLUMNS)
    # the fuel station's payment has a date: an entry, whatever its narration says
    assert [str(a) for a in statement.entries["amount"]] == ["1500.00", "-20.00"]
    notes = " ".join(statement.notes)
    assert "3 title lines skipped (lines 1, 2 and 3" in notes
    assert "3 total or footer lines skipped (lines 8, 9 and 10: 'Total 1480.00'" in notes


def test_a_total_line_in_the_middle_or_a_footer_with_a_date_is_refused_not_dropped(
    tmp_path: Path,
) -> None:
    middle = tmp_path / "middle.csv"
    middle.write_text(
        "Date,Description,Amount,Currency\n"
        "01/10/2026,a,1.00,NGN\n"
        "Subtotal,,1.00,\n"
        "02/10/2026,b,2.00,NGN\n",
        encoding="utf-8",
    )
    with pytest.raises(DataFileError, match=r"line 3: date is not a date"):
        read_statement(middle, columns=COLUMNS)
    dated = tmp_path / "dated.csv"
    dated.write_text(
        "Date,Description,Amount,Currency\n"
        "01/10/2026,a,1.00,NGN\n"
        "31/10/2026,Closing balance,,NGN\n",
        encoding="utf-8",
    )
    with pytest.raises(
        DataFileError, match=r"line 3: amount is not a number written with decimal dot"
    ):
        read_statement(dated, columns=COLUMNS)


def test_a_header_written_over_two_lines(tmp_path: Path) -> None:
    path = tmp_path / "statement.csv"
    path.write_text(
        "Value,Transaction,Debit,Credit,Running\n"
        "Date,Details,Amount,Amount,Balance\n"
        "01/10/2026,TXK-1A2B3C4D5E6F,,1500.00,2500.00\n"
        "02/10/2026,charges,20.00,,2480.00\n",
        encoding="utf-8",
    )
    statement = read_statement(
        path,
        columns="date=Value Date,narration=Transaction Details,debit=Debit Amount,"
        "credit=Credit Amount,balance=Running Balance,account_currency=NGN,date_format=%d/%m/%Y",
    )
    assert [str(a) for a in statement.entries["amount"]] == ["1500.00", "-20.00"]
    assert statement.entries["line"].to_list() == [3, 4]
    assert "the header is written over lines 1 and 2" in " ".join(statement.notes)


def test_a_description_continued_on_the_next_line_is_joined_and_its_reference_found(
    tmp_path: Path,
) -> None:
    path = tmp_path / "statement.csv"
    path.write_text(
        "Date,Description,Amount,Currency\n"
        "01/10/2026,Transfer from ACME LTD,1500.00,NGN\n"
        ",settlement TXK-1A2B3C4D5E6F,,\n"
        ",batch 7,,\n"
        "02/10/2026,POS purchase,-20.00,NGN\n",
        encoding="utf-8",
    )
    statement = read_statement(path, columns=COLUMNS)
    first = statement.entries.row(0, named=True)
    assert first["narration"] == "Transfer from ACME LTD settlement TXK-1A2B3C4D5E6F batch 7"
    assert first["line"] == 2 and statement.entries.height == 2
    assert "2 continuation line(s) joined to the Description above" in " ".join(statement.notes)


def test_amounts_written_with_their_currency(tmp_path: Path) -> None:
    path = tmp_path / "statement.csv"
    path.write_text(
        "Date,Description,Amount\n"
        "01/10/2026,a,0.01USD\n"
        '02/10/2026,b,"1,500.00 USD"\n'
        "03/10/2026,c,USD -20.00\n",
        encoding="utf-8",
    )
    statement = read_statement(
        path,
        columns="date=Date,narration=Description,amount=Amount,date_format=%d/%m/%Y,"
        "thousands=comma",
    )
    entries = statement.entries
    assert [str(a) for a in entries["amount"]] == ["0.01", "1500.00", "-20.00"]
    assert entries["currency"].to_list() == ["USD"] * 3
    other = tmp_path / "other.csv"
    other.write_text(
        "Date,Description,Amount,Currency\n01/10/2026,a,0.01USD,NGN\n", encoding="utf-8"
    )
    with pytest.raises(DataFileError, match=r"line 2: the amount is written with another "
                       r"currency than the line's: 'USD / NGN'"):  # fmt: skip
        read_statement(other, columns=COLUMNS)


def test_read_table_keeps_read_csv_table_and_finds_the_header_for_orders(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text(
        "Orders export\nreference,amount,currency\nA-1,10.00,NGN\nTotals,10.00,\n",
        encoding="utf-8",
    )
    kwargs = dict(columns=["reference", "amount", "currency"], required=["reference", "amount",
                  "currency"], what="orders file", rows="orders")  # fmt: skip
    table = read_table(path, **kwargs)
    assert table.frame.equals(read_csv_table(path, **kwargs).frame)
    assert table.frame.to_dicts() == [
        {"reference": "A-1", "amount": "10.00", "currency": "NGN", "_line": 3}
    ]
    assert table.kind == "csv" and table.unit == "line"


def test_an_xlsx_orders_file_reads_through_the_same_table(tmp_path: Path) -> None:
    path = _book(
        tmp_path / "orders.xlsx",
        [["reference", "amount", "currency"], ["A-1", 10.5, "NGN"], ["A-2", 3, "USD"]],
        {1: "0.00"},
    )
    table = read_table(
        path, columns=["reference", "amount", "currency"], required=["reference", "amount"],
        what="orders file", rows="orders",
    )  # fmt: skip
    assert table.frame.drop("_line").to_dicts() == [
        {"reference": "A-1", "amount": "10.50", "currency": "NGN"},
        {"reference": "A-2", "amount": "3.00", "currency": "USD"},
    ]
    assert table.frame["_line"].to_list() == [2, 3] and table.unit == "Sheet1 row"
    with pytest.raises(DataFileError, match=r"orders file .*orders.xlsx, Sheet1 row 1: no column "
                       r"'status' in the header"):  # fmt: skip
        read_table(path, columns=["reference", "status"], required=["reference", "status"],
                   what="orders file")  # fmt: skip


def test_an_html_xls_reads_its_digits_and_a_merged_title(tmp_path: Path) -> None:
    path = tmp_path / "statement.xls"
    path.write_text(
        "<html><body><table>"
        '<tr><td colspan="4">CUSTOMER STATEMENT</td></tr>'
        "<tr><th>Trans Date</th><th>Remarks</th><th>Credit</th><th>Debit</th></tr>"
        "<tr><td>05-Oct-2026</td><td>TXK-1A2B3C4D5E6F</td><td>1,234,567.89</td><td></td></tr>"
        "<tr><td>06-Oct-2026</td><td>charge</td><td></td><td>0.10</td></tr>"
        "</table></body></html>",
        encoding="utf-8",
    )
    statement = read_statement(
        path,
        columns="date=Trans Date,narration=Remarks,credit=Credit,debit=Debit,"
        "account_currency=NGN,date_format=%d-%b-%Y,thousands=comma",
    )
    assert [str(a) for a in statement.entries["amount"]] == ["1234567.89", "-0.10"]
    assert statement.files == {str(path): "html"}
    assert statement.entries["narration"].to_list() == ["TXK-1A2B3C4D5E6F", "charge"]


def _ods(path: Path, rows: list[list[object]]) -> Path:
    """An OpenDocument spreadsheet of one sheet, written as LibreOffice lays one out (number
    cells with ``office:value``, every cell's shown text in ``text:p``)."""
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    )

    def cell(value: object) -> str:
        if value is None:
            return "<table:table-cell/>"
        if isinstance(value, str):
            return f'<table:table-cell office:value-type="string"><text:p>{value}</text:p></table:table-cell>'  # noqa: E501
        return (
            f'<table:table-cell office:value-type="float" office:value="{value!r}">'
            f"<text:p>{value}</text:p></table:table-cell>"
        )

    body = "".join(
        "<table:table-row>" + "".join(cell(v) for v in row) + "</table:table-row>" for row in rows
    )
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ns} '
        'office:version="1.2"><office:body><office:spreadsheet><table:table table:name="Sheet1">'
        f"{body}</table:table></office:spreadsheet></office:body></office:document-content>"
    )
    with zipfile.ZipFile(path, "w") as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        book.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
        book.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest='
            '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
            '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type='
            '"text/xml"/></manifest:manifest>',
        )
    return path


def test_an_ods_statement_reads_through_calamine_with_its_rows_numbered(tmp_path: Path) -> None:
    path = _ods(
        tmp_path / "statement.ods",
        [
            [None, None, None, None],
            ["ACME BANK", None, None, None],
            ["Date", "Description", "Amount", "Currency"],
            ["01/10/2026", "TXK-1A2B3C4D5E6F", 1500.25, "NGN"],
            ["02/10/2026", "fees", 0.1 + 0.2, "NGN"],  # a General cell shows 0.3
            ["Total", None, 1500.55, None],
        ],
    )
    statement = read_statement(path, columns=COLUMNS)
    assert [str(a) for a in statement.entries["amount"]] == ["1500.25", "0.30"]
    assert statement.entries["line"].to_list() == [4, 5]
    assert statement.files == {str(path): "ods"}
    notes = " ".join(statement.notes)
    assert "1 title row skipped (Sheet1 row 2" in notes and "number formats" in notes


def test_a_cell_right_of_the_table_is_refused_with_its_row(tmp_path: Path) -> None:
    path = _book(
        tmp_path / "orders.xlsx",
        [["reference", "amount"], ["A-1", 10], ["A-2", 3, None, "note: paid twice"]],
    )
    with pytest.raises(DataFileError) as caught:
        read_table(path, columns=["reference", "amount"], required=["reference", "amount"])
    message = str(caught.value)
    assert "Sheet1 row 3: a record has 4 field(s) where the header has 2" in message
    assert "move or remove the cells right of the table" in message


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "suffix"), [("xlsx", ".xlsx"), ("html-xls", ".xls")])
def test_the_sandboxs_spreadsheet_statements_read_as_its_csv(
    fmt: str, suffix: str, tmp_path: Path
) -> None:
    """The sandbox's bank gives its statement as a workbook and as GTBank's HTML .xls, with
    title rows and a total and closing row per currency: the entries are the CSV's, exactly."""
    from tests.analysis.analysis_cases import load_case
    from txkit.sandbox.ledger._bank import CSV_COLUMNS

    ledger = load_case(2, 0.01).ledger
    csv_path, sheet_path = tmp_path / "statement.csv", tmp_path / f"statement{suffix}"
    csv_path.write_bytes(ledger.bank_statement("2026-06", "csv"))
    sheet_path.write_bytes(ledger.bank_statement("2026-06", fmt))
    columns = ["date", "value_date", "currency", "amount", "reference", "narration"]
    from_csv = read_statement(csv_path, columns=CSV_COLUMNS)
    from_sheet = read_statement(sheet_path, columns=CSV_COLUMNS)
    assert from_sheet.entries.select(columns).equals(from_csv.entries.select(columns))
    currencies = from_csv.entries["currency"].n_unique()
    notes = " ".join(from_sheet.notes)
    assert "3 title rows skipped" in notes
    assert f"{2 * currencies + 2} total or footer rows skipped" in notes


def test_a_formula_never_computed_is_refused_with_its_cell(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Orders"
    sheet.append(["reference", "amount"])
    sheet.append(["A-1", "=2*5"])  # openpyxl stores the formula, not its value
    book.save(tmp_path / "orders.xlsx")
    with pytest.raises(DataFileError) as caught:
        read_table(tmp_path / "orders.xlsx", columns=["reference", "amount"],
                   required=["reference", "amount"])  # fmt: skip
    assert "cell Orders!B2 (amount) is a formula without a computed value" in str(caught.value)


def test_an_order_left_without_its_amount_at_the_end_is_refused_not_taken_for_a_footer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "orders.csv"
    path.write_text(
        "reference,amount,currency\nA-1,10.00,NGN\nA-2,,\nExported by the shop,,\n",
        encoding="utf-8",
    )
    table = read_table(path, columns=["reference", "amount", "currency"],
                       required=["reference", "amount", "currency"])  # fmt: skip
    # the last line's lone value stands in the reference column: an order with values
    # missing, kept for the reader's checks to refuse (line 3 and 4), never dropped
    assert table.frame["_line"].to_list() == [2, 3, 4]


def test_a_strict_open_xml_workbook_is_refused_saying_how_to_save_it(tmp_path: Path) -> None:
    path = tmp_path / "statement.xlsx"
    with zipfile.ZipFile(path, "w") as book:
        book.writestr(
            "xl/workbook.xml",
            '<workbook xmlns="http://purl.oclc.org/ooxml/spreadsheetml/main"><sheets/></workbook>',
        )
    with pytest.raises(DataFileError, match=r"Strict Open XML Spreadsheet.*'Excel Workbook"):
        read_statement(path, columns=COLUMNS)


def test_a_visible_sheet_is_read_before_a_hidden_one(tmp_path: Path) -> None:
    path = tmp_path / "orders.xlsx"
    with xlsxwriter.Workbook(path) as book:
        hidden = book.add_worksheet("lookup")
        hidden.write_row(0, 0, ["reference", "amount"])
        hidden.write_row(1, 0, ["OLD-1", "1.00"])
        shown = book.add_worksheet("Orders")
        shown.write_row(0, 0, ["reference", "amount"])
        shown.write_row(1, 0, ["A-1", "10.00"])
        shown.activate()
        hidden.hide()
    table = read_table(path, columns=["reference", "amount"], required=["reference", "amount"])
    assert table.frame["reference"].to_list() == ["A-1"]
    assert "read its sheet 'Orders'; not read: 'lookup'" in " ".join(table.notes)


def test_a_statement_saved_as_a_web_page_reads_as_its_xls(tmp_path: Path) -> None:
    page = (
        "<html><body><table><tr><th>Trans Date</th><th>Remarks</th><th>Credit</th>"
        "<th>Debit</th></tr><tr><td>05-Oct-2026</td><td>TXK-1A2B3C4D5E6F</td><td>1,500.00"
        "</td><td></td></tr></table></body></html>"
    )
    columns = (
        "date=Trans Date,narration=Remarks,credit=Credit,debit=Debit,account_currency=NGN,"
        "date_format=%d-%b-%Y,thousands=comma"
    )
    for name in ("statement.html", "statement.htm", "statement.xls"):
        (tmp_path / name).write_text(page, encoding="utf-8")
        statement = read_statement(tmp_path / name, columns=columns)
        assert [str(a) for a in statement.entries["amount"]] == ["1500.00"], name


def test_an_xlsx_orders_file_reads_exactly_through_read_orders(tmp_path: Path) -> None:
    from txkit.analysis import read_orders

    rows = [
        ["Shop orders export, October 2026", None, None, None, None],
        [None, None, None, None, None],
        ["reference", "amount", "currency", "status", "date"],
        ["A-1", 1500.5, "NGN", "successful", dt.date(2026, 10, 3)],
        ["A-2", 0.1 + 0.2, "USD", "failed", dt.date(2026, 10, 4)],
        ["Total", 1500.8, None, None, None],
    ]
    orders = read_orders(_book(tmp_path / "orders.xlsx", rows, {1: "#,##0.00"}))
    assert orders.rows() == [
        ("A-1", Decimal("1500.50"), "NGN", "successful", dt.date(2026, 10, 3)),
        ("A-2", Decimal("0.30"), "USD", "failed", dt.date(2026, 10, 4)),
    ]
    rows[4][1] = 0.305  # shows 0.31 with two decimals: not what the cell holds
    with pytest.raises(DataFileError, match=r"orders file .*orders2.xlsx: cell Sheet1!B5 "
                       r"\(amount\) holds 0.305 but shows 0.31"):  # fmt: skip
        read_orders(_book(tmp_path / "orders2.xlsx", rows, {1: "#,##0.00"}))
