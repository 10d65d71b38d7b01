"""Helpers of the tests that export from a sandbox over real HTTP (the loader's and the
windows' tests): a quick-retry client, the brute-force expected ids, and the CLI's export."""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from tests.factories import invoke_cli
from txkit import Client, RetryPolicy
from txkit.sandbox import Sandbox

QUICK_RETRY = RetryPolicy(max_retries=10, backoff_base=0.01, backoff_cap=0.05)


def connect(box: Sandbox, **kw: Any) -> Client:
    """A client of ``box`` with quick retries (unless ``retry=``) and a fixed seed."""
    kw.setdefault("retry", QUICK_RETRY)
    return Client(box.base_url, box.secret_key, env_file=None, seed=1, **kw)


def utc(text: str) -> datetime:
    """An ISO timestamp such as ``2026-01-02T03:04:05.678Z`` as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def expected_ids(
    box: Sandbox,
    *,
    trans_type: list[str] | None = None,
    status: list[str] | None = None,
    currency: list[str] | None = None,
    start: date | None = None,
    end: date | None = None,
) -> list[str]:
    """Brute force over what the sandbox serves now, sorted like the loader sorts."""
    low = datetime(start.year, start.month, start.day, tzinfo=UTC) if start else None
    high = datetime(end.year, end.month, end.day, tzinfo=UTC) + timedelta(1) if end else None
    out = []
    for created, rid, rec_type, rec_status, rec_currency in _served(box):
        if trans_type and rec_type not in trans_type:
            continue
        if status and rec_status not in status:
            continue
        if currency and rec_currency not in currency:
            continue
        if low is not None and created < low:
            continue
        if high is not None and created >= high:
            continue
        out.append((created, rid))
    return [rid for _, rid in sorted(out)]


#: What the oracle reads of a served record, by its text fields (:func:`served`, which keeps
#: them by the body's bytes): parsing the 2,500 bodies and their timestamps again for every
#: expected list was 0.45 s of CPU, half of a windows test's. Bodies edited by arrivals or
#: swaps are new bytes, parsed once too.
_FIELDS: dict[Served, tuple[datetime, str, str, str, str]] = {}


def _served(box: Sandbox) -> list[tuple[datetime, str, str, str, str]]:
    """``(createdAt, id, transType, status, toCurrency)`` of each record ``box`` serves now,
    in export order: :func:`served`, with each record's ``createdAt`` parsed once a run."""
    out = []
    for row in served(box):
        fields = _FIELDS.get(row)
        if fields is None:
            fields = (utc(row.createdAt), row.id, row.transType, row.status, row.toCurrency)
            _FIELDS[row] = fields
        out.append(fields)
    return out


class Served(NamedTuple):
    """The text fields tests read of a served record (exact: JSON strings)."""

    id: str
    createdAt: str
    updatedAt: str
    transType: str
    status: str
    toCurrency: str


#: :class:`Served` of each served body, by the body's bytes (as :data:`_FIELDS`).
_SERVED: dict[bytes, Served] = {}


def served(box: Sandbox) -> list[Served]:
    """The text fields of each record ``box`` serves now, in export order: what
    :meth:`Sandbox.served_records` gives of them, each body parsed once a run. Tests that read
    a status or a timestamp of every record parsed all of them, money as ``Decimal``, each
    time (0.2 s of CPU for 6,000 records)."""
    store = box._store  # the bodies served_records() parses, under the same lock
    with store.lock:
        bodies = list(store.bodies)
    out = []
    for body in bodies:
        row = _SERVED.get(body)
        if row is None:
            rec = orjson.loads(body)
            row = Served(rec["id"], rec["createdAt"], rec["updatedAt"], rec["transType"],
                         rec["status"], rec["toCurrency"])  # fmt: skip
            _SERVED[body] = row
        out.append(row)
    return out


def export_cli(box: Sandbox, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``txkit ARGS`` against ``box`` (its URL and key in the environment), in this process."""
    env = {"TXKIT_BASE_URL": box.base_url, "TXKIT_SECRET_KEY": box.secret_key}
    return invoke_cli(*args, cwd=cwd, env=env)
