"""Signatures that prove who signed (issue 47, Why 1): keys made by ``ssh-keygen`` in the test
(two allowed, one not), signatures ``ssh-keygen -Y verify`` accepts, a forged one found, the
segregation by key, names that read alike refused, the login deciding nothing."""

from __future__ import annotations

import io
import json
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from tests.factories import allowed_line, invoke_cli, make_signers, run_cli, ssh_key
from txkit.errors import DataFileError, ReportSignedError
from txkit.register import ITEMS_SUFFIX, read_events, record_report
from txkit.register._keys import (
    fold_name,
    load_allowed_signers,
    load_signing_key,
    sshsig_sign,
    sshsig_verify,
)
from txkit.register._lock import month_state
from txkit.register._sign import refuse_signed, sign_report, write_signature_block
from txkit.register._table import append_events, events_frame
from txkit.register._verify import verify_report

MONTH = "2026-10"


def _pack(out: Path, store: Path, *, exist_ok: bool = False) -> Path:
    """A report folder of MONTH as a report leaves it, recorded in the register."""
    folder = out / MONTH
    folder.mkdir(parents=True, exist_ok=exist_ok)
    (folder / "index.html").write_text(
        "<html><!--txkit:signatures--><!--/txkit:signatures--></html>"
    )
    (folder / "balance_breaks.csv").write_text("key\nx\n")
    doc = {"month": MONTH, "store": str(store), "table_version": 7}
    (folder / "report.json").write_text(json.dumps(doc))
    record_report(store, MONTH, folder, table_version=7)
    return folder


def _ssh_verify(
    allowed: Path, principal: str, sig: Path, text: Path
) -> subprocess.CompletedProcess:
    with text.open("rb") as message:
        return subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", principal,
                               "-n", "txkit", "-s", str(sig)], stdin=message,
                              capture_output=True, text=True)  # fmt: skip


def _cli(tmp_path: Path, *args: str, key: Path | None = None, env: dict | None = None):
    extra = ["--key", str(key)] if key is not None else []
    return invoke_cli("report", *args, *extra, "--month", MONTH, "--store",
                      str(tmp_path / "store"), "--out", str(tmp_path / "reports"),
                      "--allowed-signers", str(tmp_path / "allowed_signers"), cwd=tmp_path,
                      env=env)  # fmt: skip


def test_a_pack_signed_with_keys_verifies_with_ssh_keygen(tmp_path: Path) -> None:
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"], ("Mallory",))
    folder = _pack(tmp_path / "reports", tmp_path / "store")
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        done = _cli(tmp_path, "sign", "--role", role, key=keys.key(name))
        assert done.returncode == 0, done.stderr
        assert f"as {role}: {name} (key SHA256:" in done.stdout
    # Each signature on its own, with OpenSSH alone: the text names the pack and its files.
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        sig, text = folder / "signatures" / f"{role}.sig", folder / "signatures" / f"{role}.txt"
        checked = _ssh_verify(keys.allowed, name, sig, text)
        assert checked.returncode == 0, checked.stderr
        assert f'Good "txkit" signature for {name}' in checked.stdout + checked.stderr
        lines = text.read_text().splitlines()
        assert f"role {role}" in lines and f"signer {name}" in lines
        assert any(line.endswith("  balance_breaks.csv") for line in lines)
        assert any(line.startswith("register-version ") for line in lines)
        # Another principal's name for it: refused by OpenSSH too.
        assert _ssh_verify(keys.allowed, "Mallory", sig, text).returncode != 0
    # The reviewer's text names the preparer's signature (its link): the order is signed.
    preparer = month_state(read_events(tmp_path / "store")[0], MONTH).signatures[0]
    assert f"previous {preparer['chain']}" in (folder / "signatures" / "reviewer.txt").read_text()
    verified = _cli(tmp_path, "verify")
    assert verified.returncode == 0, verified.stdout
    assert "locked, signed by preparer Ada Obi (key SHA256:" in verified.stdout
    # A signature ssh-keygen made is read by txkit as well (one format both ways).
    message = tmp_path / "m.txt"
    message.write_text("txkit\n")
    subprocess.run(["ssh-keygen", "-Y", "sign", "-q", "-n", "txkit", "-f",
                    str(keys.key("Eve Ito")), str(message)], check=True)  # fmt: skip
    signers = load_allowed_signers(keys.allowed)
    found = sshsig_verify((tmp_path / "m.txt.sig").read_text(), b"txkit\n", signers)
    assert found.principal == "Eve Ito"


