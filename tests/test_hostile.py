"""A hostile server over real HTTP: the key never leaves txkit, whatever the server echoes.

Every test searches every output byte (messages, reprs, pickles, log records, stdout, stderr,
written files) for the key in each form it can travel in.
"""

from __future__ import annotations

import base64
import gzip
import logging
import os
import pickle
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest

from tests.factories import page, record, run_cli
from tests.hostile import (
    HostileServer,
    Reply,
    deflate_bomb,
    gzip_bomb,
    json_reply,
    ok_page,
)
from txkit import Client, RetryPolicy
from txkit._scrub import scrub, scrub_bytes
from txkit.decode import decode_pages
from txkit.errors import (
    ApiError,
    LimitExceededError,
    ResponseFormatError,
    SchemaError,
    ServerError,
    TxkitError,
)
from txkit.fetch.load import load_transactions

ROOT = Path(__file__).resolve().parent.parent
#: Not shaped like sk_...: only the configured key itself can find it.
KEY = "Zq7!merchant~key/+=%41;x9"
FAST = RetryPolicy(max_retries=2, backoff_base=0.0, backoff_cap=0.0)


def forms(key: str = KEY) -> list[bytes]:
    """The key as it could travel: as is, URL-encoded, base64 (also inside a longer text)."""
    raw = key.encode()
    texts = [
        key,
        quote(key, safe=""),
        quote_plus(key),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b64encode(b"Bearer " + raw).decode()[12:],
    ]
    return [t.encode() for t in texts] + [key[:12].encode(), key[-12:].encode()]


def assert_clean(*outputs: Any) -> None:
    """No form of the key (nor a 12-character piece of it) in any of ``outputs``."""
    for output in outputs:
        data = output if isinstance(output, bytes) else str(output).encode("utf-8", "replace")
        for form in forms():
            assert form not in data, (form, data[:300])


def echo_everywhere(message: str = "merchant key {} is not active") -> str:
    """A text holding the key in each form, as a careless server would echo it."""
    b64 = base64.b64encode(KEY.encode()).decode()
    return (
        message.format(KEY)
        + f" url={quote(KEY, safe='')} plus={quote_plus(KEY)} b64={b64}"
        + f" basic={base64.b64encode(b'user:' + KEY.encode()).decode()}"
    )


def client(server: HostileServer, **kw: Any) -> Client:
    kw.setdefault("retry", FAST)
    return Client(server.base_url, KEY, env_file=None, seed=1, **kw)


def holds_no_request_headers(error: BaseException) -> None:
    """No attribute of the error (nor of its cause) is an object with headers."""
    seen: list[BaseException | None] = [error, error.__cause__, error.__context__]
    for item in filter(None, seen):
        for value in vars(item).values():
            assert not isinstance(value, httpx.Request | httpx.Response | httpx.Headers), value


def check_error(error: TxkitError) -> None:
    pickled = pickle.dumps(error)
    restored = pickle.loads(pickled)
    assert type(restored) is type(error) and str(restored) == str(error)
    holds_no_request_headers(error)
    assert_clean(str(error), repr(error), pickled, repr(vars(error)), error.args)


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer(lambda seen: ok_page(1)) as running:
        yield running


def test_scrub_removes_every_form_and_key_shapes() -> None:
    text = echo_everywhere() + " other=sk_live_abcdefgh12345 Bearer abc.def"
    cleaned = scrub(text, KEY)
    assert_clean(cleaned)
    assert "sk_live" not in cleaned and "abc.def" not in cleaned
    assert cleaned.startswith("merchant key *** is not active")
    assert scrub_bytes(text.encode(), KEY) == cleaned.encode()
    # Inside a longer base64 text, at every alignment.
    for pad in range(3):
        blob = base64.b64encode(b"x" * pad + KEY.encode() + b"tail").decode()
        assert base64.b64encode(KEY.encode()).decode()[4:12] not in scrub(blob, KEY)


