"""load_transactions over real HTTP against the sandbox: filters, exactness, every fault mode."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import txkit
from tests.exports import QUICK_RETRY, connect, expected_ids, export_cli, served, utc
from txkit import Client
from txkit.errors import AuthError, IncompleteExportError, NetworkError
from txkit.fetch.pages import ExportStats, fetch_query
from txkit.sandbox import Sandbox
from txkit.schema import COLUMNS, MONEY_COLUMNS


@pytest.fixture
def box(sandboxes) -> Iterator[Sandbox]:
    """The run's sandbox of this ledger, with faults off and its data restored around the test."""
    with sandboxes.clean(seed=5, records=6_000) as shared:
        yield shared


FILTERS = [
    {},
    {"status": ["successful"]},
    {"status": ["pending", "abandoned", "verified"]},
    {"trans_type": ["conversion"]},
    {"trans_type": ["transfer", "settlement"], "currency": ["NGN"]},
    {"currency": ["USD", "GHS"]},
    {"start": date(2026, 3, 1), "end": date(2026, 3, 31)},
    {"start": date(2026, 10, 31), "end": date(2026, 10, 31)},
    {"start": date(2025, 11, 1), "end": date(2025, 11, 1)},
    {
        "status": ["successful"],
        "currency": ["NGN"],
        "start": date(2026, 2, 1),
        "end": date(2026, 2, 28),
    },
    {"trans_type": ["collection"], "status": ["failed", "declined"], "start": date(2026, 1, 15)},
    {"end": date(2025, 12, 10)},
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "filters", FILTERS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "all"
)
def test_filters_match_brute_force(box: Sandbox, filters: dict) -> None:
    with connect(box) as client:
        df = txkit.load_transactions(client, **filters, progress=False)
    assert df["id"].to_list() == expected_ids(box, **filters)


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_pages_in_flight_are_bounded_when_decoding_is_slow(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    """A service faster than the decoder must not pile its bodies up in memory."""
    import threading
    import time

    import txkit.fetch.pages

    lock = threading.Lock()
    in_flight = [0, 0]  # now, most
    real_get, real_read = Client.get_transactions, txkit.fetch.pages.read_page

    def get(self: Client, params: Any) -> Any:
        result = real_get(self, params)
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
        return result

    def slow_read(body: bytes, *, request: Any = None) -> Any:
        time.sleep(0.01)
        try:
            return real_read(body, request=request)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(Client, "get_transactions", get)
    monkeypatch.setattr(txkit.fetch.pages, "read_page", slow_read)
    with connect(box) as client:
        # The confirming re-read (confirm=True) digests bodies without reading them; this
        # counts the pages of the decode pipeline only.
        df = txkit.load_transactions(client, page_size=100, concurrency=concurrency, confirm=False)
    readers = min(concurrency, pl.thread_pool_size())
    assert in_flight[1] <= concurrency + readers
    assert df["id"].to_list() == expected_ids(box)


@pytest.mark.slow
def test_frame_shape_types_and_exact_money(box: Sandbox) -> None:
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, stats=stats, page_size=500)
    assert list(df.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert {name: df.schema[name] for name in COLUMNS} == COLUMNS
    assert df["id"].is_unique().all()
    assert stats.passes == 1 and stats.pages == -(-df.height // 500)
    served = {r["id"]: r for r in box.served_records()}
    for row in df.iter_rows(named=True):
        rec = served[row["id"]]
        for name in MONEY_COLUMNS:
            value = rec
            for part in name.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            assert row[name] == (None if value is None else Decimal(value)), (row["id"], name)
        assert row["createdAt"] == utc(rec["createdAt"])


def test_activity_history_is_a_long_table(box: Sandbox) -> None:
    with connect(box) as client:
        df = txkit.load_transactions(
            client, trans_type="collection", start="2026-06-01", end="2026-06-30"
        )
    hist = txkit.activity_history(df)
    assert hist.columns == ["id", "position", "type", "message", "time"]
    lengths = df.select(
        pl.col("meta.customerActivity.history").list.len().fill_null(0).sum()
    ).item()
    assert hist.height == lengths > 0
    assert set(hist["type"].unique()) <= {"action", "error"}


FAULTS = [
    "rate_limit=0.3,retry_after=0",
    "server_error=0.3",
    "drop=0.2",
    "not_json=0.2",
    "cap=100",
    "cap=137",
    "shuffle_ties",
    "rate_limit=0.1,server_error=0.1,drop=0.1,not_json=0.1,cap=250,retry_after=0,fault_seed=9",
]


@pytest.mark.slow
@pytest.mark.parametrize("spec", FAULTS)
def test_fault_modes_complete_exactly(box: Sandbox, spec: str) -> None:
    box.faults = spec
    with connect(box) as client:
        df = txkit.load_transactions(client, progress=False)
    assert df["id"].to_list() == expected_ids(box)


@pytest.mark.slow
def test_slow_responses_are_retried_after_timeout(box: Sandbox) -> None:
    box.faults = "slow=0.3,slow_seconds=1.5,fault_seed=2"
    with connect(box, timeout=0.5) as client:
        df = txkit.load_transactions(client, status="successful", currency="USD", page_size=50)
        assert client.retries > 0
    assert df["id"].to_list() == expected_ids(box, status=["successful"], currency=["USD"])


@pytest.mark.slow
def test_records_arriving_during_export(box: Sandbox) -> None:
    box.faults = "arrivals=25"
    with connect(box) as client:
        stats = txkit.ExportStats()
        df = txkit.load_transactions(client, page_size=400, stats=stats)
    assert stats.passes >= 2
    assert df["id"].to_list() == expected_ids(box)
    assert df.height == len(served(box))


@pytest.mark.slow
@pytest.mark.parametrize("status", [None, ["pending", "processing", "verified", "ongoing"]])
def test_status_changes_during_export(box: Sandbox, status: list[str] | None) -> None:
    before = {r.id: r.status for r in served(box)}
    box.faults = "status_changes=20"
    with connect(box) as client:
        df = txkit.load_transactions(client, status=status, page_size=300, concurrency=3)
    after = {r.id: r.status for r in served(box)}
    assert 0 < sum(before[i] != after[i] for i in after) <= 20  # one per served page
    # The right records (as filtered now), each as it was when its page was fetched.
    assert df["id"].to_list() == expected_ids(box, status=status)
    for rid, got in zip(df["id"], df["status"], strict=True):
        assert got in (before[rid], after[rid])
        if status:
            assert got in status


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec",
    [
        "date_shift=14",
        "date_shift=-14",
        "bounds=exclusive",
        "bounds=start_exclusive",
        "bounds=end_exclusive",
    ],
)
def test_day_boundaries_whatever_the_server_does(box: Sandbox, spec: str) -> None:
    box.faults = spec
    filters = {"start": date(2026, 4, 1), "end": date(2026, 4, 30)}
    with connect(box) as client:
        df = txkit.load_transactions(client, **filters)
    assert df["id"].to_list() == expected_ids(box, **filters)
    assert df["createdAt"].min() >= datetime(2026, 4, 1, tzinfo=UTC)
    assert df["createdAt"].max() < datetime(2026, 5, 1, tzinfo=UTC)


def test_schema_drift_is_coerced_losslessly(box: Sandbox) -> None:
    with connect(box) as client:
        clean = txkit.load_transactions(client, currency="GHS")
        box.faults = "drift=0.4"
        drifted = txkit.load_transactions(client, currency="GHS")
    assert drifted.select(clean.columns).equals(clean)
    assert {"riskScore", "device.os"} <= set(drifted.columns)
    assert drifted.schema["riskScore"] == pl.Decimal(38, 2)


@pytest.mark.slow
def test_an_export_that_never_adds_up_fails_loudly(box: Sandbox) -> None:
    box.faults = "arrivals=100000"
    # The last month, where the arrivals land: over the whole ledger each pass read 6,000
    # records again (3 s of CPU a call), for the same failure.
    month = {"start": "2026-10-01", "end": "2026-10-31"}
    with connect(box) as client:
        with pytest.raises(
            IncompleteExportError, match=r"expected \d+ records.*got \d+ unique"
        ) as info:
            txkit.load_transactions(client, page_size=1000, max_passes=2, **month)
        assert info.value.expected != info.value.got
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = txkit.load_transactions(client, max_passes=2, allow_incomplete=True, **month)
    assert any("INCOMPLETE" in str(w.message) for w in caught)
    assert df["id"].is_unique().all()


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"status": "done"}, "unknown status 'done'; accepted values: ongoing, pending"),
        ({"status": ["successful", "nope"]}, "unknown status 'nope'"),
        ({"trans_type": "refund"}, "accepted values: conversion, settlement, collection, transfer"),
        ({"currency": "EUR"}, "unknown currency 'EUR'; accepted values: NGN, USD"),
        ({"start": "2026-13-01"}, "not a real calendar date"),
        ({"start": "01/02/2026"}, "start must be YYYY-MM-DD"),
        ({"start": "2026-05-02", "end": "2026-05-01"}, "start 2026-05-02 is after end 2026-05-01"),
        ({"status": []}, "empty list"),
    ],
)
def test_bad_input_is_rejected_before_any_request(
    box: Sandbox, filters: dict, message: str
) -> None:
    before = box.request_count
    with connect(box) as client, pytest.raises(ValueError, match=message):
        txkit.load_transactions(client, **filters)
    assert box.request_count == before


