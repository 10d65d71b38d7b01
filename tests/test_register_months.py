"""Months of the sandbox reported in order, as an analyst closes them, with the
exception register carrying items across months (a session fixture runs them once).

Between the runs an analyst explains an item; October's first report reads an orders file
with one order missing, is signed by a preparer and a reviewer, refused when rerun, and
reopened with the full file. The assertions read the reports, the register and the sandbox's
planted truth (``ground_truth.json``).
"""

from __future__ import annotations

import calendar
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from tests.factories import invoke_cli, make_signers, run_cli
from txkit.calendar import previous_months
from txkit.register import read_events, register_view
from txkit.register._sign import report_digest, signed_versions

pytestmark = [pytest.mark.slow, pytest.mark.report]

ROOT = Path(__file__).resolve().parent.parent
#: The months reported in order, ending with October (signed, refused, reopened): the sandbox's
#: twelve, as issue 26's acceptance asks (72 s of CPU in this process with two kept kernels,
#: 166 s as a process and two kernels per report, 235 s before the report's kernel lanes).
#: ``TXKIT_TEST_REGISTER_MONTHS=5`` (June to October: every age bucket is still reached) is
#: the quick loop while working on the register.
MONTHS = [*previous_months("2026-10", int(os.environ.get("TXKIT_TEST_REGISTER_MONTHS", "12")) - 1),
          "2026-10"]  # fmt: skip
EXPLAINED_NOTE = "chain gap: the missing record is known to the provider, ticket 4711"


@dataclass
class Months:
    workdir: Path
    seconds: dict[str, float]
    explained: str  # the key explained after the first month
    dropped: str  # the reference whose order October's first run did not have
    refused: Any  # the rerun of the signed month without --reopen (returncode, stdout, stderr)
    reopened: Any  # with it
    signed_files: dict[str, str]  # the signed report's files' SHA-256 before the refused rerun
    signed_register: str  # `txkit exceptions --month 2026-10 --format csv` once signed
    after_earlier: str  # the same after an earlier month's report was run again

    @property
    def store(self) -> Path:
        return self.workdir / "data" / "store" / "sandbox"

    def report(self, month: str) -> Path:
        return self.workdir / "reports" / month

    def truth(self) -> dict:
        (path,) = self.workdir.glob("data/sandbox/cache/*/ground_truth.json")
        return json.loads(path.read_text())


#: The notebooks whose pages publish exception lists (the register's input): 01_explore and
#: 05_trends publish none, and leaving them out takes a third off the months' run.
LISTING = ("02_reconciliation", "03_underpayments", "04_balance_checks", "06_settlements")