@pytest.mark.slow
def test_success_false_echoing_the_key(server: HostileServer, caplog) -> None:
    server.script = lambda seen: json_reply(
        {"success": False, "message": echo_everywhere(), "data": {}}
    )
    with caplog.at_level(logging.DEBUG), client(server) as c, pytest.raises(ApiError) as info:
        load_transactions(c, status="successful", progress=False)
    check_error(info.value)
    assert "merchant key *** is not active" in str(info.value)
    assert "GET" in str(info.value) and "/transaction" in str(info.value)
    assert info.value.request is not None and info.value.request.method == "GET"
    assert_clean(caplog.text, *[r.getMessage() for r in caplog.records])


@pytest.mark.slow
def test_non_json_200_echoing_the_key_also_in_retry_logs(server: HostileServer, caplog) -> None:
    server.script = lambda seen: Reply(200, f"<html>{echo_everywhere()}</html>".encode())
    with (
        caplog.at_level(logging.DEBUG),
        client(server) as c,
        pytest.raises(ResponseFormatError) as info,
    ):
        c.get_transactions({"skip": 0, "limit": 1})
    assert len(server.seen) == 3, "retried"
    check_error(info.value)
    assert "non-JSON" in str(info.value)
    assert any("retry" in r.getMessage() for r in caplog.records)
    assert_clean(caplog.text, *[r.getMessage() for r in caplog.records])


@pytest.mark.slow
def test_key_cut_by_the_excerpt_limit_leaves_no_half(server: HostileServer) -> None:
    server.script = lambda seen: Reply(503, b"x" * 190 + KEY.encode() + b"y" * 400)
    with client(server) as c, pytest.raises(ServerError) as info:
        c.get_transactions({})
    check_error(info.value)


@pytest.mark.slow
def test_schema_error_whose_value_holds_the_key(server: HostileServer) -> None:
    bad = record(0, toAmount=f"key {KEY}")
    server.script = lambda seen: Reply(200, page([bad]), {"Content-Type": "application/json"})
    with client(server) as c, pytest.raises(SchemaError) as info:
        load_transactions(c, progress=False)
    check_error(info.value)
    assert info.value.field == "toAmount"
    nested = record(1, meta={"customerActivity": {"attempts": {"k": KEY}}})
    with pytest.raises(SchemaError) as info:
        decode_pages([page([nested])])
    check_error(info.value)


