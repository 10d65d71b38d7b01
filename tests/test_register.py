"""The exception register without a report: the event log, the fold, materiality, faults and
the sign-off's lock (the twelve-month run on the sandbox is tests/test_register_months.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import date
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.factories import cli_env, invoke_cli
from txkit.errors import RegisterFormatError, ReportSignedError
from txkit.register import (
    ITEMS_SUFFIX,
    REGISTER_COLUMNS,
    Materiality,
    age_bucket,
    bucket_counts,
    explain,
    keep_signed,
    load_materiality,
    read_events,
    record_report,
    register_items,
    register_view,
    retention_policy,
)
from txkit.register._sign import (
    Target,
    refuse_signed,
    report_digest,
    sign_report,
    signed_versions,
)

_SCHEMA = {
    "key": pl.String,
    "category": pl.String,
    "currency": pl.String,
    "difference": pl.Decimal(38, 6),
    "export_date": pl.Date,
}


def _report(store: Path, folder: Path, month: str, rows: list[dict], version: int) -> int:
    """A report run of ``month`` whose reconciliation lists ``rows``."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"*{ITEMS_SUFFIX}"):
        old.unlink()
    items = register_items(pl.DataFrame(rows, schema=_SCHEMA), "reconciliation_mismatches", month)
    items.write_parquet(folder / f"reconciliation_mismatches{ITEMS_SUFFIX}")
    return record_report(store, month, folder, table_version=version)


def _row(key: str, amount: str, day: date, currency: str = "NGN") -> dict:
    return {
        "key": key,
        "category": key.split(":")[1],
        "currency": currency,
        "difference": Decimal(amount),
        "export_date": day,
    }


A = _row("A:amount_mismatch", "60000", date(2026, 1, 5))
B = _row("B:missing_in_export", "5", date(2026, 1, 20), "USD")
C = _row("C:amount_mismatch", "-10", date(2026, 2, 27))


@pytest.mark.parametrize(
    ("days", "bucket"), [(0, "0-30"), (30, "0-30"), (31, "31-60"), (60, "31-60"),
                         (61, "61-90"), (90, "61-90"), (91, "90+"), (400, "90+")],
)  # fmt: skip
def test_age_buckets_at_their_edges(days: int, bucket: str) -> None:
    assert age_bucket(days) == bucket


def test_items_age_from_their_own_date_and_carry_over(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 3)
    _report(store, tmp_path / "r2", "2026-02", [C], 4)
    _report(store, tmp_path / "r3", "2026-03", [], 5)
    view = register_view(store)
    rows = {r["key"]: r for r in view.iter_rows(named=True)}
    # Not listed by February's or March's report: still open (their reports do not look at
    # January's records), aged from its own date to March 31.
    assert rows["A:amount_mismatch"]["status"] == "open"
    assert rows["A:amount_mismatch"]["age_days"] == (date(2026, 3, 31) - date(2026, 1, 5)).days
    assert rows["A:amount_mismatch"]["age_bucket"] == "61-90"
    assert rows["C:amount_mismatch"]["age_days"] == 32
    assert rows["C:amount_mismatch"]["first_month"] == "2026-02"
    assert rows["B:missing_in_export"]["category"] == "timing"  # the default of its kind
    assert rows["A:amount_mismatch"]["category"] == "adjustment"
    february = register_view(store, month="2026-02")
    assert february.filter(pl.col("key") == "A:amount_mismatch")["age_days"].item() == 54
    assert "C:amount_mismatch" in february["key"].to_list()
    january = register_view(store, month="2026-01")
    assert sorted(january["key"]) == ["A:amount_mismatch", "B:missing_in_export"]
    counts = bucket_counts(view)
    assert counts.select("0-30", "31-60", "61-90", "90+").sum_horizontal().to_list() == [3]
    assert counts["open"].to_list() == [3]
    with pytest.raises(ValueError, match="no report of 2025-12: it has 2026-01 to 2026-03"):
        register_view(store, month="2025-12")


