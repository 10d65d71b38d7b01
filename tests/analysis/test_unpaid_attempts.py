"""Issue 46, item 6: shop exports as merchants reconcile them. The sandbox's orders written as
a Shopify export (a shop has no order for a payment attempt that failed, was declined,
abandoned or expired, and calls every payment still under way ``pending``): an attempt never
paid that no order expects is ``unpaid_attempt`` (nothing at stake, outside the mismatch rate
and the exception register, counted on the page), and a shop's pending order agrees with any
in-flight status of the service."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

import polars as pl
from analysis_cases import load_case

from txkit.analysis import read_orders, read_orders_file, reconcile, reconcile_summary
from txkit.analysis.exception_lists import listed
from txkit.analysis.reconcile import IN_FLIGHT_STATUSES, NOT_EXCEPTIONS, UNPAID_STATUSES
from txkit.notebook.findings import reconcile_findings


def _shopify(orders: pl.DataFrame, path: Path, *, expired: bool = False) -> Path:
    """The orders as Shopify exports them: no order for an attempt never paid (with
    ``expired``: an order of Financial Status ``expired``, a checkout never paid); every status
    under way ``pending``; a reversed order as a status of its own mapped back."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Name", "Email", "Financial Status", "Created at", "Currency", "Total"])
    for row in orders.iter_rows(named=True):
        if row["status"] in UNPAID_STATUSES and not expired:
            continue
        status = {"successful": "paid"}.get(row["status"], f"txkit-{row['status']}")
        if row["status"] in UNPAID_STATUSES:
            status = "expired"
        if row["status"] in IN_FLIGHT_STATUSES:
            status = "pending"
        when = f"{row['date']} 10:00:00 +0000"
        amount = str(row["amount"])
        writer.writerow([row["reference"], row["customer"], status, when, row["currency"], amount])
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def _exceptions(result: pl.DataFrame) -> pl.DataFrame:
    return result.filter(~pl.col("category").cast(pl.String).is_in(NOT_EXCEPTIONS))


def test_a_shopify_export_of_the_sandbox_orders_has_no_mismatch_for_unpaid_attempts(
    tmp_path: Path,
) -> None:
    case = load_case(1, 0.03)
    native = case.ledger.orders
    path = _shopify(native, tmp_path / "orders_export.csv")
    shop = read_orders_file(path, columns="shopify,status.txkit-reversed=reversed").frame
    result = reconcile(case.frame, shop)
    expected = reconcile(case.frame, read_orders(_native(native, tmp_path)))

    unpaid = result.filter(pl.col("category") == "unpaid_attempt")
    collections = case.frame.filter(pl.col("transType") == "collection")
    # every export reference of one unpaid collection that the shop has no order for
    single = collections.group_by("transactionReference").agg(
        pl.len().alias("n"), pl.col("status").first()
    )
    alone = single.filter(
        (pl.col("n") == 1)
        & pl.col("status").is_in(UNPAID_STATUSES)
        & ~pl.col("transactionReference").is_in(shop["reference"].to_list())
    )
    assert unpaid.height == alone.height > 400
    assert unpaid["order_count"].to_list() == [0] * unpaid.height
    assert set(unpaid["export_status"].to_list()) <= set(UNPAID_STATUSES)
    assert set(unpaid["at_stake"].to_list()) == {Decimal("0.00")}
    # Nothing unpaid is missing in the orders, and no pending order is a status mismatch.
    missing = result.filter(pl.col("category") == "missing_in_orders")
    assert not missing["export_status"].is_in(UNPAID_STATUSES).any()
    status = result.filter(pl.col("category") == "status_mismatch")
    assert not (
        (status["order_status"] == "pending") & status["export_status"].is_in(IN_FLIGHT_STATUSES)
    ).any()
    # What is left are the native file's exceptions, but for the orders a shop never had.
    had = set(native.filter(pl.col("status").is_in(UNPAID_STATUSES))["reference"].to_list())
    mine = set(_exceptions(result).select("reference", "category").cast(pl.String).rows())
    theirs = set(_exceptions(expected).select("reference", "category").cast(pl.String).rows())
    assert {r for r, _ in mine ^ theirs} <= had
    assert len(mine) <= len(theirs)
    # Outside the register and the rate, counted on the page.
    register = listed("reconciliation_mismatches", result)
    assert not register["category"].cast(pl.String).is_in(["unpaid_attempt"]).any()
    findings = reconcile_findings(result, reconcile_summary(result))
    reconciled = result.height - unpaid.height
    assert any(
        f.startswith(f"{unpaid.height:,} payment attempt(s) never paid") for f in findings
    ), findings
    assert f"of {reconciled:,} references match exactly" in findings[0], findings[0]


def _native(orders: pl.DataFrame, tmp_path: Path) -> Path:
    path = tmp_path / "orders.csv"
    orders.write_csv(path)
    return path


def test_a_shop_status_the_preset_says_unpaid_agrees_with_any_unpaid_attempt(
    tmp_path: Path,
) -> None:
    # Shopify's preset reads its "expired" as unpaid: against the service's failed, declined,
    # abandoned or expired attempt, nothing was paid on either side.
    case = load_case(1, 0.03)
    native = case.ledger.orders
    path = _shopify(native, tmp_path / "orders_export.csv", expired=True)
    shop = read_orders_file(path, columns="shopify,status.txkit-reversed=reversed").frame
    assert set(shop.filter(pl.col("status") == "unpaid")["reference"].to_list()) == set(
        native.filter(pl.col("status").is_in(UNPAID_STATUSES))["reference"].to_list()
    )
    result = reconcile(case.frame, shop)
    unpaid_orders = result.filter(pl.col("order_status") == "unpaid")
    both = unpaid_orders.filter(
        (pl.col("export_count") == 1) & pl.col("export_status").is_in(UNPAID_STATUSES)
    )
    assert both.height > 400
    assert set(both["category"].cast(pl.String).to_list()) <= {
        "unpaid_attempt",
        "duplicate_reference",
    }
    assert set(both.filter(pl.col("category") == "unpaid_attempt")["at_stake"].to_list()) == {
        Decimal("0.00")
    }
    # an order the shop says unpaid whose payment the service collected is an exception,
    # with the whole payment at stake
    paid = unpaid_orders.filter(pl.col("export_status") == "successful")
    assert set(paid["category"].cast(pl.String).to_list()) <= {
        "status_mismatch",
        "duplicate_reference",
        "amount_mismatch",
        "currency_mismatch",
    }
    sm = paid.filter(pl.col("category") == "status_mismatch")
    assert (sm["at_stake"] == sm["export_amount"]).all()
