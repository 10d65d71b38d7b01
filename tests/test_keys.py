"""The key goes only to the service (issue 48): no proxy from the environment for plain http,
through a proxy only as TLS inside CONNECT; "this machine" is loopback and ``localhost``
itself, decided without DNS; a base URL with user information, a query or a fragment refused.

Each case runs ``txkit export`` as a real process against a real server on loopback, with a
capturing proxy (:class:`CapturingProxy`) named in every proxy variable.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.factories import run_cli
from tests.hostile import KEY, HostileServer, ok_page
from txkit import Client
from txkit.errors import ConfigError


class _Recorder(BaseHTTPRequestHandler):
    def _capture(self) -> None:
        self.server.seen.append((self.requestline, dict(self.headers.items())))  # type: ignore[attr-defined]
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    do_GET = do_POST = do_CONNECT = do_HEAD = _capture

    def log_message(self, *args: object) -> None:
        pass


class CapturingProxy:
    """A proxy on loopback that records each request line and its headers, and answers 502
    (forwarding nothing): what a proxy on the path would read."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        self._server.seen = []  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def seen(self) -> list[tuple[str, dict[str, str]]]:
        return self._server.seen  # type: ignore[attr-defined,no-any-return]

    def env(self) -> dict[str, str]:
        """Every proxy variable naming this proxy, nothing exempted."""
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        named = {v: self.url for n in names for v in (n, n.lower())}
        return named | {"NO_PROXY": "", "no_proxy": ""}

    def __enter__(self) -> CapturingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def proxy() -> Iterator[CapturingProxy]:
    with CapturingProxy() as running:
        yield running


def export(tmp_path: Path, base_url: str, proxy: CapturingProxy) -> tuple[int, str]:
    done = run_cli(
        "export", "-o", "x.parquet", "--no-confirm", cwd=tmp_path, timeout=120,
        env={"TXKIT_BASE_URL": base_url, "TXKIT_SECRET_KEY": KEY, "TXKIT_MAX_RETRIES": "0",
             **proxy.env()},
    )  # fmt: skip
    assert KEY not in done.stdout + done.stderr
    return done.returncode, done.stderr.strip()


def no_key(proxy: CapturingProxy) -> None:
    for line, headers in proxy.seen:
        assert KEY not in line + repr(headers), line
        assert not {h.lower() for h in headers} & {"authorization", "proxy-authorization"}


@pytest.mark.slow  # processes of their own
def test_plain_http_to_this_machine_never_goes_through_a_proxy(
    tmp_path: Path, proxy: CapturingProxy
) -> None:
    """Before: the proxy received ``Authorization: Bearer sk_...`` (once per attempt) and the
    export failed with "the service failed (502)"."""
    with HostileServer(lambda seen: ok_page(3)) as server:
        code, err = export(tmp_path, server.base_url, proxy)
        assert {s.headers["authorization"] for s in server.seen} == {f"Bearer {KEY}"}
    assert code == 0, err
    assert proxy.seen == []
    assert (tmp_path / "x.parquet").is_file()


@pytest.mark.slow
def test_https_goes_through_a_proxy_only_as_connect(tmp_path: Path, proxy: CapturingProxy) -> None:
    """The proxy reads the host and port it tunnels to, never a header of the request."""
    code, err = export(tmp_path, "https://api.example.test", proxy)
    assert [line for line, _ in proxy.seen] == ["CONNECT api.example.test:443 HTTP/1.1"]
    no_key(proxy)
    assert code == 1 and err.startswith("txkit: error: NetworkError"), err


@pytest.mark.slow
def test_a_name_under_localhost_is_not_this_machine(tmp_path: Path, proxy: CapturingProxy) -> None:
    """Before: ``http://evil.localhost`` counted as this machine; the key went over plain http
    (here to the proxy, which resolves the name, in clear)."""
    code, err = export(tmp_path, "http://evil.localhost:9", proxy)
    assert proxy.seen == []
    assert code == 2, err
    assert err.startswith("txkit: error: ConfigError: refusing to send the secret key over plain")
    assert "evil.localhost" in err and len(err.splitlines()) == 1


def test_this_machine_is_decided_without_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[object] = []

    def lookup(*args: object, **kw: object) -> list[object]:
        asked.append(args[0])
        raise OSError("no DNS in this test")

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    for host in ("evil.localhost", "localhost.evil.test", "127.0.0.1.nip.io", "0x7f000001"):
        with pytest.raises(ConfigError, match="plain http"):
            Client(f"http://{host}:8080", KEY, env_file=None)
    for url in ("http://localhost:1", "http://LOCALHOST:1", "http://127.3.4.5:1", "http://[::1]:1"):
        Client(url, KEY, env_file=None).close()
    assert asked == []


@pytest.mark.slow
def test_a_base_url_with_user_information_is_refused_without_echoing_it(
    tmp_path: Path, proxy: CapturingProxy
) -> None:
    """Before: httpx sent ``Authorization: Basic`` of ``user:password`` instead of the key,
    and the service's 401 was reported as "the secret key was rejected"."""
    with HostileServer(lambda seen: ok_page(3)) as server:
        url = server.base_url.replace("http://", "http://analyst:hunter2pass@")
        code, err = export(tmp_path, url, proxy)
        assert server.seen == []
    assert code == 2, err
    assert "holds user information (user:password@)" in err and len(err.splitlines()) == 1
    assert "hunter2pass" not in err and "analyst" not in err
    assert proxy.seen == []


@pytest.mark.parametrize(
    ("url", "part"),
    [
        ("https://api.example.test/?mode=test", "a query (?...)"),
        ("https://api.example.test/v1#frag", "a fragment (#...)"),
        ("https://k:s3cr3tpw@api.example.test?x=1", "user information (user:password@) and a q"),
        ("https://@api.example.test", "user information"),
    ],
)
def test_a_base_url_with_a_query_or_fragment_is_refused_naming_the_part(
    url: str, part: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Client(url, KEY, env_file=None)
    message = str(info.value)
    assert message.startswith("TXKIT_BASE_URL (from the base_url argument (--base-url)) holds ")
    assert part in message and "s3cr3tpw" not in message and "mode=test" not in message


def test_a_request_that_would_reach_a_proxy_over_plain_http_is_refused(
    monkeypatch: pytest.MonkeyPatch, proxy: CapturingProxy
) -> None:
    """The last guard, before each request: were a proxy ever mounted for a plain-http base
    (here httpx made to read the environment's), the request is refused, not sent."""
    original = httpx.Client.__init__

    def trusting(self: httpx.Client, *args: Any, **kw: Any) -> None:
        original(self, *args, **{**kw, "trust_env": True})

    monkeypatch.setattr(httpx.Client, "__init__", trusting)
    for name, value in proxy.env().items():
        monkeypatch.setenv(name, value)
    with HostileServer(lambda seen: ok_page(3)) as server:
        refused = pytest.raises(ConfigError, match="over plain http:// through a proxy")
        with Client(server.base_url, KEY, env_file=None) as client, refused as info:
            client.get_transactions({})
        assert server.seen == []
    assert proxy.seen == [] and KEY not in str(info.value)
