"""Orders as shops export them (issue 36): presets, column and status mappings, timestamps
with offsets, line-item rows, and the settings file.

Real exports (``tests/data/real/shops``, sources in its ``MANIFEST.toml``) are read through
their preset and checked against values counted from the files independently; the sandbox's
orders, rewritten into each shop's layout, reconcile exactly as the native file does.
"""

from __future__ import annotations

import csv
import io
import tomllib
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from analysis_cases import load_case
from polars.testing import assert_frame_equal

from txkit.analysis import read_orders, read_orders_file, reconcile
from txkit.errors import ConfigError, DataFileError
from txkit.inputs.columns import (
    BANK,
    ORDERS,
    ORDERS_PRESETS,
    column_setting,
    describe_columns,
    parse_columns,
)
from txkit.schema import STATUSES

SHOPS = Path(__file__).resolve().parent.parent / "data/real/shops"
MANIFEST = tomllib.loads((SHOPS / "MANIFEST.toml").read_text(encoding="utf-8"))["file"]


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["name"] for e in MANIFEST])
def test_each_real_export_reads_through_its_preset_as_its_manifest_says(
    entry: dict[str, Any],
) -> None:
    read = read_orders_file(SHOPS / entry["name"], columns=entry["preset"])
    frame = read.frame
    assert read.folded == entry["folded"]
    assert dict(read.ignored) == entry["ignored"]
    assert frame.height == entry["read"]
    assert entry["orders"] == entry["read"] + sum(entry["ignored"].values())
    sums = {c: str(s) for c, s in frame.group_by("currency").agg(pl.col("amount").sum()).rows()}
    assert sums == entry["sums"]
    assert dict(frame["status"].value_counts().rows()) == entry["statuses"]
    for reference, (amount, currency, status, day) in entry["spot"].items():
        row = frame.filter(pl.col("reference") == reference).row(0, named=True)
        assert (row["amount"], row["currency"], row["status"], row["date"]) == (
            Decimal(amount),
            currency,
            status,
            date.fromisoformat(day),
        )
    # The load line says which mapping read the file, and what was folded or left out.
    assert read.notes[0] == f"columns: the {entry['preset']} preset (from the columns argument)"
    if entry["folded"]:
        assert f"{entry['folded']:,} line-item row(s) folded" in read.describe()
    # Only the mapped columns are kept: the export's addresses are not carried; the e-mail
    # is the customer, masked on pages as the native file's.
    assert frame.columns == ["reference", "amount", "currency", "status", "date", "customer"]


def test_the_real_exports_are_refused_without_their_preset() -> None:
    """Before: no shop export read without hand edits."""
    for name in ("shopify_orders_export.csv", "stripe_unified_payments.csv"):
        with pytest.raises(DataFileError, match="no column 'reference'") as caught:
            read_orders(SHOPS / name)
        assert "a preset (shopify, woocommerce, stripe)" in str(caught.value)


# --- the sandbox's orders in each shop's layout reconcile as the native file does ----------

_HEADERS = {
    "shopify": "shopify_orders_export.csv",
    "stripe": "stripe_unified_payments.csv",
    "woocommerce": "woocommerce_orders_export.csv",
}
# What each shop writes for the service's statuses (the others are written as the service's
# own, which every mapping accepts), and a status its preset leaves out.
_SHOP_STATUS = {
    "shopify": ({"successful": "paid", "pending": "pending"}, "voided"),
    "stripe": ({"successful": "Paid", "pending": "Pending", "failed": "Failed"}, "Canceled"),
    "woocommerce": (
        {"successful": "Completed", "pending": "Pending payment", "failed": "Failed"},
        "Cancelled",
    ),
}


def _header(shop: str) -> list[str]:
    with (SHOPS / _HEADERS[shop]).open(encoding="utf-8", newline="") as f:
        return next(csv.reader(f))


