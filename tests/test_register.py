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
from typing import Any

import polars as pl
import pytest

from tests.factories import Signers, cli_env, invoke_cli, make_signers
from txkit.errors import ConfigError, RegisterFormatError, ReportSignedError, StoreDamagedError
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
from txkit.register._lock import pack_files
from txkit.register._sign import (
    Target,
    refuse_signed,
    report_digest,
    sign_report,
    signed_versions,
)
from txkit.register._verify import verify_report

_SCHEMA = {
    "key": pl.String,
    "category": pl.String,
    "currency": pl.String,
    "difference": pl.Decimal(38, 6),
    "at_stake": pl.Decimal(38, 6),
    "export_date": pl.Date,
}


def _report(store: Path | str, folder: Path, month: str, rows: list[dict], version: int) -> int:
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
        "at_stake": Decimal(amount),  # the register's amount (the list's definition)
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
    feb = register_view(store)
    _report(store, tmp_path / "r1", "2026-01", [A, moved], 9)  # a record arrived meanwhile
    # February's register is as February's report left it: a rerun of January after it is
    # January's (and the next months') state, not February's.
    assert register_view(store).equals(feb)
    rows = {r["key"]: r for r in register_view(store, month="2026-01").iter_rows(named=True)}
    gone = rows["B:missing_in_export"]
    assert gone["status"] == "resolved" and gone["resolved_month"] == "2026-01"
    assert gone["resolved_by"] == (
        "no longer listed in 2026-01's report (table version 3 -> 9): now listed as "
        "B:amount_mismatch"
    )
    assert rows["A:amount_mismatch"]["status"] == "open"
    # Listed again later: open again.
    _report(store, tmp_path / "r1", "2026-01", [A, B], 10)
    again = register_view(store, month="2026-01").filter(pl.col("key") == "B:missing_in_export")
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
    assert done["resolved_by"].startswith("written off by Obi (not signed; account ")
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
        ("relative = \n", "is not valid TOML"),  # a ConfigError: the file itself
    ]:
        (tmp_path / "materiality.toml").write_text(text)
        with pytest.raises((ValueError, ConfigError), match=message):
            load_materiality(tmp_path)


