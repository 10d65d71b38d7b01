"""The report's execution cache (issue 49): a rerun with nothing changed executes no notebook
and yields the same pages; each input changed executes exactly the notebooks that read it.

One project folder is shared by the module's tests, which run in order, each changing one
input of the report before it (the store needs no sync: a copy of the shared report's data).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.factories import (
    REPORT_MONTH,
    SessionReport,
    invoke_cli,
    make_signers,
    small_notebooks,
)

pytestmark = [pytest.mark.slow, pytest.mark.report]

ROOT = Path(__file__).resolve().parent.parent
EVERY = {
    "01_explore",
    "02_reconciliation",
    "03_underpayments",
    "04_balance_checks",
    "05_trends",
    "06_settlements",
    "07_exceptions",
    "08_fees",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, session_report: SessionReport) -> Path:
    """A project (``txkit.toml``) with the shared report's store, its own copies of the
    sandbox's orders and October statements (given as files, so a test can change them), and
    a first report of the month (every notebook executed)."""
    folder = tmp_path_factory.mktemp("report-cache")
    data = session_report.copy_data(folder)
    assert not (data / "cache").exists()
    (sandbox,) = (data / "sandbox/cache").glob("*/orders.csv")
    inputs = folder / "inputs"
    inputs.mkdir()
    shutil.copy(sandbox, inputs / "orders.csv")
    for name in ("statement_2026-10.camt053.xml", "statement_2026-11.camt053.xml"):
        shutil.copy(sandbox.parent / "bank" / name, inputs / name)
    (folder / "txkit.toml").write_text("# the project's settings\n", encoding="utf-8")
    shutil.copytree(ROOT / "notebooks", folder / "notebooks", ignore=_not_notebooks)
    first = _report(folder)
    assert _executed(first) == EVERY
    shutil.copytree(folder / "reports" / REPORT_MONTH, folder / "first")
    return folder


def _not_notebooks(_folder: str, names: list[str]) -> list[str]:
    return [n for n in names if not n.endswith(".ipynb")]


def _report(folder: Path, *extra: str, env: dict[str, str] | None = None) -> str:
    done = invoke_cli(
        "report", "--month", REPORT_MONTH, "--orders", "inputs/orders.csv",
        "--bank-statement", "inputs/statement_2026-10.camt053.xml",
        "--bank-statement", "inputs/statement_2026-11.camt053.xml", *extra, cwd=folder, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _executed(stdout: str, every: set[str] = EVERY) -> set[str]:
    """The notebooks the report executed: all but those its note says were reused."""
    found = re.search(r"^execution cache: \d+ of \d+ notebooks reused .*?: (.*)$", stdout, re.M)
    reused = set(found.group(1).split(", ")) if found else set()
    assert reused <= every
    return every - reused


def test_a_rerun_with_nothing_changed_executes_nothing_and_yields_the_same_pages(
    project: Path,
) -> None:
    assert _executed(_report(project)) == set()
    now, first = project / "reports" / REPORT_MONTH, project / "first"
    compared = sorted(p.name for p in first.iterdir() if p.suffix in {".html", ".csv", ".json"})
    compared = [n for n in compared if n not in {"index.html", "report.json"}]
    assert len(compared) > 20
    for name in compared:  # the pages, the downloads and their records: the same bytes
        assert (now / name).read_bytes() == (first / name).read_bytes(), name
    for record in first.glob("*.download.json"):  # the notebooks' Excel files too
        name = json.loads(record.read_text(encoding="utf-8"))["name"] + ".xlsx"
        assert (now / name).read_bytes() == (first / name).read_bytes(), name
    # The index says which pages were reused, and when they were executed.
    index = (now / "index.html").read_text(encoding="utf-8")
    assert index.count("reused from the execution cache: executed 20") == len(EVERY)
    assert "reused from the execution cache" not in (first / "index.html").read_text()
    # It lives in the data folder, never among the reports.
    assert any((project / "data/cache/notebooks").iterdir())
    assert not list((project / "reports").rglob("*.db"))


def test_a_changed_orders_file_executes_the_notebooks_that_read_orders(project: Path) -> None:
    orders = project / "inputs/orders.csv"
    lines = orders.read_text(encoding="utf-8").splitlines(keepends=True)
    orders.write_text("".join(lines[:-1]), encoding="utf-8")  # one order fewer
    # 02 and 07 read the orders; 05 and 07 read the lists 02 wrote, changed with them.
    executed = _executed(_report(project))
    assert executed == {"02_reconciliation", "05_trends", "07_exceptions"}


def test_a_changed_bank_statement_executes_the_settlements(project: Path) -> None:
    statement = project / "inputs/statement_2026-11.camt053.xml"
    with statement.open("a", encoding="utf-8") as handle:
        handle.write("<!-- received again from the bank -->\n")
    # The settlements read the statements; their lists did not change (the line numbers the
    # keys cite are the same), so the pages that read the lists are reused.
    assert _executed(_report(project)) == {"06_settlements"}


def test_a_changed_materiality_executes_the_exceptions_page(project: Path) -> None:
    (project / "materiality.toml").write_text('relative = "0.04"\n', encoding="utf-8")
    assert _executed(_report(project)) == {"07_exceptions"}


def test_a_changed_txkit_toml_executes_the_notebooks_that_read_it(project: Path) -> None:
    with (project / "txkit.toml").open("a", encoding="utf-8") as handle:
        handle.write("[orders]\n")
    executed = _executed(_report(project))
    assert executed == {"02_reconciliation", "06_settlements", "07_exceptions"}


def test_one_explanation_executes_only_what_reads_the_register(project: Path) -> None:
    record = project / "reports" / REPORT_MONTH / "reconciliation_mismatches.download.json"
    key = next(iter(json.loads(record.read_text(encoding="utf-8"))["open"]))
    done = invoke_cli(
        "exceptions", "explain", key, "--note", "a grouped payment", "--by", "test", cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert _executed(_report(project)) == {"07_exceptions"}


def test_a_sync_that_changes_the_month_executes_every_notebook(project: Path) -> None:
    done = invoke_cli("sync", "--refresh", REPORT_MONTH, "--no-progress", cwd=project)
    assert done.returncode == 0, done.stderr
    assert _executed(_report(project)) == EVERY


def test_no_cache_and_a_reopened_month_execute_everything(
    tmp_path: Path, session_report: SessionReport
) -> None:
    session_report.copy_data(tmp_path)
    books = small_notebooks(tmp_path / "books")
    every = {"01_small"}

    def report(*extra: str, env: dict[str, str] | None = None, stderr: str = "") -> str:
        done = invoke_cli(
            "report", "--month", REPORT_MONTH, "--notebooks", str(books), *extra,
            cwd=tmp_path, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert stderr in done.stderr
        return done.stdout

    assert _executed(report(), every) == every
    assert _executed(report(), every) == set()
    assert _executed(report("--no-cache"), every) == every
    assert _executed(report(env={"TXKIT_REPORT_CACHE": "0"}), every) == every
    # A damaged cache costs an execution and a warning, never the report.
    (tmp_path / "data/cache/notebooks/global.db").write_bytes(b"not a database" * 100)
    damaged = "txkit: WARNING: execution cache data/cache/notebooks not read ("
    assert _executed(report(stderr=damaged), every) == every
    shutil.rmtree(tmp_path / "data/cache")
    assert _executed(report(), every) == every
    signers = make_signers(tmp_path, ["Ada Obi", "Eve Ito"])  # allowed_signers in the project
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        signed = invoke_cli(
            "report", "sign", "--month", REPORT_MONTH, "--role", role, "--key",
            str(signers.key(name)), cwd=tmp_path,
        )  # fmt: skip
        assert signed.returncode == 0, signed.stderr
    # A revision of a signed month is executed afresh: nothing reused across revisions.
    reopened = report("--reopen", "a late refund", "--key", str(signers.key("Ada Obi")))
    assert _executed(reopened, every) == every
