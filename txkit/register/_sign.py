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

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from txkit.calendar import parse_month
from txkit.errors import ReportSignedError, one_line
from txkit.money import format_money, format_sums, money_sums
from txkit.output import atomic_path
from txkit.register._keys import (
    fingerprint,
    reopen_statement,
    signer_of,
    sshsig_sign,
    statement_of,
)
from txkit.register._lock import (
    _BLOCK,
    _MANIFEST,
    BEGIN,
    END,
    ROLES,
    SIGNATURES_DIR,
    Revision,
    chain_of,
    check_text,
    locked_message,
    login_and_host,
    month_lock,
    month_state,
    pack_files,
    report_digest,
    signature_problems,
)
from txkit.register._pdf import PDF_FILE
from txkit.register._print import make_pdf, pack_problems, plain, who_signed, write_cover
from txkit.register._ready import refuse_unready, shown_keys
from txkit.register._state import ITEMS_SUFFIX
from txkit.register._table import append_events, events_frame, read_events

__all__ = [
    "ROLES",
    "Target",
    "compare_reports",
    "newest_revision",
    "print_pack",
    "refuse_signed",
    "report_digest",
    "sign_report",
    "signature_block",
    "signed_versions",
    "signoff_block",
]


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
    out: str | os.PathLike[str],
    month: str,
    *,
    pending: tuple[str, Path] | None = None,
    events: pl.DataFrame | None = None,
) -> list[dict[str, Any]]:
    """The month's reports, oldest first: ``number`` (1 is ``YYYY-MM``), ``folder`` (its
    name), ``reason`` (why it was reopened; None for the first), ``of`` (the signed report it
    revises), ``signatures`` (role, name, at, table version, SHA-256), ``changes`` (figures
    and items against ``of``), ``table_version``. ``pending``: (its folder name, the folder
    being built) of a report not yet in place; it replaces a report of that name. With
    ``events`` (the store's register), the signatures are the register's (a pack's own
    ``report.json`` is not trusted for them)."""
    found: dict[str, tuple[int, Path]] = {}
    for path in Path(out).glob(f"{month}*"):
        number = _revision(path.name, month)
        if number is not None and (path / _MANIFEST).is_file():
            found[path.name] = (number, path)
    if pending is not None:
        number = _revision(pending[0], month)
        if number is not None:
            found[pending[0]] = (number, Path(pending[1]))
    state = month_state(events, month) if events is not None else None
    history = []
    for name, (number, path) in sorted(found.items(), key=lambda kv: kv[1][0]):
        try:
            doc = _manifest(path)
        except ValueError:
            doc = {}
        doc = doc if isinstance(doc, dict) else {}
        revision = doc.get("revision") if isinstance(doc.get("revision"), dict) else {}
        if state is not None:
            rev = state.revisions.get(number)
            doc["signatures"] = rev.signatures if rev is not None else []
        # A pack's report.json is data that may have been edited: only the shapes it is
        # written in are taken (text, a list of text, a list of signature objects).
        changes = revision.get("changes")
        signatures = doc.get("signatures")
        history.append(
            {
                "number": number,
                "folder": name,
                "reason": _text_or_none(revision.get("reason")),
                "of": _text_or_none(revision.get("of")),
                "signatures": [
                    s
                    for s in signatures
                    if isinstance(s, dict) and {"role", "name", "at"} <= set(s)
                ]
                if isinstance(signatures, list)
                else [],
                "changes": [str(c) for c in changes] if isinstance(changes, list) else [],
                "table_version": doc.get("table_version"),
            }
        )
    return history


def _is_signature(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(k), str) for k in ("role", "name", "at")
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_NO_CHANGE = "no change in figures or items"


def revision_lines(history: list[dict[str, Any]]) -> list[str]:
    """One line per revision: number, folder, why, who signed, how many changes (the first
    few named)."""
    lines = []
    for rev in history:
        signed = who_signed(rev["signatures"]) if rev["signatures"] else "not signed"
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
            plain(
                f"revision {rev['number']} ({rev['folder']}, table version "
                f"{_int(rev['table_version'])}): {why}{signed}{what}"
            )
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


