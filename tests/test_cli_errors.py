"""Every CLI failure is one scrubbed line, exit 1 (2 only for the user's own bad arguments),
and output paths are checked before any request is sent. Over real HTTP; the command runs in
this process (:func:`cli`), in a new one where the process is the point (a file-size limit,
``RUST_BACKTRACE``, read once a process)."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.factories import invoke_cli_all_stderr, page, record, run_cli
from tests.hostile import HostileServer, Reply, ok_page
from txkit.cli import describe_failure

KEY = "cli-errors-Key/+=odd-0123456789"


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None):
    """``txkit ARGS`` in this process, its whole stderr (native code's too) captured: exit code
    and output as a process's (an exception escaping ``main`` is raised, failing the test)."""
    return invoke_cli_all_stderr(*args, cwd=cwd, env={"TXKIT_MAX_RETRIES": "1", **(env or {})})


def cli_process(*args: str, cwd: Path, env: dict[str, str] | None = None, **kw: Any):
    """``txkit ARGS`` in a new process (``kw``: subprocess options such as ``preexec_fn``)."""
    return run_cli(*args, cwd=cwd, env={"TXKIT_MAX_RETRIES": "1", **(env or {})}, timeout=120, **kw)


def one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("txkit"), done.stderr
    assert "Traceback" not in done.stderr and KEY not in done.stderr + done.stdout
    return lines[0]


@pytest.fixture
def server():
    with HostileServer(lambda seen: ok_page(3)) as running:
        yield running


def env_for(server: HostileServer) -> dict[str, str]:
    return {"TXKIT_BASE_URL": server.base_url, "TXKIT_SECRET_KEY": KEY}


@pytest.mark.slow
@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_sandbox_port_out_of_range_is_a_bad_argument(port: str, tmp_path: Path) -> None:
    line = one_line(cli("sandbox", "--port", port, cwd=tmp_path), 2)
    assert "0 to 65535" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("/proc/x.parquet", "cannot write"),
        ("/proc/self/x/y.csv", "cannot write"),
        (".", "is a folder"),
        ("x.txt", "must end in .parquet or .csv"),
    ],
)
def test_unwritable_output_fails_before_any_request(
    server: HostileServer, tmp_path: Path, output: str, words: str
) -> None:
    done = cli("export", "-o", output, cwd=tmp_path, env=env_for(server))
    line = one_line(done, 1 if words == "cannot write" else 2)
    assert words in line
    assert server.seen == [], "no request may be sent before the output path is known good"


@pytest.mark.slow
def test_output_folder_given_as_file(server: HostileServer, tmp_path: Path) -> None:
    (tmp_path / "out.parquet").mkdir()
    line = one_line(cli("export", "-o", "out.parquet", cwd=tmp_path, env=env_for(server)), 2)
    assert "is a folder" in line and server.seen == []


def _file_size_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.slow
def test_full_disk_fails_before_any_request(server: HostileServer, tmp_path: Path) -> None:
    """A file-size limit plays the full disk: the probe write fails, nothing is fetched."""
    done = cli_process(
        "export", "-o", "x.parquet", cwd=tmp_path, env=env_for(server), preexec_fn=_file_size_limit
    )
    line = one_line(done, 1)
    assert "cannot write" in line and "write elsewhere" in line
    assert server.seen == [] and not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("store", ["/proc/store", "/sys/store"])
def test_read_only_store_fails_before_any_request(tmp_path: Path, store: str) -> None:
    line = one_line(cli("sync", "--store", store, cwd=tmp_path), 1)
    assert "cannot write" in line and store in line


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [
        page([record(0)], total="\u00b2"),  # a superscript two: str.isdigit() but not int()
        page([record(0)], total=10**400),
        b'{"success": true, "data": {"transactions": [], "total": 1e400}}',
    ],
    ids=["superscript", "huge", "1e400"],
)
def test_bad_answers_are_exit_1_not_bad_arguments(tmp_path: Path, body: bytes) -> None:
    with HostileServer(lambda seen: Reply(200, body)) as running:
        done = cli("export", "-o", "x.parquet", cwd=tmp_path, env=env_for(running))
    one_line(done, 1)
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.slow
def test_bad_filter_is_exit_2_before_any_request(server: HostileServer, tmp_path: Path) -> None:
    done = cli("export", "--status", "nope", "-o", "x.parquet", cwd=tmp_path, env=env_for(server))
    assert "accepted values" in one_line(done, 2)
    assert server.seen == []