def test_a_rerun_that_no_longer_lists_an_item_resolves_it_and_says_by_what(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 3)
    _report(store, tmp_path / "r2", "2026-02", [C], 4)
    moved = _row("B:amount_mismatch", "1", date(2026, 1, 20), "USD")
    _report(store, tmp_path / "r1", "2026-01", [A, moved], 9)  # a record arrived meanwhile
    rows = {r["key"]: r for r in register_view(store).iter_rows(named=True)}
    gone = rows["B:missing_in_export"]
    assert gone["status"] == "resolved" and gone["resolved_month"] == "2026-01"
    assert gone["resolved_by"] == (
        "no longer listed in 2026-01's report (table version 3 -> 9): now listed as "
        "B:amount_mismatch"
    )
    assert rows["A:amount_mismatch"]["status"] == "open"
    # Listed again later: open again.
    _report(store, tmp_path / "r1", "2026-01", [A, B], 10)
    again = register_view(store).filter(pl.col("key") == "B:missing_in_export")
    assert again["status"].item() == "open" and again["resolved_by"].item() is None


def test_explanations_carry_over_and_the_history_says_who(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 3)
    row = explain(
        store, "A:amount_mismatch", category="timing", owner="ada", note="bank delay", actor="Ada"
    )
    assert row.select("status", "category", "owner", "explanation").row(0) == (
        "explained", "timing", "ada", "bank delay",
    )  # fmt: skip
    _report(store, tmp_path / "r2", "2026-02", [A, C], 4)
    _report(store, tmp_path / "r3", "2026-03", [C], 5)
    later = register_view(store).filter(pl.col("key") == "A:amount_mismatch").row(0, named=True)
    assert (later["status"], later["explanation"], later["owner"]) == (
        "explained",
        "bank delay",
        "ada",
    )
    assert later["last_month"] == "2026-02"
    explain(store, "A:amount_mismatch", status="written_off", note="below cost", actor="Obi")
    done = register_view(store).filter(pl.col("key") == "A:amount_mismatch").row(0, named=True)
    assert done["status"] == "written_off" and done["resolved_month"] == "2026-03"
    assert done["resolved_by"].startswith("written off by Obi on ")
    assert done["resolved_by"].endswith(": below cost")
    events, _ = read_events(store)
    history = events.filter(pl.col("event") == "annotated").sort("at").select("key", "actor")
    assert history.rows() == [("A:amount_mismatch", "Ada"), ("A:amount_mismatch", "Obi")]
    with pytest.raises(ValueError, match=r"no item 'Z:nope' in the register: `txkit exceptions`"):
        explain(store, "Z:nope", note="x")
    with pytest.raises(ValueError, match="--category 'later' is not one of timing, adjustment"):
        explain(store, "A:amount_mismatch", category="later")