@dataclass(frozen=True)
class Target:
    """Where a report of a month goes: its folder's name, and for a revision, its number, the
    signed report it revises and why."""

    name: str
    number: int = 1
    signed: Path | None = None
    reason: str | None = None
    #: Who reopened the month, signed (:func:`sign_reopening`), for a new revision.
    reopened: dict[str, Any] | None = None


def _folder_of(out: str | os.PathLike[str], rev: Revision) -> Path:
    name = rev.name or ""
    here = Path(out) / name
    if name and here.is_dir():
        return here
    return Path(rev.folder) if rev.folder else here


def refuse_signed(
    out: str | os.PathLike[str],
    month: str,
    reopen: str | None,
    *,
    events: pl.DataFrame | None = None,
) -> Target:
    """Before a report of ``month`` is written: where it goes, from the month's state in the
    store's register (``events``; the lock is the store's, whatever ``out`` is). A month not
    locked is reported again in place (its newest revision, whose lapsed signatures must be
    given again); a locked one only with ``reopen``, as the next revision beside it.

    Raises:
        ReportSignedError: the month is locked and ``reopen`` is not given.
        ValueError: ``reopen`` not printable text or empty, or given for a month not locked.
    """
    reopen = check_text(reopen, "--reopen", example=' e.g. --reopen "late bank statement"')
    state = month_state(events if events is not None else events_frame([]), month)
    newest = state.newest
    if not state.locked:
        if reopen is not None:
            where = f"revision {newest.number}, {state.who()}" if newest else "never reported"
            raise ValueError(
                f"--reopen: {month} is not locked ({where}); rerun it without --reopen"
            )
        if newest is None or newest.number == 1:
            return Target(month)
        before = state.revisions.get(newest.number - 1) or Revision(newest.number - 1)
        return Target(
            f"{month}.r{newest.number}",
            newest.number,
            _folder_of(out, before),
            newest.reason,
        )
    assert newest is not None
    if reopen is None:
        raise ReportSignedError(locked_message(state, f"txkit report --month {month}"))
    return Target(f"{month}.r{newest.number + 1}", newest.number + 1, _folder_of(out, newest),
                  reopen)  # fmt: skip


def signature_block(signatures: list[dict[str, Any]], *, as_of: int | None = None) -> str:
    """The index's signature block (between the markers), HTML; every field escaped.
    ``as_of``: a rendering again of that table version (read-only, never signed)."""
    import html

    if as_of is not None:
        body = (
            f'<p class="meta">Rendered again from table version {_int(as_of)} with --as-of: '
            "read-only, not a pack of the register and never signed (the month's sign-off: "
            "<code>txkit report verify --month YYYY-MM</code>).</p>"
        )
    elif not signatures:
        body = (
            '<p class="meta">Not signed: <code>txkit report sign --month YYYY-MM '
            "--role preparer|reviewer --key ~/.ssh/id_ed25519</code> (the preparer first, then "
            "a reviewer who is another person, each with a key of the project's "
            "allowed_signers).</p>"
        )
    else:

        def text(value: Any) -> str:  # escaped, and no control byte (an ESC) reaches HTML
            return html.escape(plain(str(value)))

        rows = "".join(
            f"<li>{text(s['role'])}: {text(s['name'])} "
            f"(key {text(s.get('key') or 'none')}), {text(s['at'])}, "
            f"revision {_int(s.get('revision'))} (table version {_int(s.get('table_version'))}, "
            f"SHA-256 {text(str(s['sha256'])[:16])}...)</li>"
            for s in signatures
        )
        body = f"<section><h2>Signed</h2><ul>{rows}</ul></section>"
    return f"{BEGIN}{body}{END}"


