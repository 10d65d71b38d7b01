"""Carry-over on the sandbox: an item of September clears in October's report.

September is reported with an orders file that lacks the order of one plain collection (a
payment of the sandbox with no planted anomaly): the reconciliation lists it
``missing_in_orders``. October is reported with the full orders. October's report re-evaluates
September's open items: September's orders changed, so September is recomputed from the store,
the item is gone, and it is resolved in October, saying the order arrived. Every other item of
September stays open and ages. Only the reconciliation notebook runs (the one that lists it).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.factories import KEPT_KERNELS_ENV, SessionReport, invoke_cli
from txkit.money import format_money
from txkit.register import read_events, register_view

pytestmark = [pytest.mark.slow, pytest.mark.report]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def carried(tmp_path_factory: pytest.TempPathFactory, session_report: SessionReport) -> dict:
    workdir = tmp_path_factory.mktemp("carry")
    books = workdir / "books"
    books.mkdir()
    (books / "02_reconciliation.ipynb").symlink_to(ROOT / "notebooks" / "02_reconciliation.ipynb")
    (workdir / "materiality.toml").write_bytes((ROOT / "materiality.toml").read_bytes())
    # The shared report's store (every month both reports read: they sync nothing) and the
    # sandbox's files (orders, planted truth), without its register: September is reported
    # first, then October, as an analyst closes them.
    data = session_report.copy_data(workdir)
    shutil.rmtree(data / "store/sandbox/_register")
    (cache,) = {path.parent for path in (data / "sandbox/cache").glob("*/orders.csv")}
    orders = cache / "orders.csv"
    anomalous = {a["reference"] for a in json.loads((cache / "ground_truth.json").read_text())[
        "anomalies"]}  # fmt: skip
    frame = pl.read_csv(orders, infer_schema=False)
    pick = frame.filter(
        pl.col("date").str.starts_with("2026-09-1")
        & ~pl.col("reference").is_in(anomalous)
        # a paid order: an attempt never paid without its order is no exception (issue 46)
        & (pl.col("status") == "successful")
    ).row(0, named=True)
    trimmed = workdir / "orders-trimmed.csv"
    frame.filter(pl.col("reference") != pick["reference"]).write_csv(trimmed)
    runs = {}
    for month, extra in (("2026-09", ["--orders", str(trimmed)]), ("2026-10", [])):
        done = invoke_cli("report", "--month", month, "--notebooks", str(books), *extra,
                          cwd=workdir, env=KEPT_KERNELS_ENV)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "sync: store up to date, no request sent" in done.stdout
        runs[month] = done.stdout
    return {"workdir": workdir, "pick": pick, "runs": runs}


def test_an_item_of_the_month_before_clears_in_the_next_report_saying_by_what(
    carried: dict,
) -> None:
    store = carried["workdir"] / "data" / "store" / "sandbox"
    key = f"{carried['pick']['reference']}:missing_in_orders"
    september = register_view(store, month="2026-09")
    assert september.filter(pl.col("key") == key)["status"].item() == "open"
    october = register_view(store, month="2026-10")
    row = october.filter(pl.col("key") == key).row(0, named=True)
    assert (row["status"], row["first_month"], row["resolved_month"]) == (
        "resolved", "2026-09", "2026-10",
    )  # fmt: skip
    amount = format_money(carried["pick"]["amount"], carried["pick"]["currency"])
    assert row["resolved_by"].startswith(
        "cleared by 2026-10's report, which recomputed 2026-09 from the store"
    )
    assert f"the order arrived ({amount}, dated" in row["resolved_by"]
    assert row["resolved_by"].endswith("now matched")
    # Nothing else of September changed: its other items are open, aged to October's end.
    others = october.filter((pl.col("first_month") == "2026-09") & (pl.col("key") != key))
    assert others.height > 0
    assert set(others["status"]) == {"open"}
    assert (others["age_days"] > september.filter(pl.col("key") != key)["age_days"].min()).all()
    assert "2026-09 recomputed; 1 resolved" in carried["runs"]["2026-10"]
    events, _ = read_events(store)
    cleared = events.filter(pl.col("event") == "cleared")
    assert cleared["key"].to_list() == [key]


def test_the_october_report_lists_the_resolved_item_with_its_reason(carried: dict) -> None:
    listed = pl.read_csv(
        carried["workdir"] / "reports" / "2026-10" / "exceptions.csv", infer_schema=False
    )
    key = f"{carried['pick']['reference']}:missing_in_orders"
    row = listed.filter(pl.col("key") == key).row(0, named=True)
    assert row["status"] == "resolved" and row["resolved_month"] == "2026-10"
    assert "the order arrived" in row["resolved_by"]


def test_an_unchanged_month_is_not_recomputed(carried: dict) -> None:
    """A rerun of October: September's fingerprint is the one recorded by October's first
    run, so nothing is recomputed and nothing more resolved."""
    workdir = carried["workdir"]
    done = invoke_cli("report", "--month", "2026-10", "--notebooks", str(workdir / "books"),
                      cwd=workdir, env=KEPT_KERNELS_ENV)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2026-09 unchanged (1 month); 0 resolved" in done.stdout
    assert os.path.isdir(workdir / "reports" / "2026-10")
