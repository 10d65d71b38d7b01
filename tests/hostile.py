"""A small hostile HTTP server for tests: a real server on loopback, scripted per request.

A test gives :class:`HostileServer` a *script*: a function from the request (:class:`Seen`) to a
:class:`Reply`. A reply can trickle its body byte by byte, send a pre-compressed body with any
``Content-Encoding`` (a gzip bomb), close the connection without answering, or carry any status
and headers. :class:`TokenBucket` turns a script into a rate-limited service (429 with
``Retry-After`` past the bucket), as a real service with a rate limit would.

Also runnable as a program (``python -m tests.hostile KIND``) for tests that measure a client
in a subprocess: it prints ``URL`` on its first line and serves until killed.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.factories import page, record
from txkit import Client, RetryPolicy

KEY = "sk_test_hostile_0123456789"
QUICK = RetryPolicy(max_retries=2, backoff_base=0.01, backoff_cap=0.02)


@dataclass(frozen=True)
class Seen:
    """A request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class Reply:
    """What the server answers.

    Attributes:
        status: the HTTP status.
        body: the body bytes (sent as they are: compress them yourself for an encoding).
        headers: extra headers (``Content-Length`` is added unless ``chunked``).
        trickle: seconds between single bytes of the body (a slow-loris server), or None.
        drop: close the connection without any response.
        chunks: stream these body pieces with chunked transfer encoding instead of ``body``.
    """

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    trickle: float | None = None
    drop: bool = False
    chunks: Callable[[], Iterator[bytes]] | None = None


def json_reply(doc: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, json.dumps(doc).encode(), {"Content-Type": "application/json", **headers})


def ok_page(n: int = 1, total: int | None = None, offset: int = 0) -> Reply:
    body = page([record(offset + i) for i in range(n)], total=total)
    return Reply(200, body, {"Content-Type": "application/json"})


def gzip_bomb(size: int, prefix: bytes = b'{"success":true,"message":"') -> bytes:
    """A one-member gzip body that inflates to about ``size`` bytes (``prefix`` then zeros),
    about ``size / 1000`` bytes long, made in milliseconds: one fully flushed deflate segment of
    1 MiB of ``0`` is repeated (a full flush makes each copy independent of the ones before).
    The trailer's CRC is not computed: the body is never meant to be inflated whole."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    segment = comp.compress(b"0" * (1 << 20)) + comp.flush(zlib.Z_FULL_FLUSH)
    tail = comp.flush(zlib.Z_FINISH)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = (0).to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little")
    return header + head + segment * (size >> 20) + tail + trailer


def deflate_bomb(size: int) -> bytes:
    """A zlib-wrapped deflate body that inflates to about ``size`` bytes (as :func:`gzip_bomb`)."""
    return b"\x78\xda" + gzip_bomb(size)[10:-8]


class TokenBucket:
    """A service-side rate limit: ``rate`` requests a second, bursts of ``burst``; past it a 429
    with ``Retry-After`` (``retry_after`` gives its text from the seconds to the next token).

    Args:
        rate: tokens added per second.
        burst: the bucket's size.
        serve: the script for requests within the limit.
        retry_after: the header text for a 429, from the seconds until a token is free
            (default: whole seconds, rounded up, as HTTP's delta-seconds form).
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        serve: Callable[[Seen], Reply],
        retry_after: Callable[[float], str | None] = lambda wait: str(max(1, math.ceil(wait))),
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.serve = serve
        self.retry_after = retry_after
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self.lock = threading.Lock()
        self.accepted = 0
        self.limited = 0

    def __call__(self, seen: Seen) -> Reply:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                self.accepted += 1
                allowed = True
            else:
                self.limited += 1
                allowed = False
                wait = (1 - self.tokens) / self.rate
        if allowed:
            return self.serve(seen)
        headers = {"Content-Type": "application/json"}
        text = self.retry_after(wait)
        if text is not None:
            headers["Retry-After"] = text
        body = json.dumps({"success": False, "message": "Too many requests"}).encode()
        return Reply(429, body, headers)


def paged(total: int, page_limit: int = 1000) -> Callable[[Seen], Reply]:
    """A script serving ``total`` hand-made records with skip/limit."""

    def serve(seen: Seen) -> Reply:
        skip = int(seen.query.get("skip", 0))
        limit = min(page_limit, int(seen.query.get("limit", 50)))
        n = max(0, min(limit, total - skip))
        return ok_page(n, total=total, offset=skip)

    return serve


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        seen = Seen(
            "GET",
            parts.path,
            dict(parse_qsl(parts.query, keep_blank_values=True)),
            {k.lower(): v for k, v in self.headers.items()},
        )
        with self.server.lock:
            self.server.seen.append(seen)
            self.server.active += 1
            self.server.peak = max(self.server.peak, self.server.active)
        try:
            self._answer(self.server.script(seen))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            with self.server.lock:
                self.server.active -= 1

    def _answer(self, reply: Reply) -> None:
        if reply.drop:
            self.close_connection = True
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.chunks is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in reply.chunks():
                if self.server.stopping.is_set():
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if reply.trickle is None:
            self.wfile.write(reply.body)
            return
        for i in range(len(reply.body)):
            if self.server.stopping.is_set():
                self.close_connection = True
                return
            self.wfile.write(reply.body[i : i + 1])
            self.wfile.flush()
            time.sleep(reply.trickle)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: Callable[[Seen], Reply]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.active = 0
        self.peak = 0  # most requests handled at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-body (as txkit does at a bound) is expected here


class HostileServer:
    """A scripted HTTP server on 127.0.0.1 (a free port), in a thread.

    Example:
        >>> with HostileServer(lambda seen: ok_page(3)) as server:
        ...     Client(server.base_url, KEY).get_transactions({})
    """

    def __init__(self, script: Callable[[Seen], Reply]) -> None:
        self._server = _Server(script)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def script(self) -> Callable[[Seen], Reply]:
        return self._server.script

    @script.setter
    def script(self, value: Callable[[Seen], Reply]) -> None:
        self._server.script = value

    @property
    def seen(self) -> list[Seen]:
        return self._server.seen

    def client(self, **kw: Any) -> Client:
        """A :class:`~txkit.Client` for this server (few, quick retries unless ``retry=``)."""
        kw.setdefault("retry", QUICK)
        return Client(self.base_url, KEY, env_file=None, **kw)

    @property
    def peak_concurrency(self) -> int:
        """The most requests that were being handled at once."""
        return self._server.peak

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


_KINDS: dict[str, Callable[[], Callable[[Seen], Reply]]] = {
    "gzip_bomb": lambda: (lambda body: lambda seen: Reply(200, body, {"Content-Encoding": "gzip"}))(
        gzip_bomb(10 << 30)
    ),
    "trickle": lambda: lambda seen: Reply(200, page([record(0)]), trickle=1.0),
}


if __name__ == "__main__":
    with HostileServer(_KINDS[sys.argv[1]]()) as running:
        print(running.base_url, flush=True)
        threading.Event().wait()