def _timestamp(shop: str, day: date, i: int) -> str:
    if shop == "shopify":  # an offset; every other order after midnight local, before it UTC
        if i % 2:
            return f"{day + timedelta(days=1)} 01:30:00 +0200"
        return f"{day} 10:00:00 +0100"
    if shop == "stripe":
        return f"{day} 23:59:59"
    return f"{day} 14:05"


def _clashes(shop: str) -> list[str]:
    """The service's statuses a shop's preset reads as something else (Shopify's
    ``expired``, WooCommerce's ``processing``): the sandbox's orders of such a status are
    written ``txkit-<status>`` and mapped back, as a merchant with such statuses would."""
    preset = ORDERS_PRESETS[shop]
    return [s for s in STATUSES if preset.get(f"status.{s}", s) != s]


def _shop_file(orders: pl.DataFrame, shop: str, path: Path) -> int:
    """``orders`` written as ``shop`` exports them: its header and columns, its statuses and
    timestamps, a line-item row after every seventh order, and orders its preset ignores.
    Returns the line-item rows written."""
    header = _header(shop)
    preset = ORDERS_PRESETS[shop]
    statuses, ignored = _SHOP_STATUS[shop]
    statuses = statuses | {s: f"txkit-{s}" for s in _clashes(shop)}
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    items = 0
    for i, row in enumerate(orders.iter_rows(named=True)):
        record = dict.fromkeys(header, "")
        amount = str(row["amount"])
        record.update({
            preset["reference"]: row["reference"],
            preset["amount"]: amount,
            preset["currency"]: row["currency"].lower() if shop == "stripe" else row["currency"],
            preset["status"]: statuses.get(row["status"], row["status"]),
            preset["date"]: _timestamp(shop, row["date"], i),
            preset["customer"]: row["customer"],
        })  # fmt: skip
        writer.writerow(record)
        if i % 7 == 3 and shop != "stripe":  # Stripe has no line items
            item = dict.fromkeys(header, "")
            if shop == "shopify":
                item.update({"Name": row["reference"], "Lineitem name": "Second item"})
            else:
                item.update({"Item #": "2", "Name": "Second item", "Quantity": "1"})
            writer.writerow(item)
            items += 1
        if i % 50 == 0:  # an order the preset leaves out (no payment was expected)
            record[preset["reference"]] = f"VOID-{i}"
            record[preset["status"]] = ignored
            writer.writerow(record)
    path.write_text(out.getvalue(), encoding="utf-8")
    return items


