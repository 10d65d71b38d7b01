"""A signed pack stays signed (issue 47, Why 3 and 5), with real reports and real keys: a
register that lost a signed event (a file deleted then repaired, commits removed) or another
store's register is refused in one line naming what is missing, and the signed pack is not
written over; a report's pack and its register commit are one step (a failure between them
leaves the previous pack and no event). Small notebooks: the controls are the point."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.factories import (
    cli_env,
    invoke_cli,
    invoke_cli_all_stderr,
    make_signers,
    run_cli,
    small_notebooks,
)
from txkit.register import read_events

pytestmark = [pytest.mark.slow, pytest.mark.report]

MONTH = "2025-12"


def _report(workdir: Path, *extra: str, store: str = "store") -> subprocess.CompletedProcess[str]:
    return invoke_cli_all_stderr("report", "--month", MONTH, "--store", str(workdir / store),
                                 "--notebooks", str(workdir / "books"), "--no-progress", *extra,
                                 cwd=workdir)  # fmt: skip


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _signed(workdir: Path) -> Path:
    """MONTH reported and signed by Ada Obi then Eve Ito (keys from ssh-keygen); its pack."""
    small_notebooks(workdir / "books")
    first = _report(workdir)
    assert first.returncode == 0, first.stderr
    keys = make_signers(workdir, ["Ada Obi", "Eve Ito"])  # workdir/allowed_signers: the default
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        done = invoke_cli("report", "sign", "--month", MONTH, "--role", role, "--key",
                          str(keys.key(name)), "--store", str(workdir / "store"),
                          cwd=workdir)  # fmt: skip
        assert done.returncode == 0, done.stderr
    return workdir / "reports" / MONTH


def _verify(workdir: Path, store: str = "store") -> subprocess.CompletedProcess[str]:
    return invoke_cli("report", "verify", "--month", MONTH, "--store", str(workdir / store),
                      cwd=workdir)  # fmt: skip


def _refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_a_register_that_lost_a_signed_event_is_refused_and_the_pack_kept(tmp_path: Path) -> None:
    """Why 3: delete the register file holding the reviewer's `signed` event, repair, rerun:
    the signed pack was overwritten and verify said "not signed"."""
    pack = _signed(tmp_path)
    signed = _files(pack)
    register = tmp_path / "store" / "_register"
    for part in register.glob("part-*.parquet"):
        events = pl.read_parquet(part)
        if ((events["event"] == "signed") & (events["role"] == "reviewer")).any():
            part.unlink()
    repaired = invoke_cli("exceptions", "repair", "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    rerun = _report(tmp_path)
    _refused(rerun, "lacks signatures of 2025-12", "reviewer Eve Ito (given at register version")
    assert _files(pack) == signed
    verified = _verify(tmp_path)
    assert verified.returncode == 1 and "DOES NOT VERIFY" in verified.stdout
    assert "signatures/reviewer.sig" in verified.stdout


def test_removed_register_commits_are_refused(tmp_path: Path) -> None:
    """Why 3: deleting the register's last commits (both signatures) did the same."""
    pack = _signed(tmp_path)
    signed = _files(pack)
    log = sorted((tmp_path / "store" / "_register" / "_delta_log").glob("*.json"))
    for commit in log[-2:]:
        commit.unlink()
    rerun = _report(tmp_path)
    _refused(rerun, "lacks signatures", "preparer Ada Obi", "reviewer Eve Ito")
    assert _files(pack) == signed


def test_another_store_or_data_folder_never_writes_over_a_signed_pack(tmp_path: Path) -> None:
    """Why 3: a report with another data folder overwrote the signed folder, and verify
    against that store said "verified (not signed)"."""
    pack = _signed(tmp_path)
    signed = _files(pack)
    other = _report(tmp_path, store="other")
    _refused(other, "lacks signatures", "another store's register")
    assert _files(pack) == signed
    verified = _verify(tmp_path, store="other")
    assert verified.returncode == 1, verified.stdout
    assert "DOES NOT VERIFY" in verified.stdout and "the register lacks it" in verified.stdout
    # TXKIT_DATA_DIR (its default store) with the project's --out: refused the same way.
    moved = run_cli("report", "--month", MONTH, "--notebooks", str(tmp_path / "books"),
                    "--no-progress", cwd=tmp_path,
                    env={"TXKIT_DATA_DIR": str(tmp_path / "elsewhere")})  # fmt: skip
    assert moved.returncode == 1 and "lacks signatures" in moved.stderr, moved.stderr
    assert _files(pack) == signed
    # --as-of into it: refused too.
    again = _report(tmp_path, "--as-of", "0", store="other")
    assert again.returncode != 0 and "lacks signatures" in again.stderr
    # Elsewhere is fine.
    elsewhere = _report(tmp_path, "--out", str(tmp_path / "drafts"), store="other")
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert _verify(tmp_path).returncode == 0


