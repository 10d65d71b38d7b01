"""The sandbox HTTP service: ``GET /transaction`` over a generated ledger, on loopback.

It speaks the documented interface (``transaction-export-interface.md``) and fills in what the
document leaves open with these choices:

* ``GET /transaction`` filters: ``transType``, ``status``, ``currency`` (on ``toCurrency``),
  ``startDate``/``endDate`` (``YYYY-MM-DD``, UTC days on ``createdAt``, both inclusive);
  ``skip`` (default 0) and ``limit`` (default :data:`DEFAULT_LIMIT`, silently capped at
  :data:`MAX_LIMIT`). Unknown parameters are ignored.
* Sort: ``createdAt`` descending (newest first), ties by ``id`` ascending.
* Envelope ``{"success": true, "message": "Transactions retrieved", "data": {"transactions":
  [...], "total": N}}``; ``total`` counts every matching record.
* Authentication: ``Authorization: Bearer <key>``; a missing or wrong key gets 401.
* Bad parameters: 400 when malformed (not an integer, not ``YYYY-MM-DD``, not a real date, a
  parameter repeated), 422 when well-formed but not accepted (a value outside the documented
  lists, a negative ``skip``, ``limit`` 0, ``startDate`` after ``endDate``); the message names
  the parameter and the accepted values.
* Unknown path 404; another method than GET on ``/transaction`` 405. Every response carries
  ``X-Request-Id``; every body is a JSON envelope (except the injected HTML faults), never a
  stack trace.

This module owns the HTTP side (authentication, sending) and the :class:`Sandbox` lifecycle;
the query's parsing and validation is :mod:`txkit.sandbox._query`'s. The served data lives in
:mod:`txkit.sandbox._store`; every fault's effect on a request or on the data lives in
:mod:`txkit.sandbox._effects`: the handler validates, asks the fault layer for the reply and
sends it.
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import logging
import secrets
import socket
import threading
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from txkit.fetch.client import is_loopback
from txkit.sandbox._effects import FaultEffects, error_body
from txkit.sandbox._query import DEFAULT_LIMIT, MAX_LIMIT, Query, _BadParameter
from txkit.sandbox._store import Store
from txkit.sandbox.faults import Faults
from txkit.sandbox.ledger import Ledger, generate_ledger, parse_record

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "Query", "Sandbox"]

log = logging.getLogger(__name__)

_PATH: Final = "/transaction"
_MAX_BODY: Final = 1 << 20


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Do not wait for handler threads on close: they may idle on keep-alive connections;
    # close_connections() ends them instead.
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def close_connections(self) -> None:
        """Shut down every open client connection (their handler threads then end)."""
        with self.connections_lock:
            open_now = list(self.connections)
        for conn in open_now:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Client disconnects mid-response are normal for a test server: log, never print.
        log.debug("error while serving %s", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "txkit-sandbox/1"
    sys_version = ""
    timeout = 120
    server: _Server

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_OPTIONS(self) -> None:
        self._handle("OPTIONS")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors found by the stdlib parser (bad request line, long headers): JSON too."""
        self.close_connection = True
        try:
            reason = HTTPStatus(code).phrase
        except ValueError:
            reason = "Error"
        self._json(code, message or reason, request_id=_request_id())

    def _handle(self, method: str) -> None:
        sandbox = self.server.sandbox
        sandbox._count_request()
        request_id = _request_id()
        try:
            self._discard_body()
            url = urlsplit(self.path)
            if url.path.rstrip("/") != _PATH:
                self._json(404, f"Route {method} {url.path} not found", request_id=request_id)
                return
            if method != "GET":
                self._json(
                    405,
                    f"Method {method} not allowed on {_PATH}; use GET",
                    request_id=request_id,
                    headers={"Allow": "GET"},
                )
                return
            if not self._authorized(sandbox.secret_key):
                if self.headers.get("Authorization") is None:
                    message = (
                        "Authorization header missing: send 'Authorization: Bearer <secret key>'"
                    )
                else:
                    message = "Invalid or expired secret key"
                self._json(401, message, request_id=request_id)
                return
            try:
                query = Query.parse(url.query)
            except _BadParameter as bad:
                self._json(bad.status, bad.message, request_id=request_id)
                return
            self._serve(sandbox, query, request_id)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:
            log.exception("sandbox error on %s", self.path)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._json(500, "Internal sandbox error", request_id=request_id)

    def _serve(self, sandbox: Sandbox, query: Query, request_id: str) -> None:
        # Every fault's effect is decided by the fault layer; the handler only sends.
        reply = sandbox._effects.reply(query, sandbox.faults, sandbox._next_seq(), request_id)
        if reply.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._send(
            reply.status,
            reply.body,
            reply.content_type,
            request_id=request_id,
            headers=reply.headers,
        )

    def _authorized(self, key: str) -> bool:
        header = self.headers.get("Authorization")
        if not header:
            return False
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(token.strip().encode(), key.encode())

    def _discard_body(self) -> None:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
            return
        try:
            size = int(length)
        except ValueError:
            self.close_connection = True
            return
        if 0 < size <= _MAX_BODY:
            self.rfile.read(size)
        elif size > _MAX_BODY:
            self.close_connection = True

    def _json(
        self,
        status: int,
        message: str,
        *,
        request_id: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._send(
            status,
            error_body(message),
            "application/json; charset=utf-8",
            request_id=request_id,
            headers=headers,
        )

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        *,
        request_id: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"Server: {self.server_version}",
            f"Date: {formatdate(usegmt=True)}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            f"X-Request-Id: {request_id}",
        ]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        payload = head if self.command == "HEAD" else head + body
        self.wfile.write(payload)
        self.log_request(status, len(body))


