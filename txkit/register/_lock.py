"""The month's sign-off state as the register holds it: revisions, signatures, the lock.

The register, not a reports folder, is where a month is locked: every report run of a month
is a ``reported`` event naming its revision, its folder and the digest of every file of its
pack; every signature is a ``signed`` event naming its revision, the pack's digest, who (name,
login, host) and when, chained to the month's previous signature. A month is **locked** when
its newest revision is signed by a preparer and then by a reviewer who is another person, both
over the pack that revision's newest run wrote. Every command that would change a locked
month's items, figures or pack asks :func:`month_state` first (docs/register.md).
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import hashlib
import json
import os
import re
import socket
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import polars as pl

from txkit.errors import ReportSignedError
from txkit.register._keys import fold_name
from txkit.register._table import register_uri

__all__ = [
    "ROLES",
    "MonthState",
    "Revision",
    "chain_of",
    "check_text",
    "locked_message",
    "login_and_host",
    "month_lock",
    "month_state",
    "os_account",
    "refuse_locked",
]

ROLES: Final[tuple[str, ...]] = ("preparer", "reviewer")
#: The index's signature block lies between these markers; it is left out of the digest, so
#: signing (which rewrites the block) does not change what was signed.
BEGIN: Final = "<!--txkit:signatures-->"
END: Final = "<!--/txkit:signatures-->"
_BLOCK = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
_MANIFEST: Final = "report.json"
#: A pack's own signatures (``ROLE.txt``, the statement signed, and ``ROLE.sig``, its SSHSIG
#: signature): outside the digest, so that signing adds them without changing what is signed.
SIGNATURES_DIR: Final = "signatures"
#: The pages whose signature block signing fills (left out of the digest like the index's):
#: the index and the close summary (txkit.report's ``00_close_summary.html``).
SIGNED_PAGES: Final = ("index.html", "00_close_summary.html")


def pack_files(folder: str | os.PathLike[str]) -> dict[str, str]:
    """The SHA-256 of every file of a report folder (a pack), by path: ``report.json`` without
    its ``signatures`` (which signing adds), ``index.html`` and the close summary without their
    signature blocks (which signing rewrites); hidden files and ``signatures/`` left out."""
    folder = Path(folder)
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        if rel.split("/", 1)[0] == SIGNATURES_DIR:
            continue
        data = path.read_bytes()
        if rel in SIGNED_PAGES:
            data = _BLOCK.sub(BEGIN + END, data.decode("utf-8", "replace")).encode("utf-8")
        elif rel == _MANIFEST:
            try:
                doc = json.loads(data)
                doc.pop("signatures", None)
                data = json.dumps(doc, sort_keys=True).encode("utf-8")
            except (ValueError, AttributeError):  # not JSON, or not an object: its bytes
                pass
        files[rel] = hashlib.sha256(data).hexdigest()
    return files


def files_digest(files: dict[str, str]) -> str:
    """One SHA-256 over a pack's files: one line ``path NUL sha256`` each, sorted by path."""
    lines = "".join(f"{rel}\0{files[rel]}\n" for rel in sorted(files))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def report_digest(folder: str | os.PathLike[str]) -> str:
    """The pack's digest (:func:`pack_files`, :func:`files_digest`): what a signature signs."""
    return files_digest(pack_files(folder))


def check_text(value: str | None, flag: str, *, example: str = "") -> str | None:
    """``value`` trimmed, refused unless it is printable text: no control or format
    characters (newlines, escapes, zero-width spaces, bidirectional overrides) and not empty
    once trimmed. None stays None.

    Raises:
        ValueError: one line naming the flag and the first offending character.
    """
    if value is None:
        return None
    for char in value:
        kind = unicodedata.category(char)
        if kind[0] == "C" or kind in ("Zl", "Zp"):
            name = unicodedata.name(char, f"U+{ord(char):04X}")
            raise ValueError(
                f"{flag} holds a character that is not printable text (U+{ord(char):04X} "
                f"{name}): give plain text{example}"
            )
    text = " ".join(value.split())
    if not text:
        raise ValueError(f"{flag} is empty: give it as text{example}")
    return text


def os_account() -> str:
    """The operating system's account this process runs as (its user id's name), never
    ``LOGNAME`` or ``USER``, which whoever starts the process sets; ``uid N`` when the id has
    no name (a container)."""
    if not hasattr(os, "getuid"):  # Windows: no user ids; the account's own name
        return getpass.getuser()
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"


