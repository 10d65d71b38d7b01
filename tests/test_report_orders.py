"""``txkit report --orders FILE`` with the files merchants really export (issue 20).

Every problem with the orders file stops the report before the sync and before any notebook
kernel starts, naming the file, the line and what to do; currency codes and statuses written
otherwise (``ngn``, ``Successful``) are normalised and counted; a month without orders is a
warning on the page and the index, not a normal-looking report.
"""

from __future__ import annotations

import csv
import json
import re
from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest

from tests.factories import KEPT_KERNELS_ENV, SessionReport, invoke_cli

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MONTH = "2026-10"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, session_report: SessionReport) -> Path:
    """A folder with a copy of the shared report's data: the store, complete for what a report
    of 2026-10 reads (so the reports here sync nothing), and the default sandbox's written
    files (orders.csv, ground_truth.json) in ``data/sandbox/cache``, where ``txkit report``
    finds them."""
    folder = tmp_path_factory.mktemp("report-orders")
    data = session_report.copy_data(folder)
    (files,) = (data / "sandbox/cache").glob("*/orders.csv")
    (folder / "sandbox-files").symlink_to(files.parent)
    # The orders are read by the reconciliation alone: its notebook is the only one run (a
    # sixth of the kernels' time), the index's orders headline and warning included.
    (folder / "books").mkdir()
    (folder / "books/02_reconciliation.ipynb").symlink_to(NOTEBOOKS / "02_reconciliation.ipynb")
    return folder


def _sandbox_orders(workdir: Path) -> pl.DataFrame:
    return pl.read_csv(workdir / "sandbox-files/orders.csv", infer_schema=False)


def _report(workdir: Path, orders: Path, out: str) -> tuple[int, str, str]:
    done = invoke_cli(
        "report", "--month", MONTH, "--orders", str(orders), "--notebooks",
        str(workdir / "books"), "--out", out, cwd=workdir, env=KEPT_KERNELS_ENV,
    )  # fmt: skip
    assert "sync: store up to date, no request sent" in done.stdout, done.stdout
    return done.returncode, done.stdout, done.stderr


