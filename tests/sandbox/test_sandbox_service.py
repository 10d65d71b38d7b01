"""The Sandbox context manager and the ``txkit sandbox`` command (a real subprocess where it
serves and stops on a signal; in this process where it refuses to start)."""

from __future__ import annotations

import http.client
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sandbox_helpers import client_for

from tests.factories import invoke_cli_all_stderr
from txkit.fetch.client import tls_context
from txkit.sandbox import Sandbox
from txkit.sandbox.ledger import Ledger

# -- the Sandbox object -------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", ""])
def test_non_loopback_hosts_are_refused(ledger: Ledger, host: str) -> None:
    with pytest.raises(ValueError, match="refusing to serve on non-loopback host"):
        Sandbox(ledger=ledger, host=host)
    Sandbox(ledger=ledger, host=host, allow_remote=True)  # allowed explicitly (not started)


def test_localhost_and_ipv6_loopback(ledger: Ledger) -> None:
    with Sandbox(ledger=ledger, host="localhost") as sb, client_for(sb) as c:
        assert c.get("/transaction").status_code == 200
    try:
        sb6 = Sandbox(ledger=ledger, host="::1").start()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert sb6.base_url.startswith("http://[::1]:")
        with client_for(sb6) as c:
            assert c.get("/transaction").status_code == 200
    finally:
        sb6.stop()


def test_keys_are_random_per_instance_and_kept_out_of_repr(ledger: Ledger) -> None:
    a, b = Sandbox(ledger=ledger), Sandbox(ledger=ledger)
    assert re.fullmatch(r"sk_sandbox_[0-9a-f]{32}", a.secret_key)
    assert a.secret_key != b.secret_key
    with a:
        assert a.secret_key not in repr(a)
        assert a.base_url in repr(a)
    given = Sandbox(ledger=ledger, secret_key="sk_sandbox_given")
    assert given.secret_key == "sk_sandbox_given"
    with given:
        headers = {"Authorization": "Bearer sk_sandbox_given"}
        assert (
            httpx.get(
                f"{given.base_url}/transaction", headers=headers, verify=tls_context()
            ).status_code
            == 200
        )


@pytest.mark.slow
def test_lifecycle(ledger: Ledger, tmp_path: Path) -> None:
    sb = Sandbox(ledger=ledger, data_dir=tmp_path / "data")
    with pytest.raises(RuntimeError, match="not running"):
        _ = sb.base_url
    with sb:
        assert sb.request_count == 0
        with client_for(sb) as c:
            c.get("/transaction")
            c.get("/nope")
            c.get("/transaction", params={"limit": 0})
        httpx.get(f"{sb.base_url}/transaction", verify=tls_context())
        assert sb.request_count == 4
        port = sb.port
    assert (tmp_path / "data" / "orders.csv").read_bytes() == ledger.orders_csv()
    assert (tmp_path / "data" / "ground_truth.json").read_bytes() == ledger.ground_truth_json()
    sb.stop()  # idempotent
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/transaction", timeout=2, verify=tls_context())


def test_a_ledger_is_generated_when_none_is_given() -> None:
    with Sandbox(seed=2, records=700, anomaly_rate=0, faults="cap=3") as sb:
        assert sb.ledger.records == 700 and sb.ledger.ground_truth == []
        assert str(sb.faults) == "cap=3"
        with client_for(sb) as c:
            data = c.get("/transaction").json()["data"]
        assert data["total"] == 700 and len(data["transactions"]) == 3


def test_an_explicit_port(ledger: Ledger) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Sandbox(ledger=ledger, port=port) as sb:
        assert sb.base_url == f"http://127.0.0.1:{port}"
        with client_for(sb) as c:
            assert c.get("/transaction").status_code == 200


