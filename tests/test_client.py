"""Client: configuration, headers, retries and error mapping (single responses, MockTransport)."""

from __future__ import annotations

import logging

import httpx
import pytest

from tests.factories import page, record
from txkit import Client, RetryPolicy
from txkit.errors import (
    AuthError,
    BadRequestError,
    ConfigError,
    NetworkError,
    RateLimitedError,
    ResponseFormatError,
    ServerError,
)

KEY = "sk_live_DISTINCTIVE_0123456789abcdef"
FAST = RetryPolicy(max_retries=3, backoff_base=0.0, backoff_cap=0.0)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("TXKIT_BASE_URL", raising=False)
    monkeypatch.delenv("TXKIT_SECRET_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr("txkit.fetch.client.time.sleep", slept.append)
    return slept


def scripted(*responses: httpx.Response | Exception) -> tuple[httpx.MockTransport, list]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(item, Exception):
            raise item
        return item

    return httpx.MockTransport(handler), seen


def client(transport: httpx.MockTransport, **kw) -> Client:
    return Client("https://api.example.test", KEY, transport=transport, retry=FAST, **kw)


def ok() -> httpx.Response:
    return httpx.Response(200, content=page([record(0)]))


def test_sends_bearer_key_and_json_content_type() -> None:
    transport, seen = scripted(ok())
    with client(transport) as c:
        body, _ = c.get_transactions({"status": "successful", "skip": 0, "limit": 10})
    assert body == page([record(0)])
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert seen[0].headers["content-type"] == "application/json"
    assert seen[0].url.path == "/transaction"
    assert seen[0].url.params["status"] == "successful"


def test_repr_and_str_hide_the_key() -> None:
    transport, _ = scripted(ok())
    c = client(transport)
    assert KEY not in repr(c) and KEY not in str(c)
    assert "***" in repr(c)


def test_reads_environment_then_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / ".env").write_text(
        f'TXKIT_BASE_URL=https://dotenv.example\nTXKIT_SECRET_KEY="{KEY}"\n'
    )
    assert Client().base_url == "https://dotenv.example"
    monkeypatch.setenv("TXKIT_BASE_URL", "https://env.example")
    assert Client().base_url == "https://env.example"


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TXKIT_BASE_URL", "https://api.example.test")
    with pytest.raises(ConfigError, match="set TXKIT_SECRET_KEY"):
        Client()


def test_missing_base_url_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="TXKIT_BASE_URL"):
        Client(secret_key=KEY)


