"""Sign-off and the locked period: ``txkit report sign`` and ``txkit report --reopen``.

A signature (preparer or reviewer) is recorded in the month's ``report.json`` under
``signatures``: the name, the time (UTC), the store's table version the report read, the
register's version and a SHA-256 over the report's files (:func:`report_digest`). The same
signature is appended to the exception register as a ``signed`` event, so the store itself
knows which of its versions signed reports cite (:func:`signed_versions`, the retention's
``sources`` hook).

A signed month is locked: ``txkit report`` refuses to overwrite it; with ``--reopen "why"`` it
writes a new revision beside it (``reports/YYYY-MM.rN/``) whose ``report.json`` says why and
what changed (:func:`compare_reports`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import polars as pl

from txkit.calendar import parse_month
from txkit.errors import ReportSignedError
from txkit.money import format_sums, money_sums
from txkit.output import atomic_path
from txkit.register._state import ITEMS_SUFFIX
from txkit.register._table import append_events, events_frame, read_events

__all__ = [
    "ROLES",
    "Target",
    "compare_reports",
    "newest_revision",
    "refuse_signed",
    "report_digest",
    "sign_report",
    "signature_block",
    "signed_versions",
]

ROLES: Final[tuple[str, ...]] = ("preparer", "reviewer")
#: The index's signature block lies between these markers; it is left out of the digest, so
#: signing (which rewrites the block) does not change what was signed.
BEGIN: Final = "<!--txkit:signatures-->"
END: Final = "<!--/txkit:signatures-->"
_BLOCK = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
_MANIFEST: Final = "report.json"


def report_digest(folder: str | os.PathLike[str]) -> str:
    """SHA-256 over every file of a report folder but ``report.json`` (which holds the
    signatures): one line ``path NUL sha256`` per file, sorted by path; the index's signature
    block is left out of its bytes."""
    folder = Path(folder)
    lines = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel == _MANIFEST or path.name.startswith("."):
            continue
        data = path.read_bytes()
        if rel == "index.html":
            data = _BLOCK.sub(BEGIN + END, data.decode("utf-8")).encode("utf-8")
        lines.append(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n")
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def _revision(name: str, month: str) -> int | None:
    if name == month:
        return 1
    found = re.fullmatch(re.escape(month) + r"\.r([0-9]+)", name)
    return int(found.group(1)) if found else None


def newest_revision(out: str | os.PathLike[str], month: str) -> tuple[Path, int] | None:
    """The month's newest report folder (``YYYY-MM`` is revision 1, ``YYYY-MM.rN`` the
    later ones) and its number; None when the month has no report."""
    found = []
    for path in Path(out).glob(f"{month}*"):
        number = _revision(path.name, month)
        if number is not None and (path / _MANIFEST).is_file():
            found.append((number, path))
    if not found:
        return None
    number, path = max(found)
    return path, number


def revisions(
    out: str | os.PathLike[str], month: str, *, pending: tuple[str, Path] | None = None
) -> list[dict[str, Any]]:
    """The month's reports, oldest first: ``number`` (1 is ``YYYY-MM``), ``folder`` (its
    name), ``reason`` (why it was reopened; None for the first), ``of`` (the signed report it
    revises), ``signatures`` (role, name, at, table version, SHA-256), ``changes`` (figures
    and items against ``of``), ``table_version``. ``pending``: (its folder name, the folder
    being built) of a report not yet in place; it replaces a report of that name."""
    found: dict[str, tuple[int, Path]] = {}
    for path in Path(out).glob(f"{month}*"):
        number = _revision(path.name, month)
        if number is not None and (path / _MANIFEST).is_file():
            found[path.name] = (number, path)
    if pending is not None:
        number = _revision(pending[0], month)
        if number is not None:
            found[pending[0]] = (number, Path(pending[1]))
    history = []
    for name, (number, path) in sorted(found.items(), key=lambda kv: kv[1][0]):
        doc = _manifest(path)
        revision = doc.get("revision") or {}
        history.append(
            {
                "number": number,
                "folder": name,
                "reason": revision.get("reason"),
                "of": revision.get("of"),
                "signatures": doc.get("signatures", []),
                "changes": revision.get("changes", []),
                "table_version": doc.get("table_version"),
            }
        )
    return history


_NO_CHANGE = "no change in figures or items"


def revision_lines(history: list[dict[str, Any]]) -> list[str]:
    """One line per revision: number, folder, why, who signed, how many changes (the first
    few named)."""
    lines = []
    for rev in history:
        signed = _who(rev["signatures"]) if rev["signatures"] else "not signed"
        why = f"reopened: {rev['reason']}; " if rev["reason"] else ""
        changes = rev["changes"]
        what = ""
        if rev["of"]:
            real = [c for c in changes if c != _NO_CHANGE]
            if not real:
                what = f"; {_NO_CHANGE} against {rev['of']}"
            else:
                shown = "; ".join(real[:3]) + (
                    f"; and {len(real) - 3} more" if len(real) > 3 else ""
                )
                plural = "s" if len(real) != 1 else ""
                what = f"; {len(real)} change{plural} against {rev['of']}: {shown}"
        lines.append(
            f"revision {rev['number']} ({rev['folder']}, table version {rev['table_version']}): "
            f"{why}{signed}{what}"
        )
    return lines


def history_block(history: list[dict[str, Any]]) -> str:
    """The index's list of the month's revisions (empty for a month with one report)."""
    import html

    if len(history) < 2:
        return ""
    rows = []
    for rev, line in zip(history, revision_lines(history), strict=True):
        link = (
            f'<a href="../{html.escape(rev["folder"])}/index.html">{html.escape(rev["folder"])}</a>'
        )
        rows.append(f"<li>{link}: {html.escape(line.split(': ', 1)[1])}</li>")
    return f'<section id="revisions"><h2>Revisions</h2><ul>{"".join(rows)}</ul></section>'


def _manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))


def _who(signatures: list[dict[str, Any]]) -> str:
    return ", ".join(f"{s['role']} {s['name']} on {s['at'][:10]}" for s in signatures)


@dataclass(frozen=True)
class Target:
    """Where a report of a month goes: its folder's name, and for a revision, its number, the
    signed report it revises and why."""

    name: str
    number: int = 1
    signed: Path | None = None
    reason: str | None = None


def _signed(folder: Path) -> list[dict[str, Any]]:
    return list(_manifest(folder).get("signatures", []))


def refuse_signed(out: str | os.PathLike[str], month: str, reopen: str | None) -> Target:
    """Before a report of ``month`` is written: where it goes. An unsigned newest report is
    replaced (the month's folder, or its unsigned revision ``YYYY-MM.rN``, which keeps
    comparing with the signed one); a signed one is never: with ``reopen`` the report is the
    next revision beside it.

    Raises:
        ReportSignedError: the newest report is signed and ``reopen`` is not given.
        ValueError: ``reopen`` given but empty, or for a month never signed.
    """
    if reopen is not None and not reopen.strip():
        raise ValueError('--reopen needs the reason, e.g. --reopen "late bank statement"')
    newest = newest_revision(out, month)
    if newest is None or (newest[1] == 1 and not _signed(newest[0])):
        if reopen is not None:
            raise ValueError(
                f"--reopen: the report of {month} is not signed; rerun it without --reopen"
            )
        return Target(month)
    folder, number = newest
    signatures = _signed(folder)
    if not signatures:  # an unsigned revision of a signed month: replaced, still a revision
        before = _manifest(folder).get("revision", {})
        signed = Path(out) / str(before.get("of", month))
        return Target(folder.name, number, signed, reopen or before.get("reason"))
    if reopen is None:
        raise ReportSignedError(
            f"the report of {month} ({folder.name}) is signed ({_who(signatures)}): it is "
            f'not overwritten; rerun with --reopen "why" to write a new revision beside it'
        )
    return Target(f"{month}.r{number + 1}", number + 1, folder, reopen)


def signature_block(signatures: list[dict[str, Any]]) -> str:
    """The index's signature block (between the markers), HTML."""
    import html

    if not signatures:
        body = (
            '<p class="meta">Not signed: <code>txkit report sign --month YYYY-MM '
            "--role preparer|reviewer --name NAME</code>.</p>"
        )
    else:
        rows = "".join(
            f"<li>{html.escape(s['role'])}: {html.escape(s['name'])}, {html.escape(s['at'])} "
            f"(table version {s['table_version']}, SHA-256 {html.escape(s['sha256'][:16])}...)</li>"
            for s in signatures
        )
        body = f"<section><h2>Signed</h2><ul>{rows}</ul></section>"
    return f"{BEGIN}{body}{END}"