def test_identity_is_the_key_not_the_login_or_a_name(tmp_path: Path) -> None:
    """Why 1: LOGNAME=eve and a typed name decided who signed; now the key does."""
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"], ("Mallory", "Ada's laptop"))
    _pack(tmp_path / "reports", tmp_path / "store")
    eve = {"LOGNAME": "eve", "USER": "eve"}
    assert _cli(tmp_path, "sign", "--role", "preparer", key=keys.key("Ada Obi")).returncode == 0
    # The preparer's own key, whatever the shell says: refused (segregation by key).
    own = _cli(tmp_path, "sign", "--role", "reviewer", key=keys.key("Ada Obi"), env=eve)
    assert own.returncode == 1 and own.stderr.count("\n") == 1, own.stderr
    assert "another person than its preparer (the same key (SHA256:" in own.stderr
    # A key allowed_signers does not list (Mallory's; Ada's second key): refused.
    for name in ("Mallory", "Ada's laptop"):
        stranger = _cli(tmp_path, "sign", "--role", "reviewer", key=keys.key(name), env=eve)
        assert stranger.returncode == 1, stranger.stderr
        assert "is not in the allowed signers file" in stranger.stderr
    # --name no longer exists: the name is allowed_signers' principal.
    named = _cli(tmp_path, "sign", "--role", "reviewer", "--name", "Eve Ito", env=eve)
    assert named.returncode == 2
    # Ada's second key listed under her own name: still Ada, refused as reviewer.
    keys.allowed.write_text(
        keys.allowed.read_text() + allowed_line("Ada Obi", keys.key("Ada's laptop"))
    )
    second = _cli(tmp_path, "sign", "--role", "reviewer", key=keys.key("Ada's laptop"))
    assert second.returncode == 1 and "the same name (Ada Obi)" in second.stderr
    assert not month_state(read_events(tmp_path / "store")[0], MONTH).locked
    done = _cli(tmp_path, "sign", "--role", "reviewer", key=keys.key("Eve Ito"), env=eve)
    assert done.returncode == 0, done.stderr
    assert month_state(read_events(tmp_path / "store")[0], MONTH).locked


@pytest.mark.parametrize(
    "look_alike",
    [
        "\u0410da Obi",
        "\uff21\uff44\uff41 \uff2f\uff42\uff49",
        "Ada\u034f Obi",
        "Ada\u3164Obi",
        "ada  obi",
        "Ada\u200bObi",
    ],
)
def test_names_that_read_alike_are_one_name_or_refused(tmp_path: Path, look_alike: str) -> None:
    """Cyrillic A, full width, U+034F, U+3164, case and spaces: the pack showed "Ada Obi"
    twice for two keys. allowed_signers refuses a second principal that reads as another."""
    ada, other = ssh_key(tmp_path, "ada"), ssh_key(tmp_path, "other")
    path = tmp_path / "allowed_signers"
    path.write_text(allowed_line("Ada Obi", ada) + allowed_line(look_alike, other))
    with pytest.raises(DataFileError, match=r"allowed_signers, line 2: "):
        load_allowed_signers(path)
    assert (
        fold_name("\uff21\uff44\uff41 \uff2f\uff42\uff49") == fold_name("\u0410da Obi") == "ada obi"
    )