@pytest.mark.parametrize("url", ["http://api.example.test", "http://10.0.0.8:8080"])
def test_refuses_plain_http_off_this_machine(url: str) -> None:
    with pytest.raises(ConfigError, match="plain http") as info:
        Client(url, KEY)
    assert KEY not in str(info.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:9"])
def test_allows_plain_http_to_loopback(url: str) -> None:
    Client(url, KEY).close()


def test_429_waits_retry_after_then_succeeds(sleeps: list[float]) -> None:
    transport, seen = scripted(
        httpx.Response(429, headers={"Retry-After": "2"}, json={"message": "slow down"}), ok()
    )
    with client(transport) as c:
        c.get_transactions({})
    assert len(seen) == 2
    assert 2.0 <= sleeps[0] <= 2.2


def test_429_exhausted_is_rate_limited_error(sleeps: list[float]) -> None:
    transport, seen = scripted(httpx.Response(429, json={"success": False, "message": "Too many"}))
    with client(transport) as c, pytest.raises(RateLimitedError, match="HTTP 429.*Too many"):
        c.get_transactions({})
    assert len(seen) == 4  # 1 + 3 retries


def test_5xx_retried_with_capped_backoff(monkeypatch: pytest.MonkeyPatch, sleeps) -> None:
    html = httpx.Response(502, text="<html>Bad Gateway</html>", headers={"X-Request-Id": "r-42"})
    transport, seen = scripted(html)
    policy = RetryPolicy(max_retries=5, backoff_base=1.0, backoff_cap=4.0)
    c = Client("https://api.example.test", KEY, transport=transport, retry=policy, seed=1)
    with pytest.raises(ServerError, match=r"HTTP 502.*Bad Gateway.*request id r-42") as info:
        c.get_transactions({})
    assert len(seen) == 6
    assert all(0.5 <= s <= 4.0 for s in sleeps) and max(sleeps) > 2.0
    assert info.value.status_code == 502 and info.value.request_id == "r-42"


def test_retry_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RetryPolicy.from_env() == RetryPolicy()  # unset: the defaults (first wait 0.5 s)
    monkeypatch.setenv("TXKIT_BACKOFF_BASE", "0.01")
    monkeypatch.setenv("TXKIT_MAX_RETRIES", "2")
    assert RetryPolicy.from_env() == RetryPolicy(max_retries=2, backoff_base=0.01)
    monkeypatch.setenv("TXKIT_BACKOFF_BASE", " ")
    assert RetryPolicy.from_env() == RetryPolicy(max_retries=2)
    for bad in ("-1", "61", "soon", "nan"):
        monkeypatch.setenv("TXKIT_BACKOFF_BASE", bad)
        with pytest.raises(ConfigError, match="TXKIT_BACKOFF_BASE must be a number from 0 to 60"):
            RetryPolicy.from_env()


@pytest.mark.parametrize(
    ("status", "error", "text"),
    [
        (400, BadRequestError, "rejected the request"),
        (422, BadRequestError, "rejected the request"),
        (401, AuthError, "sandbox and production keys differ"),
        (403, AuthError, "IP not whitelisted"),
    ],
)
def test_client_errors_are_not_retried(status: int, error: type, text: str, sleeps) -> None:
    body = {"success": False, "message": "Access denied: IP not whitelisted"}
    transport, seen = scripted(httpx.Response(status, json=body))
    with client(transport) as c, pytest.raises(error, match=text) as info:
        c.get_transactions({})
    assert len(seen) == 1 and not sleeps
    assert info.value.status_code == status
    assert "IP not whitelisted" in str(info.value)
    assert KEY not in str(info.value)


def test_timeouts_and_drops_are_retried_then_network_error(sleeps) -> None:
    transport, seen = scripted(
        httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("dropped"), ok()
    )
    with client(transport) as c:
        c.get_transactions({})
    assert len(seen) == 3
    transport, _ = scripted(httpx.ConnectError("refused"))
    with client(transport) as c, pytest.raises(NetworkError, match="ConnectError"):
        c.get_transactions({})


def test_non_json_200_is_retried_then_reported_with_excerpt(sleeps) -> None:
    transport, seen = scripted(httpx.Response(200, text="<html><h1>Maintenance</h1></html>"))
    with client(transport) as c, pytest.raises(ResponseFormatError, match="non-JSON.*Maintenance"):
        c.get_transactions({})
    assert len(seen) == 4


def test_key_never_in_logs_or_errors(caplog: pytest.LogCaptureFixture, sleeps) -> None:
    echo = httpx.Response(500, text=f"internal error for Bearer {KEY}")
    transport, _ = scripted(echo)
    with caplog.at_level(logging.DEBUG), client(transport) as c, pytest.raises(ServerError) as info:
        c.get_transactions({})
    assert KEY not in str(info.value)
    assert KEY not in caplog.text
    assert caplog.records, "retries are logged"


def test_clients_share_one_verifying_tls_context_per_setting(monkeypatch, tmp_path) -> None:
    """Built once (21 ms of CPU each), still verifying certificates and host names, and built
    again when SSL_CERT_FILE names other authorities."""
    import ssl
    from pathlib import Path

    import certifi

    from txkit.fetch.client import tls_context

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    shared = tls_context()
    assert tls_context() is shared
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    other = tls_context()
    assert other is not shared and other.verify_mode == ssl.CERT_REQUIRED


def test_key_fingerprint_is_hashed_once_per_salt_and_key(monkeypatch) -> None:
    """PBKDF2 (about 30 ms) once per process for a (salt, key): a store syncs many times with
    one key. The same value as before, another for another salt or key, and no key cached."""
    import hashlib
    import os

    from txkit.fetch import client as client_module

    salt = os.urandom(16)  # a salt no earlier test of this process used
    expected = hashlib.pbkdf2_hmac("sha256", KEY.encode(), salt, 100_000).hex()
    calls: list[bytes] = []
    real = hashlib.pbkdf2_hmac

    def counted(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        calls.append(salt)
        return real(name, password, salt, iterations)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counted)
    transport, _ = scripted(ok())
    with client(transport) as c:
        first = c.key_fingerprint(salt)
    with client(transport) as c:
        assert c.key_fingerprint(salt) == first == expected
    assert len(calls) == 1
    with client(transport) as c:
        other_salt = c.key_fingerprint(os.urandom(16))
    with Client("https://api.example.test", KEY + "x", transport=transport) as c:
        other_key = c.key_fingerprint(salt)
    assert len(calls) == 3
    assert len({first, other_salt, other_key}) == 3
    cached = client_module._FINGERPRINTS.items()
    assert not any(KEY.encode() in k or KEY in v for k, v in cached)