@pytest.mark.parametrize("shop", sorted(ORDERS_PRESETS))
def test_the_sandbox_orders_in_a_shops_layout_reconcile_as_the_native_file(
    shop: str, tmp_path: Path
) -> None:
    case = load_case(1, 0.03)
    orders = case.ledger.orders
    native = tmp_path / "orders.csv"
    orders.write_csv(native)
    exported = tmp_path / f"{shop}.csv"
    items = _shop_file(orders, shop, exported)
    columns = ",".join([shop, *(f"status.txkit-{s}={s}" for s in _clashes(shop))])
    read = read_orders_file(exported, columns=columns)
    assert read.folded == items and sum(read.ignored.values()) == -(-orders.height // 50)
    expected = reconcile(case.frame, read_orders(native))
    assert_frame_equal(reconcile(case.frame, read.frame), expected)
    assert expected.filter(pl.col("category") == "matched").height > 7000


# --- the rules, one by one ---------------------------------------------------------------


def _orders(tmp_path: Path, text: str, name: str = "orders.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_timestamp_with_an_offset_is_read_as_its_utc_day(tmp_path: Path) -> None:
    path = _orders(
        tmp_path,
        "reference,amount,currency,date\n"
        "A,1.00,NGN,2021-05-13 11:01:12 +0200\n"
        "B,1.00,NGN,2021-05-14 00:30:00 +0200\n"  # 22:30 UTC the day before
        "C,1.00,NGN,2021-05-13T23:30:00-05:00\n"  # 04:30 UTC the day after
        "D,1.00,NGN,2021-05-13T23:59:59Z\n"
        "E,1.00,NGN,2021-05-13 23:59\n"  # no offset: as written
        "F,1.00,NGN,2021-05-13\n",
    )
    days = read_orders(path)["date"].to_list()
    bad = _orders(
        tmp_path, "reference,amount,currency,date\nA,1.00,NGN,2021-05-13 25:01:12 +0200\n"
    )
    with pytest.raises(DataFileError, match="line 2: date is not YYYY-MM-DD: '2021-05-13 25:01"):
        read_orders(bad)
    assert [d.isoformat() for d in days] == [
        "2021-05-13", "2021-05-13", "2021-05-14", "2021-05-13", "2021-05-13", "2021-05-13",
    ]  # fmt: skip


def test_date_format_reads_other_writings_and_names_lines_that_differ(tmp_path: Path) -> None:
    path = _orders(tmp_path, "Ref,Total,Cur,When\nA,1.00,NGN,13/05/2021\nB,1.00,NGN,2021-05-13\n")
    columns = "reference=Ref,amount=Total,currency=Cur,date=When,date_format=%d/%m/%Y"
    with pytest.raises(
        DataFileError, match=r"line 3: date is not written as %d/%m/%Y: '2021-05-13'"
    ):
        read_orders(path, columns=columns)
    path.write_text('Ref,Total,Cur,When\nA,"1,500.00",NGN,13/05/2021 23:30 +0000\n')
    frame = read_orders(
        path,
        columns="reference=Ref,amount=Total,currency=Cur,date=When,"
        "date_format=%d/%m/%Y %H:%M %z,thousands=comma",
    )
    assert frame.row(0) == ("A", Decimal("1500.00"), "NGN", date(2021, 5, 13))


def test_an_unmapped_shop_status_is_one_line_naming_its_lines_and_the_accepted_values(
    tmp_path: Path,
) -> None:
    path = _orders(
        tmp_path,
        "Name,Total,Currency,Financial Status,Created at\n"
        "#1,10.00,USD,paid,2021-05-13 11:01:12 +0200\n"
        "#2,10.00,USD,on_hold,2021-05-13 11:01:12 +0200\n",
    )
    with pytest.raises(DataFileError) as caught:
        read_orders(path, columns="shopify")
    message = str(caught.value)
    assert "\n" not in message
    assert (
        "line 3: status is neither mapped nor one of the service's statuses: 'on_hold'" in message
    )
    assert "status.<shop status>=successful" in message and "ignore" in message
    # Mapped, it reads; a service status is taken as it is.
    frame = read_orders(path, columns="shopify,status.on_hold=pending")
    assert frame["status"].to_list() == ["successful", "pending"]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("shopfy", "unknown preset 'shopfy'; accepted: shopify, stripe, woocommerce"),
        ("reference=Name,amout=Total", "unknown key 'amout'; accepted: reference, amount,"),
        ("reference=Name,amount", "'amount' is not key=Column Name; accepted keys:"),
        (
            "shopify,status.paid=paid",
            "status.paid=paid is not a status of the service; accepted: o",
        ),
        ("shopify,account_currency=NGN,currency=Cur", "give either currency"),
        ("reference=Name,amount=Total", "names no currency (or account_currency) column"),
        ("shopify,decimal=comma,thousands=comma", "separators must differ"),
        ("reference=A,reference=B", "'reference' is given twice"),
    ],
)
def test_a_bad_mapping_is_one_line_naming_the_accepted_values(
    tmp_path: Path, columns: str, message: str
) -> None:
    path = _orders(tmp_path, "Name,Total\nA,1.00\n")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        read_orders(path, columns=columns)
    assert "\n" not in str(e.value) and "orders columns: " in str(e.value)


def test_a_mapped_column_missing_from_the_file_is_named_with_the_header(tmp_path: Path) -> None:
    path = _orders(tmp_path, "Name,Total,Currency\n#1,1.00,USD\n")
    with pytest.raises(DataFileError, match=r"no column 'Financial Status', 'Created at'"):
        read_orders(path, columns="shopify")