def test_allowed_signers_is_read_as_openssh_writes_it(tmp_path: Path) -> None:
    ada, eve = ssh_key(tmp_path, "ada"), ssh_key(tmp_path, "eve")
    path = tmp_path / "allowed_signers"
    eve_pub = (tmp_path / f"{eve.name}.pub").read_text().split()
    path.write_text(
        "# who signs the close\n\n"
        + allowed_line("Ada Obi", ada)
        + f'eve@example.com namespaces="git" {eve_pub[0]} {eve_pub[1]}\n'  # git's, not ours
    )
    assert [s.principal for s in load_allowed_signers(path)] == ["Ada Obi"]
    for line, problem in (
        (f"* {eve_pub[0]} {eve_pub[1]}", "is a pattern"),
        (f'"Kim" cert-authority {eve_pub[0]} {eve_pub[1]}', "cert-authority"),
        (f'"Kim" valid-after="20260101" {eve_pub[0]} {eve_pub[1]}', "valid-after"),
        ('"Kim" ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ', "ssh-rsa key"),
        (f'"Kim" {eve_pub[0]} bm90IGEga2V5', "not base64 of an ssh-ed25519"),
        (f'"Kim {eve_pub[0]} {eve_pub[1]}', "quote is not closed"),
        (allowed_line("Kim Lee", ada).strip(), "one key is one person"),
    ):
        path.write_text(allowed_line("Ada Obi", ada) + line + "\n")
        with pytest.raises(DataFileError, match=problem) as caught:
            load_allowed_signers(path)
        assert "line 2" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(DataFileError, match="not found"):
        load_allowed_signers(tmp_path / "nowhere")


def test_an_encrypted_key_takes_its_passphrase_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = ssh_key(tmp_path, "ada", passphrase="correct horse")
    monkeypatch.delenv("TXKIT_KEY_PASSPHRASE", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO())  # no person at a terminal
    with pytest.raises(ValueError, match="is encrypted: set TXKIT_KEY_PASSPHRASE"):
        load_signing_key(key)
    monkeypatch.setenv("TXKIT_KEY_PASSPHRASE", "wrong")
    with pytest.raises(ValueError, match="the passphrase does not open it"):
        load_signing_key(key)
    monkeypatch.setenv("TXKIT_KEY_PASSPHRASE", "correct horse")
    assert load_signing_key(key) is not None
    with pytest.raises(ValueError, match="is a public key"):
        load_signing_key(tmp_path / f"{key.name}.pub")
    rsa = tmp_path / "rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(rsa)],
                   check=True)  # fmt: skip
    with pytest.raises(ValueError, match="txkit signs with ed25519 keys"):
        load_signing_key(rsa)


def test_a_forged_signature_does_not_verify(tmp_path: Path) -> None:
    """A signature in the register or the pack made by a key not listed, a text changed after
    signing, a pack's .sig replaced: each named by verify."""
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"], ("Mallory",))
    store = tmp_path / "store"
    folder = _pack(tmp_path / "reports", store)
    sign_report(tmp_path / "reports", MONTH, role="preparer", key=keys.key("Ada Obi"),
                store=store, allowed_signers=keys.allowed)  # fmt: skip
    sigs = folder / "signatures"
    pristine = {p.name: p.read_bytes() for p in sigs.iterdir()}

    def verify() -> str:
        lines, whole = verify_report(tmp_path / "reports", MONTH, store=store,
                                     allowed_signers=keys.allowed)  # fmt: skip
        assert not whole, lines
        for name, data in pristine.items():
            (sigs / name).write_bytes(data)
        return "\n".join(lines)

    text = pristine["preparer.txt"].decode()
    mallory = sshsig_sign(load_signing_key(keys.key("Mallory")), text.encode())
    (sigs / "preparer.sig").write_text(mallory)
    assert "changed: signatures/preparer.sig" in verify()
    assert _ssh_verify(keys.allowed, "Ada Obi", sigs / "preparer.sig", sigs / "preparer.txt"
                       ).returncode == 0  # fmt: skip
    (sigs / "preparer.txt").write_text(text.replace("role preparer", "role reviewer"))
    assert "changed: signatures/preparer.txt" in verify()
    # A signed event forged into the register: Mallory's key claiming to be Eve.
    events, _ = read_events(store)
    row = events.filter(pl.col("event") == "signed").row(0, named=True)
    detail = json.loads(row["explanation"])
    forged = text.replace("role preparer", "role reviewer").replace(
        "signer Ada Obi", "signer Eve Ito"
    )
    detail |= {"statement": forged, "sshsig": sshsig_sign(load_signing_key(keys.key("Mallory")),
                                                          forged.encode())}  # fmt: skip
    append_events(store, events_frame([{**row, "role": "reviewer", "actor": "Eve Ito",
                                        "explanation": json.dumps(detail)}]))  # fmt: skip
    lines, whole = verify_report(tmp_path / "reports", MONTH, store=store,
                                 allowed_signers=keys.allowed)  # fmt: skip
    assert not whole
    assert any("reviewer Eve Ito: signed by the key SHA256:" in line
               and "which allowed_signers does not list" in line for line in lines)  # fmt: skip


