"""Helpers of the tests that export from a sandbox over real HTTP (the loader's and the
windows' tests): a quick-retry client, the brute-force expected ids, and the CLI's export."""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

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
    out = []
    for rec in box.served_records():
        created = utc(rec["createdAt"])
        if trans_type and rec["transType"] not in trans_type:
            continue
        if status and rec["status"] not in status:
            continue
        if currency and rec["toCurrency"] not in currency:
            continue
        if start and created < datetime(start.year, start.month, start.day, tzinfo=UTC):
            continue
        if end and created >= datetime(end.year, end.month, end.day, tzinfo=UTC) + timedelta(1):
            continue
        out.append((created, rec["id"]))
    return [rid for _, rid in sorted(out)]


def export_cli(box: Sandbox, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``txkit ARGS`` against ``box`` (its URL and key in the environment), in this process."""
    env = {"TXKIT_BASE_URL": box.base_url, "TXKIT_SECRET_KEY": box.secret_key}
    return invoke_cli(*args, cwd=cwd, env=env)