def test_a_register_of_a_newer_txkit_is_refused_in_one_line(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A], 1)
    newer = tmp_path / "newer"
    write_deltalake(
        str(newer / "_register"),
        pl.DataFrame({"x": [1]}),
        description="txkit exception register, format 4",
    )
    with pytest.raises(
        RegisterFormatError, match=r"newer txkit \(register format 4; this txkit reads up to 3\)"
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


def _fake_report(out: Path, month: str, store: Path | str, *, name: str | None = None) -> Path:
    """A report folder of ``month`` as a report leaves it, recorded in the register."""
    folder = out / (name or month)
    folder.mkdir(parents=True)
    (folder / "index.html").write_text(
        "<html><!--txkit:signatures--><!--/txkit:signatures--></html>"
    )
    (folder / "balance_breaks.csv").write_text("key\nx\n")
    doc = {"month": month, "store": str(store), "table_version": 7}
    (folder / "report.json").write_text(json.dumps(doc))
    number = int(folder.name.split(".r")[1]) if ".r" in folder.name else 1
    reason = "late statement" if number > 1 else None
    record_report(store, month, folder, table_version=7, revision=number, reason=reason)
    return folder


_SIGNERS: list[Signers] = []


def _signers() -> Signers:
    """Keys made once a process by ssh-keygen; allowed_signers lists all but Mallory."""
    if not _SIGNERS:
        import atexit
        import shutil
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="txkit-keys-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # private keys: not left
        _SIGNERS.append(make_signers(folder, ["Ada Obi", "Eve Ito", "Kim Lee"], ("Mallory",)))
    return _SIGNERS[0]


def _sign(
    out: Path, month: str, role: str, name: str, login: str, store: Path | str, mp: Any
) -> dict:
    """Sign with ``name``'s own key; ``login`` is set to show it decides nothing."""
    mp.setenv("LOGNAME", login)
    keys = _signers()
    return sign_report(out, month, role=role, key=keys.key(name), store=store,
                       allowed_signers=keys.allowed)  # fmt: skip


def _state(store: Path | str, month: str = "2026-10") -> Any:
    from txkit.register._lock import month_state

    return month_state(read_events(store)[0], month)


def test_signing_records_the_digest_and_locks_the_month(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A], 1)
    out = tmp_path / "reports"
    folder = _fake_report(out, "2026-10", store)
    files = pack_files(folder)
    assert refuse_signed(out, "2026-10", None, events=read_events(store)[0]) == Target("2026-10")
    sig = _sign(out, "2026-10", "preparer", "Ada Obi", "ada", store, monkeypatch)
    # The signature blocks left out; the pack's PDF, made before the first signature, in.
    signed = pack_files(folder)
    assert signed.keys() - files.keys() == {"pack.pdf"}
    assert all(signed[name] == digest for name, digest in files.items())
    assert sig["sha256"] == report_digest(folder)
    assert (sig["revision"], sig["table_version"]) == (1, 7)
    assert sig["key"].startswith("SHA256:") and sig["chain"]
    assert f"preparer: Ada Obi (key {sig['key']})" in (folder / "index.html").read_text()
    doc = json.loads((folder / "report.json").read_text())
    assert [s["role"] for s in doc["signatures"]] == ["preparer"]
    assert signed_versions(store) == {7}
    # The policy txkit sync, txkit store vacuum and the report apply keeps them, as a source
    # passed explicitly (nothing is registered at import).
    policy = retention_policy()
    assert policy.sources == (keep_signed,)
    kept = set().union(*(source(str(store), "any-id") for source in policy.sources))
    assert 7 in kept
    # A preparer alone does not lock the month.
    assert not _state(store).locked
    assert refuse_signed(out, "2026-10", None, events=read_events(store)[0]) == Target("2026-10")
    _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    assert _state(store).locked
    events = read_events(store)[0]
    with pytest.raises(
        ReportSignedError, match=r"2026-10 is locked .*preparer Ada Obi on .*--reopen"
    ):
        refuse_signed(out, "2026-10", None, events=events)
    assert refuse_signed(out, "2026-10", "late statement", events=events) == Target(
        "2026-10.r2", 2, folder, "late statement"
    )
    with pytest.raises(ValueError, match="--role 'boss' is not one of preparer, reviewer"):
        sign_report(out, "2026-10", role="boss", key=_signers().key("Kim Lee"), store=store)
    # An unsigned revision is replaced by the next run, still compared with the signed one.
    _fake_report(out, "2026-10", store, name="2026-10.r2")
    assert refuse_signed(out, "2026-10", None, events=read_events(store)[0]) == Target(
        "2026-10.r2", 2, folder, "late statement"
    )