def test_every_error_class_pickles_without_the_key() -> None:
    from txkit import errors
    from txkit._scrub import register_secret

    # Known as every Client knows its key (this test once passed only after a test that had
    # made a Client with it, and failed alone).
    register_secret(KEY)
    request = httpx.Request(
        "GET", "https://api.example.test/transaction", headers={"Authorization": f"Bearer {KEY}"}
    )

    made = [
        errors.ApiError(f"x {KEY}", status_code=500, server_message=KEY, request=request),
        errors.NetworkError(f"dropped {KEY}", request=request),
        errors.SchemaError("bad", record_id=KEY, field="f", value={"v": KEY}),
        errors.IncompleteExportError(f"of {KEY}", expected=1, got=0, attempts=1),
        errors.ConfigError(KEY),
        errors.LimitExceededError(KEY, bound="max_body_bytes", limit=1, request=request),
    ]
    for error in made:
        check_error(error)


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env=env, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize(
    "script",
    [
        lambda seen: json_reply({"success": False, "message": echo_everywhere(), "data": {}}),
        lambda seen: Reply(200, echo_everywhere().encode(), {"Content-Type": "text/html"}),
        lambda seen: Reply(500, echo_everywhere().encode(), {"X-Request-Id": KEY}),
        lambda seen: Reply(200, page([record(0, attempts=None, toAmount=KEY)])),
    ],
    ids=["success-false", "non-json-200", "500-echo", "schema-error"],
)
def test_cli_output_never_holds_the_key(script: Any, tmp_path: Path) -> None:
    with HostileServer(script) as running:
        env = {
            "TXKIT_BASE_URL": running.base_url,
            "TXKIT_SECRET_KEY": KEY,
            "TXKIT_PROGRESS": "1",
            "TXKIT_MAX_RETRIES": "2",
        }
        done = cli("-v", "export", "-o", "out.parquet", env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert_clean(done.stdout, done.stderr)
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert_clean(file.read_bytes())


@pytest.mark.slow
def test_cli_log_handlers_scrub_other_libraries(tmp_path: Path) -> None:
    """With -v, httpx logs each request URL: a key in the base URL is scrubbed (in its path: a
    base URL with user information is refused before any request, tests/test_keys.py)."""
    with HostileServer(lambda seen: ok_page(2)) as running:
        url = f"{running.base_url}/{quote(KEY, safe='')}"
        env = {"TXKIT_BASE_URL": url, "TXKIT_SECRET_KEY": KEY, "TXKIT_PROGRESS": "1"}
        done = cli("-v", "export", "-o", "out.parquet", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "HTTP Request" in done.stderr
    assert_clean(done.stdout, done.stderr)


def test_log_lines_routed_above_the_bar_are_scrubbed(capsys) -> None:
    """The CLI's handler scrubs records of any library, also while redirected through tqdm."""
    from txkit._scrub import install_log_filter, register_secret
    from txkit.fetch.progress import quiet_logging

    register_secret(KEY)  # as the CLI's Client does
    handler = logging.StreamHandler(sys.stderr)
    install_log_filter(handler)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with quiet_logging():
            logging.getLogger("some.library").warning("token %s", echo_everywhere())
    finally:
        root.removeHandler(handler)
    err = capsys.readouterr().err
    assert "token merchant key *** is not active" in err
    assert_clean(err)


def test_log_filter_scrubs_records_of_txkit_loggers(caplog) -> None:
    with caplog.at_level(logging.DEBUG):
        Client("http://127.0.0.1:9", KEY, env_file=None).close()
        logging.getLogger("txkit").warning("echo %s", echo_everywhere())
        logging.getLogger("txkit").error("boom", exc_info=RuntimeError(KEY))
    assert_clean(caplog.text)


# ---------------------------------------------------------------------------------------------
# Bounds: decompressed size and a deadline for the whole response.


@pytest.mark.slow
def test_gzip_bomb_stops_at_the_maximum_body_size(server: HostileServer) -> None:
    server.script = lambda seen: Reply(200, gzip_bomb(10 << 30), {"Content-Encoding": "gzip"})
    started = time.monotonic()
    with client(server, max_body_bytes=8 << 20) as c, pytest.raises(LimitExceededError) as info:
        c.get_transactions({})
    assert time.monotonic() - started < 10
    assert len(server.seen) == 1, "a breach is not retried"
    message = str(info.value)
    assert "max_body_bytes" in message and "TXKIT_MAX_BODY_MB" in message and "\n" not in message
    assert info.value.bound == "max_body_bytes"
    check_error(info.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, deflate_bomb(1 << 30), {"Content-Encoding": "deflate"}),
        Reply(200, deflate_bomb(1 << 30)[2:], {"Content-Encoding": "deflate"}),  # raw deflate
        Reply(200, gzip.compress(b"0" * (4 << 20)) * 8, {"Content-Encoding": "gzip"}),  # members
        Reply(200, b"x" * (9 << 20)),  # plain and declared too large
    ],
    ids=["deflate", "raw-deflate", "gzip-members", "identity"],
)
def test_every_coding_is_bounded(server: HostileServer, reply: Reply) -> None:
    server.script = lambda seen: reply
    with client(server, max_body_bytes=8 << 20) as c, pytest.raises(LimitExceededError):
        c.get_transactions({})


@pytest.mark.slow
def test_compressed_pages_are_read_and_odd_codings_refused(server: HostileServer) -> None:
    body = page([record(i) for i in range(3)])
    members = gzip.compress(body[:100]) + gzip.compress(body[100:])
    server.script = lambda seen: Reply(200, members, {"Content-Encoding": "gzip"})
    with client(server) as c:
        assert c.get_transactions({})[0] == body
        assert server.seen[-1].headers["accept-encoding"] == "gzip, deflate"
        server.script = lambda seen: Reply(
            200, zlib.compress(body), {"Content-Encoding": "deflate"}
        )
        assert c.get_transactions({})[0] == body
        server.script = lambda seen: Reply(200, body, {"Content-Encoding": "br"})
        with pytest.raises(ResponseFormatError, match="unsupported content coding 'br'"):
            c.get_transactions({})
        server.script = lambda seen: Reply(
            200, b"\x1f\x8b" + b"junk" * 10, {"Content-Encoding": "gzip"}
        )
        with pytest.raises(ResponseFormatError, match="corrupt"):
            c.get_transactions({})


