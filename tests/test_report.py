"""``txkit report`` end to end on the embedded sandbox, as an analyst runs it.

Tests that only read a report read the run's one report (the ``session_report`` fixture of the
root ``conftest.py``, a real ``txkit`` process whose stderr holds the kernels' output too);
tests that change a report, or need another month or a killed one, run their own in their own
folder, with only the notebooks they need, in-process unless a process is the point.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.factories import SessionReport, cli_env, invoke_cli, run_cli, small_notebooks

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (for the killed report, which needs one)."""
    return run_cli(*args, cwd=cwd, timeout=600)


def some_notebooks(folder: Path, *names: str) -> Path:
    """A notebooks folder holding copies of the named curated notebooks."""
    folder.mkdir()
    for name in names:
        shutil.copy(NOTEBOOKS / f"{name}.ipynb", folder)
    return folder


def summary_lines(executed: Path) -> list[str]:
    from txkit.report._html import summary_of

    return summary_of(json.loads(executed.read_text()))


def test_report_renders_every_notebook_with_its_summary(session_report: SessionReport) -> None:
    done, workdir = session_report, session_report.workdir
    assert done.returncode == 0, done.stderr
    assert "embedded sandbox" in done.stdout
    index = workdir / "reports/2026-10/index.html"
    assert done.stdout.strip().endswith(f"index: {index}")
    page = index.read_text()
    assert "Customer data: masked" in page
    names = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    for name in names:
        html = workdir / f"reports/2026-10/{name}.html"
        assert html.exists() and f'href="{name}.html"' in page
        lines = summary_lines(workdir / f"reports/2026-10/{name}.ipynb")
        assert lines, f"{name} has no 'What to look at' summary"
        for line in lines:
            escaped = line.replace("'", "&#x27;").replace('"', "&quot;")
            assert escaped in page or line in page
        text = html.read_text()
        assert 'src="http' not in text  # self-contained
        assert "No description has been provided" not in text
        assert text.count('alt="Chart: ') == text.count("<img ")  # every chart described
    from txkit.store import read_manifests

    manifests = read_manifests(workdir / "data/store/sandbox")  # the sandbox's own store
    manifest = manifests["2026-10"]
    assert manifest.complete and manifest.rows > 0
    assert "the embedded sandbox" in manifest.source
    assert f"at table version {manifest.table_version}" in page
    # The month before was synced too: the balance checks use it as history, so every
    # balance-after value of the month is checked.
    assert "2026-09" in manifests
    balances = summary_lines(workdir / "reports/2026-10/04_balance_checks.ipynb")
    assert " 0 unverifiable" in balances[0], balances
    # Kernels ran over Unix sockets in a private directory: no TCP warning, nothing left over.
    assert "without encryption" not in done.stderr
    assert "Alternative text is missing" not in done.stderr