def test_describe_failure_one_line_for_anything() -> None:
    cases = [
        (OSError(errno.ENOSPC, "No space left on device", "/data/x.parquet"), "disk is full"),
        (OSError(errno.EROFS, "Read-only file system", "/ro/x"), "read-only"),
        (MemoryError(), "out of memory"),
        (RecursionError("maximum recursion depth exceeded"), "could not be read"),
        (RuntimeError("boom\nsecond line"), "unexpected RuntimeError"),
    ]
    for exc, words in cases:
        code, message = describe_failure(exc)
        assert code == 1 and words in message and "\n" not in message


def test_one_line_strips_rust_backtraces_and_colours() -> None:
    from txkit.errors import one_line

    glued = (
        "Kernel error: Json error: Encountered unexpected 'g' whilst parsing value\n"
        "   0: <unknown>\n   1: <unknown>\n  12: start_thread\n"
        "             at ./nptl/pthread_create.c:442:8\n  13: clone3\n"
    )
    assert (
        one_line(glued)
        == "Kernel error: Json error: Encountered unexpected 'g' whilst parsing value"
    )
    azure = "Generic MicrosoftAzure error\n   \x1b[31m↳\x1b[0m URL did not match\n"
    assert one_line(azure) == "Generic MicrosoftAzure error ↳ URL did not match"
    anyhow = "failed to open\n\nStack backtrace:\n   0: std::backtrace::capture"
    assert one_line(anyhow) == "failed to open"
    assert one_line("a\n  b", limit=2) == "a ..."


@pytest.mark.slow  # processes of its own: seconds, out of the quick loop
def test_a_delta_rs_error_under_rust_backtrace_is_one_line(tmp_path: Path) -> None:
    """Before: with RUST_BACKTRACE=1, delta-rs glued a backtrace ("0: <unknown> 1: ...") into
    the store's one-line message."""
    from txkit import Client
    from txkit.sandbox import Sandbox, generate_ledger
    from txkit.store import sync

    store = tmp_path / "store"
    with (
        Sandbox(ledger=generate_ledger(seed=5, records=1_000)) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sync(client, start="2026-10-01", end="2026-10-31", store=store)
    with open(store / "_delta_log" / f"{0:020d}.json", "a") as log:
        log.write("garbage{\n")
    done = cli_process("sync", "--status", "--store", str(store), cwd=tmp_path,
                       env={"RUST_BACKTRACE": "1"})  # fmt: skip
    line = one_line(done, 1)
    assert "Json error" in line and "<unknown>" not in line and "start_thread" not in line
    assert " 0: " not in line and " 1: " not in line


def test_main_quiets_rust_logs_for_its_command_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``RUST_LOG=off`` (delta-rs's Rust logs) is set for the command, and its kernels, but
    not left in a caller's process: a later ``-v`` run would inherit it."""
    from txkit.cli import main

    monkeypatch.delenv("RUST_LOG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["sync", "--store", "s3://"]) == 2
    assert "RUST_LOG" not in os.environ
    monkeypatch.setenv("RUST_LOG", "debug")
    assert main(["sync", "--store", "s3://"]) == 2
    assert os.environ["RUST_LOG"] == "debug"
    assert capsys.readouterr().err.count("accepted: a folder") == 2


def test_a_reader_that_stops_reading_is_no_error_line(tmp_path: Path) -> None:
    """`txkit exceptions | head -3` printed 'txkit: error: cannot write or read: Broken pipe'
    once head had its lines."""
    import sys

    from tests.factories import cli_env

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes
    try:
        done = subprocess.run(
            [sys.executable, "-m", "txkit.cli", "store", "status", "--store", str(tmp_path / "s")],
            stdout=write, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=cli_env(),
            timeout=120,
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 1