def test_bad_faults_type_is_rejected(ledger: Ledger) -> None:
    with pytest.raises(TypeError, match="faults must be"):
        Sandbox(ledger=ledger, faults=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown fault"):
        Sandbox(ledger=ledger, faults="nope=1")


def test_stop_closes_keep_alive_connections(ledger: Ledger) -> None:
    sb = Sandbox(ledger=ledger).start()
    conn = http.client.HTTPConnection("127.0.0.1", sb.port, timeout=5)
    headers = {"Authorization": f"Bearer {sb.secret_key}"}
    conn.request("GET", "/transaction?limit=1", headers=headers)
    assert conn.getresponse().read()
    started = time.perf_counter()
    sb.stop()
    assert time.perf_counter() - started < 2
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        conn.request("GET", "/transaction?limit=1", headers=headers)
        conn.getresponse().read()
    conn.close()


def test_reset_undoes_data_changes(fresh: Sandbox, ledger: Ledger) -> None:
    fresh.faults = "arrivals=2"
    with client_for(fresh) as c:
        for _ in range(3):
            c.get("/transaction", params={"limit": 1})
        assert c.get("/transaction").json()["data"]["total"] == len(ledger.export_rows()) + 2
        fresh.reset()
        fresh.faults = None
        assert c.get("/transaction").json()["data"]["total"] == len(ledger.export_rows())


# -- the command line ---------------------------------------------------------------------------


def _start_cli(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "txkit.cli", "sandbox", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        bufsize=0,
    )


def _read_lines(proc: subprocess.Popen[bytes], count: int, timeout: float = 60) -> list[str]:
    """Read ``count`` lines from the process's stdout (raw reads: no hidden buffering)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    data = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while data.count(b"\n") < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                proc.kill()
                raise AssertionError(f"no output in time; got {data!r}")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError(f"process ended early: {proc.communicate()[1]!r}")
            data += chunk
    return data.decode().splitlines(keepends=True)


def _refused(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``txkit sandbox ARGS`` that must end by itself, refused: run in this process (0.8 s of
    CPU cheaper than a new one), in a thread of its own, where the command installs no signal
    handler; one that serves instead of refusing fails the test after 60 s, as the process's
    ``communicate(timeout=60)`` did."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(invoke_cli_all_stderr("sandbox", *args, cwd=cwd))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, name="txkit-sandbox-cli", daemon=True)
    thread.start()
    thread.join(60)
    assert outcome, "the command did not end: it serves instead of refusing"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_cli_prints_two_lines_serves_and_stops_cleanly(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    proc = _start_cli("--records", "2000", "--seed", "3", "--data-dir", "out", cwd=tmp_path)
    try:
        url_line, key_line = _read_lines(proc, 2)
        assert re.fullmatch(r"TXKIT_BASE_URL=http://127\.0\.0\.1:\d+\n", url_line)
        assert re.fullmatch(r"TXKIT_SECRET_KEY=sk_sandbox_[0-9a-f]{32}\n", key_line)
        base_url = url_line.strip().split("=", 1)[1]
        key = key_line.strip().split("=", 1)[1]
        response = httpx.get(
            f"{base_url}/transaction",
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
            verify=tls_context(),
        )
        assert response.status_code == 200
        assert response.json()["data"]["total"] > 1900
        assert (tmp_path / "out" / "orders.csv").exists()
        assert (tmp_path / "out" / "ground_truth.json").exists()
        proc.send_signal(stop_signal)
        stdout_bytes, stderr_bytes = proc.communicate(timeout=15)
        stdout, stderr = stdout_bytes.decode(), stderr_bytes.decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert stdout == ""  # nothing beyond the two lines
    assert "Traceback" not in stderr
    assert "stopped" in stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--faults", "bogus=1"], "unknown fault 'bogus'; accepted: rate_limit=P"),
        (["--start-month", "2025-13"], "--start-month: must be YYYY-MM"),
        (["--start-month", "2025-11\n"], "--start-month: must be YYYY-MM .*remove the spaces"),
        (["--host", "8.8.8.8"], "refusing to serve on non-loopback host"),
        (["--records", "-5"], "records must be an integer"),
        (["--balance-model", "gross"], "--balance-model: invalid choice: 'gross'"),
        (["--zero-balance-rate", "2"], "zero_balance_rate must be a number from 0 to 1"),
        (["--late-payments", "-1"], "late_payments_per_month must be an integer from 0 to 100"),
        (["--repeat-underpayers", "101"], "repeat_underpayers must be an integer from 0 to 100"),
    ],
)
def test_cli_rejects_bad_arguments(tmp_path: Path, args: list[str], match: str) -> None:
    done = _refused("--records", "100", *args, cwd=tmp_path)
    stdout, stderr = done.stdout, done.stderr
    assert done.returncode == 2
    assert stdout == ""
    assert re.search(match, stderr), stderr
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_cli_reports_a_busy_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _refused("--records", "100", "--port", str(port), cwd=tmp_path)
    stdout, stderr = done.stdout, done.stderr
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in stderr
    assert "Traceback" not in stderr and stdout == ""