def test_segregation_of_duties(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The preparer first, then a reviewer who is another person by key; each role once a
    revision; the login decides nothing."""
    store, out = tmp_path / "store", tmp_path / "reports"
    _fake_report(out, "2026-10", store)
    with pytest.raises(ReportSignedError, match="no preparer's signature: the preparer signs"):
        _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    _sign(out, "2026-10", "preparer", "Ada Obi", "ada", store, monkeypatch)
    with pytest.raises(ReportSignedError, match="already signed as preparer by Ada Obi"):
        _sign(out, "2026-10", "preparer", "Kim Lee", "kim", store, monkeypatch)
    # The preparer's own key as reviewer, whatever login the shell claims: refused.
    with pytest.raises(ReportSignedError, match=r"another person .*the same key \(SHA256:"):
        _sign(out, "2026-10", "reviewer", "Ada Obi", "eve", store, monkeypatch)
    assert not _state(store).locked
    _sign(out, "2026-10", "reviewer", "Eve Ito", "ada", store, monkeypatch)
    with pytest.raises(ReportSignedError, match="already signed as reviewer by Eve Ito"):
        _sign(out, "2026-10", "reviewer", "Kim Lee", "kim", store, monkeypatch)
    state = _state(store)
    assert state.locked and [s["role"] for s in state.signatures] == ["preparer", "reviewer"]
    assert [s["name"] for s in state.signatures] == ["Ada Obi", "Eve Ito"]


def test_a_locked_month_refuses_every_change_naming_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is the store's: explain, write-off, owner, import and a rerun elsewhere are
    refused in one line naming the lock and --reopen; a report of another month changes
    nothing of it."""
    store, out = tmp_path / "store", tmp_path / "reports"
    folder = out / "2026-10"
    _report(store, folder, "2026-10", [A, B], 7)
    doc = {"month": "2026-10", "store": str(store), "table_version": 7}
    (folder / "report.json").write_text(json.dumps(doc))
    from txkit.register._state import commit_report  # the run's pack, recorded

    (folder / "index.html").write_text("<!--txkit:signatures--><!--/txkit:signatures-->")
    record_report(store, "2026-10", folder, table_version=7)
    explain(store, "A:amount_mismatch", owner="ada")  # before the lock: fine
    # The report again, so that its pack shows the register it signs (Why 8.14).
    record_report(store, "2026-10", folder, table_version=7)
    _sign(out, "2026-10", "preparer", "Ada Obi", "ada", store, monkeypatch)
    explain(store, "A:amount_mismatch", note="between the signatures")  # not locked yet
    record_report(store, "2026-10", folder, table_version=7)  # both sign the rerun's pack
    _sign(out, "2026-10", "preparer", "Ada Obi", "ada", store, monkeypatch)
    _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    before = register_view(store)
    for change in (
        {"status": "written_off", "note": "below cost"},
        {"owner": "kim"},
        {"category": "timing"},
    ):
        with pytest.raises(ReportSignedError, match=r"2026-10 is locked.*--reopen"):
            explain(store, "A:amount_mismatch", **change)
    sheet = tmp_path / "items.csv"
    sheet.write_text("key,owner\nA:amount_mismatch,kim\n")
    for argv in (
        ["exceptions", "explain", "A:amount_mismatch", "--status", "written_off"],
        ["exceptions", "import", str(sheet)],
        ["report", "--month", "2026-10", "--out", str(tmp_path / "elsewhere")],
    ):
        done = invoke_cli(*argv, "--store", str(store), cwd=tmp_path)
        assert done.returncode == 1, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and "2026-10 is locked" in done.stderr
        assert "--reopen" in done.stderr
    assert not (tmp_path / "elsewhere").exists()
    with pytest.raises(ReportSignedError, match="2026-10 is locked"):
        commit_report(store, "2026-10", read_events(store)[0].head(0), folder)
    assert register_view(store).equals(before)
    # Once November is reported, a change goes into November's register; October's stays as
    # signed.
    _report(store, tmp_path / "r11", "2026-11", [A], 8)
    explain(store, "A:amount_mismatch", status="written_off", note="below cost")
    assert register_view(store, month="2026-10").equals(before)
    november = register_view(store).filter(pl.col("key") == "A:amount_mismatch").row(0, named=True)
    assert november["status"] == "written_off" and november["resolved_month"] == "2026-11"


def test_a_signed_month_rerun_is_refused_and_changes_no_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A], 1)
    out = tmp_path / "reports"
    folder = _fake_report(out, "2026-10", store)
    keys = _signers()
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        done = invoke_cli("report", "sign", "--month", "2026-10", "--role", role, "--key",
                          str(keys.key(name)), "--allowed-signers", str(keys.allowed), "--store",
                          str(store), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"signed 2026-10 revision 1 as {role}: {name} (key SHA256:" in done.stdout
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    rerun = invoke_cli("report", "--month", "2026-10", "--store", str(store), cwd=tmp_path)
    assert rerun.returncode == 1
    assert rerun.stderr.strip().startswith("txkit: error: ReportSignedError: ")
    assert "2026-10 is locked" in rerun.stderr
    assert rerun.stderr.count("\n") == 1
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in out.iterdir()) == ["2026-10"]