def test_materiality_is_the_greater_of_the_amount_and_the_share_of_the_volume(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    rows = [
        _row("A:amount_mismatch", "60000", date(2026, 1, 5)),
        _row("D:amount_mismatch", "40000", date(2026, 1, 6)),
        _row("E:amount_mismatch", "-1000000", date(2026, 1, 7)),
        _row("F:amount_mismatch", "99.99", date(2026, 1, 8), "USD"),
    ]
    _report(store, tmp_path / "r1", "2026-01", rows, 1)
    rule = Materiality(
        absolute={"NGN": Decimal("50000"), "USD": Decimal("100")}, relative=Decimal("0.05")
    )
    view = register_view(store, materiality=rule)
    flags = dict(zip(view["key"], view["material"], strict=True))
    # NGN volume 1,100,000: 5 % is 55,000, above the 50,000 set for NGN.
    assert view.filter(pl.col("currency") == "NGN")["threshold"].unique().to_list() == [
        Decimal("55000")
    ]
    assert flags == {
        "A:amount_mismatch": True,
        "D:amount_mismatch": False,
        "E:amount_mismatch": True,
        "F:amount_mismatch": False,
    }


def test_the_materiality_file_is_read_exactly_and_checked(tmp_path: Path) -> None:
    assert load_materiality(tmp_path).source.startswith("built-in defaults")
    (tmp_path / "materiality.toml").write_text('relative = "0.1"\n[absolute]\nNGN = "12.34"\n')
    rule = load_materiality(tmp_path)
    assert rule.relative == Decimal("0.1") and rule.absolute == {"NGN": Decimal("12.34")}
    assert "12.34 NGN" in rule.describe() and "10 %" in rule.describe()
    for text, message in [
        (
            "relative = 0.05\n",
            r'relative must be a plain decimal written as a string such as "50000.00"',
        ),
        ('[absolute]\nngn = "1"\n', "key 'ngn' is not a currency code"),
        ('relative = "2"\n', "relative is a share between 0 and 1"),
        ('limit = "2"\n', "unknown keys limit; accepted: relative, \\[absolute\\]"),
        ("relative = \n", "is not valid TOML"),
    ]:
        (tmp_path / "materiality.toml").write_text(text)
        with pytest.raises(ValueError, match=message):
            load_materiality(tmp_path)


def test_a_register_of_a_newer_txkit_is_refused_in_one_line(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A], 1)
    newer = tmp_path / "newer"
    write_deltalake(
        str(newer / "_register"),
        pl.DataFrame({"x": [1]}),
        description="txkit exception register, format 3",
    )
    with pytest.raises(
        RegisterFormatError, match=r"newer txkit \(register format 3; this txkit reads up to 2\)"
    ):
        read_events(newer)
    done = invoke_cli("exceptions", "--store", str(newer), cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "RegisterFormatError: the exception register in" in done.stderr
    assert "was written by a newer txkit" in done.stderr


def test_the_terminal_table_writes_amounts_as_the_report_does(tmp_path: Path) -> None:
    """``txkit exceptions`` printed the register's amounts at the column's scale
    (``60000.000000``) and ``null`` for an empty owner: now each amount as
    :func:`txkit.money.format_money` writes it, exact beyond cents, and blanks."""
    store = tmp_path / "store"
    fine = _row("D:amount_mismatch", "12.345678", date(2026, 1, 9), "USDT")
    _report(store, tmp_path / "r1", "2026-01", [A, B, C, fine], 1)
    done = invoke_cli("exceptions", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[1]: line for line in done.stdout.splitlines() if ":" in line}
    expected = {"A:amount_mismatch": "60,000.00", "B:missing_in_export": "5.00",
                "C:amount_mismatch": "-10.00", "D:amount_mismatch": "12.345678"}  # fmt: skip
    for key, text in expected.items():
        assert f" {text} " in rows[key], rows[key]
    assert "000000" not in done.stdout and "null" not in done.stdout
    assert "decimal[" not in done.stdout and "4 items" in done.stdout


_ANNOTATE = """
import sys
from txkit.register import explain
store, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    explain(store, "A:amount_mismatch", note=f"{who} {i}", actor=who)
"""


@pytest.mark.slow  # processes of its own: seconds, out of the quick loop
def test_two_analysts_annotating_at_once_lose_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 1)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _ANNOTATE, str(store), who, "8"],
            env=cli_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("ada", "obi")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    events, _ = read_events(store)
    notes = sorted(events.filter(pl.col("event") == "annotated")["explanation"].to_list())
    assert notes == sorted(f"{who} {i}" for who in ("ada", "obi") for i in range(8))