def test_a_failed_register_commit_leaves_the_previous_pack_and_no_event(tmp_path: Path) -> None:
    """Why 5: the pack was swapped in, then the register commit failed (a broken pipe): the
    previous pack was gone and the new one could not be signed."""
    small_notebooks(tmp_path / "books")
    first = _report(tmp_path)
    assert first.returncode == 0, first.stderr
    pack = tmp_path / "reports" / MONTH
    before, events = _files(pack), read_events(tmp_path / "store")[0].height
    probe = (
        "import sys\n"
        "import txkit.report._publish as p\n"
        "def broken(*a, **k):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "p.commit_report = broken\n"
        "from txkit.cli import main\n"
        f"sys.exit(main(['report', '--month', '{MONTH}', '--store', 'store', '--notebooks', "
        "'books', '--no-progress']))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, env=cli_env(), timeout=300)  # fmt: skip
    assert done.returncode != 0, done.stdout + done.stderr
    assert _files(pack) == before
    assert read_events(tmp_path / "store")[0].height == events
    assert not list((tmp_path / "reports").glob(f".{MONTH}*"))
    assert _verify(tmp_path).returncode == 0
    # Killed between the swap and the commit: the next report in the folder puts the
    # previous pack back (its own run then goes on as usual).
    killed = subprocess.run([sys.executable, "-c", probe.replace(
        "raise BrokenPipeError(32, 'Broken pipe')", "import os, signal; os.kill(os.getpid(), "
        "signal.SIGKILL)")], cwd=tmp_path, capture_output=True, text=True, env=cli_env(),
        timeout=300)  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    assert (pack / ".uncommitted").is_file() and _verify(tmp_path).returncode == 1
    from txkit.report import clean_leftovers

    assert clean_leftovers(tmp_path / "reports") == [
        f"restored the previous report {MONTH}: a killed report had put its pack in place "
        "without recording it"
    ]
    assert _files(pack) == before and _verify(tmp_path).returncode == 0
    # A real pipe closed early (`| head -1`): the pack and its event both, or neither.
    shell = subprocess.run(
        f"{sys.executable} -m txkit.cli report --month {MONTH} --store store --notebooks books "
        "--no-progress | head -1",
        shell=True, cwd=tmp_path, capture_output=True, text=True, env=cli_env(), timeout=300,
    )  # fmt: skip
    assert shell.stdout.count("\n") <= 1
    assert _verify(tmp_path).returncode == 0, _verify(tmp_path).stdout


def test_a_signed_pack_is_named_in_its_report_json(tmp_path: Path) -> None:
    """The signed folder carries its signatures: report.json names each signer's key."""
    pack = _signed(tmp_path)
    doc = json.loads((pack / "report.json").read_text())
    assert [s["name"] for s in doc["signatures"]] == ["Ada Obi", "Eve Ito"]
    assert all(s["key"].startswith("SHA256:") for s in doc["signatures"])
    assert sorted(p.name for p in (pack / "signatures").iterdir()) == [
        "preparer.sig", "preparer.txt", "reviewer.sig", "reviewer.txt"
    ]  # fmt: skip
    # Why 8(4): the close summary's sign-off lines carry the signatures (outside the digest).
    close = (pack / "00_close_summary.html").read_text()
    assert '<td>Prepared by</td><td class="line">Ada Obi (key SHA256:' in close
    assert '<td>Reviewed by</td><td class="line">Eve Ito (key SHA256:' in close
    assert _verify(tmp_path).returncode == 0
    (pack / "00_close_summary.html").write_text(close.replace("Eve Ito (key", "Kim Lee (key"))
    forged = _verify(tmp_path)
    assert forged.returncode == 1
    assert "00_close_summary.html's sign-off is not the register's signatures" in forged.stdout
    (pack / "00_close_summary.html").write_text(close)
    # A copy of the pack elsewhere (with its allowed_signers) is still a signed pack.
    copy = tmp_path / "copy" / MONTH
    shutil.copytree(pack, copy)
    from txkit.register import own_signatures

    found = own_signatures(copy, tmp_path / "allowed_signers")
    assert {(f["role"], f["name"]) for f in found} == {("preparer", "Ada Obi"),
                                                        ("reviewer", "Eve Ito")}  # fmt: skip
    (copy / "index.html").write_text("changed")
    assert own_signatures(copy, tmp_path / "allowed_signers") == []


def test_a_reopening_is_signed_by_who_reopens(tmp_path: Path) -> None:
    """Only --reopen writes beside a signed pack, and it records who reopened (their key's
    signature) and why."""
    pack = _signed(tmp_path)
    signed = _files(pack)
    unsigned = _report(tmp_path, "--reopen", "late bank statement")
    assert unsigned.returncode == 2 and "--reopen needs --key PATH" in unsigned.stderr
    stranger = make_signers(tmp_path / "strangers", [], ("Mallory",)).key("Mallory")
    refused = _report(tmp_path, "--reopen", "late bank statement", "--key", str(stranger))
    _refused(refused, "is not in the allowed signers file")
    eve = tmp_path / "keys" / "id_1"  # Eve Ito's (make_signers: in order)
    done = _report(tmp_path, "--reopen", "late bank statement", "--key", str(eve))
    assert done.returncode == 0, done.stderr
    assert _files(pack) == signed
    verified = _verify(tmp_path)
    assert verified.returncode == 0, verified.stdout
    assert "revision 2 (2025-12.r2), reopened by Eve Ito (late bank statement)" in verified.stdout