def test_only_moneyless_rows_are_folded_and_a_repeated_order_stays_a_duplicate(
    tmp_path: Path,
) -> None:
    path = _orders(
        tmp_path,
        "reference,amount,currency,status\n"
        "A,10.00,NGN,successful\n"
        "A,,,\n"  # a line item: folded
        ",,,\n"  # blank: skipped by the CSV reader
        "A,10.00,NGN,successful\n",  # the order again: kept, the reconciliation lists it
    )
    read = read_orders_file(path)
    assert read.frame["reference"].to_list() == ["A", "A"] and read.folded == 1
    # A row without money but another reference is not a line item: refused with its line.
    path.write_text("reference,amount,currency\nA,10.00,NGN\nB,,\nC,5.00,NGN\n")
    with pytest.raises(DataFileError, match="line 3: no currency"):
        read_orders(path)


def test_a_file_of_one_currency_names_it_once(tmp_path: Path) -> None:
    path = _orders(tmp_path, 'Order,Total\n1,"2,500.50"\n2,(10.00)\n')
    frame = read_orders(
        path, columns="reference=Order,amount=Total,account_currency=ngn,thousands=comma"
    )
    assert frame.rows() == [("1", Decimal("2500.50"), "NGN"), ("2", Decimal("-10.00"), "NGN")]


def test_a_parquet_file_reads_through_a_mapping_too(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    pl.DataFrame({
        "Name": ["#1", "#1", "#2"],
        "Total": [Decimal("5.00"), None, Decimal("7.50")],
        "Currency": ["usd", None, "usd"],
        "Financial Status": ["paid", None, "voided"],
        "Created at": ["2021-05-14 00:30:00 +0200", "2021-05-14 00:30:00 +0200", "2021-05-14"],
        "Email": ["a@example.invalid", None, "b@example.invalid"],
    }).write_parquet(path)  # fmt: skip
    read = read_orders_file(path, columns="shopify")
    assert read.frame.rows() == [
        ("#1", Decimal("5.00"), "USD", "successful", date(2021, 5, 13), "a@example.invalid")
    ]
    assert read.folded == 1 and read.ignored == {"voided": 1}


def test_mapping_text_and_tables_read_alike_and_describe_round_trips() -> None:
    text = parse_columns("shopify,status.pending=ignore,Date_Format=%Y-%m-%d %H:%M:%S %z", ORDERS)
    table = parse_columns(
        {
            "preset": "shopify",
            "date_format": "%Y-%m-%d %H:%M:%S %z",
            "status": {"Pending": "ignore"},
        },
        ORDERS,
    )
    assert dict(text) == dict(table)
    assert parse_columns(describe_columns(text), ORDERS) == text
    bank = parse_columns(
        "date=Value Date,credit=Cr,debit=Dr,account_currency=NGN,narration=X", BANK
    )
    assert parse_columns(describe_columns(bank), BANK) == bank
    # a shop's preset is no bank's (the bank presets are named)
    with pytest.raises(
        ValueError, match="bank statement columns: unknown preset 'shopify'; accepted: banknorw"
    ):
        parse_columns("shopify", BANK)


# --- the settings file ---------------------------------------------------------------------


def _settings(tmp_path: Path, text: str) -> Path:
    (tmp_path / "txkit.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_settings_file_gives_the_mapping_and_environment_and_flag_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TXKIT_ORDERS_COLUMNS", raising=False)
    monkeypatch.delenv("TXKIT_BANK_COLUMNS", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    folder = _settings(
        tmp_path,
        '[orders]\npreset = "shopify"\n[orders.status]\npending = "ignore"\n\n'
        '[bank]\ndate = "Value Date"\namount = "Amount"\naccount_currency = "NGN"\n'
        'narration = "Details"\n',
    )
    mapping = column_setting(ORDERS, folder=folder)
    assert mapping.origin == "txkit.toml [orders]"
    assert describe_columns(mapping) == "shopify,status.pending=ignore"
    bank = column_setting(BANK, folder=folder)
    assert bank["date"] == "Value Date" and bank.origin == "txkit.toml [bank]"
    monkeypatch.setenv("TXKIT_ORDERS_COLUMNS", "stripe")
    assert column_setting(ORDERS, folder=folder).origin == "TXKIT_ORDERS_COLUMNS"
    monkeypatch.setenv("TXKIT_ORDERS_COLUMNS", "stripe,refrence=id")
    with pytest.raises(ValueError, match="^TXKIT_ORDERS_COLUMNS: orders columns: unknown key"):
        column_setting(ORDERS, folder=folder)
    monkeypatch.setenv("TXKIT_ORDERS_COLUMNS", "stripe")
    flag = column_setting(ORDERS, "woocommerce", given_origin="--orders-columns", folder=folder)
    assert flag.preset == "woocommerce" and flag.origin == "--orders-columns"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[orders]\nrefrence = "Name"\n',
            r"txkit.toml \[orders\]: orders columns: unknown key 'refrence'",
        ),
        ('[orders]\npreset = "shopfy"\n', "unknown preset 'shopfy'; accepted: shopify"),
        ("[orders]\namount = 5\n", "'amount' must be text"),
        (
            '[order]\npreset = "shopify"\n',
            r"unknown section\(s\) order; accepted: \[orders\], \[bank\]",
        ),
        ("[orders\n", "is not valid TOML"),
        ('[bank]\nshopify = "x"\n', r"\[bank\]: bank statement columns: unknown key 'shopify'"),
    ],
)
def test_a_wrong_settings_file_is_one_line_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    monkeypatch.delenv("TXKIT_ORDERS_COLUMNS", raising=False)
    monkeypatch.delenv("TXKIT_BANK_COLUMNS", raising=False)
    monkeypatch.chdir(tmp_path)
    folder = _settings(tmp_path, text)
    kind = BANK if "[bank]" in text else ORDERS
    # ValueError for a wrong key; ConfigError for a file that is not TOML (issue 48)
    with pytest.raises((ValueError, ConfigError), match=message) as caught:
        column_setting(kind, folder=folder)
    assert "\n" not in str(caught.value)