@pytest.mark.parametrize("skew", [timedelta(days=-1), timedelta(seconds=-20)])
def test_a_skewed_clock_neither_voids_nor_fakes_a_signature(
    tmp_path: Path, skew: timedelta
) -> None:
    """Why 2: a reviewer whose clock was a day behind "signed" but the month stayed unlocked;
    20 s of skew made verify claim a signature was removed. The register's commit order
    decides; the time is only shown."""
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"])
    store, out = tmp_path / "store", tmp_path / "reports"
    _pack(out, store)
    now = datetime.now(UTC)
    sign_report(out, MONTH, role="preparer", key=keys.key("Ada Obi"), store=store,
                allowed_signers=keys.allowed, at=now)  # fmt: skip
    sign_report(out, MONTH, role="reviewer", key=keys.key("Eve Ito"), store=store,
                allowed_signers=keys.allowed, at=now + skew)  # fmt: skip
    state = month_state(read_events(store)[0], MONTH)
    assert state.locked and [s["role"] for s in state.signatures] == ["preparer", "reviewer"]
    with pytest.raises(ReportSignedError, match=f"{MONTH} is locked"):
        refuse_signed(out, MONTH, None, events=read_events(store)[0])
    lines, whole = verify_report(out, MONTH, store=store, allowed_signers=keys.allowed)
    assert whole, lines
    assert "signatures: the chain of 2 holds" in lines
    # Each signature names the register version it was given at, in commit order.
    versions = [int(s["register_version"]) for s in state.signatures]
    assert versions[0] < versions[1]


def test_a_clock_ahead_does_not_carry_a_signature_over_a_rerun(tmp_path: Path) -> None:
    """A preparer whose clock is a day ahead signs; the report is then rerun with other
    bytes: the signature lapses (it was given before the rerun, whatever its time says)."""
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"])
    store, out = tmp_path / "store", tmp_path / "reports"
    folder = _pack(out, store)
    sign_report(out, MONTH, role="preparer", key=keys.key("Ada Obi"), store=store,
                allowed_signers=keys.allowed, at=datetime.now(UTC) + timedelta(days=1))  # fmt: skip
    (folder / "balance_breaks.csv").write_text("key\ny\n")
    record_report(store, MONTH, folder, table_version=7)
    state = month_state(read_events(store)[0], MONTH)
    assert state.newest is not None and state.newest.signatures == []
    with pytest.raises(ReportSignedError, match="no preparer's signature"):
        sign_report(out, MONTH, role="reviewer", key=keys.key("Eve Ito"), store=store,
                    allowed_signers=keys.allowed)  # fmt: skip


def test_events_are_read_in_the_registers_commit_order(tmp_path: Path) -> None:
    """Whatever the clocks stamped (a writer a day behind) and after commits are removed and
    written anew, the register's order is its commits'."""
    store = tmp_path / "store"
    now = datetime.now(UTC)
    for i, skew in enumerate((0, -86_400, 60, -5)):
        append_events(store, events_frame([{"event": "annotated", "key": f"k{i}",
                                            "at": now + timedelta(seconds=skew)}]))  # fmt: skip
    assert read_events(store)[0]["key"].to_list() == ["k0", "k1", "k2", "k3"]
    log = store / "_register" / "_delta_log"
    (log / f"{3:020d}.json").unlink()  # the last commit removed; another written in its place
    append_events(store, events_frame([{"event": "annotated", "key": "k4", "at": now}]))
    assert read_events(store)[0]["key"].to_list() == ["k0", "k1", "k2", "k4"]


