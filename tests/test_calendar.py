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
    assert parse_month("2026-10") == "2026-10"
    with pytest.raises(ValueError, match=r"start '2026-02-30' is not a real calendar date"):
        parse_day("2026-02-30", "start")
    with pytest.raises(
        ValueError, match=r"start must be YYYY-MM-DD \(e.g. 2026-10-31\), got '1/2/"
    ):
        parse_day("1/2/2026", "start")
    with pytest.raises(ValueError, match=r"end must be a date, a datetime or a 'YYYY-MM-DD'"):
        parse_day(20261031, "end")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"month must be YYYY-MM \(e.g. 2026-10\), got '2026-13'"):
        parse_month("2026-13")
    with pytest.raises(ValueError, match="must be YYYY-MM"):
        month_bounds("October")


FULL_WIDTH = "\uff12\uff10\uff12\uff16-\uff11\uff10"  # 2026-10 in full-width digits
ARABIC_INDIC = "\u0662\u0660\u0662\u0666-\u0661\u0660"


@pytest.mark.parametrize(
    ("month", "day", "hint"),
    [
        (" 2026-10", " 2026-10-01", "remove the spaces"),
        ("2026-10\n", "2026-10-01\n", "remove the spaces or line breaks"),
        ("2026-10\t", "\t2026-10-01", "remove the spaces"),
        (FULL_WIDTH, f"{FULL_WIDTH}-\uff10\uff11", "ASCII 0-9"),
        (ARABIC_INDIC, f"{ARABIC_INDIC}-\u0660\u0661", "ASCII 0-9"),
    ],
)  # fmt: skip
def test_months_and_days_are_ascii_digits_with_nothing_around(
    month: str, day: str, hint: str
) -> None:
    """A month or day with a space, a line break or other digits is refused, never read as
    another (the stripped value chose the dates while the raw one was looked up)."""
    with pytest.raises(ValueError, match=r"month must be YYYY-MM \(e.g. 2026-10\)") as info:
        parse_month(month)
    assert hint in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="must be YYYY-MM"):
        month_bounds(month)
    with pytest.raises(ValueError, match=r"start must be YYYY-MM-DD \(e.g. 2026-10-31\)") as info:
        parse_day(day, "start")
    assert hint in str(info.value) and "\n" not in str(info.value)


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
    from txkit import config
    from txkit.fetch.source import sandbox_files
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
    file = config.shown_path(sandbox_files() / "orders.csv")  # where it is, for the analyst
    line = f"the embedded sandbox's merchant orders ({file}): {orders.height:,} orders in 2026-10"
    assert str(orders_info) == line


def test_sandbox_orders_are_read_from_written_files_not_regenerated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit import config
    from txkit.analysis import read_orders
    from txkit.fetch.source import sandbox_files

    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TXKIT_CACHE_DIR", str(tmp_path / "cache"))  # no ledger saved before
    settings = config.SandboxSettings(seed=3, records=2_000)
    ledger = generate_ledger(seed=3, records=2_000)
    folder = sandbox_files(settings, ledger=ledger)
    assert folder == tmp_path / "data/sandbox/cache" / settings.key
    assert sorted(p.name for p in folder.iterdir()) == ["bank", "ground_truth.json", "orders.csv"]
    assert (folder / "bank" / "statement_2026-10.camt053.xml").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no staging left
    assert read_orders(folder / "orders.csv").equals(ledger.orders)

    def no_generation(**_: object) -> None:
        raise AssertionError("the ledger was generated again")

    monkeypatch.setattr("txkit.sandbox.generate_ledger", no_generation)
    assert sandbox_files(settings) == folder  # cached: no generation
    other = config.SandboxSettings(seed=4, records=2_000)
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


def _drawn_tree(text: str) -> dict[str, str]:
    """Each class drawn in a ``├──`` tree (errors and warnings) with the class drawn above it."""
    drawn: dict[str, str] = {}
    parents: list[tuple[int, str]] = []
    for line in text.splitlines():
        match = re.match(r"^(\s*)(?:[│ ]*[├└]── )?([A-Z]\w*(?:Error|Warning))\b", line)
        if not match:
            continue
        depth = line.index(match.group(2))
        while parents and parents[-1][0] >= depth:
            parents.pop()
        if parents:
            drawn[match.group(2)] = parents[-1][1]
        parents.append((depth, match.group(2)))
    return drawn


def test_errors_docstring_tree_matches_the_classes() -> None:
    # Every error and warning txkit defines lives in txkit.errors, and both drawings (the
    # module's docstring and docs/failure-modes.md) show each under its base class.
    actual = {
        name: cls.__mro__[1].__name__
        for name, cls in vars(errors).items()
        if isinstance(cls, type)
        and (issubclass(cls, errors.TxkitError) or issubclass(cls, Warning))
        and cls is not errors.TxkitError
        and cls.__module__ == errors.__name__
    }
    assert _drawn_tree(errors.__doc__ or "") == actual
    page = Path(__file__).resolve().parent.parent / "docs" / "failure-modes.md"
    assert _drawn_tree(page.read_text(encoding="utf-8")) == actual
    assert actual["ResponseFormatError"] == "ApiError"
    assert actual["StoreVersionError"] == "StoreError"
    assert actual["IncompleteExportWarning"] == "UserWarning"