def test_a_signed_pack_is_verified_against_the_register(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`txkit report verify` recomputes every file's digest and checks every signature
    against the register; an edited page, report.json, a script in the signature block, a
    signature removed: each named. `sign` refuses a pack that does not verify."""
    store, out = tmp_path / "store", tmp_path / "reports"
    folder = _fake_report(out, "2026-10", store)
    _sign(out, "2026-10", "preparer", "Ada Obi", "ada", store, monkeypatch)

    def verify() -> subprocess.CompletedProcess[str]:
        return invoke_cli("report", "verify", "--month", "2026-10", "--store", str(store),
                          "--out", str(out), "--allowed-signers", str(_signers().allowed),
                          cwd=tmp_path)  # fmt: skip

    done = verify()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "revision 1 (2026-10): verified, 4 files (signed by preparer Ada Obi" in done.stdout
    assert "the chain of 1 holds" in done.stdout
    pristine = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}

    def edited(name: str, change) -> str:
        (folder / name).write_bytes(change(pristine[name]))
        result = verify()
        for n, data in pristine.items():
            (folder / n).write_bytes(data)
        assert result.returncode == 1, result.stdout
        return result.stdout

    assert "changed: balance_breaks.csv" in edited("balance_breaks.csv", lambda b: b + b"y\n")
    script = edited(
        "index.html",
        lambda b: b.replace(b"<h2>Signed</h2>", b"<h2>Signed</h2><script>x()</script>"),
    )
    assert "index.html's signature block is not the register's" in script
    rows = edited(
        "report.json", lambda b: b.replace(b'"table_version": 7', b'"rows": 1, "table_version": 7')
    )
    assert "changed: report.json" in rows
    signer = edited("report.json", lambda b: b.replace(b"Ada Obi", b"Someone Else"))
    assert "report.json's signatures are not the register's" in signer
    (folder / "extra.html").write_text("x")
    added = verify()
    assert added.returncode == 1 and "added: extra.html" in added.stdout
    with pytest.raises(ReportSignedError, match="is not the pack its report wrote.*added: extra"):
        _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    (folder / "extra.html").unlink()
    (folder / "balance_breaks.csv").unlink()
    gone = verify()
    assert "missing: balance_breaks.csv" in gone.stdout
    (folder / "balance_breaks.csv").write_bytes(pristine["balance_breaks.csv"])
    # report.json naming another store, or a version that is not an integer: refused.
    for change in ({"store": str(tmp_path / "evil")}, {"table_version": "7</code><script>"}):
        doc = json.loads(pristine["report.json"]) | change
        (folder / "report.json").write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="not this project's store|not a table version"):
            _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    assert not (tmp_path / "evil").exists()
    (folder / "report.json").write_bytes(pristine["report.json"])
    _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    assert verify().returncode == 0
    # A signature removed from the register breaks the chain.
    from txkit.register._lock import month_state

    events = read_events(store)[0]
    signed = (pl.col("event") == "signed") & (pl.col("role") == "preparer")
    first = events.with_row_index("_i").filter(signed)["_i"][0]
    without = events.with_row_index("_i").filter(pl.col("_i") != first).drop("_i")
    problems = month_state(without, "2026-10").chain_problems()
    assert problems and "reviewer Eve Ito" in problems[0]


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


def test_revisions_are_read_as_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
    record_report(store, "2026-10", first, table_version=7)  # the download: the pack's
    _sign(out, "2026-10", "preparer", "Ada Obi", "ada", store, monkeypatch)
    _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    assert report_folder(out, "2026-10") == first
    second = out / "2026-10.r2"
    second.mkdir()
    changes = ["balance_breaks: 3 -> 2 items", "removed X:bad_value"]
    revision = {"number": 2, "of": "2026-10", "reason": "late statement", "changes": changes}
    (second / "report.json").write_text(json.dumps({"table_version": 8, "revision": revision}))
    (second / "balance_breaks.download.json").write_text(
        json.dumps({"name": "balance_breaks", "rows": 2, "population": 10})
    )
    record_report(store, "2026-10", second, table_version=8, revision=2, reason="late statement")
    history = revisions(out, "2026-10", events=read_events(store)[0])
    assert [(r["number"], r["folder"], r["reason"]) for r in history] == [
        (1, "2026-10", None), (2, "2026-10.r2", "late statement"),
    ]  # fmt: skip
    lines = revision_lines(history)
    assert lines[0].startswith("revision 1 (2026-10, table version 7): preparer Ada Obi on ")
    assert ", reviewer Eve Ito on " in lines[0]
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


def test_a_damaged_register_file_is_one_line_naming_the_repair(tmp_path: Path) -> None:
    """Every register file is named by its digest and checked on read; `txkit store verify`
    covers the register; `txkit exceptions repair` rebuilds it from the intact files."""
    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 1)
    _report(store, tmp_path / "r2", "2026-02", [C], 2)
    parts = sorted((store / "_register").glob("*.parquet"), key=lambda p: p.stat().st_mtime)
    assert len(parts) == 2 and all("-xxh3_128_" in p.name for p in parts)
    # A file damaged without changing its size (a flipped byte) is caught by its digest ...
    data = bytearray(parts[1].read_bytes())
    data[len(data) // 2] ^= 0xFF
    parts[1].write_bytes(bytes(data))
    with pytest.raises(StoreDamagedError, match=r"is damaged: _register/part-.*digest differs"):
        read_events(store)
    # ... and a truncated one (it made read_delta panic: a 36-line PanicException).
    with open(parts[1], "r+b") as handle:
        handle.truncate(1000)
    for argv in (["exceptions"], ["exceptions", "--month", "2026-01"]):
        done = invoke_cli(*argv, "--store", str(store), cwd=tmp_path)
        assert done.returncode != 0
        assert done.stderr.count("\n") == 1, done.stderr
        assert "StoreDamagedError" in done.stderr and "Panic" not in done.stderr
        assert f"repair: txkit exceptions repair --store {store}" in done.stderr
    checked = invoke_cli("store", "verify", "--store", str(store), cwd=tmp_path)
    assert checked.returncode != 0
    assert f"damaged: _register/{parts[1].name}" in checked.stdout
    assert f"repair: txkit exceptions repair --store {store}" in checked.stdout
    repaired = invoke_cli("exceptions", "repair", "--store", str(store), cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    assert f"dropped: _register/{parts[1].name}" in repaired.stdout
    view = register_view(store)
    assert sorted(view["key"].to_list()) == ["A:amount_mismatch", "B:missing_in_export"]
    again = invoke_cli("store", "verify", "--store", str(store), cwd=tmp_path)
    assert again.returncode == 0 and "0 damaged or missing" in again.stdout


def test_exceptions_without_a_store_say_so(tmp_path: Path) -> None:
    done = invoke_cli("exceptions", "--store", str(tmp_path / "nothing"), cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.count("\n") == 1
    assert "no store, so no exception register" in done.stderr
    assert "0 items" not in done.stdout
    # The default store (a path from the settings, not a --store string) says the same.
    done = invoke_cli("exceptions", "--month", "2026-10", cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert "no store, so no exception register" in done.stderr


@pytest.mark.slow  # a process of its own and a tmpfs
def test_a_read_only_register_is_one_line_without_rust_panics(tmp_path: Path) -> None:
    from tests.factories import run_cli

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root: {done.stderr.strip()}")
    try:
        store = mnt / "store"
        _report(store, tmp_path / "r1", "2026-01", [A], 1)
        out = tmp_path / "reports"
        _fake_report(out, "2026-10", store)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        for argv in (
            ["exceptions", "explain", "A:amount_mismatch", "--note", "x"],
            ["report", "sign", "--month", "2026-10", "--role", "preparer", "--key",
             str(_signers().key("Ada Obi")), "--allowed-signers", str(_signers().allowed),
             "--out", str(out)],
        ):  # fmt: skip
            failed = run_cli(*argv, "--store", str(store), cwd=tmp_path)
            assert failed.returncode != 0
            assert failed.stderr.count("\n") == 1, failed.stderr  # no "panicked" lines
            assert "panicked" not in failed.stderr
        assert "Read-only file system" in failed.stderr or "read-only" in failed.stderr
        listed = run_cli("exceptions", "--store", str(store), cwd=tmp_path)
        assert listed.returncode == 0 and listed.stderr == ""
        assert "1 items" in listed.stdout
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_revision_names_every_item_and_figure_that_changed(tmp_path: Path) -> None:
    """Against the signed report: the open and material counts (all and per section), each
    item added, resolved, changed in amount, status or materiality, the lists' figures."""
    from txkit.register._sign import compare_reports

    def pack(name: str, rows: list[tuple], listed: int) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "report.json").write_text(json.dumps({"table_version": 3, "rows": 10}))
        frame = pl.DataFrame(
            rows, schema=["key", "section", "currency", "amount", "status", "material"],
            orient="row",
        )  # fmt: skip
        frame.write_csv(folder / "exceptions.csv")
        (folder / "balance_breaks.download.json").write_text(
            json.dumps({"name": "balance_breaks", "rows": listed, "population": 10})
        )
        return folder

    before = pack("2026-10", [
        ("K1", "fees", "NGN", "10.000000", "open", "false"),
        ("K2", "fees", "NGN", "20.000000", "open", "true"),
        ("K3", "reconciliation", "USD", "5.000000", "explained", "false"),
    ], 3)  # fmt: skip
    after = pack("2026-10.r2", [
        ("K1", "fees", "NGN", "12.500000", "open", "true"),
        ("K2", "fees", "NGN", "20.000000", "written_off", "true"),
        ("K3", "reconciliation", "USD", "5.000000", "explained", "false"),
        ("K4", "reconciliation", "USD", "7.000000", "open", "false"),
    ], 4)  # fmt: skip
    lines = compare_reports(before, after)
    assert "register: open items 3 -> 3, of them material 1 -> 1" not in lines
    assert "register fees: open 2 -> 1, material 1 -> 1" in lines
    assert "register reconciliation: open 1 -> 2, material 0 -> 0" in lines
    assert "register items added: 1 (K4)" in lines
    assert "register items resolved: 1 (K2 (written_off))" in lines
    assert "register items changed in amount: 1 (K1 (10.00 NGN -> 12.50 NGN))" in lines
    assert "register items changed in materiality: 1 (K1 (now material))" in lines
    assert "balance_breaks rows 3 -> 4" in lines
    assert compare_reports(before, before) == ["no change in figures or items"]