def _run(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``txkit report ARGS`` in this process: the kernels' output goes into the notebooks, not
    the command's, so a process per report added only its start, imports and the sandbox's
    ledger (which :func:`invoke_cli` takes from the run's cache): 166 s of CPU for the twelve
    months as processes, 115 s in this one (72 s with the kernels kept, see :func:`months`)."""
    books = workdir / "books"
    if not books.is_dir():
        books.mkdir()
        for name in LISTING:
            (books / f"{name}.ipynb").symlink_to(ROOT / "notebooks" / f"{name}.ipynb")
    return invoke_cli(*args, "--notebooks", str(books), cwd=workdir)


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file()
    }


def _outcome(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def _build(workdir: Path) -> dict[str, object]:
    """Report the months in ``workdir``; returns what the tests read beside the files."""
    (workdir / "materiality.toml").write_bytes((ROOT / "materiality.toml").read_bytes())
    seconds: dict[str, float] = {}
    explained = ""
    dropped = ""
    for month in MONTHS:
        args = ["report", "--month", month]
        if month == MONTHS[-1]:
            # October's first report reads the orders without one of a plain collection's.
            (orders,) = workdir.glob("data/sandbox/cache/*/orders.csv")
            frame = pl.read_csv(orders, infer_schema=False)
            anomalous = {a["reference"] for a in json.loads(
                next(workdir.glob("data/sandbox/cache/*/ground_truth.json")).read_text()
            )["anomalies"]}  # fmt: skip
            pick = frame.filter(
                pl.col("date").str.starts_with("2026-10-1")
                & ~pl.col("reference").is_in(anomalous)
                # a paid order: an attempt never paid without its order is no exception (issue 46)
                & (pl.col("status") == "successful")
            ).row(0, named=True)
            dropped = pick["reference"]
            trimmed = workdir / "orders-trimmed.csv"
            frame.filter(pl.col("reference") != dropped).write_csv(trimmed)
            args += ["--orders", str(trimmed)]
        began = time.perf_counter()
        done = _run(workdir, *args)
        seconds[month] = time.perf_counter() - began
        assert done.returncode == 0, done.stderr
        if month == MONTHS[0]:
            first = register_view(workdir / "data" / "store" / "sandbox")
            explained = first.filter(pl.col("section") == "balance_breaks")["key"].sort()[0]
            note = invoke_cli(
                "exceptions", "explain", explained, "--category", "timing", "--owner", "ada",
                "--note", EXPLAINED_NOTE, "--by", "Ada Obi", cwd=workdir,
            )  # fmt: skip
            assert note.returncode == 0, note.stderr
    # The reviewer signs once every flux breach is explained, and the pack shows the register
    # it signs: the breaches explained (an import), then October run again.
    flux = pl.read_csv(workdir / "reports" / MONTHS[-1] / "flux.csv", infer_schema=False)
    sheet = workdir / "flux-explained.csv"
    flux.filter(pl.col("breach") == "true").select(
        "key", pl.lit("looked at against September: the sandbox's seasons").alias("explanation")
    ).write_csv(sheet)
    imported = invoke_cli("exceptions", "import", str(sheet), "--by", "Eve Ito", cwd=workdir)
    assert imported.returncode == 0, imported.stderr
    again = _run(workdir, *args)
    assert again.returncode == 0, again.stderr
    # The project's allowed_signers (workdir/allowed_signers, the default) lists both keys.
    keys = make_signers(workdir, ["Ada Obi", "Eve Ito"])
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        signed = invoke_cli("report", "sign", "--month", MONTHS[-1], "--role", role, "--key",
                            str(keys.key(name)), cwd=workdir)  # fmt: skip
        assert signed.returncode == 0, signed.stderr
    signed_files = _digests(workdir / "reports" / MONTHS[-1])

    def register_of(month: str) -> str:
        done = invoke_cli("exceptions", "--month", month, "--format", "csv", cwd=workdir)
        assert done.returncode == 0, done.stderr
        return done.stdout

    # An earlier month run after the signed one leaves the signed month's register as signed.
    signed_register = register_of(MONTHS[-1])
    earlier = _run(workdir, "report", "--month", MONTHS[len(MONTHS) // 2])
    assert earlier.returncode == 0, earlier.stderr
    after_earlier = register_of(MONTHS[-1])
    refused = _run(workdir, "report", "--month", MONTHS[-1])
    (orders,) = workdir.glob("data/sandbox/cache/*/orders.csv")
    began = time.perf_counter()
    reopened = _run(
        workdir, "report", "--month", MONTHS[-1], "--orders", str(orders),
        "--reopen", "the orders file was missing an order", "--key", str(keys.key("Ada Obi")),
    )  # fmt: skip
    seconds["reopen"] = time.perf_counter() - began
    assert reopened.returncode == 0, reopened.stderr
    return {
        "seconds": seconds,
        "explained": explained,
        "dropped": dropped,
        "refused": _outcome(refused),
        "reopened": _outcome(reopened),
        "signed_files": signed_files,
        "signed_register": signed_register,
        "after_earlier": after_earlier,
    }


@pytest.fixture(scope="session")
def months(tmp_path_factory: pytest.TempPathFactory) -> Months:
    """The months, built once per run: with pytest-xdist each worker is a session of
    its own, so the first builds them under a file lock in the run's shared temporary folder
    and the other reads the same (as the shared report does, see conftest.py). The reports
    run in this process, with the kernels the worker keeps (conftest.py): each notebook in a
    kernel reset as between two notebooks of one report (tests/test_report_lanes.py: it sees
    no name, figure or numbering of the one before)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    workdir, done = root / "register-months", root / "register-months.json"
    with (root / "register-months.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(workdir, ignore_errors=True)  # a half-built one of a crashed worker
            workdir.mkdir()
            outcome = _build(workdir)
            done.write_text(json.dumps(outcome))
    got = json.loads(done.read_text())
    return Months(
        workdir,
        got["seconds"],
        got["explained"],
        got["dropped"],
        SimpleNamespace(**got["refused"]),
        SimpleNamespace(**got["reopened"]),
        got["signed_files"],
        got["signed_register"],
        got["after_earlier"],
    )


def _exceptions(folder: Path) -> pl.DataFrame:
    return pl.read_csv(folder / "exceptions.csv", infer_schema=False)


def _end(month: str) -> date:
    year, mon = int(month[:4]), int(month[5:])
    return date(year, mon, calendar.monthrange(year, mon)[1])


def test_bucket_counts_add_up_to_the_open_items_every_month(months: Months) -> None:
    for month in MONTHS:
        doc = json.loads((months.report(month) / "report.json").read_text())["register"]
        listed = _exceptions(months.report(month))
        still = listed.filter(pl.col("status").is_in(["open", "explained"]))
        for section, row in doc["by_section"].items():
            buckets = row["0-30"] + row["31-60"] + row["61-90"] + row["90+"]
            assert buckets == row["open"], (month, section)
            part = still.filter(pl.col("section") == section)
            assert part.height == row["open"], (month, section)
            for bucket in ("0-30", "31-60", "61-90", "90+"):
                assert part.filter(pl.col("age_bucket") == bucket).height == row[bucket]
        assert doc["open"] == still.height
    # Nothing is resolved just because a later month's report looks at its own month: the
    # open items only grow until October's reopened report.
    opened = [
        json.loads((months.report(m) / "report.json").read_text())["register"]["open"]
        for m in MONTHS
    ]
    assert opened == sorted(opened) and opened[0] > 0


def test_every_report_re_evaluates_the_earlier_months_and_nothing_planted_clears(
    months: Months,
) -> None:
    """Each report looks at every earlier month with open items. The sandbox's closed months
    do not change (no record arrives late, no status changes, the orders are the same), so no
    planted item clears: a month whose inputs are unchanged is not recomputed, and one that is
    recomputed (its store files were rewritten by a sync's look-back) lists the same keys."""
    for before, month in itertools.pairwise(MONTHS):
        carry = json.loads((months.report(month) / "report.json").read_text())["register"]["carry"]
        assert carry["resolved"] == [], month
        looked = carry["months"]
        assert set(looked) == {m for m in MONTHS if m < month}, month
        assert set(looked.values()) <= {"unchanged", "recomputed"}, looked
        assert looked[MONTHS[0]] == "unchanged" or before == MONTHS[0], looked
    first = json.loads((months.report(MONTHS[0]) / "report.json").read_text())["register"]
    assert first["carry"]["months"] == {}


def test_items_age_month_by_month_from_their_own_date(months: Months) -> None:
    key = months.explained
    ages = []
    for month in MONTHS:
        row = _exceptions(months.report(month)).filter(pl.col("key") == key).row(0, named=True)
        item_date = date.fromisoformat(row["item_date"])
        assert int(row["age_days"]) == (_end(month) - item_date).days
        assert row["first_month"] == MONTHS[0]
        ages.append(int(row["age_days"]))
    steps = [b - a for a, b in itertools.pairwise(ages)]
    assert steps == [calendar.monthrange(int(m[:4]), int(m[5:]))[1] for m in MONTHS[1:]]
    assert (
        _exceptions(months.report(MONTHS[-1])).filter(pl.col("key") == key)["age_bucket"].item()
        == "90+"
    )


def test_explained_items_keep_their_explanation(months: Months) -> None:
    for month in MONTHS[1:]:
        row = (
            _exceptions(months.report(month))
            .filter(pl.col("key") == months.explained)
            .row(0, named=True)
        )
        assert (row["status"], row["category"], row["owner"], row["explanation"]) == (
            "explained", "timing", "ada", EXPLAINED_NOTE,
        )  # fmt: skip
    events, _ = read_events(months.store)
    notes = events.filter(pl.col("event") == "annotated")
    assert notes.filter(pl.col("key") == months.explained)["actor"].to_list() == ["Ada Obi"]
    # The other annotations: October's flux breaches, explained before the reviewer signed.
    others = notes.filter(pl.col("key") != months.explained)
    assert others.height and set(others["actor"]) == {"Eve Ito"}
    assert all(key.startswith(f"flux:{MONTHS[-1]}:") for key in others["key"])


#: Planted kinds some exception list of the report finds (fee and tax mismatches have no list).
_LISTED_KINDS = (
    "order_amount", "order_missing", "order_extra", "order_status", "order_currency",
    "underpayment", "overpayment", "missing_from_export", "bad_balance", "reserve_mismatch",
)  # fmt: skip


def _unpaid_collections(months: Months) -> set[str]:
    """The references of the months' collections never paid (failed, declined, abandoned,
    expired), as the store holds them."""
    from txkit.analysis.reconcile import UNPAID_STATUSES
    from txkit.notebook import load_month

    found: set[str] = set()
    for month in MONTHS:
        df, _ = load_month(month, source="store", store=str(months.store))
        unpaid = df.filter(
            (pl.col("transType") == "collection") & pl.col("status").is_in(UNPAID_STATUSES)
        )
        found |= set(unpaid["transactionReference"].drop_nulls().to_list())
    return found


def _items_of(anomaly: dict, rows: list[dict]) -> list[dict]:
    """The register's items keyed by the anomaly's reference or record id."""
    heads = {h for h in (anomaly.get("reference"), anomaly.get("id")) if h}
    return [r for r in rows if r["key"].split(":", 1)[0] in heads]


def test_planted_anomalies_enter_the_register_in_their_own_month(months: Months) -> None:
    # The anomalies planted in the months reported (the sandbox plants them over its year).
    truth = [a for a in months.truth()["anomalies"] if a["createdAt"][:7] in MONTHS]
    rows = list(register_view(months.store, month=MONTHS[-1]).iter_rows(named=True))
    unpaid = _unpaid_collections(months)
    for kind in _LISTED_KINDS:
        planted = [a for a in truth if a["kind"] == kind]
        assert planted, kind
        for anomaly in planted:
            items = _items_of(anomaly, rows)
            if kind == "order_missing" and anomaly["reference"] in unpaid:
                # an attempt never paid whose order is gone is no exception (issue 46)
                assert not items, (kind, anomaly)
                continue
            assert items, (kind, anomaly)
            for row in items:
                assert row["first_month"] == anomaly["createdAt"][:7], (kind, row["key"])
                # Nothing later lists them again or resolves them: open (or explained), aged
                # from their own date to October's end.
                assert row["status"] in ("open", "explained"), row["key"]
                assert row["age_days"] == (_end(MONTHS[-1]) - row["item_date"]).days
    for anomaly in [a for a in truth if a["kind"] in ("bad_balance", "reserve_mismatch")]:
        day = date.fromisoformat(anomaly["createdAt"][:10])
        assert {r["item_date"] for r in _items_of(anomaly, rows)} == {day}
    # A duplicated reference is listed by the reconciliation (collections against orders)
    # when both records are collections of one month: those are in the register, in that month.
    duplicates = [a for a in truth if a["kind"] == "duplicate_reference"]
    found = [(a, r) for a in duplicates for r in _items_of(a, rows)]
    assert found
    for anomaly, row in found:
        assert row["key"] == f"{anomaly['reference']}:duplicate_reference"
        assert row["first_month"] == anomaly["createdAt"][:7]


def test_the_signed_month_is_refused_and_its_reopened_revision_names_the_change(
    months: Months,
) -> None:
    month = MONTHS[-1]
    folder = months.report(month)
    assert months.refused.returncode == 1
    assert "ReportSignedError: txkit report --month 2026-10: 2026-10 is locked (revision 1, " in (
        months.refused.stderr
    )
    assert "signed by preparer Ada Obi on " in months.refused.stderr
    assert '--reopen "why"' in months.refused.stderr
    assert (
        _digests(folder) == months.signed_files
    )  # not one byte changed, by the refusal nor the revision
    doc = json.loads((folder / "report.json").read_text())
    assert [s["role"] for s in doc["signatures"]] == ["preparer", "reviewer"]
    assert {s["sha256"] for s in doc["signatures"]} == {report_digest(folder)}
    verified = invoke_cli("report", "verify", "--month", month, cwd=months.workdir)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "revision 1 (2026-10): verified, " in verified.stdout
    assert "(locked, signed by preparer Ada Obi (key SHA256:" in verified.stdout
    assert (
        "revision 2 (2026-10.r2), reopened by Ada Obi (the orders file was missing an "
        "order): verified, " in verified.stdout
    )
    assert signed_versions(months.store) == {doc["table_version"]}
    revision = months.report(f"{month}.r2")
    rdoc = json.loads((revision / "report.json").read_text())["revision"]
    assert rdoc["number"] == 2 and rdoc["of"] == month
    assert rdoc["reason"] == "the orders file was missing an order"
    gone = f"{months.dropped}:missing_in_orders"
    assert any(line.startswith("reconciliation_mismatches:") and f"removed {gone}" in line
               for line in rdoc["changes"]), rdoc["changes"]  # fmt: skip
    assert f"removed {gone}" in months.reopened.stdout
    page = (revision / "index.html").read_text()
    # The index's history shows each revision's signatures, as the register holds them.
    assert f"{month}</a>: preparer Ada Obi on " in page and ", reviewer Eve Ito on " in page
    assert "revision 2 of 2026-10, beside the signed report 2026-10 (reopened: the orders" in page
    assert f"removed {gone}" in page


def test_an_earlier_month_run_afterwards_leaves_the_signed_register_as_signed(
    months: Months,
) -> None:
    assert months.after_earlier == months.signed_register
    signed = pl.read_csv(months.report(MONTHS[-1]) / "exceptions.csv", infer_schema=False)
    listed = pl.read_csv(months.signed_register.encode(), infer_schema=False)
    assert sorted(listed["key"].to_list()) == sorted(signed["key"].to_list())
    assert listed.filter(pl.col("status").is_in(["open", "explained"])).height == (
        signed.filter(pl.col("status").is_in(["open", "explained"])).height
    )


def test_an_item_resolved_by_a_later_record_says_so(months: Months) -> None:
    gone = f"{months.dropped}:missing_in_orders"
    row = register_view(months.store).filter(pl.col("key") == gone).row(0, named=True)
    assert row["status"] == "resolved" and row["resolved_month"] == MONTHS[-1]
    assert row["resolved_by"].startswith(f"no longer listed in {MONTHS[-1]}'s report")
    listed = _exceptions(months.report(f"{MONTHS[-1]}.r2")).filter(pl.col("key") == gone)
    assert listed["status"].item() == "resolved"


def test_the_cli_filters_the_register(months: Months) -> None:
    done = run_cli("exceptions", "--format", "csv", "--open", "--material", "--older-than", "60",
                   cwd=months.workdir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = pl.read_csv(done.stdout.encode(), infer_schema=False)
    assert listed.columns[:13] == [
        "key", "section", "currency", "amount", "first_month", "last_month", "status",
        "category", "age_days", "age_bucket", "material", "owner", "explanation",
    ]  # fmt: skip
    assert listed.height > 0
    assert set(listed["status"]) <= {"open", "explained"}
    assert set(listed["material"]) == {"true"}
    assert min(int(a) for a in listed["age_days"]) > 60
    full = register_view(months.store)
    expected = full.filter(
        pl.col("status").is_in(["open", "explained"])
        & pl.col("material")
        & (pl.col("age_days") > 60)
    )
    assert listed.height == expected.height


def test_measured_run(months: Months) -> None:
    """Not an assertion of speed: the numbers of the closing note (printed with -s)."""
    size = sum(p.stat().st_size for p in (months.store / "_register").rglob("*") if p.is_file())
    events, version = read_events(months.store)
    total = sum(v for k, v in months.seconds.items() if k != "reopen")
    print(
        f"\n{len(MONTHS)} months: {total:.0f} s "
        f"({', '.join(f'{k} {v:.0f}' for k, v in months.seconds.items())}); register "
        f"{events.height:,} events, {register_view(months.store).height:,} items, "
        f"version {version}, {size:,} bytes"
    )
    assert events.height > 0 and size > 0
