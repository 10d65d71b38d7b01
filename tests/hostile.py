"""A hostile (or merely scripted) HTTP server for tests: a real server on loopback.

Tests that need a service the sandbox cannot play (crafted bodies, odd tokens, envelopes with
extra keys, records that change without a new ``updatedAt``) start one with the
:func:`hostile_server` fixture and give it a responder: a function from the request (path,
query parameters, the request's sequence number) to a :class:`Reply`. Everything goes over real
HTTP, so the client's whole stack (headers, retries, decoding) runs as in production.

    def test_x(hostile_server):
        server = hostile_server(lambda req: Reply(body=page([record(0)])))
        with server.client() as client:
            ...
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from txkit import Client, RetryPolicy

KEY = "sk_test_hostile_0123456789"
QUICK = RetryPolicy(max_retries=2, backoff_base=0.01, backoff_cap=0.02)


@dataclass
class Request:
    """What the server received: path, query parameters, and the request's number (from 0)."""

    path: str
    params: dict[str, str]
    seq: int


@dataclass
class Reply:
    """What the server answers."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


Responder = Callable[[Request], Reply]


class HostileServer:
    """A threaded HTTP server on 127.0.0.1 answering every GET with ``responder(request)``."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                with server._lock:
                    request = Request(url.path, dict(parse_qsl(url.query)), len(server.requests))
                    server.requests.append(request)
                reply = server.responder(request)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def client(self, **kw: Any) -> Client:
        """A :class:`~txkit.Client` for this server (few, quick retries)."""
        kw.setdefault("retry", QUICK)
        return Client(self.base_url, KEY, env_file=None, **kw)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


@pytest.fixture
def hostile_server() -> Iterator[Callable[[Responder], HostileServer]]:
    """Start :class:`HostileServer` objects for one test; all are stopped after it."""
    servers: list[HostileServer] = []

    def start(responder: Responder) -> HostileServer:
        server = HostileServer(responder)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