def test_every_exception_class_is_defined_in_errors() -> None:
    # The private signals that never leave their module (a probe's spent budget, an offset cap
    # found mid-pass, a tie group too large for a nested split, the sandbox's bad parameter)
    # are the only exceptions defined elsewhere.
    internal = {
        "OffsetCapped",
        "ProbeStopped",
        "_BudgetSpent",
        "_BadParameter",
        "_GroupTooLarge",
        "_Inflated",
    }
    package = Path(errors.__file__).resolve().parent
    elsewhere = []
    for path in package.rglob("*.py"):
        if path.name == "errors.py" and path.parent == package:
            continue
        for match in re.finditer(r"^class (\w+)\(([^)]*)\):", path.read_text(), re.M):
            name, bases = match.groups()
            if re.search(r"Error|Exception|Warning", bases) and name not in internal:
                elsewhere.append(f"{path.relative_to(package)}: {name}")
    assert not elsewhere


BAD_MONTHS = [" 2026-10", "2026-10\n", "\uff12\uff10\uff12\uff16-\uff11\uff10"]


@pytest.mark.parametrize("month", BAD_MONTHS, ids=["space", "newline", "full-width"])
@pytest.mark.parametrize(
    "args",
    [
        ["report", "--month", "{month}", "--store", "s"],
        ["sync", "--refresh", "{month}", "--store", "s"],
        ["sync", "--start", "{day}", "--store", "s"],
        ["export", "--start", "{day}", "-o", "x.parquet"],
        ["export", "--end", "{day}", "-o", "x.parquet"],
        ["sandbox", "--start-month", "{month}", "--records", "10"],
    ],
    ids=["report", "sync-refresh", "sync-start", "export-start", "export-end", "sandbox"],
)
def test_cli_months_and_days_are_parsed_at_the_edge(
    args: list[str], month: str, tmp_path: Path
) -> None:
    """Exit 2 and one line naming the format, before anything runs (no sync, no store, no
    sandbox): with a service configured that cannot answer, anything sent would fail as 1."""
    day = month.replace("10", "10-01").replace("\uff11\uff10", "\uff11\uff10-\uff10\uff11")
    argv = [a.format(month=month, day=day) for a in args]
    done = invoke_cli(
        *argv,
        cwd=tmp_path,
        env={"TXKIT_BASE_URL": "http://127.0.0.1:9", "TXKIT_SECRET_KEY": "sk_test_edge_0123",
             "TXKIT_MAX_RETRIES": "0"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "YYYY-MM" in lines[0] and ("ASCII 0-9" in lines[0] or "remove the spaces" in lines[0])
    assert not list(tmp_path.iterdir()), "nothing may be written for a bad argument"


@pytest.mark.parametrize("month", BAD_MONTHS, ids=["space", "newline", "full-width"])
def test_python_entries_refuse_the_month_before_using_it(month: str, tmp_path: Path) -> None:
    """The notebooks' helpers, the report and the store refuse it; before, the stripped value
    chose the dates and the raw one was looked up ("the store has no data for the month")."""
    from txkit.notebook import load_history, load_margin, load_month, load_orders, trend_records
    from txkit.notebook._downloads import Destination, ExceptionList, publish_exceptions
    from txkit.report import run_report
    from txkit.store import read_months, sync

    store = tmp_path / "store"
    calls = [
        lambda: load_month(month, source="store", store=store),
        lambda: load_history(month, source="store", store=store),
        lambda: load_margin(month, days=3, source="store", store=store),
        lambda: load_orders("sandbox", month),
        lambda: trend_records(month, store=str(store)),
        lambda: read_months([month], store=store),
        lambda: sync(client=None, store=store, refresh=[month]),
        lambda: run_report(month, store=store, out=tmp_path / "r", notebooks=tmp_path),
        lambda: publish_exceptions(
            pl.DataFrame({"id": ["a"]}), ExceptionList("x", "X", ["id"]),
            Destination(month, tmp_path / "r"),
        ),
    ]  # fmt: skip
    for call in calls:
        with pytest.raises(ValueError, match=r"must be YYYY-MM \(e.g. 2026-10\)"):
            call()
    assert not list(tmp_path.iterdir())


def test_the_sandbox_calendar_takes_the_same_months() -> None:
    for month in ["2025-11\n", " 2025-11", "\uff12\uff10\uff12\uff15-\uff11\uff11"]:
        with pytest.raises(ValueError, match="start_month must be YYYY-MM"):
            generate_ledger(seed=1, records=10, start_month=month)