def login_and_host() -> tuple[str, str]:
    """The process's account (:func:`os_account`) and the host's name."""
    return os_account(), socket.gethostname()


def _same_person(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """Why two signatures are by one person (the same key, or names that read alike after
    Unicode normalisation and confusable folding), else None. Logins decide nothing: the
    signer sets them."""
    if a.get("key") and a.get("key") == b.get("key"):
        return f"the same key ({b['key']})"
    if fold_name(a["name"]) == fold_name(b["name"]):
        return f"the same name ({b['name']})"
    return None


def chain_of(previous: str, sig: dict[str, Any]) -> str:
    """A signature's link: SHA-256 over the previous signature's link (the month's first:
    empty) and every field of this one, so a signature removed or changed breaks every
    later link."""
    fields = [previous] + [
        str(sig.get(k) or "")
        for k in ("month", "revision", "role", "name", "login", "host", "at", "sha256")
    ]
    return hashlib.sha256("\0".join(fields).encode("utf-8")).hexdigest()


@dataclass
class Revision:
    """A revision of a month as the register holds it (its newest run)."""

    number: int
    folder: str | None = None
    reason: str | None = None
    files: dict[str, str] | None = None
    pack: str | None = None
    table_version: int | None = None
    at: datetime | None = None
    signatures: list[dict[str, Any]] = field(default_factory=list)
    stale: list[dict[str, Any]] = field(default_factory=list)
    #: Who reopened the signed month into this revision, signed (name, key, text, SSHSIG).
    reopened: dict[str, Any] | None = None

    @property
    def name(self) -> str | None:
        """The pack's folder name (``YYYY-MM`` or ``YYYY-MM.rN``)."""
        return Path(self.folder).name if self.folder else None

    @property
    def locked(self) -> bool:
        """Signed by a preparer and a reviewer."""
        return {s["role"] for s in self.signatures} >= set(ROLES)


@dataclass
class MonthState:
    """A month's revisions (by number) and every signature of the month in order."""

    month: str
    revisions: dict[int, Revision] = field(default_factory=dict)
    signatures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def newest(self) -> Revision | None:
        """The newest revision, None for a month never reported."""
        return self.revisions[max(self.revisions)] if self.revisions else None

    @property
    def locked(self) -> bool:
        """The newest revision is signed by both roles."""
        return self.newest is not None and self.newest.locked

    def who(self) -> str:
        """``preparer Ada Obi on 2026-11-02, reviewer ...`` of the newest revision."""
        newest = self.newest
        if newest is None or not newest.signatures:
            return "not signed"
        return ", ".join(f"{s['role']} {s['name']} on {s['at'][:10]}" for s in newest.signatures)

    def chain_problems(self) -> list[str]:
        """Where the month's chain of signatures breaks (a signature removed or changed)."""
        problems, previous = [], ""
        for sig in self.signatures:
            if sig.get("chain") and chain_of(previous, sig) != sig["chain"]:
                problems.append(
                    f"the chain of signatures breaks at {sig['role']} {sig['name']} "
                    f"({sig['at']}): a signature before it was removed or changed"
                )
            previous = sig.get("chain") or previous
        return problems


def _doc(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def signature_of(row: dict[str, Any]) -> dict[str, Any]:
    """A ``signed`` event as a signature (the register's copy; report.json holds the same)."""
    doc = _doc(row.get("explanation"))
    at = row["at"]
    return {
        "month": row["month"],
        "revision": int(doc.get("revision") or 1),
        "role": row["role"],
        "name": row["actor"],
        "login": doc.get("login"),
        "host": doc.get("host"),
        "at": at.strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(at, datetime) else str(at),
        "table_version": row["table_version"],
        "register_version": doc.get("register_version"),
        "sha256": row["note"],
        "chain": row["key"],
        "key": doc.get("key"),
        "statement": doc.get("statement"),
        "sshsig": doc.get("sshsig"),
    }


def month_state(events: pl.DataFrame, month: str) -> MonthState:
    """The month's revisions and signatures as the register holds them."""
    state = MonthState(month)
    rows = (
        events.with_row_index("_i")
        .filter((pl.col("month") == month) & pl.col("event").is_in(["reported", "signed"]))
        .sort("_i")  # the register's commit order (read_events): no clock decides
    )
    for row in rows.iter_rows(named=True):
        if row["event"] == "reported":
            doc = _doc(row["explanation"])
            number = int(doc.get("revision") or 1)
            before = state.revisions.get(number)
            rev = Revision(
                number,
                folder=doc.get("folder"),
                reason=doc.get("reason") or (before.reason if before else None),
                files=doc.get("files"),
                pack=doc.get("pack"),
                table_version=row["table_version"],
                at=row["at"],
                reopened=doc.get("reopened") or (before.reopened if before else None),
            )
            if before is not None:  # a rerun of an unsigned revision: its signatures lapse
                rev.stale = before.stale + before.signatures
            state.revisions[number] = rev
        else:
            sig = signature_of(row)
            state.signatures.append(sig)
            rev = state.revisions.setdefault(sig["revision"], Revision(sig["revision"]))
            if rev.pack is None or rev.pack == sig["sha256"]:
                rev.signatures.append(sig)
            else:
                rev.stale.append(sig)
    return state


def locked_message(state: MonthState, what: str) -> str:
    """One line: what is refused, the lock, and ``--reopen``."""
    newest = state.newest
    assert newest is not None
    return (
        f"{what}: {state.month} is locked (revision {newest.number}, {newest.name or state.month}, "
        f"signed by {state.who()}); reopen it first: txkit report --month {state.month} "
        '--reopen "why"'
    )


def refuse_locked(events: pl.DataFrame, month: str, what: str) -> None:
    """Raise when ``month`` is locked.

    Raises:
        ReportSignedError: one line naming the lock and ``--reopen``.
    """
    state = month_state(events, month)
    if state.locked:
        raise ReportSignedError(locked_message(state, what))


def signature_problems(state: MonthState, role: str, name: str, key: str) -> str | None:
    """Why ``name`` (its key's fingerprint ``key``) may not sign the newest revision as
    ``role``, else None: the preparer first, then a reviewer who is another person (another
    key, a name that reads differently); each role once a revision."""
    newest = state.newest
    assert newest is not None
    mine = {"name": name, "key": key}
    where = f"revision {newest.number} of {state.month} ({newest.name or state.month})"
    for sig in newest.signatures:
        if sig["role"] == role:
            return (
                f"{where} is already signed as {role} by {sig['name']} on {sig['at'][:10]}: "
                "each role signs once a revision"
            )
    if role == "reviewer":
        preparer = [s for s in newest.signatures if s["role"] == "preparer"]
        if not preparer:
            return f"{where} has no preparer's signature: the preparer signs first"
        same = _same_person(preparer[0], mine)
        if same:
            return (
                f"the reviewer of {where} must be another person than its preparer "
                f"({same}): segregation of duties"
            )
    return None


def _locks_dir(store: str | os.PathLike[str]) -> Path | None:
    uri = register_uri(store)
    if "://" in uri:
        return None  # object storage: the report's final check of the lock is what holds
    if not Path(uri).is_dir():
        # No register yet, so no report of any month to sign: nothing to exclude, and a
        # folder that is not (yet) a store gets nothing written into it.
        return None
    return Path(uri) / "_txkit_locks"


@contextlib.contextmanager
def month_lock(
    store: str | os.PathLike[str], month: str, *, wait: float, what: str
) -> Iterator[None]:
    """Hold the month's lock (a report of the month, or a signature of it) on a local store:
    an exclusive ``flock`` on ``_register/_txkit_locks/YYYY-MM.lock``, released when the
    process ends however it ends. Waits up to ``wait`` seconds.

    ``what``: this command, as the refusal of another one names it (``a report of 2026-10``).

    Raises:
        ReportSignedError: another command holds it (names what it is, since when).
    """
    folder = _locks_dir(store)
    if folder is None:
        yield
        return
    import fcntl

    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / f"{month}.lock", "a+", encoding="utf-8")  # noqa: SIM115
    except OSError:  # a read-only store: nothing can be written there to exclude
        yield
        return
    with handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip() or "another command"
                    raise ReportSignedError(
                        f"{holder} holds {month}'s lock (a report and a signature of a month "
                        "exclude each other): try again when it has finished"
                    ) from None
                time.sleep(0.1)
        handle.seek(0)
        handle.truncate()
        handle.write(f"{what} (pid {os.getpid()}, since {time.strftime('%H:%M:%S')})")
        handle.flush()
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                handle.seek(0)
                handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