@pytest.mark.slow
def test_case_and_lists_are_normalised(box: Sandbox) -> None:
    with connect(box) as client:
        df = txkit.load_transactions(client, status=["SUCCESSFUL"], currency=["ngn", "NGN"])
    assert df["id"].to_list() == expected_ids(box, status=["successful"], currency=["NGN"])


@pytest.mark.slow
def test_verified_pager_survives_a_silent_cap(box: Sandbox) -> None:
    box.faults = "cap=70"
    stats = ExportStats()
    with connect(box) as client:
        result = fetch_query(client, {"currency": "KES"}, page_size=500, concurrency=1, stats=stats)
    expected = len(expected_ids(box, currency=["KES"]))
    heights = [f.height for f in result.frames]
    # Pages of at most 70 records: at least expected / 70 pages for one pass.
    assert stats.passes == 1 and stats.pages >= -(-expected // 70)
    assert result.complete and result.unique == result.total == expected
    assert sum(heights) == expected


def test_unreachable_service_is_a_network_error() -> None:
    client = Client("http://127.0.0.1:9", "sk_test", env_file=None, retry=QUICK_RETRY)
    with pytest.raises(NetworkError, match="connection failed"):
        txkit.load_transactions(client)


KEY_SHAPE = "sk_live_UNIQUE_9f8e7d6c5b4a39281706"


def test_secret_key_never_leaks(
    box: Sandbox, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    with caplog.at_level(logging.DEBUG, logger="txkit"):
        bad = Client(box.base_url, KEY_SHAPE, env_file=None, retry=QUICK_RETRY)
        with pytest.raises(AuthError, match="sandbox and production keys differ") as info:
            txkit.load_transactions(bad)
        box.faults = "server_error=0.5,rate_limit=0.2,retry_after=0"
        with connect(box) as good:
            df = txkit.load_transactions(good, currency="USD")
            texts = [repr(good), str(good)]
    import traceback

    texts += [str(info.value), repr(info.value), "".join(traceback.format_exception(info.value))]
    texts += [repr(bad), caplog.text]
    for text in texts:
        assert KEY_SHAPE not in text and box.secret_key not in text
    out = tmp_path / "usd.parquet"
    from txkit.output import write_frame

    write_frame(df, out)
    assert box.secret_key.encode() not in out.read_bytes()


@pytest.mark.slow
def test_cli_export_parquet_and_csv(box: Sandbox, tmp_path: Path) -> None:
    args = ["--status", "successful,failed", "--currency", "NGN", "--start", "2026-03-01"]
    args += ["--end", "2026-03-31"]
    done = export_cli(box, "export", *args, "-o", "march.parquet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = expected_ids(box, status=["successful", "failed"], currency=["NGN"],
                            start=date(2026, 3, 1), end=date(2026, 3, 31))  # fmt: skip
    assert done.stdout.startswith(f"exported {len(expected):,} rows (")
    assert "pages" in done.stdout and "march.parquet" in done.stdout
    df = pl.read_parquet(tmp_path / "march.parquet")
    assert df["id"].to_list() == expected
    assert df.schema["toAmount"] == pl.Decimal(38, 2)
    done = export_cli(box, "export", "--currency", "GHS", "-o", "ghs.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    csv = pl.read_csv(tmp_path / "ghs.csv", infer_schema=False)
    assert csv["id"].to_list() == expected_ids(box, currency=["GHS"])
    assert box.secret_key not in (tmp_path / "ghs.csv").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "out.xlsx"], "must end in .parquet or .csv"),
        (["--status", "bogus", "-o", "o.parquet"], "unknown status 'bogus'"),
        (["--start", "2026-02-30", "-o", "o.parquet"], "not a real calendar date"),
    ],
)
def test_cli_bad_arguments_exit_2_with_a_message(
    box: Sandbox, tmp_path: Path, args, message
) -> None:
    done = export_cli(box, "export", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())


