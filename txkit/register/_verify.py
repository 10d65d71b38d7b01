"""``txkit report verify``: a month's packs checked against the register and the project's
``allowed_signers``, offline: every file's digest, every signature cryptographically (SSHSIG
by a listed key over a text naming this pack), the pack's own ``signatures/``, the segregation
of the two signers, the chain of signatures, the signatures the pack shows."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from txkit.calendar import parse_month
from txkit.errors import DataFileError, ReportSignedError
from txkit.register._annotate import annotation_problems
from txkit.register._keys import Signer, load_allowed_signers, sshsig_verify, statement_of
from txkit.register._lock import (
    _BLOCK,
    _MANIFEST,
    ROLES,
    SIGNATURES_DIR,
    Revision,
    _same_person,
    month_state,
    report_digest,
)
from txkit.register._sign import _folder_of, pack_problems, signature_block, signoff_block
from txkit.register._state import annotation_months
from txkit.register._table import read_events

__all__ = ["own_signatures", "refuse_overwrite", "verify_report"]


def verify_report(
    out: str | os.PathLike[str],
    month: str,
    *,
    store: str | os.PathLike[str],
    allowed_signers: str | os.PathLike[str] | None = None,
) -> tuple[list[str], bool]:
    """Check every revision of the month against the register: every file of its pack
    against the digests its report recorded (changed, added, missing named), every signature
    cryptographically (its SSHSIG signature over its text, by a key ``allowed_signers`` lists,
    the text naming this pack), the pack's own ``signatures/`` against the register's, the
    segregation of the two signers, the chain of signatures, and the signatures the pack shows
    (``report.json`` and the index's block). Offline: nothing but the files and the register.
    Returns the lines to print and whether everything verified.

    Raises:
        ValueError: the register has no report of the month.
        DataFileError: the month is signed and ``allowed_signers`` is missing or malformed.
    """
    month = parse_month(month)
    events, _ = read_events(store)
    state = month_state(events, month)
    if not state.revisions and (carried := _unheld(out, month, store, allowed_signers)):
        return carried, False
    if not state.revisions:
        raise ValueError(
            f"the register of {store} has no report of {month}: nothing to verify "
            "(--store names the store the report read)"
        )
    notes = annotation_months(events).filter(pl.col("month") == month)
    signed_notes = any('"sshsig"' in (n or "") for n in notes["note"])
    signers = load_allowed_signers(allowed_signers) if state.signatures or signed_notes else []
    lines, whole = [], True
    for number in sorted(state.revisions):
        rev = state.revisions[number]
        folder = _folder_of(out, rev)
        head = f"revision {number} ({rev.name or month})"
        problems = pack_problems(folder, rev.files) if rev.files is not None else []
        if rev.files is None:
            problems.append("the register recorded no digests of its files (no report of it)")
        digest = report_digest(folder) if folder.is_dir() else None
        for sig in rev.signatures:
            if digest is not None and sig["sha256"] != digest:
                problems.append(
                    f"{sig['role']} {sig['name']} signed SHA-256 {sig['sha256'][:16]}..., the "
                    f"pack is now {digest[:16]}..."
                )
            problems += _key_problems(sig, rev, signers)
        problems += _segregation_problems(rev.signatures)
        if number > 1:
            problems += _reopen_problems(rev, state.revisions.get(number - 1), month, signers)
        if folder.is_dir():
            problems += _shown_signatures(folder, rev.signatures)
            problems += _pack_signature_files(folder, rev.signatures)
        signed = ", ".join(
            f"{s['role']} {s['name']} (key {s.get('key') or 'none'}) on {s['at']}"
            for s in rev.signatures
        )
        if isinstance(rev.reopened, dict) and rev.reopened.get("name"):
            head += f", reopened by {rev.reopened['name']} ({rev.reason})"
        state_text = "locked" if rev.locked else ("signed by " + signed if signed else "not signed")
        if rev.locked:
            state_text = f"locked, signed by {signed}"
        if problems:
            whole = False
            lines.append(f"{head}: DOES NOT VERIFY ({state_text})")
            lines += [f"  {p}" for p in problems]
        else:
            count = len(rev.files or {})
            lines.append(f"{head}: verified, {count} files ({state_text})")
    chain = state.chain_problems()
    if chain:
        whole = False
        lines += [f"signatures: {p}" for p in chain]
    else:
        lines.append(f"signatures: the chain of {len(state.signatures)} holds")
    wrong = annotation_problems(notes, signers)
    return lines + _annotation_lines(notes, wrong, month), whole and not wrong


def _annotation_lines(notes: pl.DataFrame, wrong: list[str], month: str) -> list[str]:
    """What ``verify`` says of the month's annotations: the problems, or how many were
    signed and verified."""
    if wrong:
        return [f"annotations: {p}" for p in wrong]
    if not notes.height:
        return []
    signed = sum('"sshsig"' in (n or "") for n in notes["note"])
    return [f"annotations: {notes.height} of {month}, {signed} signed, each signature verified"]


def _unheld(
    out: str | os.PathLike[str],
    month: str,
    store: str | os.PathLike[str],
    allowed_signers: str | os.PathLike[str] | None,
) -> list[str]:
    """A signed pack whose register has no report of the month (its events lost, or another
    store's register): the lines naming its signatures; empty when the folder carries none."""
    carried = own_signatures(Path(out) / month, allowed_signers)
    if not carried:
        return []
    return [
        f"revision 1 ({month}): DOES NOT VERIFY (the register of {store} has no report of "
        f"{month})",
        *(f"  {f['file']}: {f['role']} {f['name']}'s signature verifies, but the register "
          f"lacks it (given at register version {f['register']})" for f in carried),
    ]  # fmt: skip


def _key_problems(sig: dict[str, Any], rev: Revision, signers: list[Signer]) -> list[str]:
    """Why the register's signature ``sig`` does not prove who signed this revision."""
    who = f"{sig['role']} {sig['name']}"
    if not sig.get("sshsig") or not sig.get("statement"):
        return [f"{who} signed without a key's signature: not proof of who signed; reopen the "
                "month and sign it with keys"]  # fmt: skip
    try:
        signer = sshsig_verify(sig["sshsig"], str(sig["statement"]).encode("utf-8"), signers)
    except ValueError as exc:
        return [f"{who}: {exc}"]
    problems = []
    if signer.principal != sig["name"] or signer.fingerprint != sig.get("key"):
        problems.append(
            f"{who}: the key that signed is {signer.principal}'s ({signer.fingerprint}), not "
            f"the name the register shows"
        )
    expected = statement_of({**sig, "previous": _previous_of(sig)}, rev.files or {})
    if sig["statement"] != expected:
        problems.append(f"{who}: the signed text is not this revision's pack and register")
    return problems


def _reopen_problems(
    rev: Revision, signed: Revision | None, month: str, signers: list[Signer]
) -> list[str]:
    """Why who reopened ``rev`` (a revision of a signed month) is not proven."""
    done = rev.reopened
    if not isinstance(done, dict) or not done.get("sshsig") or not done.get("statement"):
        return ["reopened without a key's signature: who reopened it is not proven"]
    try:
        signer = sshsig_verify(done["sshsig"], str(done["statement"]).encode("utf-8"), signers)
    except ValueError as exc:
        return [f"the reopening: {exc}"]
    fields = _statement_fields(str(done["statement"]))
    expected = {
        "month": month,
        "revision": str(rev.number),
        "reason": rev.reason or "",
        "signer": signer.principal,
        "key": signer.fingerprint,
        "reopened-pack": f"sha256:{signed.pack if signed and signed.pack else ''}",
    }
    wrong = sorted(k for k, v in expected.items() if fields.get(k) != v)
    if wrong:
        return [f"the reopening signed by {signer.principal} names another {', '.join(wrong)}"]
    return []


def _previous_of(sig: dict[str, Any]) -> str | None:
    for line in str(sig.get("statement") or "").splitlines():
        if line.startswith("previous "):
            value = line.removeprefix("previous ")
            return None if value == "none" else value
    return None


def _segregation_problems(signatures: list[dict[str, Any]]) -> list[str]:
    preparer = [s for s in signatures if s["role"] == "preparer"]
    reviewer = [s for s in signatures if s["role"] == "reviewer"]
    if preparer and reviewer:
        same = _same_person(preparer[0], reviewer[0])
        if same:
            return [f"the reviewer is the preparer ({same}): segregation of duties"]
    return []


def _pack_signature_files(folder: Path, signatures: list[dict[str, Any]]) -> list[str]:
    """The pack's own ``signatures/`` against the register's: each signature's text and
    SSHSIG file there, byte for byte, and nothing else."""
    where = folder / SIGNATURES_DIR
    expected: dict[str, str] = {}
    for sig in signatures:
        if sig.get("statement") and sig.get("sshsig"):
            expected[f"{sig['role']}.txt"] = sig["statement"]
            expected[f"{sig['role']}.sig"] = sig["sshsig"]
    found = {p.name for p in where.iterdir() if p.is_file()} if where.is_dir() else set()
    problems = []
    for name in sorted(set(expected) | found):
        rel = f"{SIGNATURES_DIR}/{name}"
        if name not in found:
            problems.append(f"missing: {rel} (the register holds it)")
        elif name not in expected:
            problems.append(f"added: {rel} (no signature of the register)")
        elif (where / name).read_text(encoding="utf-8", errors="replace") != expected[name]:
            problems.append(f"changed: {rel} (not the register's)")
    return problems


def _shown_signatures(folder: Path, signatures: list[dict[str, Any]]) -> list[str]:
    problems = []
    try:
        doc = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
        shown = doc.get("signatures", []) if isinstance(doc, dict) else None
    except (OSError, ValueError):
        shown = None
    keys = ("role", "name", "at", "sha256")
    if not isinstance(shown, list) or [
        tuple(s.get(k) for k in keys) if isinstance(s, dict) else None for s in shown
    ] != [tuple(s.get(k) for k in keys) for s in signatures]:
        problems.append("report.json's signatures are not the register's")
    index = folder / "index.html"
    if index.is_file():
        found = _BLOCK.search(index.read_text(encoding="utf-8", errors="replace"))
        if found is None or found.group(0) != signature_block(signatures):
            problems.append("index.html's signature block is not the register's signatures")
    close = folder / "00_close_summary.html"
    if close.is_file():
        found = _BLOCK.search(close.read_text(encoding="utf-8", errors="replace"))
        if found is not None and found.group(0) != signoff_block(signatures):
            problems.append("00_close_summary.html's sign-off is not the register's signatures")
    return problems


def _statement_fields(text: str) -> dict[str, str]:
    """The ``name value`` lines of a signed text's head (before its files)."""
    fields = {}
    for line in text.splitlines():
        if line.startswith("files "):
            break
        name, _, value = line.partition(" ")
        fields[name] = value
    return fields


def own_signatures(
    folder: str | os.PathLike[str], allowed_signers: str | os.PathLike[str] | None = None
) -> list[dict[str, str]]:
    """The signatures a pack carries in its ``signatures/`` that verify on their own, without
    the register: an SSHSIG signature by a key ``allowed_signers`` lists, over a text naming
    that signer and this pack's digest as it is now. Each: ``role``, ``name``, ``register``
    (the register's version it was given at), ``file`` and ``sshsig``. A pack carrying
    signatures while ``allowed_signers`` is missing: each counted as verifying (nothing may
    prove it is not signed).

    Raises:
        DataFileError: ``allowed_signers`` is malformed.
    """
    where = Path(folder) / SIGNATURES_DIR
    sigs = sorted(where.glob("*.sig")) if where.is_dir() else []
    if not sigs:
        return []
    try:
        signers: list[Signer] | None = load_allowed_signers(allowed_signers)
    except DataFileError as exc:
        if "not found" not in str(exc):
            raise
        signers = None
    digest = report_digest(folder)
    found = []
    for sig in sigs:
        text = sig.with_suffix(".txt")
        if not text.is_file():
            continue
        statement = text.read_text(encoding="utf-8", errors="replace")
        fields = _statement_fields(statement)
        armored = sig.read_text(encoding="utf-8", errors="replace")
        if signers is not None:
            try:
                signer = sshsig_verify(armored, statement.encode("utf-8"), signers)
            except ValueError:
                continue
            if fields.get("signer") != signer.principal or fields.get("pack") != f"sha256:{digest}":
                continue
        found.append(
            {
                "role": fields.get("role", "?"),
                "name": fields.get("signer", "?"),
                "register": fields.get("register-version", "?"),
                "file": f"{Path(folder).name}/{SIGNATURES_DIR}/{sig.name}",
                "sshsig": armored,
            }
        )
    return found


def refuse_overwrite(
    folder: str | os.PathLike[str],
    month: str,
    events: pl.DataFrame,
    store: str | os.PathLike[str],
    allowed_signers: str | os.PathLike[str] | None = None,
) -> None:
    """Before a report writes ``folder``: refused when the folder is a signed pack, whatever
    the store, its register or the data folder. A signature the folder carries (verifying on
    its own) that the register lacks names a register whose events or commits were removed,
    or another store's; a pack both roles signed is never written over (``--reopen`` writes a
    new revision beside it).

    Raises:
        ReportSignedError: one line naming the signatures and what is missing.
    """
    found = own_signatures(folder, allowed_signers)
    if not found:
        return
    held = {s.get("sshsig") for s in month_state(events, month).signatures}
    missing = [f for f in found if f["sshsig"] not in held]
    if missing:
        named = ", ".join(
            f"{f['role']} {f['name']} (given at register version {f['register']}, {f['file']})"
            for f in missing
        )
        raise ReportSignedError(
            f"the register of {store} lacks signatures of {month} that {folder} carries and "
            f"that verify: {named}; its files or commits were removed, or it is another "
            "store's register: restore the register (txkit report verify names what it holds), "
            "or write this report elsewhere with --out DIR; a signed pack is never written over"
        )
    if {f["role"] for f in found} >= set(ROLES):
        who = ", ".join(f"{f['role']} {f['name']}" for f in found)
        raise ReportSignedError(
            f"{folder} is a signed pack ({who}; its signatures verify on their own): no report "
            f'writes over it; reopen the month: txkit report --month {month} --reopen "why"'
        )