def sign_report(
    out: str | os.PathLike[str], month: str, *, role: str, name: str, at: datetime | None = None
) -> dict[str, Any]:
    """Sign the month's newest report as ``role``; returns the signature.

    Order (a kill at any point leaves a consistent month): the register's ``signed`` event
    first (at worst an extra version kept), then ``report.json`` (atomically; the signature
    counts from here), then the index's block.

    Raises:
        ValueError: a bad role or an empty name, or no report of the month.
        ReportSignedError: the report's files changed since an earlier signature.
    """
    month = parse_month(month)
    if role not in ROLES:
        raise ValueError(f"--role {role!r} is not one of {', '.join(ROLES)}")
    if not name.strip():
        raise ValueError('--name is empty: give the signer\'s name, e.g. --name "Ada Obi"')
    newest = newest_revision(out, month)
    if newest is None:
        raise ValueError(f"no report of {month} in {out}: run txkit report --month {month} first")
    folder = newest[0]
    doc = _manifest(folder)
    digest = report_digest(folder)
    earlier = doc.get("signatures", [])
    for sig in earlier:
        if sig["sha256"] != digest:
            raise ReportSignedError(
                f"the report {folder.name} changed since {sig['role']} {sig['name']} signed it "
                f"(SHA-256 {sig['sha256'][:16]}... now {digest[:16]}...): it cannot be signed; "
                f'rerun it with --reopen "why" to make a new revision'
            )
    when = (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    signature = {
        "role": role,
        "name": name.strip(),
        "at": when,
        "table_version": doc.get("table_version"),
        "register_version": (doc.get("register") or {}).get("version"),
        "sha256": digest,
        "revision": newest[1],
    }
    store = doc.get("store")
    if store:
        append_events(
            store,
            events_frame(
                [
                    {
                        "event": "signed",
                        "month": month,
                        "role": role,
                        "actor": signature["name"],
                        "at": datetime.now(UTC),
                        "table_version": doc.get("table_version"),
                        "note": digest,
                    }
                ]
            ),
        )
    doc["signatures"] = [*earlier, signature]
    with atomic_path(folder / _MANIFEST) as tmp:
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    index = folder / "index.html"
    if index.is_file():
        text = index.read_text(encoding="utf-8")
        block = signature_block(doc["signatures"])
        text = _BLOCK.sub(lambda _: block, text) if _BLOCK.search(text) else text
        with atomic_path(index) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return signature


def signed_versions(store: str | os.PathLike[str]) -> set[int]:
    """The store's table versions that signed reports cite: no vacuum or compaction may remove
    them (the retention's ``sources`` hook).

    Raises:
        RegisterFormatError: the register was written by a newer txkit.
    """
    events, _ = read_events(store)
    cited = events.filter((pl.col("event") == "signed") & pl.col("table_version").is_not_null())
    return {int(v) for v in cited["table_version"].to_list()}


def _items(folder: Path) -> dict[str, pl.DataFrame]:
    return {
        p.name[: -len(ITEMS_SUFFIX)]: pl.read_parquet(p)
        for p in sorted(folder.glob(f"*{ITEMS_SUFFIX}"))
    }


def compare_reports(before: str | os.PathLike[str], after: str | os.PathLike[str]) -> list[str]:
    """What changed from one report of a month to another: the table version, and per
    exception list the items added and removed and the total per currency. One line each;
    ``["no change in figures or items"]`` when nothing did."""
    before, after = Path(before), Path(after)
    lines = []
    old, new = _manifest(before), _manifest(after) if (after / _MANIFEST).is_file() else {}
    if old.get("table_version") != new.get("table_version") and new:
        lines.append(f"table version {old.get('table_version')} -> {new.get('table_version')}")
    if old.get("rows") != new.get("rows") and new:
        lines.append(f"transactions {old.get('rows')} -> {new.get('rows')}")
    was, now = _items(before), _items(after)
    for name in sorted(set(was) | set(now)):
        a = was.get(name, pl.DataFrame(schema={"key": pl.String}))
        b = now.get(name, pl.DataFrame(schema={"key": pl.String}))
        added = sorted(set(b["key"].to_list()) - set(a["key"].to_list()))
        removed = sorted(set(a["key"].to_list()) - set(b["key"].to_list()))
        if added or removed:
            parts = [f"{name}: {a.height} -> {b.height} items"]
            if added:
                parts.append(f"added {_shown(added)}")
            if removed:
                parts.append(f"removed {_shown(removed)}")
            lines.append("; ".join(parts))
        was_totals, now_totals = _totals(a), _totals(b)
        for currency in sorted(set(was_totals) | set(now_totals)):
            x, y = was_totals.get(currency, "none"), now_totals.get(currency, "none")
            if x != y:
                lines.append(f"{name} total {x} -> {y}")
    return lines or [_NO_CHANGE]


def _shown(keys: list[str]) -> str:
    return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")


def _totals(frame: pl.DataFrame) -> dict[str, str]:
    """Each currency's total as text (never added across currencies; missing amounts said)."""
    if "amount" not in frame.columns or frame.is_empty():
        return {}
    return {
        code or "": format_sums(frame.filter(pl.col("currency").eq_missing(code)), "amount")
        for code, _, _ in money_sums(frame, "amount")
    }
