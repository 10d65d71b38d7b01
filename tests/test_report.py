"""``txkit report`` end to end on the embedded sandbox, as an analyst runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    env["TXKIT_PROGRESS"] = "0"
    return subprocess.run(
        [sys.executable, "-m", "txkit.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def summary_lines(executed: Path) -> list[str]:
    from txkit.report import _summary_of

    return _summary_of(json.loads(executed.read_text()))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("report")


def test_report_renders_every_notebook_with_its_summary(workdir: Path) -> None:
    done = run("report", "--month", "2026-10", "--notebooks", str(NOTEBOOKS), cwd=workdir)
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


def test_rerun_of_a_closed_month_sends_no_request(workdir: Path) -> None:
    first = run("report", "--month", "2026-05", "--notebooks", str(NOTEBOOKS), cwd=workdir)
    assert first.returncode == 0, first.stderr
    again = run("report", "--month", "2026-05", "--notebooks", str(NOTEBOOKS), cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert "store up to date, no request sent" in again.stdout
    assert "source:" not in again.stdout  # no sandbox, no service: nothing was contacted


def test_a_failing_notebook_fails_the_command_and_keeps_the_last_report(workdir: Path) -> None:
    books = workdir / "broken-notebooks"
    books.mkdir()
    shutil.copy(NOTEBOOKS / "01_explore.ipynb", books)
    good = run(
        "report", "--month", "2026-05", "--notebooks", str(books), "--out", "r2", cwd=workdir
    )
    assert good.returncode == 0, good.stderr
    before = (workdir / "r2/2026-05/index.html").read_text()
    nb = json.loads((books / "01_explore.ipynb").read_text())
    nb["cells"].append(
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": ["raise RuntimeError('planted failure')"],
        }
    )
    (books / "02_broken.ipynb").write_text(json.dumps(nb))
    bad = run("report", "--month", "2026-05", "--notebooks", str(books), "--out", "r2", cwd=workdir)
    assert bad.returncode == 1
    assert "02_broken.ipynb failed at cell" in bad.stderr and "planted failure" in bad.stderr
    assert (workdir / "r2/2026-05/index.html").read_text() == before
    assert not (workdir / "r2/2026-05/02_broken.html").exists()
    assert not [p for p in (workdir / "r2").iterdir() if p.name.startswith(".")]


def test_bad_month_is_a_clear_error(workdir: Path) -> None:
    done = run("report", "--month", "2026-13", cwd=workdir)
    assert done.returncode == 2
    assert "must be YYYY-MM" in done.stderr


def test_a_half_synced_month_is_completed_by_its_report(tmp_path: Path) -> None:
    """The issue's scenario through the CLI: September 1-10, then October, then the report."""
    import txkit
    from txkit.defaults import SANDBOX
    from txkit.sandbox import Sandbox
    from txkit.store import read_manifests

    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(NOTEBOOKS / "01_explore.ipynb", books)
    done = run("sync", "--start", "2026-09-01", "--end", "2026-09-10", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "data/store/sandbox" in done.stdout  # the sandbox's own store
    assert run("sync", "--start", "2026-10-01", "--end", "2026-10-31", cwd=tmp_path).returncode == 0
    status = run("sync", "--status", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "2026-09: partial (20 day(s) never fetched)" in status.stdout
    assert "source the embedded sandbox" in status.stdout
    report = run("report", "--month", "2026-09", "--notebooks", str(books), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "2026-09: gap" in report.stdout
    manifest = read_manifests(tmp_path / "data/store/sandbox")["2026-09"]
    with (
        Sandbox(seed=SANDBOX.seed, records=SANDBOX.records) as box,
        txkit.Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        september = txkit.load_transactions(client, start="2026-09-01", end="2026-09-30")
    assert manifest.complete and manifest.rows == september.height
    page = (tmp_path / "reports/2026-09/01_explore.html").read_text()
    assert f"{september.height:,} transactions in the month" in page
    assert "its windows cover it whole" in page
    status = run("sync", "--status", cwd=tmp_path)
    assert f"2026-09: complete; {september.height:,} rows" in status.stdout