def _pack_with_items(tmp_path: Path, items: dict[str, pl.DataFrame]) -> Path:
    """:func:`_pack` whose exception lists (``NAME.register.parquet``) hold ``items``."""
    folder = tmp_path / "reports" / MONTH
    folder.mkdir(parents=True)
    for name, frame in items.items():
        frame.write_parquet(folder / f"{name}{ITEMS_SUFFIX}")
    return _pack(tmp_path / "reports", tmp_path / "store", exist_ok=True)


def _item(key: str, section: str, kind: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"key": [key], "section": [section], "kind": [kind], "currency": ["KES"],
         "amount": [Decimal("180000.00")], "item_date": [date(2026, 10, 31)]},
        schema_overrides={"amount": pl.Decimal(38, 6)},
    )  # fmt: skip


def _explain(tmp_path: Path, key: str, note: str) -> None:
    done = invoke_cli("exceptions", "explain", key, "--note", note, "--by", "Ada Obi",
                      "--store", str(tmp_path / "store"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_an_item_explained_after_the_report_is_signed_only_once_the_report_shows_it(
    tmp_path: Path,
) -> None:
    """Why 8.14: an item explained before signing was "explained" in the register and "open" in
    the signed ``exceptions.csv``, and signing did not warn. Signing now refuses while the
    register holds annotations of the month committed after its report, naming them, until
    the report is run again (its pack then shows the register at the signed version)."""
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"])
    key = "TXK-1:amount_mismatch"
    folder = _pack_with_items(
        tmp_path, {"reconciliation_mismatches": _item(key, "reconciliation", "amount_mismatch")}
    )
    _explain(tmp_path, key, "refund issued 3 Nov")
    refused = _cli(tmp_path, "sign", "--role", "preparer", key=keys.key("Ada Obi"))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"the register changed after {MONTH} was written: {key} (explained by Ada Obi)" in (
        refused.stderr
    )
    assert f"rerun txkit report --month {MONTH}" in refused.stderr
    assert not (folder / "signatures").exists()
    assert not month_state(read_events(tmp_path / "store")[0], MONTH).signatures
    record_report(tmp_path / "store", MONTH, folder, table_version=7)  # the report run again
    done = _cli(tmp_path, "sign", "--role", "preparer", key=keys.key("Ada Obi"))
    assert done.returncode == 0, done.stderr
    # After the preparer: a change refuses the reviewer the same way (the preparer's
    # signature then lapses with the rerun).
    _explain(tmp_path, key, "refund issued 4 Nov")
    reviewer = _cli(tmp_path, "sign", "--role", "reviewer", key=keys.key("Eve Ito"))
    assert reviewer.returncode == 1 and f"{key} (explained by Ada Obi)" in reviewer.stderr
    assert not month_state(read_events(tmp_path / "store")[0], MONTH).locked


def test_the_reviewer_cannot_sign_while_a_flux_breach_has_no_explanation(tmp_path: Path) -> None:
    """Each flux breach needs an explanation: the preparer is told which, the reviewer is
    refused in one line naming them and ``txkit exceptions explain``; once explained and the
    report run again, the month locks."""
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"])
    breach = f"flux:{MONTH}:KES:money-in-collections"
    folder = _pack_with_items(tmp_path, {"flux": _item(breach, "flux", "flux_breach")})
    prepared = _cli(tmp_path, "sign", "--role", "preparer", key=keys.key("Ada Obi"))
    assert prepared.returncode == 0, prepared.stderr
    assert f"the reviewer cannot sign while flux breaches have no explanation: {breach}" in (
        prepared.stdout
    )
    refused = _cli(tmp_path, "sign", "--role", "reviewer", key=keys.key("Eve Ito"))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"flux breaches without an explanation: {breach}" in refused.stderr
    assert "txkit exceptions explain KEY" in refused.stderr
    assert not month_state(read_events(tmp_path / "store")[0], MONTH).locked
    _explain(tmp_path, breach, "year-end collections")
    record_report(tmp_path / "store", MONTH, folder, table_version=7)  # the report run again
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        done = _cli(tmp_path, "sign", "--role", role, key=keys.key(name))
        assert done.returncode == 0, done.stderr
        assert "flux breaches" not in done.stdout
    assert month_state(read_events(tmp_path / "store")[0], MONTH).locked


def test_the_help_says_what_locks_a_month(tmp_path: Path) -> None:
    """Cosmetic of Why 8: ``sign --help`` said one signature locks the month. Both roles lock it
    (``Revision.locked``); the help of ``sign`` and of ``--reopen`` say so, and so does the
    register after the preparer alone."""
    sign = " ".join(invoke_cli("report", "sign", "--help", cwd=tmp_path).stdout.split())
    assert "the month is locked once both have signed" in sign
    assert "the preparer alone does not lock it" in sign
    assert "flux breach has no explanation" in sign
    report = " ".join(invoke_cli("report", "--help", cwd=tmp_path).stdout.split())
    assert "--reopen WHY report a locked month (signed by preparer and reviewer) again" in report
    keys = make_signers(tmp_path, ["Ada Obi"])
    _pack(tmp_path / "reports", tmp_path / "store")
    assert _cli(tmp_path, "sign", "--role", "preparer", key=keys.key("Ada Obi")).returncode == 0
    assert not month_state(read_events(tmp_path / "store")[0], MONTH).locked


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[str]:
    """A real ``ssh-agent`` of this test alone (its socket), killed after."""
    socket = tmp_path / "agent.sock"
    process = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not socket.exists():
            assert time.monotonic() < deadline and process.poll() is None, "ssh-agent did not start"
            time.sleep(0.02)
        yield str(socket)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _ssh_add(key: Path, socket: str, passphrase: str) -> None:
    """``ssh-add`` of an encrypted key, its passphrase given by an askpass program (no
    terminal): the agent holds the key unlocked, as after a person's ``ssh-add``."""
    askpass = key.with_name("askpass.sh")
    askpass.write_text(f"#!/bin/sh\necho '{passphrase}'\n")
    askpass.chmod(0o700)
    env = {"PATH": os.environ["PATH"], "SSH_AUTH_SOCK": socket, "SSH_ASKPASS": str(askpass),
           "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}  # fmt: skip
    subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, stdin=subprocess.DEVNULL,
                   capture_output=True)  # fmt: skip


def test_a_key_in_the_ssh_agent_signs_without_its_passphrase(tmp_path: Path, agent: str) -> None:
    """``--key KEY.pub`` with the key in the running ``ssh-agent``: the agent signs (the
    passphrase of the encrypted private key is never asked), the signature verifies with txkit
    and with ``ssh-keygen -Y verify``; a key the agent does not hold, or no agent, is one line."""
    keys = make_signers(tmp_path, ["Ada Obi"], ("Mallory",))
    eve = ssh_key(tmp_path / "locked", "Eve Ito", passphrase="correct horse")
    with keys.allowed.open("a") as allowed:
        allowed.write(allowed_line("Eve Ito", eve))
    folder = _pack(tmp_path / "reports", tmp_path / "store")
    preparer = _cli(tmp_path, "sign", "--role", "preparer", key=keys.key("Ada Obi"))
    assert preparer.returncode == 0, preparer.stderr
    public = eve.with_name(eve.name + ".pub")
    # Not yet in the agent: refused in one line naming the key; nothing signed.
    outside = _cli(tmp_path, "sign", "--role", "reviewer", key=public,
                   env={"SSH_AUTH_SOCK": agent})  # fmt: skip
    assert outside.returncode == 2
    assert outside.stderr.strip().count("\n") == 0
    assert f"--key {public}: the ssh-agent (SSH_AUTH_SOCK) does not hold this key" in outside.stderr
    no_agent = _cli(tmp_path, "sign", "--role", "reviewer", key=public, env={"SSH_AUTH_SOCK": ""})
    assert no_agent.returncode == 2 and "no ssh-agent is running" in no_agent.stderr
    assert not (folder / "signatures" / "reviewer.sig").exists()
    _ssh_add(eve, agent, "correct horse")
    # A process of its own, no terminal and no TXKIT_KEY_PASSPHRASE: a prompt would fail.
    done = run_cli("report", "sign", "--role", "reviewer", "--key", str(public), "--month",
                   MONTH, "--store", str(tmp_path / "store"), "--out", str(tmp_path / "reports"),
                   "--allowed-signers", str(keys.allowed), cwd=tmp_path,
                   env={"SSH_AUTH_SOCK": agent}, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "as reviewer: Eve Ito (key SHA256:" in done.stdout
    assert "passphrase" not in done.stdout + done.stderr
    sig, text = folder / "signatures" / "reviewer.sig", folder / "signatures" / "reviewer.txt"
    checked = _ssh_verify(keys.allowed, "Eve Ito", sig, text)
    assert checked.returncode == 0, checked.stderr
    verified = _cli(tmp_path, "verify")
    assert verified.returncode == 0, verified.stdout
    assert "reviewer Eve Ito" in verified.stdout
    # The agent's key for another principal's public file: still the key decides who signs.
    mallory = keys.key("Mallory")
    with pytest.MonkeyPatch.context() as patch, pytest.raises(ValueError, match="not hold"):
        patch.setenv("SSH_AUTH_SOCK", agent)
        load_signing_key(mallory.with_name(mallory.name + ".pub"))


def _annotate(tmp_path: Path, *args: str, key: Path | None = None, env: dict | None = None):
    extra = ["--key", str(key)] if key is not None else []
    return invoke_cli("exceptions", "explain", *args, *extra, "--store", str(tmp_path / "store"),
                      cwd=tmp_path, env=env)  # fmt: skip


def test_an_annotation_records_the_account_and_a_material_write_off_is_signed(
    tmp_path: Path,
) -> None:
    """Why 1: ``--by`` on an annotation recorded no login. Each annotation now records the
    process's account (from its user id, not ``LOGNAME``/``USER``) beside the declared name,
    and may be signed with ``--key`` (the name is then the key's); writing off a material item
    needs a key once the project has ``allowed_signers``; ``verify`` checks each signature and
    finds an annotation whose text was changed after signing."""
    import pwd

    account = pwd.getpwuid(os.getuid()).pw_name
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"], ("Mallory",))
    big, small = "TXK-1:amount_mismatch", "TXK-2:amount_mismatch"
    cheap = _item(small, "reconciliation", "amount_mismatch").with_columns(
        amount=pl.lit(Decimal("1.00"), pl.Decimal(38, 6))
    )
    lists = pl.concat([_item(big, "reconciliation", "amount_mismatch"), cheap])
    folder = _pack_with_items(tmp_path, {"reconciliation_mismatches": lists})
    write_signature_block(folder, [])  # as a report leaves an unsigned pack
    pretend = {"LOGNAME": "eve", "USER": "eve"}  # what the caller sets decides nothing
    done = _annotate(tmp_path, big, "--note", "bank delay", "--by", "Ada Obi", env=pretend)
    assert done.returncode == 0, done.stderr
    assert f"by Ada Obi (not signed; account {account})" in done.stdout
    # A material write-off without a key: one line, nothing written.
    refused = _annotate(tmp_path, big, "--status", "written_off", "--note", "below cost")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"writing off {big} (180000.000000 KES at stake, material from" in refused.stderr
    assert "needs your signature: give --key PATH" in refused.stderr
    assert (
        _annotate(tmp_path, small, "--status", "written_off", "--note", "rounding").returncode == 0
    )
    # Signed: the key says who (a --by naming another person, or a key not listed, refused).
    other = _annotate(tmp_path, big, "--status", "written_off", "--note", "below cost", "--by",
                      "Ada Obi", key=keys.key("Eve Ito"))  # fmt: skip
    assert other.returncode != 0 and "is not the key's holder" in other.stderr
    mallory = _annotate(tmp_path, big, "--status", "written_off", key=keys.key("Mallory"))
    assert mallory.returncode != 0 and "not in the allowed signers file" in mallory.stderr
    signed = _annotate(tmp_path, big, "--status", "written_off", "--note", "below cost",
                       key=keys.key("Eve Ito"), env=pretend)  # fmt: skip
    assert signed.returncode == 0, signed.stderr
    assert "by Eve Ito (signed with key SHA256:" in signed.stdout
    listed = invoke_cli("exceptions", "--format", "csv", "--store", str(tmp_path / "store"),
                        cwd=tmp_path)  # fmt: skip
    rows = {r["key"]: r for r in pl.read_csv(io.StringIO(listed.stdout)).iter_rows(named=True)}
    assert rows[big]["changed_by"] == "Eve Ito" and rows[big]["changed_account"] == account
    assert rows[big]["changed_key"].startswith("SHA256:")
    assert "written off by Eve Ito (signed, key SHA256:" in rows[big]["resolved_by"]
    assert (
        rows[small]["changed_key"] is None and "(not signed; account" in rows[small]["resolved_by"]
    )
    # The signature on its own, with OpenSSH: the register's statement and SSHSIG.
    events = read_events(tmp_path / "store")[0].filter(pl.col("event") == "annotated")
    doc = json.loads(events["note"][-1])
    (tmp_path / "note.txt").write_text(doc["statement"])
    (tmp_path / "note.sig").write_text(doc["sshsig"])
    checked = _ssh_verify(keys.allowed, "Eve Ito", tmp_path / "note.sig", tmp_path / "note.txt")
    assert checked.returncode == 0, checked.stderr
    assert f"key {big}" in doc["statement"] and "status written_off" in doc["statement"]
    verified = _cli(tmp_path, "verify")
    assert verified.returncode == 0, verified.stdout
    assert f"annotations: 3 of {MONTH}, 1 signed, each signature verified" in verified.stdout
    # Someone writing the register directly: the signed text, another explanation.
    forged = events.tail(1).with_columns(explanation=pl.lit("paid in full"))
    append_events(tmp_path / "store", forged)
    broken = _cli(tmp_path, "verify")
    assert broken.returncode != 0
    assert f"the annotation of {big} by Eve Ito: the register's event is not the text signed" in (
        broken.stdout
    )


def test_an_import_that_writes_off_a_material_item_is_signed_or_refused(tmp_path: Path) -> None:
    """``txkit exceptions import``: the same rule as ``explain``, for a whole file in one
    commit: a material write-off without ``--key`` refuses the file (nothing written); with
    it, every row is signed by the key's holder."""
    keys = make_signers(tmp_path, ["Ada Obi"])
    big, small = "TXK-1:amount_mismatch", "TXK-2:status_mismatch"
    lists = pl.concat([_item(big, "reconciliation", "amount_mismatch"),
                       _item(small, "reconciliation", "status_mismatch")])  # fmt: skip
    _pack_with_items(tmp_path, {"reconciliation_mismatches": lists})
    sheet = tmp_path / "items.csv"
    sheet.write_text(f"key,status,explanation\n{small},,shop corrected\n{big},written_off,cost\n")
    store = ["--store", str(tmp_path / "store")]
    refused = invoke_cli("exceptions", "import", str(sheet), *store, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"writing off {big}" in refused.stderr
    assert read_events(tmp_path / "store")[0].filter(pl.col("event") == "annotated").is_empty()
    done = invoke_cli("exceptions", "import", str(sheet), *store, "--key", str(keys.key("Ada Obi")),
                      cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    notes = read_events(tmp_path / "store")[0].filter(pl.col("event") == "annotated")
    assert notes["actor"].to_list() == ["Ada Obi", "Ada Obi"]
    assert all(json.loads(n)["sshsig"] for n in notes["note"])
    verified = _cli(tmp_path, "verify")
    assert f"annotations: 2 of {MONTH}, 2 signed, each signature verified" in verified.stdout