@pytest.mark.report
def test_rerun_of_a_closed_month_sends_no_request(tmp_path: Path) -> None:
    # The sync is the point, not the pages: one small notebook. 2025-11, the sandbox's first
    # month, syncs two months where 2026-05 synced eight (7 s of CPU for the pair).
    books = small_notebooks(tmp_path / "books")
    first = invoke_cli("report", "--month", "2025-11", "--notebooks", str(books), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "source: the embedded sandbox" in first.stdout  # the first one did fetch
    assert "sync: 2025-11: full" in first.stdout
    again = invoke_cli("report", "--month", "2025-11", "--notebooks", str(books), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "store up to date, no request sent" in again.stdout
    assert "source:" not in again.stdout  # no sandbox, no service: nothing was contacted
    # ... but it says which source the pages show (the store's, as the store records it).
    assert "Source: the embedded sandbox (synthetic data" in again.stdout
    assert "store: data/store/sandbox, table version" in again.stdout


@pytest.mark.report
def test_a_failing_notebook_fails_the_command_and_keeps_the_last_report(
    session_report: SessionReport, tmp_path: Path
) -> None:
    """Over a copy of the shared report's store (nothing to sync), with small notebooks: the
    failure and what it leaves are the point, not the pages."""
    workdir = tmp_path
    session_report.copy_data(workdir)
    books = small_notebooks(workdir / "broken-notebooks")
    good = invoke_cli(
        "report", "--month", "2026-10", "--notebooks", str(books), "--out", "r2", cwd=workdir
    )
    assert good.returncode == 0, good.stderr
    assert "sync: store up to date, no request sent" in good.stdout
    before = (workdir / "r2/2026-10/index.html").read_text()
    nb = json.loads((books / "01_small.ipynb").read_text())
    nb["cells"].append(
        {
            "cell_type": "code",
            "id": "planted-failure",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": ["raise RuntimeError('planted failure')"],
        }
    )
    (books / "02_broken.ipynb").write_text(json.dumps(nb))
    bad = invoke_cli(
        "report", "--month", "2026-10", "--notebooks", str(books), "--out", "r2", cwd=workdir
    )
    assert bad.returncode == 1
    assert "02_broken.ipynb failed at cell" in bad.stderr and "planted failure" in bad.stderr
    assert (workdir / "r2/2026-10/index.html").read_text() == before
    assert not (workdir / "r2/2026-10/02_broken.html").exists()
    assert not [p for p in (workdir / "r2").iterdir() if p.name.startswith(".")]


def test_bad_month_is_a_clear_error(tmp_path: Path) -> None:
    done = invoke_cli("report", "--month", "2026-13", cwd=tmp_path)
    assert done.returncode == 2
    assert "must be YYYY-MM" in done.stderr


def _text_of(page: str) -> str:
    import html as html_module
    import re

    page = re.sub(r"<style.*?</style>|<script.*?</script>", "", page, flags=re.S)
    return html_module.unescape(re.sub(r"<[^>]+>", " ", page))


def test_pages_read_like_a_report(session_report: SessionReport) -> None:
    """No code, no polars printout, a title with the month, a way back, print CSS."""
    import re

    folder = session_report.folder
    # The notebooks' pages; the close summary (00, no notebook) is checked on its own below.
    pages = sorted(p for p in folder.glob("[0-9][0-9]_*.html") if p.stem != "00_close_summary")
    assert [p.stem for p in pages] == sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    summary = (folder / "00_close_summary.html").read_text()
    assert "2026-10</title>" in summary and "@page" in summary and 'href="index.html"' in summary
    for page in pages:
        text = page.read_text()
        visible = _text_of(text)
        assert "shape: (" not in visible, page.name
        assert "decimal[38" not in visible and "datetime[ms" not in visible, page.name
        assert "┌" not in visible and '"NGN"' not in visible, page.name
        # No code input: no source of any cell, parameter cells included.
        body = re.sub(r"<style.*?</style>", "", text, flags=re.S)
        assert "jp-CodeMirrorEditor" not in body and "hl-ipython3" not in body, page.name
        assert "display_table" not in body and "txkit.notebook" not in body, page.name
        assert "import " not in visible and "show_pii =" not in visible, page.name
        assert "<title>" in text and "2026-10</title>" in text, page.name
        assert 'href="index.html"' in text and "@media print" in text, page.name
        executed = json.loads(page.with_suffix(".ipynb").read_text())
        for cell in executed["cells"]:
            for output in cell.get("outputs", []):
                # No console printout ("History: ..." lines): a page says things in sentences.
                assert output["output_type"] != "stream", (page.name, output)
                assert "application/vnd.jupyter.widget-view+json" not in output.get("data", {})
    explore = _text_of((folder / "01_explore.html").read_text())
    assert " NGN" in explore and "%" in explore  # money with its currency, rates as percents


def test_downloads_match_the_findings_and_are_linked(session_report: SessionReport) -> None:
    import polars as pl

    from txkit.analysis import (
        DEFAULT_DATE_TOLERANCE,
        balance_breaks,
        not_reported_balances,
        reconcile,
    )
    from txkit.analysis.reconcile import NOT_EXCEPTIONS
    from txkit.notebook import load_history, load_margin, load_month, load_orders

    folder = session_report.folder
    index = (folder / "index.html").read_text()
    store = str(session_report.store)
    days = DEFAULT_DATE_TOLERANCE
    df, _ = load_month("2026-10", source="store", store=store)
    around, _ = load_margin("2026-10", days=days, source="store", store=store)
    orders, _ = load_orders("sandbox", "2026-10", margin_days=days)
    history, _ = load_history("2026-10", source="store", store=store)
    records = df if around is None else pl.concat([df, around], how="diagonal_relaxed")
    matched = reconcile(records, orders, month="2026-10", date_tolerance=days)
    expected = {
        "reconciliation_mismatches": matched.filter(
            ~pl.col("category").cast(pl.String).is_in(NOT_EXCEPTIONS)
        ),
        "balance_breaks": balance_breaks(df, history=history),
        "not_reported_balances": not_reported_balances(df),
    }
    assert expected["reconciliation_mismatches"].height and expected["balance_breaks"].height
    pages = {
        "reconciliation_mismatches": "02_reconciliation.html",
        "balance_breaks": "04_balance_checks.html",
        "flagged_payments": "03_underpayments.html",
        "not_reported_balances": "04_balance_checks.html",
    }
    for name, page in pages.items():
        csv = pl.read_csv(folder / f"{name}.csv", infer_schema=False)
        csv = csv.filter(pl.col("open_status") != "not listed again")
        assert (folder / f"{name}.xlsx").stat().st_size > 0
        assert f'href="{name}.csv"' in index and f'href="{name}.xlsx"' in index
        page_text = (folder / page).read_text()
        assert f'href="{name}.csv"' in page_text and f'href="{name}.xlsx"' in page_text
        assert csv["key"].n_unique() == csv.height
        assert set(csv["open_status"].unique()) <= {"new", "still open", "not listed again"}
        if name in expected:
            assert csv.height == expected[name].height, name
    mismatches = pl.read_csv(folder / "reconciliation_mismatches.csv", infer_schema=False)
    truth = expected["reconciliation_mismatches"]
    assert sorted(mismatches["key"]) == sorted(
        f"{r}:{c}" for r, c in zip(truth["reference"], truth["category"], strict=True)
    )
    flagged = pl.read_csv(folder / "flagged_payments.csv", infer_schema=False)
    assert all("***@" in e for e in flagged["customerEmail"].drop_nulls())  # masked


def test_index_has_headlines_and_the_change_against_last_month(
    session_report: SessionReport,
) -> None:
    text = _text_of((session_report.folder / "index.html").read_text())
    for currency in ("NGN", "USD", "GHS", "KES", "USDT"):  # every currency, none dropped
        assert f"Money in, {currency}" in text, currency
    assert "change against last month" in text
    assert "Success rate" in text and " pt" in text
    assert "ok" in text and "look at this" in text
    assert "Reconciliation mismatches" in text and "references" in text
    assert "Source: the embedded sandbox" in text


@pytest.mark.report
def test_open_items_across_two_months(session_report: SessionReport, tmp_path: Path) -> None:
    """September's report plants one item that October still has and one that is gone.

    Its own reports of the reconciliation notebook (the one that publishes the mismatches),
    over a copy of the shared report's store (September needs June too, fetched here)."""
    workdir = tmp_path
    shutil.copytree(session_report.workdir / "data", workdir / "data")
    books = some_notebooks(workdir / "books", "02_reconciliation")
    out = workdir / "r-open"
    first = invoke_cli(
        "report", "--month", "2026-09", "--notebooks", str(books), "--out", str(out),
        cwd=workdir,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    october_keys = pl_keys(session_report.folder / "reconciliation_mismatches.csv")
    carried = october_keys[0]
    manifest = out / "2026-09/reconciliation_mismatches.download.json"
    entries = json.loads(manifest.read_text())
    september = entries["open"]
    assert september and carried not in september
    september[carried] = "2026-08"  # still open in October, first seen in August
    september["TXK-PLANTED-GONE:amount_mismatch"] = "2026-07"  # resolved in October
    manifest.write_text(json.dumps(entries))
    second = invoke_cli(
        "report", "--month", "2026-10", "--notebooks", str(books), "--out", str(out),
        cwd=workdir,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    import polars as pl

    csv = pl.read_csv(out / "2026-10/reconciliation_mismatches.csv", infer_schema=False)
    status = dict(zip(csv["key"], csv["open_status"], strict=True))
    first_seen = dict(zip(csv["key"], csv["first_seen"], strict=True))
    assert status[carried] == "still open" and first_seen[carried] == "2026-08"
    assert status["TXK-PLANTED-GONE:amount_mismatch"] == "not listed again"
    assert first_seen["TXK-PLANTED-GONE:amount_mismatch"] == "2026-07"
    assert all(status[k] == "new" for k in october_keys if k != carried)
    resolved = [k for k, s in status.items() if s == "not listed again"]
    assert sorted(resolved) == sorted(k for k in september if k != carried)
    assert pl_keys(out / "2026-10/reconciliation_mismatches.csv") == sorted(
        october_keys + [k for k in september if k != carried]
    )  # the same findings as the shared report's, plus the resolved ones
    opened = len(october_keys)
    text = _text_of((out / "2026-10/index.html").read_text())
    assert (
        f"Reconciliation mismatches: {opened} open ({opened - 1} new, 1 still open); "
        f"{len(resolved)} of last month's not listed again" in text
    )


def pl_keys(path: Path) -> list[str]:
    import polars as pl

    return sorted(pl.read_csv(path, infer_schema=False)["key"].to_list())


@pytest.mark.report
def test_a_half_synced_month_is_completed_by_its_report(tmp_path: Path, sandboxes) -> None:
    """The issue's scenario through the CLI: December 1-10, then January, then the report
    (December, the sandbox's second month: its report syncs three months, not eleven)."""
    import txkit
    from txkit.config import SANDBOX
    from txkit.store import read_manifests

    # A notebook that reads the month and says how many rows it read (as the explore one does,
    # for 1.5 s of CPU less).
    books = small_notebooks(tmp_path / "books", reads_month=True)
    done = invoke_cli("sync", "--start", "2025-12-01", "--end", "2025-12-10", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "data/store/sandbox" in done.stdout  # the sandbox's own store
    done = invoke_cli("sync", "--start", "2026-01-01", "--end", "2026-01-31", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = invoke_cli("sync", "--status", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "2025-12: partial (21 day(s) never fetched)" in status.stdout
    assert "source the embedded sandbox" in status.stdout
    report = invoke_cli("report", "--month", "2025-12", "--notebooks", str(books), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "2025-12: gap" in report.stdout
    manifest = read_manifests(tmp_path / "data/store/sandbox")["2025-12"]
    box = sandboxes.get(seed=SANDBOX.seed, records=SANDBOX.records)  # the same ledger
    with txkit.Client(box.base_url, box.secret_key, env_file=None) as client:
        december = txkit.load_transactions(client, start="2025-12-01", end="2025-12-31")
    assert manifest.complete and manifest.rows == december.height
    page = (tmp_path / "reports/2025-12/01_small.html").read_text()
    assert f"{december.height:,} transactions of 2025-12 from the store" in page
    index = (tmp_path / "reports/2025-12/index.html").read_text()
    assert "the month is complete" in index
    status = invoke_cli("sync", "--status", cwd=tmp_path)
    assert f"2025-12: complete; {december.height:,} rows" in status.stdout


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_leftovers_of_killed_reports_are_cleaned(tmp_path: Path) -> None:
    from txkit.report import clean_leftovers

    out = tmp_path / "reports"
    dead = out / ".2026-09.abc123"
    dead.mkdir(parents=True)
    (dead / ".owner-pid").write_text(str(_dead_pid()))
    (dead / "index.html").write_text("half")
    unowned = out / ".2026-08.zzz"  # killed before it could write its owner
    unowned.mkdir()
    running = out / ".2026-10.def456"
    running.mkdir()
    (running / ".owner-pid").write_text(str(os.getpid()))
    moved = out / ".2026-07.previous"  # killed between the swap's two renames
    moved.mkdir()
    (moved / "index.html").write_text("july")
    (out / "2026-06").mkdir()
    (out / ".2026-06.previous").mkdir()

    lines = clean_leftovers(out)

    assert sorted(p.name for p in out.iterdir()) == [".2026-10.def456", "2026-06", "2026-07"]
    assert (out / "2026-07" / "index.html").read_text() == "july"
    assert len(lines) == 4 and any("restored the previous report of 2026-07" in x for x in lines)
    assert clean_leftovers(out) == []


def _kernel_files(folder: Path) -> list[Path]:
    """Kernel connection files under ``folder``: JSON with the key that signs messages."""
    found = []
    for path in folder.rglob("*.json"):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if '"signature_scheme"' in text and '"key"' in text:
            found.append(path)
    return found


def _wait_for_orphaned_kernels(temp: Path) -> None:
    """The killed report's kernels notice their parent is gone and exit (ipykernel polls);
    any still running after 30 s is stopped (they were started by this test)."""
    import psutil

    deadline = time.monotonic() + 30
    while True:
        kernels = []
        for proc in psutil.process_iter(["cmdline"]):
            with contextlib.suppress(psutil.Error):
                if any(str(temp) in part for part in proc.info["cmdline"] or []):
                    kernels.append(proc)
        if not kernels:
            return
        if time.monotonic() > deadline:
            for proc in kernels:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            return
        time.sleep(0.2)


def _held_notebooks(folder: Path) -> Path:
    """:func:`small_notebooks` whose notebook first waits ``HOLD_SECONDS`` (from its kernel's
    environment, which is the report's; 0 when unset): a report to kill is killed while its
    kernel runs, whatever the machine's speed, and the next run does not wait."""
    import nbformat

    small_notebooks(folder)
    path = folder / "01_small.ipynb"
    book = nbformat.read(path, as_version=4)
    hold = "import os, time\ntime.sleep(float(os.environ.get('HOLD_SECONDS', '0')))"
    book.cells.insert(2, nbformat.v4.new_code_cell(hold))  # after the title and parameters
    nbformat.write(book, path)
    return folder


# Not serial: it kills only its own process (after waiting for the moment), in a temporary
# folder of its own; no port, time, rate or memory is measured.
@pytest.mark.report
def test_a_killed_report_leaves_nothing_behind_after_the_next_run(
    session_report: SessionReport, tmp_path: Path
) -> None:
    """SIGKILL while the notebooks run: the next report removes the staging folder, and the
    kernels' connection files (each with the key that signs the kernel's messages), which the
    killed run could not remove, from the system temporary folder.

    Both runs read a copy of the shared report's store (nothing to sync: the kill is what is
    tested) and one small notebook that waits while the first run is killed (two curated
    notebooks and two syncs cost 13.8 s of CPU, and the kill raced their speed)."""
    import signal

    workdir = tmp_path
    temp = workdir / "tmp"  # the system temporary folder of both runs
    temp.mkdir(exist_ok=True)
    session_report.copy_data(workdir)
    books = _held_notebooks(workdir / "books")
    args = ["report", "--month", "2026-10", "--notebooks", str(books)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "txkit.cli", *args],
        cwd=workdir,
        env=cli_env({"TMPDIR": str(temp), "HOLD_SECONDS": "300"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    reports = workdir / "reports"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (
        list(reports.glob(".2026-10.*")) and _kernel_files(temp)
    ):  # the staging folder and a kernel, which holds: the run is in its notebooks
        assert proc.poll() is None, "the report ended before the kill"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list(reports.glob(".2026-10.*")), "no staging folder was left"
    left = _kernel_files(temp)
    assert left, "the kill came before any kernel started"
    for path in left:  # in the run's private folder, not loose in the temporary folder
        assert path.parent.parent == temp and path.parent.name.startswith("txkit-kernel-")
        assert path.parent.stat().st_mode & 0o077 == 0
    _wait_for_orphaned_kernels(temp)

    again = run_cli(*args, cwd=workdir, env={"TMPDIR": str(temp)}, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "removed the staging folder" in again.stderr
    assert "removed the kernel folder" in again.stderr
    assert not list(reports.glob(".2026-10.*"))
    assert (reports / "2026-10" / "index.html").exists()
    assert _kernel_files(temp) == [] and not list(temp.glob("txkit-kernel-*"))


def test_kernel_folders_of_killed_reports_are_cleaned(tmp_path: Path) -> None:
    """A kernel folder whose report is gone is removed; a running report's, and a folder
    without an owner (not a report's, or one being made), are left alone."""
    from txkit.report import clean_kernel_folders

    live_folder = tmp_path / "txkit-kernel-live"
    live_folder.mkdir()
    (live_folder / ".owner-pid").write_text(str(os.getpid()))
    dead_folder = tmp_path / "txkit-kernel-dead"
    dead_folder.mkdir()
    (dead_folder / ".owner-pid").write_text(str(_dead_pid()))
    (dead_folder / "01_explore.json").write_text("{}")
    unowned_folder = tmp_path / "txkit-kernel-fresh"
    unowned_folder.mkdir()

    lines = clean_kernel_folders(tmp_path)

    assert not dead_folder.exists()
    for kept in (live_folder, unowned_folder):
        assert kept.exists(), kept
    assert len(lines) == 1, lines
    assert all("left by a killed report" in line for line in lines)


@pytest.mark.slow
def test_the_report_syncs_what_every_notebook_reads() -> None:
    """The history months and the days after the month that the notebooks read by default are
    within what ``txkit report`` syncs (else a report would see less than the notebook)."""
    import papermill

    from txkit import config

    for notebook in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        declared = papermill.inspect_notebook(str(notebook))
        if "history_months" in declared:
            months = int(declared["history_months"]["default"])
            assert months <= config.HISTORY_MONTHS, notebook.name
        if "date_tolerance" in declared:
            days = int(declared["date_tolerance"]["default"])
            assert days <= config.MARGIN_DAYS, notebook.name
        if "months" in declared:  # the trends: every month they show is synced
            assert int(declared["months"]["default"]) <= config.TREND_MONTHS, notebook.name


def test_kernel_sockets_fit_a_unix_socket_path_under_a_long_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Unix socket path holds 107 bytes: under a long TMPDIR the kernels' folder moves to
    /tmp, and under a short one it stays there with room for every socket name."""
    import tempfile

    from txkit.report import _kernels as _run

    short = tmp_path / "t"
    short.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    assert _run._kernel_base() == short
    long = tmp_path / ("x" * 60) / ("y" * 40)
    long.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    assert _run._kernel_base() == Path("/tmp")
    folder = Path(tempfile.mkdtemp(prefix=_run._KERNELS, dir=_run._kernel_base()))
    try:
        assert len(str(folder / "k99-99")) <= _run._SOCKET_PATH_MAX
    finally:
        folder.rmdir()


def test_downloads_have_the_pages_permissions(session_report: SessionReport) -> None:
    """Served by a web server or copied to a shared drive, a page whose CSV/XLSX links fail is
    no use: every file of the report has the index's mode (the umask's, not mkstemp's 0600)."""
    folder = session_report.folder
    index_mode = (folder / "index.html").stat().st_mode & 0o777
    modes = {
        path.relative_to(folder).as_posix(): path.stat().st_mode & 0o777
        for path in folder.rglob("*")
        if path.is_file()
    }
    assert any(name.endswith((".csv", ".xlsx")) for name in modes)
    assert {name: mode for name, mode in modes.items() if mode != index_mode} == {}


def test_no_page_holds_the_analysts_local_path(session_report: SessionReport) -> None:
    """Pages are forwarded and printed: the store is named (``data/store/sandbox``), never by
    the analyst's absolute local path."""
    workdir = str(session_report.workdir.resolve())
    pages = sorted(session_report.folder.glob("*.html"))
    assert len(pages) >= 6
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert workdir not in text and str(session_report.workdir) not in text, page.name
    assert "the store data/store/sandbox, table version" in (
        session_report.folder / "01_explore.html"
    ).read_text(encoding="utf-8")


def test_pages_and_downloads_follow_the_figure_rules(session_report: SessionReport) -> None:
    """Issue 23 on the report itself: the index opens with what needs action and keeps its
    notes for the footer; a cut table says so and links its download; the Excel downloads
    read like an analyst's sheet, what is at stake first; each page has one "as run" line;
    the trends show the twelve months the report synced."""
    from decimal import Decimal

    import polars as pl
    from openpyxl import load_workbook

    folder = session_report.folder
    index = (folder / "index.html").read_text()
    assert index.index("What needs action") < index.index('<section><h2><a href="01_explore')
    assert index.index("<footer") < index.index("Customer data: masked")
    explore = (folder / "01_explore.html").read_text()
    assert "left out." in explore and 'href="daily_volume.csv"' in explore
    daily = pl.read_csv(folder / "daily_volume.csv")
    shown = _text_of(explore)
    assert f"of {daily.filter(pl.col('currency') == 'NGN').height:,} rows" in shown
    for page in sorted(folder.glob("[0-9][0-9]_*.html")):
        assert _text_of(page.read_text()).count("As run:") == 1, page.name
    assert "12 of the 12 months" in _text_of((folder / "05_trends.html").read_text())

    sheet = load_workbook(folder / "reconciliation_mismatches.xlsx").active
    header = [c.value for c in sheet[1]]
    assert header[:3] == ["reference", "category", "at_stake"] and header[-1] == "key"
    at_stake = header.index("at_stake") + 1
    cells = [sheet.cell(row, at_stake) for row in range(2, sheet.max_row + 1)]
    assert all(c.number_format == "#,##0.00" for c in cells if c.value is not None)
    open_rows = [
        abs(Decimal(str(c.value)))
        for c in cells
        if c.value is not None
        and sheet.cell(c.row, header.index("open_status") + 1).value != "not listed again"
    ]
    assert open_rows == sorted(open_rows, reverse=True) and open_rows[0] > 0
    assert sheet.freeze_panes == "A2" and sheet.page_setup.orientation == "landscape"
    dated = header.index("export_date") + 1
    assert sheet.column_dimensions[sheet.cell(1, dated).column_letter].width >= 10