def test_the_notebooks_load_line_says_which_mapping_read_the_orders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit.notebook import load_orders

    monkeypatch.delenv("TXKIT_ORDERS_COLUMNS", raising=False)
    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))  # the project: tmp_path
    _settings(tmp_path, '[orders]\npreset = "stripe"\n')
    path = SHOPS / "stripe_unified_payments.csv"
    frame, info = load_orders(str(path), "2026-03")
    assert frame.height == 18  # of March 2026
    assert "columns: the stripe preset (from txkit.toml [orders])" in info.note
    frame, info = load_orders(str(path), "2026-03", columns="stripe,status.failed=ignore")
    assert (
        "columns: the stripe preset with status.failed=ignore (from the orders_columns "
        in info.note
    )


def test_the_settings_files_bank_section_reads_a_csv_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit.notebook import load_bank_statements

    monkeypatch.delenv("TXKIT_BANK_COLUMNS", raising=False)
    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))  # the project: tmp_path
    statement = _orders(
        tmp_path,
        "Value Date,Credit,Debit,Details\n"
        '01/10/2026,"1,500.00",,SETTLEMENT TXK-1\n'
        "02/10/2026,,20.00,FEE\n",
        "statement.csv",
    )
    with pytest.raises(DataFileError, match="no column 'date'"):  # before: txkit's names only
        load_bank_statements(str(statement), "2026-10")
    _settings(
        tmp_path,
        '[bank]\ndate = "Value Date"\ncredit = "Credit"\ndebit = "Debit"\n'
        'account_currency = "NGN"\nnarration = "Details"\ndate_format = "%d/%m/%Y"\n'
        'thousands = "comma"\n',
    )
    read, _ = load_bank_statements(str(statement), "2026-10")
    assert read is not None
    assert read.entries["amount"].to_list() == [Decimal("1500.00"), Decimal("-20.00")]