def _int(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def _same_store(a: Any, b: str | os.PathLike[str]) -> bool:
    if not isinstance(a, str) or not a:
        return False
    if "://" in a or "://" in str(b):
        return a.rstrip("/") == str(b).rstrip("/")
    return Path(a).resolve() == Path(b).resolve()


def _checked_manifest(
    folder: Path, month: str, store: str | os.PathLike[str], rev: Revision
) -> dict[str, Any]:
    """Read as data that may have been edited: checked for this month, store and recorded table
    version."""
    where = folder / _MANIFEST
    try:
        doc = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{where} cannot be read as JSON ({one_line(exc, 80)})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{where} is not a report's manifest (a JSON object)")
    if doc.get("month") != month:
        raise ValueError(f"{where} is not a report of {month} (month {doc.get('month')!r})")
    if not _same_store(doc.get("store"), store):
        raise ValueError(
            f"{where} names the store {str(doc.get('store'))[:200]!r}, not this project's "
            f"store {store}: it is not signed (--store names the store the report read)"
        )
    version = doc.get("table_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"{where}: table_version {version!r} is not a table version (integer)")
    if rev.table_version is not None and version != rev.table_version:
        raise ValueError(
            f"{where} cites table version {version}; the register recorded "
            f"{rev.table_version} for this report"
        )
    return doc


def sign_report(
    out: str | os.PathLike[str],
    month: str,
    *,
    role: str,
    key: str | os.PathLike[str],
    store: str | os.PathLike[str],
    allowed_signers: str | os.PathLike[str] | None = None,
    at: datetime | None = None,
) -> dict[str, Any]:
    """Sign the month's newest revision as ``role`` with the signer's own key; returns the
    signature.

    Who signs is the key: it must be listed in the project's ``allowed_signers``
    (:func:`~txkit.register._keys.load_allowed_signers`), whose principal is the name shown.
    The month's state comes from the store's register, never from the pack's own files: the
    preparer signs first, then a reviewer who is another person (another key, a name that
    reads differently); each role once a revision; the pack must be the bytes its report
    recorded (:func:`verify_report`). The signed text (:func:`statement_of`) names the pack's
    digest and files, the register's version and the month's previous signature; its SSHSIG
    signature and the text go into the pack's ``signatures/`` and the register.

    Order (a kill at any point leaves a consistent month): ``signatures/ROLE.txt`` and
    ``.sig`` (outside the pack's digest; removed again if the register is not written), the
    register's ``signed`` event (the signature counts from here), then ``report.json`` and
    the index's block, both copies of the register's.

    Raises:
        ValueError: a bad role or key, no report of the month, a pack's manifest that is not
            the register's report of the month.
        DataFileError: ``allowed_signers`` missing or malformed.
        ReportSignedError: a key not allowed, segregation of duties, the pack changed, or a
            report of the month is running (each one line).
    """
    month = parse_month(month)
    if role not in ROLES:
        raise ValueError(f"--role {role!r} is not one of {', '.join(ROLES)}")
    private, blob, name = signer_of(key, allowed_signers)
    login, host = login_and_host()
    with month_lock(store, month, wait=2.0, what=f"a signature of {month} (txkit report sign)"):
        events, register_version = read_events(store)
        state = month_state(events, month)
        newest = state.newest
        if newest is None:
            raise ValueError(
                f"the register of {store} has no report of {month}: run txkit report --month "
                f"{month} first (--store names the store the report read)"
            )
        folder = _folder_of(out, newest)
        doc = _checked_manifest(folder, month, store, newest)
        if newest.files is not None and PDF_FILE not in newest.files and not newest.signatures:
            make_pdf(folder, month, store, newest)  # signed with the pack: made before the first
            events, register_version = read_events(store)
            state = month_state(events, month)
            newest = state.newest or newest
        digest = _unchanged_pack(folder, month, newest)
        why = signature_problems(state, role, name, fingerprint(blob))
        if why:
            raise ReportSignedError(why)
        refuse_unready(store, events, month, role, folder.name)
        # The time is shown, never used to order or decide: the register's commits order.
        when = at or datetime.now(UTC)
        previous = state.signatures[-1]["chain"] if state.signatures else ""
        signature: dict[str, Any] = {
            "month": month,
            "revision": newest.number,
            "role": role,
            "name": name,
            "login": login,
            "host": host,
            "at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "table_version": newest.table_version,
            "register_version": register_version,
            "sha256": digest,
            "key": fingerprint(blob),
            "previous": previous or None,
        }
        statement = statement_of(signature, pack_files(folder))
        signature["chain"] = chain_of(previous or "", signature)
        signature["statement"] = statement
        signature["sshsig"] = sshsig_sign(private, statement.encode("utf-8"))
        written = _write_signature_files(folder, role, statement, signature["sshsig"])
        try:
            append_events(store, _signed_event(signature, when, newest))
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise
        signatures = [*newest.signatures, signature]
        doc["signatures"] = [_shown_fields(s) for s in signatures]
        with atomic_path(folder / _MANIFEST) as tmp:
            tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        write_signature_block(folder, signatures)
    return signature


def print_pack(out: str | os.PathLike[str], month: str, *, store: str | os.PathLike[str]) -> Path:
    """Make the month's newest revision's ``pack.pdf`` (:mod:`txkit.register._pdf`) and record
    it in the register (a ``printed`` event naming its body's digest): the pack's pages laid
    out once, before the first signature; ``txkit report sign`` makes it when it is missing.
    Returns its path.

    Raises:
        ValueError: no report of the month, a pack's manifest that is not the register's.
        ReportSignedError: the revision is signed already (its PDF is what was signed), the
            pack is not the bytes its report wrote, or a report of the month is running.
    """
    month = parse_month(month)
    with month_lock(store, month, wait=2.0, what=f"the PDF of {month} (txkit report pdf)"):
        events, _ = read_events(store)
        newest = month_state(events, month).newest
        if newest is None:
            raise ValueError(
                f"the register of {store} has no report of {month}: run txkit report --month "
                f"{month} first (--store names the store the report read)"
            )
        folder = _folder_of(out, newest)
        _checked_manifest(folder, month, store, newest)
        make_pdf(folder, month, store, newest)
    return folder / PDF_FILE


def sign_reopening(
    target: Target,
    month: str,
    *,
    key: str | os.PathLike[str],
    store: str | os.PathLike[str],
    allowed_signers: str | os.PathLike[str] | None = None,
) -> Target:
    """``target`` (a new revision of a locked month) with its reopening signed by ``key``'s
    holder (a key ``allowed_signers`` lists): who reopened and why, provably.

    Raises:
        ReportSignedError: the key is not listed.
        ValueError: the key cannot be used.
    """
    private, blob, name = signer_of(key, allowed_signers)
    events, register_version = read_events(store)
    state = month_state(events, month)
    signed = state.revisions.get(target.number - 1)
    statement = reopen_statement(
        month, target.number, signed.name if signed and signed.name else month,
        signed.pack if signed and signed.pack else "", target.reason or "", name,
        fingerprint(blob), register_version,
    )  # fmt: skip
    reopened = {
        "name": name,
        "key": fingerprint(blob),
        "statement": statement,
        "sshsig": sshsig_sign(private, statement.encode("utf-8")),
    }
    return Target(target.name, target.number, target.signed, target.reason, reopened)


def _shown_fields(signature: dict[str, Any]) -> dict[str, Any]:
    """A signature as report.json shows it (the signed text and signature are in
    ``signatures/``)."""
    return {k: v for k, v in signature.items() if k not in ("statement", "sshsig", "previous")}


def _write_signature_files(folder: Path, role: str, statement: str, sshsig: str) -> list[Path]:
    where = folder / SIGNATURES_DIR
    where.mkdir(exist_ok=True)
    written = []
    for path, text in ((where / f"{role}.txt", statement), (where / f"{role}.sig", sshsig)):
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written


def _unchanged_pack(folder: Path, month: str, newest: Revision) -> str:
    problems = pack_problems(folder, newest.files)
    digest = report_digest(folder)
    if newest.pack is not None and digest != newest.pack and not problems:
        problems = [f"its digest {digest[:16]}... is not the recorded {newest.pack[:16]}..."]
    if problems:
        raise ReportSignedError(
            f"the report {folder.name} is not the pack its report wrote ({'; '.join(problems)}"
            f"): it cannot be signed; txkit report verify --month {month} says more"
        )
    return digest


def _signed_event(signature: dict[str, Any], when: datetime, newest: Revision) -> pl.DataFrame:
    detail = {
        k: signature[k]
        for k in ("login", "host", "revision", "register_version", "key", "statement", "sshsig")
    }
    return events_frame(
        [
            {
                "event": "signed",
                "month": signature["month"],
                "role": signature["role"],
                "actor": signature["name"],
                "at": when,
                "table_version": newest.table_version,
                "note": signature["sha256"],
                "key": signature["chain"],
                "explanation": json.dumps(detail, sort_keys=True),
            }
        ]
    )


def signoff_block(signatures: list[dict[str, Any]]) -> str:
    """The close summary's sign-off lines (between the markers): who prepared and who
    reviewed, their key and when, blank until signed; every field escaped."""
    import html

    by_role = {s["role"]: s for s in signatures}
    rows = []
    for role, label in (("preparer", "Prepared by"), ("reviewer", "Reviewed by")):
        sig = by_role.get(role)
        who = ""
        if sig:
            key = html.escape(plain(str(sig.get("key"))))
            who = f"{html.escape(plain(str(sig['name'])))} (key {key})"
        when = html.escape(plain(str(sig["at"]))) if sig else ""
        rows.append(
            f'<tr><td>{label}</td><td class="line">{who}</td><td>Date</td>'
            f'<td class="line">{when}</td></tr>'
        )
    return f'{BEGIN}<table class="sign">{"".join(rows)}</table>{END}'


#: Each signed page and the block signing writes into it.
_BLOCKS = (("index.html", signature_block), ("00_close_summary.html", signoff_block))


def write_signature_block(folder: Path, signatures: list[dict[str, Any]]) -> None:
    """Rewrite the signature blocks (between the markers) of the index and the close summary
    with ``signatures``, and pack.pdf's cover (its body copied as it is)."""
    write_cover(folder, signatures)
    for name, render in _BLOCKS:
        page = folder / name
        if page.is_file():
            text = page.read_text(encoding="utf-8")
            block = render(signatures)
            text = _BLOCK.sub(lambda _, b=block: b, text) if _BLOCK.search(text) else text
            with atomic_path(page) as tmp:
                tmp.write_text(text, encoding="utf-8")


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
                parts.append(f"added {shown_keys(added)}")
            if removed:
                parts.append(f"removed {shown_keys(removed)}")
            lines.append("; ".join(parts))
        was_totals, now_totals = _totals(a), _totals(b)
        for currency in sorted(set(was_totals) | set(now_totals)):
            x, y = was_totals.get(currency, "none"), now_totals.get(currency, "none")
            if x != y:
                lines.append(f"{name} total {x} -> {y}")
    lines += _figure_lines(before, after)
    lines += _close_lines(before, after)
    lines += _register_lines(before, after)
    return lines or [_NO_CHANGE]


def _figure_lines(before: Path, after: Path) -> list[str]:
    lines = []
    names = sorted({p.name for d in (before, after) for p in d.glob("*.download.json")})
    for file in names:
        old, new = _json(before / file), _json(after / file)
        list_name = file[: -len(".download.json")]
        for key in sorted(set(old) | set(new)):
            x, y = old.get(key), new.get(key)
            if x != y and all(isinstance(v, (int, float, type(None))) for v in (x, y)):
                lines.append(f"{list_name} {key} {_num(x)} -> {_num(y)}")
    return lines


#: The close summary's figures as data (txkit.report._pages.write_close_summary).
_CLOSE_FIGURES = "00_close_summary.json"


def _close_lines(before: Path, after: Path) -> list[str]:
    old, new = _json(before / _CLOSE_FIGURES), _json(after / _CLOSE_FIGURES)
    if not old and not new:
        return []

    def cells(doc: dict[str, Any]) -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        for entry in doc.get("lines") or []:
            if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict):
                for code, value in entry[1].items():
                    out[(str(entry[0]), str(code))] = "none" if value is None else str(value)
        for entry in doc.get("exceptions") or []:
            if isinstance(entry, list) and len(entry) == 5:
                title, code, items, amount, material = entry
                where = f"exceptions {title}"
                out[(f"{where} items", str(code))] = str(items)
                out[(f"{where} at stake", str(code))] = str(amount)
                out[(f"{where} material", str(code))] = str(material)
        return out

    was, now = cells(old), cells(new)
    return [
        f"close summary: {label} {code} {was.get((label, code), 'none')} -> "
        f"{now.get((label, code), 'none')}"
        for label, code in sorted(set(was) | set(now))
        if was.get((label, code), "none") != now.get((label, code), "none")
    ]


def _num(value: Any) -> str:
    return "none" if value is None else f"{value:,}"


def _json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _register_csv(folder: Path) -> pl.DataFrame | None:
    path = folder / "exceptions.csv"
    if not path.is_file():
        return None
    frame = pl.read_csv(path, infer_schema=False)
    needed = {"key", "section", "currency", "amount", "status", "material"}
    return frame if needed <= set(frame.columns) else None


def _register_lines(before: Path, after: Path) -> list[str]:
    a, b = _register_csv(before), _register_csv(after)
    if a is None or b is None:
        return []
    lines = []
    still = pl.col("status").is_in(["open", "explained"])
    material = pl.col("material") == "true"

    def counts(frame: pl.DataFrame) -> tuple[int, int]:
        return frame.filter(still).height, frame.filter(still & material).height

    (ao, am), (bo, bm) = counts(a), counts(b)
    if (ao, am) != (bo, bm):
        lines.append(f"register: open items {ao} -> {bo}, of them material {am} -> {bm}")
    for section in sorted(set(a["section"].to_list()) | set(b["section"].to_list())):
        x = counts(a.filter(pl.col("section") == section))
        y = counts(b.filter(pl.col("section") == section))
        if x != y:
            lines.append(f"register {section}: open {x[0]} -> {y[0]}, material {x[1]} -> {y[1]}")
    old = {r["key"]: r for r in a.iter_rows(named=True)}
    new = {r["key"]: r for r in b.iter_rows(named=True)}
    groups: dict[str, list[str]] = {}
    for key in sorted(set(new) - set(old)):
        groups.setdefault("added", []).append(key)
    for key in sorted(set(old) - set(new)):
        groups.setdefault("removed", []).append(key)
    for key in sorted(set(old) & set(new)):
        x, y = old[key], new[key]
        if x["status"] != y["status"]:
            if y["status"] in ("resolved", "written_off") and x["status"] in ("open", "explained"):
                groups.setdefault("resolved", []).append(f"{key} ({y['status']})")
            else:
                groups.setdefault("changed in status", []).append(
                    f"{key} ({x['status']} -> {y['status']})"
                )
        if x["amount"] != y["amount"]:
            groups.setdefault("changed in amount", []).append(
                f"{key} ({_money(x['amount'], x['currency'])} -> "
                f"{_money(y['amount'], y['currency'])})"
            )
        if x["material"] != y["material"]:
            now = "now material" if y["material"] == "true" else "no longer material"
            groups.setdefault("changed in materiality", []).append(f"{key} ({now})")
    for what in ("added", "removed", "resolved", "changed in status", "changed in amount",
                 "changed in materiality"):  # fmt: skip
        if what in groups:
            keys = groups[what]
            lines.append(f"register items {what}: {len(keys)} ({shown_keys(keys)})")
    return lines


def _money(text: str | None, currency: str | None) -> str:
    from decimal import Decimal, InvalidOperation

    if text is None:
        return "none"
    try:
        return f"{format_money(Decimal(text))} {currency or ''}".rstrip()
    except InvalidOperation:
        return text


def _totals(frame: pl.DataFrame) -> dict[str, str]:
    """Never added across currencies; missing amounts said."""
    if "amount" not in frame.columns or frame.is_empty():
        return {}
    return {
        code or "": format_sums(frame.filter(pl.col("currency").eq_missing(code)), "amount")
        for code, _, _ in money_sums(frame, "amount")
    }