@pytest.mark.slow
@pytest.mark.serial  # bounds the time taken from above
def test_trickling_server_fails_within_the_deadline(server: HostileServer) -> None:
    # A byte every 0.25 s: each read is well inside the read timeout (the deadline, 1 s), so
    # only the whole-response deadline can stop it (the body would take minutes).
    server.script = lambda seen: Reply(200, page([record(0)]), trickle=0.25)
    started = time.monotonic()
    with client(server, response_deadline=1.0) as c, pytest.raises(LimitExceededError) as info:
        c.get_transactions({})
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 3.0, elapsed
    assert len(server.seen) == 1
    message = str(info.value)
    assert "deadline of 1 s" in message and "TXKIT_RESPONSE_DEADLINE" in message


def measured_cli(base_url: str, tmp_path: Path, **env: str) -> tuple[int, str, float, float]:
    """Run ``txkit export`` in a fresh process; returns (exit code, stderr, seconds, peak MB,
    the process's resident high-water mark)."""
    code = (
        "import sys, time\n"
        "from txkit.cli import main\n"
        "start = time.monotonic()\n"
        "code = main(['export', '-o', 'out.parquet'])\n"
        # VmHWM, the peak of this process's own memory (ru_maxrss would include the parent's
        # resident set at fork: Linux carries it across exec).
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "peak = int(status.split()[0]) / 1024\n"
        "print(f'MEASURED {time.monotonic() - start:.2f} {peak:.0f}', file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=base
        | {"PYTHONPATH": str(ROOT), "TXKIT_BASE_URL": base_url, "TXKIT_SECRET_KEY": KEY}
        | env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    _, seconds, peak = lines[-1].split()
    print(f"{base_url}: {seconds} s, peak {peak} MB: {lines[0]}")
    return done.returncode, "\n".join(lines[:-1]), float(seconds), float(peak)


@pytest.mark.serial  # measures a process's peak memory and time
@pytest.mark.slow
def test_cli_bomb_and_trickle_bounded_in_memory_and_time(tmp_path: Path) -> None:
    """The default 256 MB bound against a 10 GB gzip bomb: peak well under 1 GB; a server that
    trickles a byte every 0.25 s fails at the deadline (1 s: each read is within the read
    timeout, so only the deadline stops it). One line each, exit 1."""
    bomb = gzip_bomb(10 << 30)
    with HostileServer(lambda seen: Reply(200, bomb, {"Content-Encoding": "gzip"})) as running:
        code, err, seconds, peak = measured_cli(running.base_url, tmp_path)
    assert code == 1 and len(err.splitlines()) == 1 and "max_body_bytes" in err, err
    assert peak < 1024 and seconds < 120
    trickle = Reply(200, page([record(0)]), trickle=0.25)
    with HostileServer(lambda seen: trickle) as running:
        code, err, seconds, peak = measured_cli(
            running.base_url, tmp_path, TXKIT_RESPONSE_DEADLINE="1"
        )
    assert code == 1 and len(err.splitlines()) == 1 and "deadline of 1 s" in err, err
    assert 1 <= seconds < 4 and peak < 1024  # 1.2 s seen under a load of 15 on 2 cores
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.serial  # measures a process's peak memory
@pytest.mark.slow
def test_concurrent_bombs_share_one_bound(tmp_path: Path) -> None:
    """A good first page (total 9000), then a bomb for each of the 8 pages fetched at once:
    the bodies read at once share ``max_body_bytes``, so the peak stays far under 1 GB."""
    bomb = gzip_bomb(2 << 30)
    first = page([record(i) for i in range(1000)], total=9000)

    def script(seen) -> Reply:
        if seen.query.get("skip") == "0":
            return Reply(200, first, {"Content-Type": "application/json"})
        return Reply(200, bomb, {"Content-Encoding": "gzip"})

    with HostileServer(script) as running:
        code, err, seconds, peak = measured_cli(running.base_url, tmp_path)
        fetched = len(running.seen)
    assert code == 1 and "max_body_bytes" in err and len(err.splitlines()) == 1, err
    assert fetched >= 3, "the bombs were fetched concurrently"
    assert peak < 1024 and seconds < 120
