"""The sign-off's controls with real reports and real processes: a signature and a report of
one month exclude each other, a report's register events are committed with its pack only (a
failed or killed report leaves none), ``--as-of`` is read-only. Small notebooks: the register
and the lock are the point, not the pages (docs/register.md). The report that holds the month
or is killed is a process of its own; the commands before and after it run in this one."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import polars as pl
import pytest

from tests.factories import (
    Signers,
    cli_env,
    invoke_cli_all_stderr,
    make_signers,
    small_notebooks,
)
from txkit.register import read_events
from txkit.register._lock import month_state, pack_files

pytestmark = [pytest.mark.slow, pytest.mark.report]

MONTH = "2025-12"


def _books(folder: Path, cell: str) -> Path:
    """The small notebook with ``cell`` run before its summary (a sleep, an error)."""
    small_notebooks(folder)
    path = folder / "01_small.ipynb"
    book = nbformat.read(path, as_version=4)
    book.cells.insert(2, nbformat.v4.new_code_cell(cell))
    nbformat.write(book, path)
    return folder


def _report(workdir: Path, books: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return invoke_cli_all_stderr("report", "--month", MONTH, "--store", str(workdir / "store"),
                                 "--notebooks", str(books), "--no-progress", *extra,
                                 cwd=workdir)  # fmt: skip


def _start(workdir: Path, books: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "txkit.cli", "report", "--month", MONTH, "--store",
            str(workdir / "store"), "--notebooks", str(books), "--no-progress"]  # fmt: skip
    return subprocess.Popen(argv, cwd=workdir, env=cli_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def _wait_for_lock(workdir: Path, proc: subprocess.Popen[str]) -> None:
    lock = workdir / "store" / "_register" / "_txkit_locks" / f"{MONTH}.lock"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if lock.is_file() and "a report of" in lock.read_text():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("the report never took the month's lock")


def _runs(workdir: Path) -> int:
    events, _ = read_events(workdir / "store")
    return events.filter((pl.col("event") == "reported") & (pl.col("month") == MONTH)).height


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


_KEYS: dict[Path, Signers] = {}


def _key(workdir: Path, name: str) -> Path:
    """``name``'s key (ssh-keygen); the project's allowed_signers (in ``workdir``) lists Ada
    Obi and Eve Ito."""
    if workdir not in _KEYS:
        _KEYS[workdir] = make_signers(workdir, ["Ada Obi", "Eve Ito"])
    return _KEYS[workdir].key(name)


def _sign(workdir: Path, role: str, name: str, login: str) -> subprocess.CompletedProcess[str]:
    return invoke_cli_all_stderr("report", "sign", "--month", MONTH, "--role", role, "--key",
                                 str(_key(workdir, name)), "--store", str(workdir / "store"),
                                 cwd=workdir, env={"LOGNAME": login})  # fmt: skip


def test_a_signature_and_a_report_of_the_month_exclude_each_other(tmp_path: Path) -> None:
    quick = small_notebooks(tmp_path / "books")
    slow = _books(tmp_path / "slow", "import time\ntime.sleep(6)")
    first = _report(tmp_path, quick)
    assert first.returncode == 0, first.stderr
    assert _sign(tmp_path, "preparer", "Ada Obi", "ada").returncode == 0
    signed_pack = _files(tmp_path / "reports" / MONTH)
    # A rerun (a preparer alone does not lock the month) holds the month while it runs: the
    # reviewer's signature meanwhile is refused, in one line naming the report.
    proc = _start(tmp_path, slow)
    _wait_for_lock(tmp_path, proc)
    refused = _sign(tmp_path, "reviewer", "Eve Ito", "eve")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"a report of {MONTH}" in refused.stderr and "holds" in refused.stderr
    # A signature from where the file lock does not reach (another machine, object storage):
    # the report checks the register again before its final swap and records nothing.
    probe = (
        "import contextlib, sys\n"
        "import txkit.register._sign as s\n"
        "s.month_lock = lambda *a, **k: contextlib.nullcontext()\n"
        f"s.sign_report('reports', '{MONTH}', role='reviewer', "
        f"key={str(_key(tmp_path, 'Eve Ito'))!r}, store='store')\n"
    )
    elsewhere = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                               text=True, env=cli_env({"LOGNAME": "eve"}))  # fmt: skip
    assert elsewhere.returncode == 0, elsewhere.stderr
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err
    assert f"{MONTH} is locked" in err and "--reopen" in err
    # The pack is the one signed, with the reviewer's signature added to its signatures/.
    now = _files(tmp_path / "reports" / MONTH)
    assert now.keys() - signed_pack.keys() == {"signatures/reviewer.txt", "signatures/reviewer.sig"}
    assert all(
        now[n] == data
        for n, data in signed_pack.items()
        if n not in ("report.json", "index.html", "00_close_summary.html", "pack.pdf")
    )
    # pack.pdf: its cover made again with the reviewer's signature, its body the one signed.
    pack = tmp_path / "reports" / MONTH / "pack.pdf"
    assert now["pack.pdf"] != signed_pack["pack.pdf"]
    assert (
        pack_files(pack.parent)["pack.pdf"]
        == month_state(read_events(tmp_path / "store")[0], MONTH).newest.files["pack.pdf"]
    )
    assert _runs(tmp_path) == 1  # the refused report left no event
    verified = invoke_cli_all_stderr("report", "verify", "--month", MONTH, "--store",
                                     str(tmp_path / "store"), cwd=tmp_path)  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "locked, signed by preparer Ada Obi (key SHA256:" in verified.stdout


def test_a_failed_or_killed_report_leaves_no_register_event(tmp_path: Path) -> None:
    quick = small_notebooks(tmp_path / "books")
    first = _report(tmp_path, quick)
    assert first.returncode == 0, first.stderr
    before = read_events(tmp_path / "store")[0]
    failing = _books(tmp_path / "failing", "raise RuntimeError('a cell fails')")
    failed = _report(tmp_path, failing)
    assert failed.returncode != 0 and "NotebookFailedError" in failed.stderr
    slow = _books(tmp_path / "slow", "import time\ntime.sleep(30)")
    proc = _start(tmp_path, slow)
    _wait_for_lock(tmp_path, proc)
    time.sleep(2)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    after = read_events(tmp_path / "store")[0]
    assert after.height == before.height, "a report that did not finish recorded events"


def test_as_of_is_read_only(tmp_path: Path) -> None:
    quick = small_notebooks(tmp_path / "books")
    first = _report(tmp_path, quick)
    assert first.returncode == 0, first.stderr
    _, version = read_events(tmp_path / "store")
    again = _report(tmp_path, quick, "--as-of", "0", "--out", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr
    assert read_events(tmp_path / "store")[1] == version  # no event
    page = (tmp_path / "again" / MONTH / "index.html").read_text()
    assert "read-only" in page and "Not signed" not in page
    # Into the month's own pack it is refused: it would replace what the register recorded.
    over = _report(tmp_path, quick, "--as-of", "0")
    assert over.returncode != 0 and over.stderr.count("\n") == 1
    assert "--as-of" in over.stderr and "--out" in over.stderr
