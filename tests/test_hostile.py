"""A hostile server over real HTTP: the key never leaves txkit, whatever the server echoes.

Every test searches every output byte (messages, reprs, pickles, log records, stdout, stderr,
written files) for the key in each form it can travel in.
"""

from __future__ import annotations

import base64
import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest

from tests.factories import page, record
from tests.hostile import HostileServer, Reply, json_reply, ok_page
from txkit import Client, RetryPolicy
from txkit._scrub import scrub, scrub_bytes
from txkit.errors import (
    ApiError,
    ResponseFormatError,
    SchemaError,
    ServerError,
    TxkitError,
)
from txkit.frame import decode_pages
from txkit.load import load_transactions

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


def test_key_cut_by_the_excerpt_limit_leaves_no_half(server: HostileServer) -> None:
    server.script = lambda seen: Reply(503, b"x" * 190 + KEY.encode() + b"y" * 400)
    with client(server) as c, pytest.raises(ServerError) as info:
        c.get_transactions({})
    check_error(info.value)


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
    request = httpx.Request(
        "GET", "https://api.example.test/transaction", headers={"Authorization": f"Bearer {KEY}"}
    )
    from txkit import errors

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
    base = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    return subprocess.run(
        [sys.executable, "-m", "txkit.cli", *args],
        env=base | {"PYTHONPATH": str(ROOT)} | env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


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


def test_log_filter_scrubs_records_of_txkit_loggers(caplog) -> None:
    with caplog.at_level(logging.DEBUG):
        Client("http://127.0.0.1:9", KEY, env_file=None).close()
        logging.getLogger("txkit").warning("echo %s", echo_everywhere())
        logging.getLogger("txkit").error("boom", exc_info=RuntimeError(KEY))
    assert_clean(caplog.text)