#: The ledger a sandbox of this process generated last, with its settings: a notebook on the
#: sandbox starts one per load, and a served ledger is only read (a sandbox copies what it
#: edits), so sandboxes of the same settings share it.
_last_generated: list[tuple[dict[str, object], Ledger]] = []
_generating = threading.Lock()


def _generated(settings: dict[str, object]) -> Ledger:
    with _generating:
        for made_with, ledger in _last_generated:
            if made_with == settings:
                return ledger
        ledger = generate_ledger(**settings)  # type: ignore[arg-type]
        _last_generated[:] = [(dict(settings), ledger)]
        return ledger


def _request_id() -> str:
    return "req_" + secrets.token_hex(8)


class Sandbox:
    """A running sandbox service: a context manager that serves a ledger on loopback.

    Example::

        with Sandbox(records=5_000) as sb:
            httpx.get(f"{sb.base_url}/transaction",
                      headers={"Authorization": f"Bearer {sb.secret_key}"})

    Args:
        seed, records, start_month, months, anomaly_rate, balance_model, zero_balance_rate,
            late_payments_per_month, repeat_underpayers: passed to
            :func:`~txkit.sandbox.ledger.generate_ledger` (ignored when ``ledger`` is given).
        faults: a :class:`Faults`, a spec string, or None.
        secret_key: the key to accept; by default a random ``sk_sandbox_...`` per instance.
        host: address to bind; loopback only unless ``allow_remote``.
        port: port to bind; 0 picks a free one.
        data_dir: if given, ``orders.csv`` and ``ground_truth.json`` are written there on start.
        ledger: a pre-generated ledger to serve (tests share one).
        allow_remote: allow binding a non-loopback address (the key then travels in clear
            text over plain HTTP: avoid).

    Raises:
        ValueError: for a non-loopback host without ``allow_remote``, or bad faults.
    """

    def __init__(
        self,
        *,
        seed: int = 7,
        records: int = 20_000,
        faults: Faults | str | None = None,
        secret_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        data_dir: str | Path | None = None,
        ledger: Ledger | None = None,
        start_month: str = "2025-11",
        months: int = 12,
        anomaly_rate: float = 0.01,
        allow_remote: bool = False,
        balance_model: str = "net",
        zero_balance_rate: float = 0.0,
        late_payments_per_month: int = 3,
        repeat_underpayers: int = 0,
    ) -> None:
        if not allow_remote and not is_loopback(host):
            raise ValueError(
                f"refusing to serve on non-loopback host {host!r}: the sandbox is for local use "
                "(pass allow_remote=True, or --allow-remote, to override)"
            )
        self.host = host
        self.port = port
        self._faults = _as_faults(faults)
        self._secret_key = secret_key or "sk_sandbox_" + secrets.token_hex(16)
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._ledger = ledger
        self._ledger_args = {
            "seed": seed,
            "records": records,
            "start_month": start_month,
            "months": months,
            "anomaly_rate": anomaly_rate,
            "balance_model": balance_model,
            "zero_balance_rate": zero_balance_rate,
            "late_payments_per_month": late_payments_per_month,
            "repeat_underpayers": repeat_underpayers,
        }
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._store: Store
        self._effects: FaultEffects
        self._counter_lock = threading.Lock()
        self._requests = 0
        self._seq = itertools.count(1)

    def __repr__(self) -> str:
        state = self.base_url if self._server is not None else "stopped"
        return f"Sandbox({state}, ledger={self._ledger!r}, faults={str(self._faults)!r})"

    # -- public state ----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running service."""
        if self._server is None:
            raise RuntimeError("the sandbox is not running; use it as a context manager")
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    @property
    def secret_key(self) -> str:
        """The key the service accepts (``Authorization: Bearer <key>``)."""
        return self._secret_key

    def rotate_key(self, new_key: str | None = None) -> str:
        """Replace the accepted key, as a merchant rotating it in the dashboard would: the
        same account (same ledger, same address), and the old key is refused from now on.

        Args:
            new_key: the new key; by default a random ``sk_sandbox_...``.

        Returns:
            The new key.
        """
        self._secret_key = new_key or "sk_sandbox_" + secrets.token_hex(16)
        return self._secret_key

    @property
    def ledger(self) -> Ledger:
        """The ledger being served (generated on start if none was given)."""
        if self._ledger is None:
            raise RuntimeError("the ledger is generated when the sandbox starts")
        return self._ledger

    @property
    def faults(self) -> Faults:
        """The active faults; mutable, read on every request."""
        return self._faults

    @faults.setter
    def faults(self, value: Faults | str | None) -> None:
        self._faults = _as_faults(value)
        if hasattr(self, "_effects"):
            self._effects.plant(self._faults)  # planted ties show in served_records() at once

    @property
    def request_count(self) -> int:
        """How many HTTP requests the service has received (every path and outcome)."""
        return self._requests

    def served_records(self) -> list[dict[str, Any]]:
        """The records currently served, in export order (arrivals and status changes
        included), parsed like :meth:`Ledger.exported_records`.

        Raises:
            RuntimeError: if the sandbox has not been started.
        """
        if not hasattr(self, "_store"):
            raise RuntimeError("the sandbox is not running; use it as a context manager")
        with self._store.lock:
            bodies = list(self._store.bodies)
        return [parse_record(b) for b in bodies]

    def reset(self) -> None:
        """Undo arrivals and status changes and restart the fault sequence.

        Raises:
            RuntimeError: if the sandbox has not been started.
        """
        if not hasattr(self, "_store"):
            raise RuntimeError("the sandbox is not running; use it as a context manager")
        self._effects.reset()
        self._effects.plant(self._faults)
        with self._counter_lock:
            self._seq = itertools.count(1)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Sandbox:
        """Generate the ledger (if needed), bind the port and serve in a background thread.

        Returns:
            ``self``.
        """
        self._prepare()
        assert self._server is not None
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"txkit-sandbox:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def _prepare(self) -> None:
        if self._server is not None:
            raise RuntimeError("the sandbox is already running")
        if self._ledger is None:
            self._ledger = _generated(self._ledger_args)
        self._store = Store(self._ledger)
        self._effects = FaultEffects(self._store)
        self._effects.plant(self._faults)
        if self._data_dir is not None:
            self._ledger.write_files(self._data_dir)
        self._server = _Server((self.host, self.port), self)
        self.port = self._server.server_address[1]

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` or ``KeyboardInterrupt``."""
        if self._server is None:
            self._prepare()
        assert self._server is not None
        try:
            self._server.serve_forever(poll_interval=0.1)
        finally:
            self._close()

    def stop(self) -> None:
        """Stop serving and close the port (idempotent)."""
        server = self._server
        if server is None:
            return
        if self._thread is not None:
            server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._close()

    def _close(self) -> None:
        if self._server is not None:
            self._server.server_close()
            self._server.close_connections()
            self._server = None

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- used by the handler ---------------------------------------------------------------

    def _count_request(self) -> None:
        with self._counter_lock:
            self._requests += 1

    def _next_seq(self) -> int:
        with self._counter_lock:
            return next(self._seq)


def _as_faults(value: Faults | str | None) -> Faults:
    if value is None:
        return Faults()
    if isinstance(value, Faults):
        return value
    if isinstance(value, str):
        return Faults.parse(value)
    raise TypeError(f"faults must be a Faults, a spec string or None, not {type(value).__name__}")
