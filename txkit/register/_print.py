"""A pack's PDF as the register keeps it: made before the first signature and recorded
(a ``printed`` event naming its body's digest), its cover made again after each signature
(:mod:`txkit.register._pdf` lays it out); and the checks both need."""

from __future__ import annotations

import json
import os
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from txkit.errors import ReportSignedError
from txkit.output import atomic_path
from txkit.register._lock import Revision, pack_files
from txkit.register._pdf import PDF_FILE, render_pdf, with_new_cover
from txkit.register._table import append_events, events_frame

__all__ = ["cover_lines", "make_pdf", "pack_problems", "plain", "who_signed", "write_cover"]


def pack_problems(
    folder: Path, recorded: dict[str, str] | None, *, leave_out: tuple[str, ...] = ()
) -> list[str]:
    """The files of ``folder`` changed, added or missing against those its report recorded
    in the register (each named; empty when it verifies); ``leave_out``: files not compared."""
    if not folder.is_dir():
        return [f"the folder {folder} is missing"]
    if recorded is None:
        return []
    now = {k: v for k, v in pack_files(folder).items() if k not in leave_out}
    recorded = {k: v for k, v in recorded.items() if k not in leave_out}
    out = []
    changed = sorted(r for r in now if r in recorded and now[r] != recorded[r])
    added = sorted(set(now) - set(recorded))
    missing = sorted(set(recorded) - set(now))
    for what, names in (("changed", changed), ("added", added), ("missing", missing)):
        if names:
            out.append(f"{what}: {', '.join(names)}")
    return out


def plain(text: str) -> str:
    """``text`` for a terminal: every control or format character (an escape that would
    erase lines, a newline that would fake one) shown as ``\\x1b``-style text."""
    return "".join(
        ch if unicodedata.category(ch)[0] != "C" else ch.encode("unicode_escape").decode()
        for ch in str(text)
    )


def make_pdf(folder: Path, month: str, store: str | os.PathLike[str], newest: Revision) -> None:
    """``pack.pdf`` in ``folder`` (the newest revision, not signed), then its ``printed``
    event; a failure of the event puts the previous file back (or none)."""
    if newest.signatures:
        raise ReportSignedError(
            f"revision {newest.number} of {month} ({folder.name}) is signed already (by "
            f"{who_signed(newest.signatures)}): its pack.pdf is what they signed; signing "
            "makes its cover again"
        )
    problems = pack_problems(folder, newest.files, leave_out=(PDF_FILE,))
    if problems:
        raise ReportSignedError(
            f"the report {folder.name} is not the pack its report wrote ({'; '.join(problems)}"
            f"): its PDF is not made; txkit report verify --month {month} says more"
        )
    path = folder / PDF_FILE
    before = path.read_bytes() if path.is_file() else None
    data = render_pdf(folder, folder.name, cover_lines([]))
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    try:
        digest = pack_files(folder)[PDF_FILE]
        event = {
            "event": "printed",
            "month": month,
            "at": datetime.now(UTC),
            "table_version": newest.table_version,
            "note": digest,
            "explanation": json.dumps({"revision": newest.number, "file": PDF_FILE}),
        }
        append_events(store, events_frame([event]))
    except BaseException:
        if before is None:
            path.unlink(missing_ok=True)
        else:
            with atomic_path(path) as tmp:
                tmp.write_bytes(before)
        raise


def cover_lines(signatures: list[dict[str, Any]]) -> list[str]:
    """pack.pdf's sign-off lines (its cover): who prepared and who reviewed, their key and
    when, or "not signed"; as the close summary's sign-off shows them."""
    by_role = {s["role"]: s for s in signatures}
    lines = []
    for role, label in (("preparer", "Prepared by"), ("reviewer", "Reviewed by")):
        sig = by_role.get(role)
        if sig is None:
            lines.append(f"{label}: not signed")
        else:
            lines.append(
                f"{label}: {plain(str(sig['name']))} (key {plain(str(sig.get('key')))}), "
                f"{plain(str(sig['at']))}"
            )
    return lines


def who_signed(signatures: list[dict[str, Any]]) -> str:
    """``preparer Ada Obi on 2026-11-02, ...``."""
    return ", ".join(f"{s['role']} {s['name']} on {s['at'][:10]}" for s in signatures)


def write_cover(folder: Path, signatures: list[dict[str, Any]]) -> None:
    """pack.pdf's cover (page 1) made again with ``signatures``; its body copied as it is."""
    pdf = folder / PDF_FILE
    if pdf.is_file() and signatures:
        data = with_new_cover(pdf, folder.name, cover_lines(signatures))
        with atomic_path(pdf) as tmp:
            tmp.write_bytes(data)
