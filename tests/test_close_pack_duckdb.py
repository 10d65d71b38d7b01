"""Issue 33, item 7: every headline and summary figure of the shared report recomputed from
the store's Parquet files by an independent engine (DuckDB SQL over the Delta table, not
txkit's polars code) and compared with what the pages say, so a mistake in one code path
cannot repeat in its check.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from tests.factories import SessionReport
from txkit.money import format_money

pytestmark = pytest.mark.report

MONTH = "2026-10"
OPEN = ("pending", "processing", "ongoing", "initiated", "verified")


def _connect():
    import duckdb
    import duckdb_extension_delta

    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    folder = Path(duckdb_extension_delta.__file__).parent
    path = next(folder.glob("extensions/*/delta.duckdb_extension"))
    con.execute(f"LOAD '{path}'")
    return con


def _text(path: Path) -> str:
    import html

    page = re.sub(r"<(style|script)\b.*?</\1>", " ", path.read_text(encoding="utf-8"), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.fixture(scope="module")
def sql(session_report: SessionReport):
    con = _connect()
    con.execute(
        f"CREATE VIEW tx AS SELECT * FROM delta_scan('{session_report.store}') "
        f"WHERE month = '{MONTH}'"
    )
    return con


def _money(value: Decimal, currency: str | None = None) -> str:
    return format_money(value, currency)


def test_index_headlines_match_duckdb(session_report: SessionReport, sql) -> None:
    """Transactions, success rate, money in and out per currency (conversions on both sides)."""
    index = _text(session_report.folder / "index.html")
    records, successful = sql.execute(
        "SELECT count(*), count(*) FILTER (WHERE status = 'successful') FROM tx"
    ).fetchone()
    assert f"Transactions {records:,}" in index
    assert f"Success rate, every record (all currencies) {successful / records:.2%}" in index
    # Why 4: completed and still-open records told apart (321 open in 2026-10).
    completed, still = sql.execute(
        f"SELECT count(*) FILTER (WHERE status NOT IN {OPEN}), "
        f"count(*) FILTER (WHERE status IN {OPEN}) FROM tx"
    ).fetchone()
    assert f"({still:,} still open: the value on the close summary)" in index
    rate = f"{successful / completed:.2%} of {completed:,}"
    assert f"Success rate, completed records (all currencies) {rate}" in index
    money_in = sql.execute(
        "SELECT toCurrency, sum(toAmount) FROM tx WHERE status = 'successful' "
        "AND transType IN ('collection', 'conversion') GROUP BY 1"
    ).fetchall()
    money_out = sql.execute(
        "SELECT currency, sum(amount) FROM ("
        " SELECT toCurrency AS currency, toAmount AS amount FROM tx WHERE status = 'successful'"
        "  AND transType IN ('transfer', 'settlement')"
        " UNION ALL SELECT fromCurrency, fromAmount FROM tx WHERE status = 'successful'"
        "  AND transType = 'conversion' AND fromCurrency IS NOT NULL) GROUP BY 1"
    ).fetchall()
    assert money_in and money_out
    for currency, amount in money_in:
        assert f"Money in, {currency} (successful) {_money(amount, currency)}" in index
    for currency, amount in money_out:
        assert f"Money out, {currency} (successful) {_money(amount, currency)}" in index
    assert ("USDT", Decimal("5460.00")) in [(c, Decimal(a)) for c, a in money_out]


def test_explore_summary_matches_duckdb(session_report: SessionReport, sql) -> None:
    """Per currency the successful records, the amount they move and their fees; the busiest
    NGN day; the records still open."""
    index = _text(session_report.folder / "index.html")
    rows = sql.execute(
        "SELECT toCurrency, count(*), sum(toAmount), sum(feeAmount) FROM tx "
        "WHERE status = 'successful' GROUP BY 1"
    ).fetchall()
    for currency, n, moved, fees in rows:
        assert (
            f"{currency}: {n:,} successful records moving {_money(moved, currency)}; fees "
            f"{_money(fees, currency)}" in index
        ), currency
    day, n, amount = sql.execute(
        "SELECT CAST(timezone('UTC', createdAt) AS DATE) AS day, count(*), sum(toAmount) FROM tx "
        "WHERE status = 'successful' AND toCurrency = 'NGN' GROUP BY 1 "
        "ORDER BY 3 DESC, 1 LIMIT 1"
    ).fetchone()
    busiest = f"{day} with {n:,} successful records ({_money(amount, 'NGN')})"
    assert f"Busiest NGN day by amount: {busiest}" in index
    still_open = sql.execute(f"SELECT count(*) FROM tx WHERE status IN {OPEN}").fetchone()[0]
    assert f"{still_open:,} records are still open" in index


def test_underpayment_figures_match_duckdb(session_report: SessionReport, sql) -> None:
    index = _text(session_report.folder / "index.html")
    flag = 'upper(trim("meta.paymentCollectionType"))'
    collections = sql.execute(
        "SELECT count(*) FROM tx WHERE status = 'successful' AND transType = 'collection'"
    ).fetchone()[0]
    under = sql.execute(
        f'SELECT toCurrency, count(*), sum("meta.existingTransaction.expectedAmount" - toAmount) '
        f"FROM tx WHERE status = 'successful' AND transType = 'collection' "
        f"AND {flag} = 'UNDERPAYMENT' GROUP BY 1"
    ).fetchall()
    flagged = sql.execute(
        f"SELECT count(*) FROM tx WHERE status = 'successful' AND transType = 'collection' "
        f"AND {flag} IN ('UNDERPAYMENT', 'OVERPAYMENT')"
    ).fetchone()[0]
    assert f"Flagged under- and overpayments (open) {flagged:,} of {collections:,}" in index
    for currency, n, shortfall in under:
        assert (
            f"Gross shortfall of underpayments, {currency} {_money(shortfall, currency)}" in index
        )
        assert f"{currency}: {n:,} underpayment(s)" in index


def test_close_summary_matches_duckdb(session_report: SessionReport, sql) -> None:
    """The close summary's wallet lines and the value still open, per currency."""
    page = _text(session_report.folder / "00_close_summary.html")
    currencies = [
        c for (c,) in sql.execute("SELECT DISTINCT toCurrency FROM tx ORDER BY 1").fetchall()
    ]
    header = page.index("GHS KES NGN USD USDT")
    assert currencies == ["GHS", "KES", "NGN", "USD", "USDT"] and header > 0

    def line(label: str, query: str, sign: int = 1) -> None:
        got = dict(sql.execute(query).fetchall())
        cells = " ".join(_money(sign * Decimal(got.get(c) or 0)) for c in currencies)
        assert f"{label} {cells}" in page, (label, cells)

    def total(column: str, kinds: str, by: str = "toCurrency") -> str:
        where = "" if not kinds else f" AND transType IN ({kinds})"
        return f"SELECT {by}, sum({column}) FROM tx WHERE status = 'successful'{where} GROUP BY 1"

    line("Money in: collections", total("toAmount", "'collection'"))
    line("Money in: conversions into the currency", total("toAmount", "'conversion'"))
    line(
        "Money out: conversions out of the currency",
        total("fromAmount", "'conversion'", by="fromCurrency"),
        -1,
    )
    line("Money out: settlements to the bank", total("toAmount", "'settlement'"), -1)
    line("Money out: transfers", total("toAmount", "'transfer'"), -1)
    line("Fees", total("feeAmount", ""), -1)
    line("Tax on fees", total("taxAmount", ""), -1)
    # Why 8.6: the records still open by direction, never inflows and outflows added.
    line(
        "Records still open, money in: collections, conversions into (status can change)",
        f"SELECT toCurrency, sum(toAmount) FROM tx WHERE status IN {OPEN} "
        "AND transType IN ('collection', 'conversion') GROUP BY 1",
    )
    line(
        "Records still open, money out: transfers, settlements, conversions out (status can "
        "change)",
        f"SELECT currency, sum(amount) FROM (SELECT toCurrency AS currency, toAmount AS amount "
        f"FROM tx WHERE status IN {OPEN} AND transType IN ('transfer', 'settlement') UNION ALL "
        f"SELECT fromCurrency, fromAmount FROM tx WHERE status IN {OPEN} "
        "AND transType = 'conversion' AND fromCurrency IS NOT NULL) GROUP BY 1",
        -1,
    )


def test_register_amounts_match_duckdb(session_report: SessionReport, sql) -> None:
    """The register's amount of a status mismatch is the export's amount of the reference."""
    import csv

    amount = sql.execute(
        "SELECT toAmount FROM tx WHERE transactionReference = 'TXK-3067037698ED' "
        "AND transType = 'collection'"
    ).fetchone()[0]
    with open(session_report.folder / "exceptions.csv", encoding="utf-8") as f:
        rows = {r["key"]: r for r in csv.DictReader(f)}
    assert Decimal(rows["TXK-3067037698ED:status_mismatch"]["amount"]) == amount