def _text(page: str) -> str:
    import html

    page = re.sub(r"<style.*?</style>|<script.*?</script>", "", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.mark.slow
def test_lower_case_currencies_and_capitalised_statuses_still_match(workdir: Path) -> None:
    """Before: 5,258 of October's references were currency mismatches."""
    orders = _sandbox_orders(workdir).with_columns(
        pl.col("currency").str.to_lowercase(),
        pl.col("status").str.to_titlecase(),  # Successful, Failed, ...
    )
    path = workdir / "orders-lower.csv"
    orders.write_csv(path)
    code, out, err = _report(workdir, path, "lower")
    assert code == 0, err
    # The load line says what was done, with counts, on the terminal and on the page.
    normalised = (
        f"normalised {orders.height:,} currency codes ('ngn' read as 'NGN', 'ghs' read as "
        f"'GHS', 'kes' read as 'KES') and {orders.height:,} statuses"
    )
    # The file's name, not the analyst's local path: the same line goes on the page.
    assert f"orders: orders file {path.name}" in out and normalised in out
    folder = workdir / f"lower/{MONTH}"
    assert normalised in _text((folder / "02_reconciliation.html").read_text())
    # Exactly the planted currency discrepancies of the month remain, not every reference.
    truth = json.loads((workdir / "sandbox-files/ground_truth.json").read_text())
    planted = {
        a["reference"]
        for a in truth["anomalies"]
        if a["kind"] == "order_currency" and a["createdAt"].startswith(MONTH)
    }
    mismatches = pl.read_csv(folder / "reconciliation_mismatches.csv", infer_schema=False)
    currency = mismatches.filter(pl.col("category") == "currency_mismatch")
    assert planted and set(currency["reference"]) == planted
    assert mismatches.filter(pl.col("category") == "status_mismatch").height < 20
    report = json.loads((folder / "report.json").read_text())
    assert report["orders"]["in_month"] > 5000 and report["orders"]["warnings"] == []
    assert report["reproduce"].endswith(f"--orders {path}")


@pytest.mark.slow
def test_a_month_without_orders_is_a_warning_on_the_page_and_the_index(workdir: Path) -> None:
    orders = _sandbox_orders(workdir).filter(~pl.col("date").str.starts_with(MONTH))
    path = workdir / "orders-without-october.csv"
    orders.write_csv(path)
    code, _, err = _report(workdir, path, "without")
    assert code == 0, err
    warning = (
        f"No order is dated in {MONTH} in orders file {path.name} (its {orders.height:,} orders "
        f"are dated 2025-11-01 to 2026-09-30): every collection of {MONTH} shows as "
        "missing_in_orders"
    )
    assert f"txkit: WARNING: report: {warning}" in err
    folder = workdir / f"without/{MONTH}"
    index = (folder / "index.html").read_text()
    # First thing on the index, in a warning box; the reconciliation's headline says look.
    assert re.search(r"<h1>[^<]*</h1><p class=\"warn\" role=\"alert\"><strong>Warning:", index)
    text = _text(index)
    assert f"Warning: {warning}" in text
    assert (
        "Orders in the month (the merchant's file) 0 the file's orders are dated 2025-11-01 "
        "to 2026-09-30 look at this"
    ) in text
    page = _text((folder / "02_reconciliation.html").read_text())
    assert f"Warning: {warning}" in page
    executed = (folder / "02_reconciliation.ipynb").read_text()
    assert "**Warning:** No order is dated" in executed
    assert json.loads((folder / "report.json").read_text())["orders"]["in_month"] == 0


_BAD_FILES = {
    "empty": ("orders.csv", b"", "orders.csv: the file is empty (0 bytes); export it again"),
    "header-only": (
        "orders.csv",
        b"reference,amount,currency,status,date\n",
        "orders.csv: has a header (line 1) but no orders after it",
    ),
    "not-windows-1252": (
        "orders.csv",
        b"reference,amount,currency\nA,1.00,NGN\nB,2.00,NGN\x81\n",
        "orders.csv, line 3: is neither UTF-8 nor Windows-1252 text (byte 11 of the line, "
        "0x81); save the file as UTF-8",
    ),
    "27-decimals": (
        "orders.csv",
        b"reference,amount,currency,date\nA,1.00,NGN,2026-10-01\n"
        b"B,12.123456789012345678901234567,USDT,2026-10-01\n",
        "orders.csv, line 3: amount has more than 6 decimals (trailing zeros aside): "
        "'12.123456789012345678901234567'; no currency of the service has more",
    ),
    "not-a-number": (
        "orders.csv",
        b"reference,amount,currency\nA,1.00,NGN\nB,N/A,NGN\n",
        "orders.csv, line 3: amount is empty or not a number written with decimal dot, "
        "thousands none: 'N/A'; write "
        "amounts as digits",
    ),
    "bad-date": (
        "orders.csv",
        b"reference,amount,currency,date\nA,1.00,NGN,31/10/2026\n",
        "orders.csv, line 2: date is not YYYY-MM-DD: '31/10/2026'; write dates as YYYY-MM-DD",
    ),
    "missing-columns": (
        "orders.csv",
        b"Order ID,Total,currency\nA,1.00,NGN\n",
        "orders.csv, line 1: no column 'reference', 'amount' in the header (found: "
        "'Order ID', 'Total', 'currency'); the first line must name the columns: required "
        "reference, amount, currency; optional status, date",
    ),
    "xlsx": (
        "orders.xlsx",
        b"PK\x03\x04 a workbook",
        "orders.xlsx: is not an .xlsx workbook (not a ZIP archive: File is not a zip file); "
        "open it in the spreadsheet program and save it again as .xlsx (or export CSV)",
    ),
    "workbook-renamed-csv": (
        "orders.csv",
        b"PK\x03\x04 a workbook",
        "orders.csv: is named .csv, but it is a ZIP archive whose directory cannot be read",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(_BAD_FILES))
def test_a_bad_orders_file_stops_the_report_before_the_sync_and_the_kernels(
    tmp_path: Path, case: str
) -> None:
    name, content, message = _BAD_FILES[case]
    path = tmp_path / name
    path.write_bytes(content)
    done = invoke_cli(
        "report", "--month", MONTH, "--orders", name, "--notebooks", str(NOTEBOOKS),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr  # the user's own input, like a bad argument
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"txkit: error: orders file {path}")
    assert message in lines[0]
    # Nothing was synced, nothing was started: no store, no sandbox, no report folder.
    assert "source:" not in done.stdout
    assert not (tmp_path / "data").exists() and not (tmp_path / "reports").exists()


def _as_shopify(orders: pl.DataFrame) -> pl.DataFrame:
    """The sandbox's orders as Shopify exports them (issue 36): its columns, ``paid`` for
    successful, a UTC offset on every timestamp (half of them after local midnight, before it
    in UTC), a line-item row after every fifth order and a voided order now and then."""
    header = (ROOT / "tests/data/real/shops/shopify_orders_export.csv").read_text().split("\n")[0]
    columns = next(csv.reader([header]))
    rows: list[dict[str, str | None]] = []
    for i, order in enumerate(orders.iter_rows(named=True)):
        day = order["date"]
        if i % 2:
            stamp = f"{date.fromisoformat(day) + timedelta(days=1)} 01:30:00 +0200"
        else:
            stamp = f"{day} 10:00:00 +0100"
        status = {"successful": "paid"}.get(order["status"], order["status"])
        rows.append({"Name": order["reference"], "Total": order["amount"],
                     "Currency": order["currency"], "Financial Status": status,
                     "Created at": stamp, "Email": order["customer"]})  # fmt: skip
        if i % 5 == 0:
            rows.append({"Name": order["reference"], "Created at": stamp,
                         "Lineitem name": "Another item"})  # fmt: skip
        if i % 97 == 0:
            rows.append({"Name": f"#VOID{i}", "Total": "1.00", "Currency": "NGN",
                         "Financial Status": "voided", "Created at": stamp})  # fmt: skip
    return pl.DataFrame(rows, schema=dict.fromkeys(columns, pl.String), orient="row")


@pytest.mark.slow
def test_a_shopify_export_reconciles_through_its_preset_as_the_native_file(
    workdir: Path,
) -> None:
    """Before: a Shopify export was refused (no reference or amount column, its statuses and
    line-item rows errors). The sandbox's orders rewritten as Shopify writes them, read with
    --orders-columns shopify, give the same reconciliation as the native file."""
    native = _sandbox_orders(workdir)
    native_path = workdir / "orders-native.csv"
    native.write_csv(native_path)
    shop_path = workdir / "orders_export.csv"
    _as_shopify(native).write_csv(shop_path)
    code, out, err = _report(workdir, native_path, "native")
    assert code == 0, err
    done = invoke_cli(
        "report", "--month", MONTH, "--orders", str(shop_path), "--orders-columns", "shopify",
        "--notebooks", str(workdir / "books"), "--out", "shopify", cwd=workdir,
        env=KEPT_KERNELS_ENV,
    )  # fmt: skip
    code, out, err = done.returncode, done.stdout, done.stderr
    assert code == 0, err
    # The load line says which mapping read the file, what was folded and left out.
    assert "columns: the shopify preset (from --orders-columns)" in out
    assert re.search(r"[0-9,]+ line-item row\(s\) folded into their order", out)
    assert re.search(r"order\(s\) left out by the status mapping \([0-9,]+ voided\)", out)
    folder = workdir / f"shopify/{MONTH}"
    page = _text((folder / "02_reconciliation.html").read_text())
    # The report hands the mapping in effect to the notebook as its parameter.
    assert "columns: the shopify preset (from the orders_columns parameter)" in page
    # The same matches and mismatches as the native file, reference for reference.
    for name in ("reconciliation_mismatches.csv",):
        ours = pl.read_csv(folder / name, infer_schema=False)
        theirs = pl.read_csv(workdir / f"native/{MONTH}/{name}", infer_schema=False)
        assert ours.height > 20 and ours.equals(theirs)
    report = json.loads((folder / "report.json").read_text())
    native_report = json.loads((workdir / f"native/{MONTH}/report.json").read_text())
    assert report["orders"]["in_month"] == native_report["orders"]["in_month"]
    assert report["reproduce"].endswith(f"--orders {shop_path} --orders-columns shopify")


def test_an_unknown_preset_stops_the_report_in_one_line_naming_the_presets(
    tmp_path: Path,
) -> None:
    (tmp_path / "orders.csv").write_text("Name,Total,Currency\n#1,1.00,USD\n")
    done = invoke_cli(
        "report", "--month", MONTH, "--orders", "orders.csv", "--orders-columns", "shopfy",
        "--notebooks", str(NOTEBOOKS), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "txkit: error: orders columns: unknown preset 'shopfy'; accepted: shopify, stripe, "
        "woocommerce"
    )
    assert not (tmp_path / "data").exists() and not (tmp_path / "reports").exists()
    # A wrong settings file is one line naming the file and the key.
    (tmp_path / "txkit.toml").write_text('[orders]\npreset = "shopify"\nrefrence = "Name"\n')
    done = invoke_cli(
        "report", "--month", MONTH, "--orders", "orders.csv", "--notebooks", str(NOTEBOOKS),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "txkit.toml [orders]: orders columns: unknown key 'refrence'" in done.stderr
