"""reconcile / reconcile_summary / duplicate_references / read_orders.

Against the sandbox: every planted ``order_*``, ``missing_from_export`` and (collection)
``duplicate_reference`` anomaly gets its category and nothing else is unmatched. Hand-written
frames pin down the precedence rules; files pin down read_orders' exactness and errors.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from analysis_cases import RATES, SEEDS, Case, load_case, tx_frame
from polars.testing import assert_frame_equal

from txkit.analysis import (
    CATEGORIES,
    duplicate_references,
    read_orders,
    reconcile,
    reconcile_summary,
)
from txkit.analysis.reconcile import UNPAID_STATUSES
from txkit.errors import DataFileError
from txkit.inputs import read_orders_file

_BY_KIND = {
    "order_missing": "missing_in_orders",
    "order_extra": "missing_in_export",
    "missing_from_export": "missing_in_export",  # hidden collections stay in the orders
    "order_amount": "amount_mismatch",
    "order_status": "status_mismatch",
    "order_currency": "currency_mismatch",
}


def expected_unmatched(case: Case) -> pl.DataFrame:
    """(reference, category, difference) of every reference the planted anomalies unmatch."""
    types = dict(case.ledger.index.select("id", "transType").iter_rows())
    collections = case.frame.filter(pl.col("transType") == "collection")
    statuses = dict(collections.select("transactionReference", "status").iter_rows())
    rows = []
    for e in case.ledger.ground_truth:
        difference = None
        if e["kind"] == "order_amount":
            difference = Decimal(e["expected"]) - Decimal(e["reported"])
        if e["kind"] in _BY_KIND:
            category = _BY_KIND[e["kind"]]
            # an attempt never paid whose order is gone is no mismatch: nothing was paid
            if category == "missing_in_orders" and statuses.get(e["reference"]) in UNPAID_STATUSES:
                category = "unpaid_attempt"
            rows.append((e["reference"], category, difference))
        # Orders and the export side hold collections only: a reference shared with a
        # transfer, settlement or conversion is one collection matched to one order.
        # Orders paid in parts and collections covering several orders are matched as a
        # set (tests/analysis/test_close.py checks them): listed with their category.
        elif e["kind"] == "duplicate_reference" and (
            types[e["id"]] == types[e["original_id"]] == "collection"
        ):
            rows.append((e["reference"], "duplicate_reference", Decimal(0)))
    for e in case.ledger.order_groups:
        key = "parts" if e["kind"] == "paid_in_parts" else "orders"
        members = {e["reference"], *(m["reference"] for m in e[key])}
        rows += [(m, e["kind"], None) for m in members]
    return pl.DataFrame(
        rows,
        schema={"reference": pl.String, "category": pl.String, "difference": pl.Decimal(38, 2)},
        orient="row",
    ).sort("reference")


@pytest.mark.slow
@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("seed", SEEDS)
def test_finds_exactly_the_planted_order_anomalies(
    seed: int, rate: float, as_input: Callable[[pl.DataFrame], Any]
) -> None:
    case = load_case(seed, rate)
    result = reconcile(as_input(case.frame), as_input(case.ledger.orders))
    unmatched = (
        result.filter(pl.col("category") != "matched")
        .select("reference", pl.col("category").cast(pl.String), "difference")
        .with_columns(
            # a duplicate's difference compares its first collection with its first order
            pl.when(pl.col("category") == "duplicate_reference")
            .then(pl.lit(Decimal(0)))
            .otherwise(pl.col("difference"))
            .cast(pl.Decimal(38, 2))
            .alias("difference")
        )
        .with_columns(
            pl.when(pl.col("category").is_in(["amount_mismatch", "duplicate_reference"]))
            .then(pl.col("difference"))
            .alias("difference")
        )
    )
    assert_frame_equal(unmatched, expected_unmatched(case))
    matched = result.filter(pl.col("category") == "matched")
    assert (matched["difference"] == 0).all()
    assert (matched["export_count"] == 1).all() and (matched["order_count"] == 1).all()
    collections = case.frame.filter(pl.col("transType") == "collection")
    assert (
        result.height
        == pl.concat(
            [collections["transactionReference"], case.ledger.orders["reference"]]
        ).n_unique()
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_duplicate_references_lists_every_planted_pair(seed: int) -> None:
    case = load_case(seed, 0.03)
    found = (
        duplicate_references(case.frame)
        .group_by("transactionReference")
        .agg(pl.col("id").sort())
        .sort("transactionReference")
    )
    planted = pl.DataFrame(
        [
            (e["reference"], sorted([e["original_id"], e["id"]]))
            for e in case.truth("duplicate_reference")
        ],
        schema={"transactionReference": pl.String, "id": pl.List(pl.String)},
        orient="row",
    ).sort("transactionReference")
    assert planted.height > 0
    assert_frame_equal(found, planted)


def test_read_orders_reads_the_sandbox_orders_csv_exactly(tmp_path: Path) -> None:
    case = load_case(1, 0.03)
    path = tmp_path / "orders.csv"
    path.write_bytes(case.ledger.orders_csv())
    orders = read_orders(path)
    assert_frame_equal(orders, case.ledger.orders)
    assert_frame_equal(reconcile(case.frame, orders), reconcile(case.frame, case.ledger.orders))


# ---------------------------------------------------------------------------------------------
# Precedence and values on hand-written frames.


def _collection(rid: str, ref: str, amount: str, currency: str = "NGN", **kw: Any) -> dict:
    return {
        "id": rid,
        "createdAt": kw.pop("createdAt", datetime(2026, 1, 2, 3, tzinfo=UTC)),
        "transType": kw.pop("transType", "collection"),
        "status": kw.pop("status", "successful"),
        "transactionReference": ref,
        "toAmount": amount,
        "toCurrency": currency,
        **kw,
    }


TRANSACTIONS = [
    _collection("t1", "R1", "100.00"),
    _collection("t2", "R2", "100.00"),
    _collection("t3", "R3", "100.00", "USD"),
    _collection("t4", "R4", "100.00", status="failed"),
    _collection("t5b", "R5", "100.00", createdAt=datetime(2026, 1, 3, tzinfo=UTC)),
    _collection("t5a", "R5", "90.00", "GHS"),
    _collection("t6", "R6", "100.00"),
    _collection("t7", "R7", "100.00"),
    _collection("t9", "R9", "100.00", transType="transfer"),
    _collection("t10", "R10", "100.00", status="failed"),
    _collection("t11", None, "5.00"),  # type: ignore[arg-type]
    _collection("t12", "R12", "5.00"),
    _collection("t13", "R12", "5.00"),
]
ORDERS = pl.DataFrame(
    {
        "reference": ["R1", "R2", "R3", "R4", "R5", "R6", "R6", "R8", "R9", "R10"],
        "amount": ["100", "99.99", "100.01", "100", "100", "100", "100", "1.5", "100", "100.5"],
        "currency": ["NGN", "NGN", "NGN", "NGN", "NGN", "NGN", "NGN", "KES", "NGN", "NGN"],
        "status": ["successful"] * 10,
        "date": [date(2026, 1, 2)] * 10,
    }
).with_columns(pl.col("amount").cast(pl.Decimal(38, 2)))


def test_categories_follow_the_documented_precedence(
    as_input: Callable[[pl.DataFrame], Any],
) -> None:
    result = reconcile(as_input(tx_frame(TRANSACTIONS)), as_input(ORDERS))
    expected = pl.DataFrame(
        [
            ("R1", "matched", 1, 1, "t1", "0.00"),
            ("R10", "amount_mismatch", 1, 1, "t10", "-0.50"),  # amount beats status
            ("R12", "duplicate_reference", 2, 0, "t12", None),  # duplicate beats missing
            ("R2", "amount_mismatch", 1, 1, "t2", "0.01"),
            ("R3", "currency_mismatch", 1, 1, "t3", None),  # currency beats amount
            ("R4", "status_mismatch", 1, 1, "t4", "0.00"),
            ("R5", "duplicate_reference", 2, 1, "t5a", None),  # earliest first: t5a, GHS
            ("R6", "duplicate_reference", 1, 2, "t6", "0.00"),
            ("R7", "missing_in_orders", 1, 0, "t7", None),
            ("R8", "missing_in_export", 0, 1, None, None),
            ("R9", "missing_in_export", 0, 1, None, None),  # a transfer is not a collection
        ],
        schema={
            "reference": pl.String,
            "category": pl.Enum(CATEGORIES),
            "export_count": pl.UInt32,
            "order_count": pl.UInt32,
            "export_id": pl.String,
            "difference": pl.String,
        },
        orient="row",
    ).with_columns(pl.col("difference").cast(pl.Decimal(38, 2)))
    assert_frame_equal(result.select(expected.columns), expected)
    row = result.row(by_predicate=pl.col("reference") == "R7", named=True)
    assert row["export_date"] == date(2026, 1, 2)
    assert row["export_amount"] == Decimal("100.00") and row["order_amount"] is None


def test_without_an_order_status_statuses_are_not_compared() -> None:
    result = reconcile(tx_frame(TRANSACTIONS), ORDERS.drop("status", "date"))
    row = result.row(by_predicate=pl.col("reference") == "R4", named=True)
    assert row["category"] == "matched" and row["order_status"] is None
    assert result.schema["order_date"] == pl.Date


def test_summary_by_category_and_currency() -> None:
    """Each side summed in its own currency (the orders' side of a currency mismatch or a
    duplicate in another currency on a row of its own currency); blank where no row has a
    value (nothing compared), never 0.00 (issue 33)."""
    summary = reconcile_summary(reconcile(tx_frame(TRANSACTIONS), ORDERS)).drop(
        "export_amount_successful"  # its own test below
    )
    expected = pl.DataFrame(
        [
            ("matched", "NGN", 1, "100.00", None, "100.00", "0.00", "0.00"),
            ("missing_in_export", "KES", 1, None, None, "1.50", None, "-1.50"),
            ("missing_in_export", "NGN", 1, None, None, "100.00", None, "-100.00"),
            ("missing_in_orders", "NGN", 1, "100.00", None, None, None, "100.00"),
            ("duplicate_reference", "GHS", 1, "90.00", "NGN", "100.00", None, None),
            ("duplicate_reference", "NGN", 2, "105.00", None, "100.00", "0.00", "0.00"),
            ("currency_mismatch", "USD", 1, "100.00", "NGN", "100.01", None, None),
            ("amount_mismatch", "NGN", 2, "200.00", None, "200.49", "-0.49", "-0.49"),
            # R4 failed while its order says paid: the order's amount is short (issue 33).
            ("status_mismatch", "NGN", 1, "100.00", None, "100.00", "0.00", "-100.00"),
        ],
        schema={
            "category": pl.Enum(CATEGORIES),
            "currency": pl.String,
            "references": pl.UInt32,
            "export_amount": pl.String,
            "order_currency": pl.String,
            "order_amount": pl.String,
            "difference": pl.String,
            "at_stake": pl.String,
        },
        orient="row",
    ).with_columns(
        pl.col("export_amount", "order_amount", "difference", "at_stake").cast(pl.Decimal(38, 2))
    )
    assert_frame_equal(summary, expected)


def test_amounts_of_different_scales_compare_exactly() -> None:
    orders = pl.DataFrame(
        {"reference": ["R1", "R2"], "amount": ["100.000", "100.001"], "currency": ["NGN", "NGN"]}
    ).with_columns(pl.col("amount").cast(pl.Decimal(38, 3)))
    result = reconcile(tx_frame(TRANSACTIONS[:2]), orders)
    assert result["category"].to_list() == ["matched", "amount_mismatch"]
    assert result["difference"].to_list() == [Decimal("0.000"), Decimal("-0.001")]
    assert result.schema["export_amount"] == pl.Decimal(38, 3)


def test_missing_order_columns_are_named() -> None:
    with pytest.raises(ValueError, match="orders has missing columns 'amount', 'currency'"):
        reconcile(tx_frame(TRANSACTIONS), ORDERS.select("reference"))


def test_float_order_amounts_are_refused() -> None:
    orders = ORDERS.with_columns(pl.col("amount").cast(pl.Float64))
    with pytest.raises(ValueError, match="'amount' is Float64, expected Decimal or integer"):
        reconcile(tx_frame(TRANSACTIONS), orders)


def test_missing_transaction_columns_are_named() -> None:
    with pytest.raises(ValueError, match="transactions has missing column 'transactionReference'"):
        reconcile(tx_frame(TRANSACTIONS).drop("transactionReference"), ORDERS)


def test_summary_needs_a_reconcile_result() -> None:
    with pytest.raises(ValueError, match="reconcile_summary: result has missing columns"):
        reconcile_summary(ORDERS)


# ---------------------------------------------------------------------------------------------
# read_orders


def _write(tmp_path: Path, text: str, name: str = "orders.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_orders_keeps_amounts_exact_and_widens_the_scale(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        " reference , amount ,currency,note\n"
        "A, 0.1 ,NGN,x\n"
        "B,1234567890123456789.125,NGN,\n"
        "C,-7,USD,y\n",
    )
    orders = read_orders(path)
    assert orders.columns == ["reference", "amount", "currency", "note"]
    assert orders.schema["amount"] == pl.Decimal(38, 3)
    assert orders["amount"].to_list() == [
        Decimal("0.100"),
        Decimal("1234567890123456789.125"),  # far beyond float64's 15-16 digits
        Decimal("-7.000"),
    ]
    assert orders["reference"].to_list() == ["A", "B", "C"]


def test_read_orders_parses_optional_status_and_date(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "date,status,reference,amount,currency\n"
        "2026-01-02,successful,A,1,NGN\n"
        "2026-01-03T10:00:00Z,failed,B,2,NGN\n"
        ",,C,3,NGN\n",
    )
    orders = read_orders(path)
    assert orders.columns == ["reference", "amount", "currency", "status", "date"]
    assert orders["date"].to_list() == [date(2026, 1, 2), date(2026, 1, 3), None]
    assert orders["status"].to_list() == ["successful", "failed", None]


def test_read_orders_names_every_missing_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "ref,total\nA,1\n")
    with pytest.raises(
        DataFileError,
        match=r"orders.csv, line 1: no column 'reference', 'amount', 'currency' in the header "
        r"\(found: 'ref', 'total'\); the first line must name the columns: required reference, "
        r"amount, currency; optional status, date",
    ):
        read_orders(path)


def test_read_orders_lists_unparseable_amounts_with_their_lines(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'reference,amount,currency\nA,1.00,NGN\nB,1e5,NGN\nC,"1,50.00",NGN\nD,,NGN\nE,2,NGN\n',
    )
    with pytest.raises(
        DataFileError,
        match=r"orders.csv, lines 3, 4 and 5: amount is empty or not a number written with "
        r"decimal dot, thousands none: '1e5', '1,50.00', empty; write amounts as digits",
    ) as caught:
        read_orders(path)
    assert caught.value.lines == (3, 4, 5)  # as a text editor numbers them: the header is 1
    assert isinstance(caught.value, ValueError)


def test_read_orders_refuses_empty_references_and_bad_dates(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"line 3: no reference; every order needs"):
        read_orders(_write(tmp_path, "reference,amount,currency\nA,1,NGN\n ,2,NGN\n"))
    with pytest.raises(
        DataFileError,
        match=r"lines 2 and 3: date is not YYYY-MM-DD: '02/01/2026', '2026-13-01'; write dates",
    ):
        read_orders(
            _write(
                tmp_path, "reference,amount,currency,date\nA,1,NGN,02/01/2026\nB,1,NGN,2026-13-01\n"
            )
        )


def test_read_orders_reads_parquet(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    ORDERS.write_parquet(path)
    assert_frame_equal(read_orders(path), ORDERS)
    ORDERS.with_columns(pl.col("amount").cast(pl.String)).write_parquet(path)
    assert_frame_equal(read_orders(path), ORDERS)
    ORDERS.with_columns(pl.col("amount").cast(pl.Int64)).write_parquet(path)
    assert read_orders(path)["amount"][0] == Decimal("100.00")


def test_read_orders_refuses_float_parquet_amounts(tmp_path: Path) -> None:
    path = tmp_path / "orders.pq"
    ORDERS.with_columns(pl.col("amount").cast(pl.Float64)).write_parquet(path)
    with pytest.raises(DataFileError, match="stored as Float64, which does not hold amounts"):
        read_orders(path)


def test_read_orders_refuses_other_file_types(tmp_path: Path) -> None:
    # A spreadsheet is read (issue 36); one that is not a workbook is named as such.
    with pytest.raises(
        DataFileError, match=r"orders.xlsx: is named .xlsx but is neither a workbook nor an HTML"
    ):
        read_orders(_write(tmp_path, "x", "orders.xlsx"))
    with pytest.raises(
        DataFileError,
        match=r"orders.numbers: a Numbers document is not read here; save it as .xlsx, or "
        r".*'CSV UTF-8 \(Comma delimited\)'.*accepted: .csv \(CSV text, UTF-8 or Windows-1252\), "
        r".xlsx .*, .parquet \(Parquet\), .pq",
    ):
        read_orders(_write(tmp_path, "x", "orders.numbers"))
    with pytest.raises(
        DataFileError,
        match=r"orders.json: files ending '.json' are not read.*accepted: .csv \(CSV text, "
        r"UTF-8 or Windows-1252\), .xlsx",
    ):
        read_orders(_write(tmp_path, "{}", "orders.json"))
    with pytest.raises(DataFileError, match="absent.csv: no such file"):
        read_orders(tmp_path / "absent.csv")


# ---------------------------------------------------------------------------------------------
# read_orders: what a merchant's spreadsheet really holds (issue 20)


def test_currency_codes_and_statuses_are_normalised_and_counted(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "Reference , AMOUNT,Currency,Status,date\n"
        "A,1.00,ngn,Successful,2026-01-02\n"
        "B,2.00, NGN ,successful,2026-01-02\n"
        "C,3.00,NGN,  FAILED ,2026-01-02\n"
        " D ,4.00,Usd,,2026-01-02\n",
    )
    orders = read_orders_file(path)
    assert orders.frame.columns == ["reference", "amount", "currency", "status", "date"]
    assert orders.frame["currency"].to_list() == ["NGN", "NGN", "NGN", "USD"]
    assert orders.frame["status"].to_list() == ["successful", "successful", "failed", None]
    assert orders.frame["reference"].to_list() == ["A", "B", "C", "D"]
    assert orders.normalised == {"reference": 1, "currency": 3, "status": 2}
    assert orders.notes == (
        "normalised 3 currency codes ('ngn' read as 'NGN', ' NGN ' read as 'NGN', 'Usd' read "
        "as 'USD'), 2 statuses ('Successful' read as 'successful', '  FAILED ' read as "
        "'failed') and 1 references with spaces around them (' D ' read as 'D')",
    )
    # Matched against the export as written by the service (upper-case codes, lower-case
    # statuses): before, 'ngn' was a currency_mismatch.
    export = tx_frame(
        [_collection("t1", "A", "1.00"), _collection("t4", "D", "4.00", "USD", status="failed")]
    )
    result = reconcile(export, orders.frame.filter(pl.col("reference").is_in(["A", "D"])))
    assert result["category"].to_list() == ["matched", "matched"]


def test_the_sandbox_orders_with_lower_case_codes_still_match(tmp_path: Path) -> None:
    case = load_case(1, 0.03)
    text = case.ledger.orders_csv().decode()
    lines = text.splitlines()
    lowered = [lines[0]] + [
        ",".join(f.lower() if i == 2 else f for i, f in enumerate(line.split(",")))
        for line in lines[1:]
    ]
    path = _write(tmp_path, "\n".join(lowered) + "\n")
    orders = read_orders_file(path)
    assert_frame_equal(orders.frame, case.ledger.orders)
    assert orders.normalised["currency"] == case.ledger.orders.height


def test_a_windows_1252_file_is_read_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_bytes(
        "reference,amount,currency,customer\nA,1.00,NGN,Ama\nB,2.00,NGN,Zoë Müller\n".encode(
            "cp1252"
        )
    )
    with pytest.warns(UserWarning, match="read as Windows-1252"):
        frame = read_orders(path)
    assert frame["customer"].to_list() == ["Ama", "Zoë Müller"]
    notes = read_orders_file(path).notes
    assert notes == (
        "read as Windows-1252 text, not UTF-8 (first non-UTF-8 byte on line 3); its first "
        "non-ASCII text is on line 3: 'B,2.00,NGN,Zoë Müller': check that it reads right, or "
        "save the file as CSV UTF-8",
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"orders.csv: the file is empty \(0 bytes\); export it again"),
        (b"\xef\xbb\xbf\r\n  \r\n", r"orders.csv: holds no text, only blank lines"),
        (
            b"reference,amount,currency,status,date\r\n\r\n",
            r"orders.csv: has a header \(line 1\) but no orders after it; export the orders",
        ),
        (
            b"reference,amount,currency\n,,\n,,\n",
            r"orders.csv: has a header \(line 1\) but no orders after it",
        ),
        (
            # 0x81 has no character in Windows-1252: not guessed
            b"reference,amount,currency\nA,1,NGN\nB,2,\x81NGN\n",
            r"orders.csv, line 3: is neither UTF-8 nor Windows-1252 text \(byte 5 of the line, "
            r"0x81\); save the file as UTF-8",
        ),
        (
            b"reference,amount,currency,note\nA,1,NGN,caf\xc3\xa9\nB,2,NGN,caf\xe9\n",
            r"orders.csv, line 3: mixes UTF-8 text with bytes that are not UTF-8 \(first at byte "
            r"12 of the line, 0xE9\)",
        ),
        (
            b"PK\x03\x04rest of a workbook",
            r"orders.csv: is a ZIP archive \(an Excel .xlsx workbook is one\), not text; save "
            r"the sheet as CSV",
        ),
        (
            b"reference,amount,currency\nA,1,NGN\nB,2\x00,NGN\n",
            r"orders.csv, line 3: holds a NUL byte \(byte 4 of the line\)",
        ),
        (
            b"reference,amount,currency\nA,1,NGN\nB,1,500.00,NGN\nC,2,NGN\n",
            r"orders.csv, line 3: a record has 4 field\(s\) where the header has 3; a value "
            r"holding the delimiter must be quoted",
        ),
        (
            b'reference,amount,currency\nA,1,NGN\nB,"2,NGN\nC,2,NGN\n',
            r"orders.csv, line 3: the record starting here cannot be read as CSV",
        ),
        (
            # A quoted value over two lines: the next record's line is still the editor's.
            b'reference,amount,currency,note\nA,1,NGN,"two\nlines"\nB,x,NGN,\n',
            r"orders.csv, line 4: amount is empty or not a number written with decimal dot, "
            r"thousands none: 'x'",
        ),
        (
            b"reference,amount,currency\nA,35700.000000000000000000000000001,NGN\n",
            r"orders.csv, line 2: amount has more than 6 decimals \(trailing zeros aside\): "
            r"'35700.000000000000000000000000001'; no currency of the service has more, and "
            r"amounts are never rounded: round them in the file",
        ),
        (
            b"reference,amount,currency\nA,0.30000000000000004,USD\n",
            r"line 2: amount has more than 6 decimals",
        ),
        (
            b"reference,amount,currency\nA,123456789012345678901,USD\n",
            r"line 2: amount has more than 20 digits before the decimal point",
        ),
        (
            "reference,amount,currency\nA,1,\u20a6\nB,1,\n".encode(),
            r"orders.csv, line 3: no currency; every order needs its currency code \(NGN, USD",
        ),
        (
            "reference,amount,currency\nA,1,\u20a6\nB,1,N G N\n".encode(),
            r"lines 2 and 3: currency is not a 3- or 4-letter code: '\u20a6', 'N G N'",
        ),
        (
            b"reference,amount,currency,status\nA,1,NGN,paid\n",
            r"line 2: status is not one of the service's statuses: 'paid'; accepted: ongoing, "
            r"pending, .*; leave it empty where unknown, or remove the status column",
        ),
        (
            b"reference,amount,Amount,currency\nA,1,1,NGN\n",
            r"line 1: the header names 'amount' more than once",
        ),
    ],
    ids=[
        "empty",
        "blank",
        "header-only",
        "empty-fields-only",
        "not-cp1252",
        "mixed-encodings",
        "xlsx-renamed",
        "nul",
        "ragged",
        "open-quote",
        "multi-line-record",
        "27-decimals",
        "float-remainder",
        "huge",
        "no-currency",
        "bad-currency",
        "bad-status",
        "duplicate-column",
    ],
)
def test_every_file_error_names_the_file_the_line_and_what_to_do(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "orders.csv"
    path.write_bytes(content)
    with pytest.raises(DataFileError, match=message) as caught:
        read_orders(path)
    assert str(caught.value).startswith(f"orders file {path}")
    assert "\n" not in str(caught.value)


def test_trailing_zeros_beyond_six_decimals_are_not_decimals(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "reference,amount,currency\nA,35700.000000000000000000000000,NGN\nB,0.123456,USDT\n",
    )
    frame = read_orders(path)
    assert frame.schema["amount"] == pl.Decimal(38, 6)
    assert frame["amount"].to_list() == [Decimal("35700"), Decimal("0.123456")]


def test_semicolons_utf16_and_empty_lines_are_read(tmp_path: Path) -> None:
    semi = tmp_path / "semi.csv"
    semi.write_bytes(
        b"\xef\xbb\xbfReference;Amount;Currency\r\nA;1.50;NGN\r\n;;\r\n\r\nB;2;NGN\r\n"
    )
    orders = read_orders_file(semi)
    assert orders.frame["amount"].to_list() == [Decimal("1.50"), Decimal("2.00")]
    assert orders.notes == ("columns separated by semicolons", "1 line(s) of empty fields skipped")
    utf16 = tmp_path / "unicode.csv"
    utf16.write_bytes("reference\tamount\tcurrency\r\nA\t1\tNGN\r\n".encode("utf-16"))
    orders = read_orders_file(utf16)
    assert orders.frame["reference"].to_list() == ["A"]
    assert orders.notes[0].startswith("read as UTF-16 text")


def test_parquet_errors_name_rows_and_decimals_are_proven_exact(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    wide = pl.DataFrame(
        {"reference": ["A", "B"], "amount": ["1.5", "2.25"], "currency": ["ngn", "NGN"]}
    ).with_columns(pl.col("amount").cast(pl.Decimal(38, 10)))
    wide.write_parquet(path)
    orders = read_orders_file(path)
    assert orders.frame.schema["amount"] == pl.Decimal(38, 2)  # the scale the values need
    assert orders.frame["amount"].to_list() == [Decimal("1.50"), Decimal("2.25")]
    assert orders.normalised["currency"] == 1
    wide.with_columns(
        pl.Series("amount", [Decimal("1.5"), Decimal("0.0000001")], dtype=pl.Decimal(38, 10))
    ).write_parquet(path)
    with pytest.raises(DataFileError, match=r"row 2: amount has more than 6 decimals"):
        read_orders(path)
    wide.head(0).write_parquet(path)
    with pytest.raises(DataFileError, match=r"orders.parquet: holds no orders \(0 rows\)"):
        read_orders(path)
    path.write_bytes(b"PAR1 but not really")
    with pytest.raises(DataFileError, match=r"orders.parquet: cannot be read as Parquet"):
        read_orders(path)


def test_file_errors_pickle_and_never_hold_the_key(tmp_path: Path) -> None:
    import pickle

    error = DataFileError(tmp_path / "o.csv", "bad", "fix it", lines=[3, 4], what="orders file")
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.lines == (3, 4)
    assert str(error).endswith("o.csv, lines 3 and 4: bad; fix it")


def test_matched_says_how_much_of_it_is_successful() -> None:
    """Issue 47, Why 8.7: "matched" held failed and pending pairs (GHS 186,881.82 of which
    159,705.00 successful) and could not be tied to money in."""
    records = [
        _collection("s1", "M1", "100.00"),
        _collection("s2", "M2", "40.00", status="failed"),
        _collection("s3", "M3", "60.00", status="pending"),
    ]
    orders = pl.DataFrame(
        {
            "reference": ["M1", "M2", "M3"],
            "amount": ["100", "40", "60"],
            "currency": ["NGN"] * 3,
            "status": ["successful", "failed", "pending"],
            "date": [date(2026, 1, 2)] * 3,
        }
    ).with_columns(pl.col("amount").cast(pl.Decimal(38, 2)))
    summary = reconcile_summary(reconcile(tx_frame(records), orders))
    matched = summary.filter(pl.col("category") == "matched").row(0, named=True)
    assert matched["references"] == 3
    assert matched["export_amount"] == Decimal("200.00")
    assert matched["export_amount_successful"] == Decimal("100.00")