def test_typed_options_are_the_keywords_and_are_checked_when_made(box: Sandbox) -> None:
    """``options=ExportOptions(...)`` exports exactly as the same keywords (rows and requests);
    a bad value is refused when the value is made, and both ways at once before any request."""
    from txkit.fetch import ExportOptions

    with pytest.raises(ValueError, match="concurrency and max_passes must be at least 1"):
        ExportOptions(concurrency=0)
    with pytest.raises(ValueError, match="concurrency must be a whole number, got '8'"):
        ExportOptions(concurrency="8")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confirm must be True or False, got 'no'"):
        ExportOptions(confirm="no")  # type: ignore[arg-type]
    days = {"start": "2026-10-01", "end": "2026-10-10", "progress": False}
    typed, keywords = ExportStats(), ExportStats()
    with connect(box) as client:
        a = txkit.load_transactions(client, options=ExportOptions(page_size=100, confirm=False),
                                    stats=typed, **days)  # fmt: skip
        b = txkit.load_transactions(client, page_size=100, confirm=False, stats=keywords, **days)
        before = box.request_count
        with pytest.raises(ValueError, match="not both"):
            txkit.load_transactions(client, confirm=False, options=ExportOptions(), **days)
        assert box.request_count == before
    assert a.equals(b) and typed.requests == keywords.requests
