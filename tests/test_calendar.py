"""The calendar, the defaults and the shape of the public API (one way to do each thing)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest

import txkit
from tests.factories import invoke_cli
from txkit import errors
from txkit.calendar import (
    MAX_DAY,
    MIN_DAY,
    month_bounds,
    month_of,
    months_between,
    parse_day,
    parse_month,
    previous_months,
)
from txkit.sandbox import Sandbox, generate_ledger


def test_days_and_months_are_parsed_with_the_format_named() -> None:
    assert parse_day("2026-10-31", "end") == date(2026, 10, 31)
    assert parse_day(datetime(2026, 10, 31, 23, 30, tzinfo=UTC), "end") == date(2026, 10, 31)
    assert parse_day(None, "end") is None
    assert parse_month(" 2026-10 ") == "2026-10"
    with pytest.raises(ValueError, match=r"start '2026-02-30' is not a real calendar date"):
        parse_day("2026-02-30", "start")
    with pytest.raises(ValueError, match=r"start must be .*'YYYY-MM-DD' string, got '1/2/2026'"):
        parse_day("1/2/2026", "start")
    with pytest.raises(ValueError, match=r"month must be YYYY-MM \(e.g. 2026-10\), got '2026-13'"):
        parse_month("2026-13")
    with pytest.raises(ValueError, match="must be YYYY-MM"):
        month_bounds("October")


@pytest.mark.parametrize("value", ["0001-01-01", "9999-12-31", date(1, 1, 1), "1969-12-31"])
def test_out_of_range_days_are_one_line_value_errors(value: object) -> None:
    with pytest.raises(ValueError, match=f"out of range: accepted days are {MIN_DAY} to {MAX_DAY}"):
        parse_day(value, "start")  # type: ignore[arg-type]


def test_out_of_range_months_never_overflow() -> None:
    with pytest.raises(ValueError, match="out of range"):
        month_bounds("0001-01")
    with pytest.raises(ValueError, match="out of range"):
        previous_months("1970-01", 1)
    with pytest.raises(ValueError, match="count must be 0 or more"):
        previous_months("2026-01", -1)


def test_month_arithmetic() -> None:
    assert month_bounds("2024-02") == (date(2024, 2, 1), date(2024, 2, 29))
    assert previous_months("2026-01", 2) == ["2025-11", "2025-12"]
    assert previous_months("2026-01", 0) == []
    assert months_between(date(2025, 12, 5), date(2026, 2, 1)) == ["2025-12", "2026-01", "2026-02"]
    assert months_between(date(2026, 2, 1), date(2026, 1, 1)) == []
    assert month_of(date(2026, 3, 9)) == "2026-03"


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["export", "--start", "0001-01-01", "-o", "x.parquet"],
        ["sync", "--start", "0001-01-01"],
        ["report", "--month", "0001-01"],
    ],
)
def test_cli_out_of_range_dates_are_one_line_errors(args: list[str], tmp_path: Path) -> None:
    done = invoke_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "out of range" in done.stderr and "Traceback" not in done.stderr
    assert "OverflowError" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_sync_connects_like_load_transactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sync(client=None)`` reads TXKIT_BASE_URL/TXKIT_SECRET_KEY as the loader does."""
    with Sandbox(records=2_000) as box:
        monkeypatch.setenv("TXKIT_BASE_URL", box.base_url)
        monkeypatch.setenv("TXKIT_SECRET_KEY", box.secret_key)
        monkeypatch.chdir(tmp_path)
        result = txkit.sync(start="2026-10-01", end="2026-10-31", store=tmp_path / "s")
        expected = txkit.load_transactions(start="2026-10-01", end="2026-10-31")
    assert result.fetched == {"2026-10": "full"}
    stored = txkit.scan_store(store=tmp_path / "s").collect()
    assert sorted(stored["id"]) == sorted(expected["id"])
    assert txkit.scan_store(tmp_path / "s").collect().height == expected.height  # positional


@pytest.mark.slow
def test_notebook_helpers_return_a_frame_and_a_load_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit.notebook import LoadInfo, load_history, load_month, load_orders

    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))
    with (
        Sandbox(records=3_000) as box,
        txkit.Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        url = box.base_url
        df, info = load_month("2026-10", client=client)
        history, history_info = load_history("2026-10", months=1, client=client)
    orders, orders_info = load_orders("sandbox", "2026-10")
    for frame, meta in ((df, info), (history, history_info), (orders, orders_info)):
        assert isinstance(frame, pl.DataFrame) and isinstance(meta, LoadInfo)
        assert meta.rows == frame.height and meta.month == "2026-10"
    assert info.kind == "month" and info.source == f"the service at {url}"
    assert history_info.kind == "history" and history_info.first == date(2026, 9, 1)
    assert str(history_info).startswith(f"History: {history.height:,} transactions of 2026-09")
    assert orders_info.kind == "orders"
    line = f"the embedded sandbox's merchant orders: {orders.height:,} orders in 2026-10"
    assert str(orders_info) == line


def test_sandbox_orders_are_read_from_written_files_not_regenerated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit import defaults
    from txkit.analysis import read_orders
    from txkit.source import sandbox_files

    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))
    settings = defaults.SandboxSettings(seed=3, records=2_000)
    ledger = generate_ledger(seed=3, records=2_000)
    folder = sandbox_files(settings, ledger=ledger)
    assert folder == tmp_path / "data/sandbox/cache" / settings.key
    assert sorted(p.name for p in folder.iterdir()) == ["ground_truth.json", "orders.csv"]
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no staging left
    assert read_orders(folder / "orders.csv").equals(ledger.orders)

    def no_generation(**_: object) -> None:
        raise AssertionError("the ledger was generated again")

    monkeypatch.setattr("txkit.sandbox.generate_ledger", no_generation)
    assert sandbox_files(settings) == folder  # cached: no generation
    other = defaults.SandboxSettings(seed=4, records=2_000)
    assert other.key != settings.key
    with pytest.raises(AssertionError, match="generated again"):
        sandbox_files(other)


def test_all_lists_what_each_module_owns() -> None:
    import txkit.analysis
    import txkit.notebook
    import txkit.report

    assert "month_bounds" not in txkit.report.__all__
    assert "previous_months" not in txkit.notebook.__all__
    assert "overview" in txkit.analysis.__all__
    for module in (txkit, txkit.analysis, txkit.notebook, txkit.report, txkit.calendar):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_errors_docstring_tree_matches_the_classes() -> None:
    doc = errors.__doc__ or ""
    drawn: dict[str, str] = {}
    parents: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*)(?:[│ ]*[├└]── )?([A-Z]\w*Error)\b", line)
        if not match or "Error" not in match.group(2):
            continue
        depth = line.index(match.group(2))
        while parents and parents[-1][0] >= depth:
            parents.pop()
        if parents:
            drawn[match.group(2)] = parents[-1][1]
        parents.append((depth, match.group(2)))
    actual = {
        name: cls.__mro__[1].__name__
        for name, cls in vars(errors).items()
        if isinstance(cls, type)
        and issubclass(cls, errors.TxkitError)
        and cls is not errors.TxkitError
    }
    assert drawn == actual
    assert drawn["ResponseFormatError"] == "ApiError"
