"""Quiet, informative progress under retries: the bar counts records and retries, the summary
line names retries by cause, per-retry lines only with ``-v``. Over real HTTP, via the CLI."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.hostile import HostileServer, Reply, Seen, json_reply, paged
from txkit.fetch.client import describe_retries

ROOT = Path(__file__).resolve().parent.parent
KEY = "progress-test-key-0123456789"
PAGES = 12


def flaky() -> object:
    """Serve 12 pages of 50; every 3rd request a 502, every 5th a 429 (Retry-After: 0),
    the 4th is dropped."""
    serve = paged(PAGES * 50, 50)
    counter = itertools.count()
    lock = threading.Lock()

    def script(seen: Seen) -> Reply:
        with lock:
            n = next(counter)
        if n == 4:
            return Reply(drop=True)
        if n % 5 == 2:
            return json_reply(
                {"success": False, "message": "slow down"}, 429, **{"Retry-After": "0"}
            )
        if n % 3 == 1:
            return Reply(502, b"<html>Bad Gateway</html>", {"Content-Type": "text/html"})
        return serve(seen)

    return script


def run(*flags: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    with HostileServer(flaky()) as server:
        base = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
        env = {
            "PYTHONPATH": str(ROOT),
            "TXKIT_BASE_URL": server.base_url,
            "TXKIT_SECRET_KEY": KEY,
            "TXKIT_PROGRESS": "1",
            # The waits between retries are not what is checked here: 0.5 s doubling waited
            # 9.7 s of the export's 11.8 s.
            "TXKIT_BACKOFF_BASE": "0.01",
            "COLUMNS": "120",
        }
        return subprocess.run(
            [sys.executable, "-m", "txkit.cli", *flags, "export", "--page-size", "50",
             "-o", "out.parquet"],
            env=base | env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )  # fmt: skip


@pytest.mark.slow
def test_default_verbosity_prints_no_retry_lines(tmp_path: Path) -> None:
    done = run(tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "retrying" not in done.stderr and "WARNING" not in done.stderr
    frames = [f for f in done.stderr.replace("\r", "\n").splitlines() if "txkit export" in f]
    assert frames, "the bar was drawn"
    assert all(f"/{PAGES * 50} " in f for f in frames[1:]), frames  # counted in records
    assert any("retries=" in f and "retries=0" not in f for f in frames)
    summary = done.stdout.strip()
    assert summary.startswith(f"exported {PAGES * 50:,} rows")
    assert "429" in summary and "5xx" in summary and "dropped" in summary, summary


@pytest.mark.slow
def test_verbose_prints_one_line_per_retry(tmp_path: Path) -> None:
    done = run("-v", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    retry_lines = [line for line in done.stderr.splitlines() if "retrying in" in line]
    summary = done.stdout.strip()
    total = int(summary.split("requests, ")[1].split(" ")[0])
    assert len(retry_lines) == total > 0, (retry_lines, summary)


@pytest.mark.parametrize(
    ("causes", "text"),
    [
        ({}, "0 retries"),
        ({"timeout": 1}, "1 retry (1 timeout)"),
        ({"5xx": 2, "429": 3, "dropped": 1}, "6 retries (3 429, 2 5xx, 1 dropped)"),
    ],
)
def test_describe_retries(causes: dict[str, int], text: str) -> None:
    assert describe_retries(causes) == text