@pytest.mark.slow  # processes of its own: seconds, out of the quick loop
def test_a_killed_annotation_leaves_the_previous_state_or_the_whole_change(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 1)
    before, version = read_events(store)
    killed = 0
    for delay in (0.3, 0.6, 0.9, 1.2, 1.5, 1.8):
        proc = subprocess.Popen(
            [sys.executable, "-m", "txkit.cli", "exceptions", "explain", "A:amount_mismatch",
             "--note", f"after {delay}", "--store", str(store)],
            env=cli_env(), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed += 1
        proc.wait()
        events, now = read_events(store)  # still readable at every point
        notes = events.filter(pl.col("event") == "annotated")["explanation"].to_list()
        assert notes == [n for n in notes if n and n.startswith("after ")]
        assert events.height - before.height == len(notes)  # whole events only
    assert killed, "every command ended before its kill: the test showed nothing"
    assert version is not None and now is not None and now >= version


def _fake_report(out: Path, month: str, store: Path) -> Path:
    folder = out / month
    folder.mkdir(parents=True)
    (folder / "index.html").write_text(
        "<html><!--txkit:signatures--><!--/txkit:signatures--></html>"
    )
    (folder / "balance_breaks.csv").write_text("key\nx\n")
    doc = {"month": month, "store": str(store), "table_version": 7}
    (folder / "report.json").write_text(json.dumps(doc))
    return folder


def test_signing_records_the_digest_and_locks_the_month(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A], 1)
    out = tmp_path / "reports"
    folder = _fake_report(out, "2026-10", store)
    digest = report_digest(folder)
    assert refuse_signed(out, "2026-10", None) == Target("2026-10")
    sig = sign_report(out, "2026-10", role="preparer", name="Ada Obi")
    assert sig["sha256"] == digest == report_digest(folder)  # the index's block is left out
    assert "preparer: Ada Obi" in (folder / "index.html").read_text()
    doc = json.loads((folder / "report.json").read_text())
    assert [s["role"] for s in doc["signatures"]] == ["preparer"]
    assert doc["signatures"][0]["table_version"] == 7
    assert signed_versions(store) == {7}
    # The policy txkit sync, txkit store vacuum and the report apply keeps them, as a source
    # passed explicitly (nothing is registered at import).
    policy = retention_policy()
    assert policy.sources == (keep_signed,)
    kept = set().union(*(source(str(store), "any-id") for source in policy.sources))
    assert 7 in kept
    with pytest.raises(ReportSignedError, match=r"is signed \(preparer Ada Obi on .*--reopen"):
        refuse_signed(out, "2026-10", None)
    assert refuse_signed(out, "2026-10", "late statement") == Target(
        "2026-10.r2", 2, folder, "late statement"
    )
    with pytest.raises(ValueError, match="--role 'boss' is not one of preparer, reviewer"):
        sign_report(out, "2026-10", role="boss", name="X")
    (folder / "balance_breaks.csv").write_text("key\ny\n")
    with pytest.raises(ReportSignedError, match="changed since preparer Ada Obi signed it"):
        sign_report(out, "2026-10", role="reviewer", name="Eve")
    # An unsigned revision is replaced by the next run, still compared with the signed one.
    revision = out / "2026-10.r2"
    revision.mkdir()
    (revision / "report.json").write_text(
        json.dumps({"revision": {"number": 2, "of": "2026-10", "reason": "late statement"}})
    )
    assert refuse_signed(out, "2026-10", None) == Target("2026-10.r2", 2, folder, "late statement")