def test_a_parquet_timestamp_with_a_time_zone_is_its_utc_day(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    local = timezone(timedelta(hours=2))
    pl.DataFrame({
        "reference": ["A", "B"],
        "amount": [Decimal("1.00"), Decimal("2.00")],
        "currency": ["NGN", "NGN"],
        "date": [
            datetime(2021, 5, 14, 0, 30, tzinfo=local),
            datetime(2021, 5, 14, 12, 0, tzinfo=local),
        ],
    }).write_parquet(path)  # fmt: skip
    assert read_orders(path)["date"].to_list() == [date(2021, 5, 13), date(2021, 5, 14)]


def test_a_woocommerce_export_without_its_currency_field_names_the_currency_once(
    tmp_path: Path,
) -> None:
    """The exporter leaves its Currency field unticked by default: refused naming it, then
    read with the file's one currency."""
    frame = pl.read_csv(SHOPS / "woocommerce_orders_export.csv", infer_schema=False)
    path = tmp_path / "orders.csv"
    frame.drop("Currency").write_csv(path)
    with pytest.raises(DataFileError, match="no column 'Currency'"):
        read_orders(path, columns="woocommerce")
    read = read_orders_file(path, columns="woocommerce,account_currency=NGN")
    assert read.folded == 3 and read.frame.height == 7
    assert set(read.frame["currency"]) == {"NGN"}
    assert read.notes[0] == (
        "columns: the woocommerce preset with account_currency=NGN (from the columns argument)"
    )


def test_an_xlsx_orders_export_reads_exactly_as_its_csv(tmp_path: Path) -> None:
    import xlsxwriter

    rows = [
        ("#1001", 2500.5, "NGN", "paid", "2021-05-14 00:30:00 +0200"),
        ("#1002", 0.1 + 0.2, "USD", "paid", "2021-05-14 10:00:00 +0000"),  # shown as 0.30
        ("#1003", 1234567.89, "NGN", "voided", "2021-05-15 09:00:00 +0100"),
    ]
    header = ("Name", "Total", "Currency", "Financial Status", "Created at")
    book = tmp_path / "orders.xlsx"
    workbook = xlsxwriter.Workbook(book)
    sheet = workbook.add_worksheet("Orders")
    money = workbook.add_format({"num_format": "#,##0.00"})
    sheet.write_row(0, 0, header)
    for i, (ref, total, currency, status, created) in enumerate(rows, start=1):
        sheet.write_string(i, 0, ref)
        sheet.write_number(i, 1, total, money)
        sheet.write_row(i, 2, (currency, status, created))
    workbook.close()
    text = tmp_path / "orders.csv"
    text.write_text(
        ",".join(header)
        + "\n"
        + "".join(f'{r},"{t:,.2f}",{c},{s},{d}\n' for r, t, c, s, d in rows),
        encoding="utf-8",
    )
    read = read_orders_file(book, columns="shopify,thousands=comma")
    assert read.frame.get_column("amount").to_list() == [Decimal("2500.50"), Decimal("0.30")]
    assert_frame_equal(read.frame, read_orders(text, columns="shopify,thousands=comma"))


def test_an_xlsx_amount_that_is_not_what_its_cell_shows_is_refused_with_the_cell(
    tmp_path: Path,
) -> None:
    import xlsxwriter

    book = tmp_path / "orders.xlsx"
    workbook = xlsxwriter.Workbook(book)
    sheet = workbook.add_worksheet("Orders")
    sheet.write_row(0, 0, ("reference", "amount", "currency"))
    sheet.write_row(1, 0, ("A1", "10.00", "NGN"))
    # Shown with two decimals, stored with three: the shown 12.35 is not the amount.
    sheet.write_string(2, 0, "A2")
    sheet.write_number(2, 1, 12.345, workbook.add_format({"num_format": "0.00"}))
    sheet.write_string(2, 2, "NGN")
    workbook.close()
    with pytest.raises(DataFileError, match=r"Orders!B3"):
        read_orders(book)
