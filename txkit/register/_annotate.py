"""Who annotated an item, provably: the operating system's account beside the declared name,
and, with ``--key``, an SSHSIG signature by a key the project's ``allowed_signers`` lists.

An annotation (``txkit exceptions explain`` / ``import``) records in its event's ``note`` a
JSON document: ``account`` (:func:`~txkit.register._lock.os_account`, never ``LOGNAME`` or
``USER``) and ``host``; when signed, also ``key`` (the fingerprint), ``register_version``,
``statement`` (the text signed, :func:`annotation_statement`) and ``sshsig``. The declared name
(``actor``) of a signed annotation is the name ``allowed_signers`` gives the key.

A write-off of a material item needs a key once the project has an ``allowed_signers`` file:
it closes money at stake without a correction, which a controller wants to attribute to a
person, not to a typed name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from txkit import config
from txkit.errors import ReportSignedError
from txkit.register._keys import (
    Signer,
    fingerprint,
    fold_name,
    signer_of,
    sshsig_sign,
    sshsig_verify,
)
from txkit.register._lock import login_and_host

__all__ = [
    "annotation_problems",
    "annotation_statement",
    "made_by",
    "needs_key",
    "provenance",
]

#: The fields an annotation's signature covers, in the signed text's order.
_FIELDS = ("key", "month", "status", "category", "owner", "explanation")


def annotation_statement(
    change: dict[str, Any], name: str, account: str, key: str, register_version: int | None
) -> str:
    """The text the author of an annotation signs: the item, the month whose register it
    changes, what it sets (``-`` for what it leaves), who (the name and key, the account) and
    the register's version it was made at."""
    lines = ["txkit annotation"]
    lines += [f"{field} {change.get(field) if change.get(field) is not None else '-'}"
              for field in _FIELDS]  # fmt: skip
    lines += [f"signer {name}", f"key {key}", f"account {account}",
              f"register-version {register_version}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def provenance(
    changes: list[dict[str, Any]],
    *,
    by: str | None,
    key: str | os.PathLike[str] | None,
    allowed_signers: str | os.PathLike[str] | None,
    month: str | None,
    register_version: int | None,
) -> tuple[str, list[str]]:
    """The declared name of ``changes`` and each one's ``note`` document (JSON).

    Without ``key``: ``by`` (default: the account). With it: the name ``allowed_signers``
    gives the key (a ``by`` that does not read as that name is refused), and each change
    signed.

    Raises:
        ReportSignedError: the key is not listed, or ``by`` names another person.
        ValueError: the key cannot be used.
    """
    account, host = login_and_host()
    if key is None:
        doc = json.dumps({"account": account, "host": host}, sort_keys=True)
        return by or account, [doc] * len(changes)
    private, blob, name = signer_of(key, allowed_signers)
    if by is not None and fold_name(by) != fold_name(name):
        raise ReportSignedError(
            f"--by {by!r} is not the key's holder: allowed_signers names {key} {name!r} (with "
            "--key the key says who you are; leave --by out)"
        )
    docs = []
    for change in changes:
        statement = annotation_statement({**change, "month": month}, name, account,
                                         fingerprint(blob), register_version)  # fmt: skip
        docs.append(json.dumps({
            "account": account, "host": host, "key": fingerprint(blob),
            "register_version": register_version, "statement": statement,
            "sshsig": sshsig_sign(private, statement.encode("utf-8")),
        }, sort_keys=True))  # fmt: skip
    return name, docs


def needs_key(
    changes: list[dict[str, Any]], view: pl.DataFrame, allowed_signers: Path | None
) -> str | None:
    """Why ``changes`` need ``--key``: a write-off of a material item while the project has an
    ``allowed_signers`` file (None: they do not)."""
    where = allowed_signers if allowed_signers is not None else config.allowed_signers_path()
    if not where.is_file():
        return None
    offs = {c["key"] for c in changes if c.get("status") == "written_off"}
    material = view.filter(pl.col("key").is_in(offs) & pl.col("material"))
    if material.is_empty():
        return None
    first = material.row(0, named=True)
    more = f" and {material.height - 1} more" if material.height > 1 else ""
    return (
        f"writing off {first['key']} ({first['amount']} {first['currency']} at stake, material "
        f"from {first['threshold']}){more} needs your signature: give --key PATH (your key "
        f"in {where.name}; a write-off closes material money without a correction)"
    )


def made_by(row: dict[str, Any]) -> tuple[str | None, str | None]:
    """An annotation event's account and, when signed, its key's fingerprint."""
    doc = _doc(row.get("note"))
    key = doc.get("key") if doc.get("sshsig") else None
    return doc.get("account"), key


def _doc(text: Any) -> dict[str, Any]:
    try:
        doc = json.loads(text) if isinstance(text, str) and text.startswith("{") else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def annotation_problems(notes: pl.DataFrame, signers: list[Signer]) -> list[str]:
    """Why the signed annotations among ``notes`` (``annotated`` events) do not prove who made
    them: a signature that does not verify against ``allowed_signers``, another signer than
    the name recorded, or a text that is not the event's (its fields changed after signing)."""
    problems = []
    for row in notes.iter_rows(named=True):
        doc = _doc(row.get("note"))
        if not doc.get("sshsig"):
            continue
        who = f"the annotation of {row['key']} by {row['actor']}"
        try:
            signer = sshsig_verify(str(doc["sshsig"]), str(doc.get("statement", "")).encode(),
                                   signers)  # fmt: skip
        except ValueError as exc:
            problems.append(f"{who}: {exc}")
            continue
        expected = annotation_statement(
            row, row["actor"], str(doc.get("account")), fingerprint(signer.key),
            doc.get("register_version"),
        )  # fmt: skip
        if signer.principal != row["actor"]:
            problems.append(f"{who}: signed by {signer.principal}, not by {row['actor']}")
        elif doc.get("statement") != expected:
            problems.append(f"{who}: the register's event is not the text signed (changed "
                            "after signing)")  # fmt: skip
    return problems