def test_a_signed_month_rerun_is_refused_and_changes_no_byte(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A], 1)
    out = tmp_path / "reports"
    folder = _fake_report(out, "2026-10", store)
    done = invoke_cli("report", "sign", "--month", "2026-10", "--role", "reviewer", "--name", "Eve",
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "signed 2026-10 as reviewer: Eve" in done.stdout
    before = {p: p.read_bytes() for p in folder.rglob("*")}
    rerun = invoke_cli("report", "--month", "2026-10", "--store", str(store), cwd=tmp_path)
    assert rerun.returncode == 1
    assert rerun.stderr.strip().startswith("txkit: error: ReportSignedError: the report of 2026-10")
    assert rerun.stderr.count("\n") == 1
    assert {p: p.read_bytes() for p in folder.rglob("*")} == before
    assert sorted(p.name for p in out.iterdir()) == ["2026-10"]


def test_annotations_are_imported_from_the_excel_download_and_unknown_keys_refused(
    tmp_path: Path,
) -> None:
    from txkit.register._index import summarise

    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 1)
    summary = summarise(store, "2026-01", version=1, materiality=Materiality(), folder=tmp_path)
    assert summary.doc["open"] == 2 and summary.doc["by_section"]["reconciliation"]["new"] == 2
    sheet = pl.read_csv(tmp_path / "exceptions.csv", infer_schema=False)
    edited = sheet.with_columns(
        pl.when(pl.col("key") == "A:amount_mismatch")
        .then(pl.lit("fee charged twice, refund asked"))
        .otherwise(pl.col("explanation"))
        .alias("explanation"),
        pl.when(pl.col("key") == "B:missing_in_export")
        .then(pl.lit("written_off"))
        .otherwise(pl.col("status"))
        .alias("status"),
    ).filter(pl.col("key") != "nothing")
    # The whole sheet is read back: only what differs from the register changes it.
    edited.select("key", "explanation", "status").write_excel(tmp_path / "edited.xlsx")
    done = invoke_cli("exceptions", "import", "edited.xlsx", "--by", "Ada", "--store", str(store),
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "imported 2 annotations" in done.stdout
    rows = {r["key"]: r for r in register_view(store).iter_rows(named=True)}
    assert rows["A:amount_mismatch"]["explanation"] == "fee charged twice, refund asked"
    assert rows["A:amount_mismatch"]["status"] == "explained"
    assert rows["B:missing_in_export"]["status"] == "written_off"
    assert rows["B:missing_in_export"]["changed_by"] == "Ada"
    pl.DataFrame({"key": ["A:amount_mismatch", "Q:typo"], "owner": ["x", "y"]}).write_csv(
        tmp_path / "bad.csv"
    )
    _, version = read_events(store)
    bad = invoke_cli("exceptions", "import", "bad.csv", "--store", str(store), cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == (
        "txkit: error: no item 'Q:typo' in the register (row 3 of the file): "
        "`txkit exceptions` lists the keys\n"
    )
    assert read_events(store)[1] == version  # nothing written


def test_a_vacuum_of_the_transactions_table_leaves_the_register_whole(tmp_path: Path) -> None:
    # The register sits inside the store's folder: a retention that vacuums the transactions
    # table must not take its files (delta-rs treats `_`-prefixed folders as not the table's).
    from deltalake import DeltaTable, write_deltalake

    store = tmp_path / "store"
    write_deltalake(str(store), pl.DataFrame({"a": [1]}))
    write_deltalake(str(store), pl.DataFrame({"a": [2]}), mode="overwrite")
    _report(store, tmp_path / "r1", "2026-01", [A, B], 1)
    removed = DeltaTable(str(store)).vacuum(
        retention_hours=0, enforce_retention_duration=False, dry_run=False
    )
    assert len(removed) == 1 and not any("_register" in path for path in removed)
    assert register_view(store)["key"].to_list() == ["A:amount_mismatch", "B:missing_in_export"]


def test_months_without_any_exception_fold_to_an_empty_register(tmp_path: Path) -> None:
    # A small ledger's report lists nothing: the view still has every column (make test found
    # reports failing on `ColumnNotFoundError: "key"` here).
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [], 1)
    view = register_view(store)
    assert view.height == 0 and view.columns == list(REGISTER_COLUMNS)
    assert bucket_counts(view).height == 0


def test_revisions_are_read_as_history(tmp_path: Path) -> None:
    """A reopened month: the revisions in order with why, who signed and what changed; the
    next month compares with, and the trends read, the newest revision; the table of
    `txkit exceptions` ends with them."""
    from txkit.notebook._downloads import report_folder, report_history
    from txkit.register._sign import history_block, revision_lines, revisions

    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-10", [A], 1)
    out = tmp_path / "reports"
    first = _fake_report(out, "2026-10", store)
    (first / "balance_breaks.download.json").write_text(
        json.dumps({"name": "balance_breaks", "rows": 3, "population": 10})
    )
    sign_report(out, "2026-10", role="preparer", name="Ada Obi")
    assert report_folder(out, "2026-10") == first
    second = out / "2026-10.r2"
    second.mkdir()
    changes = ["balance_breaks: 3 -> 2 items", "removed X:bad_value"]
    revision = {"number": 2, "of": "2026-10", "reason": "late statement", "changes": changes}
    (second / "report.json").write_text(json.dumps({"table_version": 8, "revision": revision}))
    (second / "balance_breaks.download.json").write_text(
        json.dumps({"name": "balance_breaks", "rows": 2, "population": 10})
    )
    history = revisions(out, "2026-10")
    assert [(r["number"], r["folder"], r["reason"]) for r in history] == [
        (1, "2026-10", None), (2, "2026-10.r2", "late statement"),
    ]  # fmt: skip
    lines = revision_lines(history)
    assert lines[0].startswith("revision 1 (2026-10, table version 7): preparer Ada Obi on ")
    assert lines[1] == (
        "revision 2 (2026-10.r2, table version 8): reopened: late statement; not signed; 2 "
        "changes against 2026-10: balance_breaks: 3 -> 2 items; removed X:bad_value"
    )
    assert '<a href="../2026-10.r2/index.html">2026-10.r2</a>' in history_block(history)
    assert history_block(history[:1]) == ""
    assert report_folder(out, "2026-10") == second
    trends = report_history(out).filter(pl.col("currency").is_null())
    assert trends.select("month", "rows").rows() == [("2026-10", 2)]
    done = invoke_cli("exceptions", "--store", str(store), "--reports", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "reports of 2026-10:\n  revision 1 (2026-10" in done.stdout
    assert lines[1] in done.stdout