@pytest.mark.slow  # moto's S3 server
def test_the_register_on_s3_is_written_verified_and_signed(
    aws: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On object storage: files named by their digest, checked on read; a signature (no file
    lock reaches there: the register is what holds)."""
    import boto3

    store = "s3://txkit/register-controls"
    _report(store, tmp_path / "r1", "2026-01", [A, B], 1)
    out = tmp_path / "reports"
    folder = _fake_report(out, "2026-10", store)
    _sign(out, "2026-10", "preparer", "Ada Obi", "ada", store, monkeypatch)
    _sign(out, "2026-10", "reviewer", "Eve Ito", "eve", store, monkeypatch)
    assert _state(store).locked
    lines, whole = verify_report(out, "2026-10", store=store, allowed_signers=_signers().allowed)
    assert whole, lines
    s3 = boto3.client("s3", endpoint_url=aws["AWS_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="txkit", Prefix="register-controls/")
            ["Contents"] if o["Key"].endswith(".parquet")]  # fmt: skip
    assert keys and all("-xxh3_128_" in k for k in keys)
    body = s3.get_object(Bucket="txkit", Key=keys[0])["Body"].read()
    s3.put_object(Bucket="txkit", Key=keys[0], Body=body[:1000])
    with pytest.raises(StoreDamagedError, match="txkit exceptions repair --store s3://"):
        read_events(store)
    assert folder.is_dir()


def test_control_characters_never_reach_a_terminal_or_a_page(tmp_path: Path) -> None:
    """--reopen, --by, --note, --owner: printable text or refused in one line; what an older
    register or an edited report.json holds is shown as text (no raw ESC in HTML or a
    terminal line)."""
    from txkit.register._sign import plain, revision_lines, signature_block

    store = tmp_path / "store"
    _report(store, tmp_path / "r1", "2026-01", [A], 1)
    for flag, change in (
        ("--note", {"note": "ok\x1b[2Kforged"}),
        ("--owner", {"owner": "\u200b"}),
        ("--by", {"actor": "Ada\nObi", "note": "fine"}),
    ):
        with pytest.raises(ValueError, match=flag):
            explain(store, "A:amount_mismatch", **change)
    done = invoke_cli("exceptions", "explain", "A:amount_mismatch", "--note", "x\x1b[1A",
                      "--store", str(store), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "\x1b" not in done.stderr
    with pytest.raises(ValueError, match="--reopen"):
        refuse_signed(tmp_path, "2026-10", "late\x1b[2K", events=read_events(store)[0])
    hostile = {
        "role": "preparer", "name": "Eve\x1b[2K\x1b[1A", "at": "2026-11-01T00:00:00Z",
        "table_version": "7</code>", "sha256": "<b>", "login": "<i>", "revision": 1,
    }  # fmt: skip
    block = signature_block([hostile])
    assert "\x1b" not in block and "<b>" not in block and "</code>" not in block
    assert "Eve\\x1b[2K" in block and "table version ?" in block
    assert plain("a\nb\x1b") == "a\\nb\\x1b"
    history = [{"number": 2, "folder": "2026-10.r2", "reason": "x\x1b[2K", "of": "2026-10",
                "signatures": [hostile], "changes": ["y\n"], "table_version": 7}]  # fmt: skip
    (line,) = revision_lines(history)
    assert "\x1b" not in line and "\n" not in line


def test_an_edited_report_json_is_read_as_data(tmp_path: Path) -> None:
    """The history reads only the shapes report.json is written in: a string of changes, a
    signature without a name, a reason with an escape are not taken as they are."""
    from txkit.register._sign import history_block, revision_lines, revisions

    out = tmp_path / "reports"
    for name, doc in (
        ("2026-10", {"table_version": "7<script>", "signatures": [{"role": "x"}, "y"]}),
        ("2026-10.r2", {"revision": {"reason": ["\x1b[2K"], "of": 3, "changes": "abc"}}),
    ):
        (out / name).mkdir(parents=True)
        (out / name / "report.json").write_text(json.dumps(doc))
    history = revisions(out, "2026-10")
    assert history[0]["signatures"] == [] and history[1]["changes"] == []
    assert history[1]["reason"] is None and history[1]["of"] is None
    lines = revision_lines(history)
    assert lines[0] == "revision 1 (2026-10, table version ?): not signed"
    assert "<script>" not in history_block(history)


def test_a_revision_names_each_close_summary_figure_that_changed(tmp_path: Path) -> None:
    from txkit.register._sign import compare_reports

    def pack(name: str, closing: str, items: int) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "report.json").write_text(json.dumps({"table_version": 3}))
        doc = {
            "month": "2026-10",
            "lines": [["Closing balance, computed", {"NGN": closing, "USD": "5.00"}]],
            "exceptions": [["Reconciliation", "NGN", items, "120.50", 1]],
        }
        (folder / "00_close_summary.json").write_text(json.dumps(doc))
        return folder

    lines = compare_reports(pack("a", "100.00", 3), pack("b", "90.00", 4))
    assert "close summary: Closing balance, computed NGN 100.00 -> 90.00" in lines
    assert "close summary: exceptions Reconciliation items NGN 3 -> 4" in lines
    assert not any("USD" in line for line in lines)
