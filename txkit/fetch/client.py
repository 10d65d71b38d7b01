"""HTTP access to the export endpoint: configuration, authentication, retries, error mapping.

:class:`Client` sends ``GET {base_url}/transaction`` with ``Authorization: Bearer <key>`` and
``Content-Type: application/json`` and returns the raw body of a successful page; everything
about pages and completeness lives in :mod:`txkit.fetch.pages`, everything about JSON in
:mod:`txkit.decode`.

Configuration comes from arguments, else the environment (``TXKIT_BASE_URL``,
``TXKIT_SECRET_KEY``), else a ``.env`` file in the working directory, read by python-dotenv
(inline comments, quotes, ``export``, a UTF-8 BOM as most tools read them). The environment
wins over ``.env``, as with most tools; when both set a variable differently, a warning says
so. Both values are checked before any request: whitespace, a line break, a control or
non-ASCII character is a :class:`~txkit.errors.ConfigError` naming the variable and where it
came from, never a retried network failure. The key never appears in a repr, an error message
or a log line, not even in part.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx

from txkit._scrub import register_secret
from txkit.config import (
    BASE_URL_VAR,
    SECRET_KEY_VAR,
    backoff_base_setting,
    check_setting,
    max_retries_setting,
    read_setting,
)
from txkit.errors import (
    ApiError,
    AuthError,
    BadRequestError,
    ConfigError,
    NetworkError,
    RateLimitedError,
    ResponseFormatError,
    ServerError,
    excerpt,
    scrub,
)
from txkit.fetch._body import ACCEPT_ENCODING, BodyBudget, Bounds, read_body
from txkit.fetch.ratelimit import SharedLimiter, parse_retry_after

__all__ = [
    "Client",
    "RetryPolicy",
    "describe_retries",
    "requests_started",
]

log = logging.getLogger("txkit")

_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-correlation-id")
_sent_in_process = [0]


def requests_started() -> int:
    """How many requests every :class:`Client` of this process has sent so far (the CLI
    compares it before and after a command to tell the user's bad arguments, found before any
    request, from bad answers, found after)."""
    return _sent_in_process[0]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How failed requests are retried.

    Retried: 429 (waiting at least ``Retry-After``), 5xx, timeouts, dropped connections and a
    200 whose body is not JSON (a proxy's error page). Never retried: 400, 401, 403, 404, 409,
    422. The wait before retry *n* (0-based) is ``min(cap, base * 2**n)`` times a random
    factor in [0.5, 1] (jitter, so concurrent workers do not retry in lockstep).

    Attributes:
        max_retries: retries per request after the first attempt.
        backoff_base: seconds of the first wait.
        backoff_cap: the longest wait between two attempts, in seconds.
        max_retry_after: the longest ``Retry-After`` honoured; a longer one fails the request.
    """

    max_retries: int = 6
    backoff_base: float = 0.5
    backoff_cap: float = 20.0
    max_retry_after: float = 120.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """The default policy, with ``max_retries`` from ``TXKIT_MAX_RETRIES`` and
        ``backoff_base`` from ``TXKIT_BACKOFF_BASE`` when they are set.

        Raises:
            ConfigError: ``TXKIT_MAX_RETRIES`` is not a whole number from 0 to 100, or
                ``TXKIT_BACKOFF_BASE`` not a number of seconds from 0 to 60.
        """
        retries, base = max_retries_setting(), backoff_base_setting()
        policy = cls()
        if retries is not None:
            policy = replace(policy, max_retries=retries)
        if base is not None:
            policy = replace(policy, backoff_base=base)
        return policy

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        return min(self.backoff_cap, self.backoff_base * 2**attempt) * rng.uniform(0.5, 1.0)


def is_loopback(host: str) -> bool:
    """True for this machine: the name ``localhost`` itself and the loopback addresses
    (127.0.0.0/8, ``::1``, bracketed or not), decided on the parsed text, never by DNS.

    A name that merely ends in ``.localhost`` is not this machine: it goes to a resolver (or a
    proxy) that may answer anything.
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _refuse_url_parts(base_url: str, origin: str) -> None:
    """A base URL is scheme, host, port and path: user information would be sent as Basic
    auth instead of the key (and a 401 blamed on the key); a query or fragment would be
    dropped or mixed with txkit's own. Named, never echoed (a password may be in it)."""
    try:
        parts = urlsplit(base_url)
    except ValueError:  # not a URL at all: httpx.URL names that next
        return
    found = [
        name
        for name, present in (
            ("user information (user:password@)", "@" in parts.netloc),
            ("a query (?...)", "?" in base_url),
            ("a fragment (#...)", "#" in base_url),
        )
        if present
    ]
    if found:
        raise ConfigError(
            f"{BASE_URL_VAR} (from {origin}) holds {' and '.join(found)}: give only the "
            "scheme, host, port and path, such as https://api.example.com (the key is sent "
            f"as a Bearer token from {SECRET_KEY_VAR}; the URL is not shown)"
        )


def _settings(
    base_url: str | None, secret_key: str | None, env_file: str | os.PathLike[str] | None
) -> tuple[httpx.URL, str]:
    """Checked before any request, the key registered for scrubbing first."""
    if base_url:
        base_origin = "the base_url argument (--base-url)"
    else:
        base_url, base_origin = read_setting(BASE_URL_VAR, env_file)
    if secret_key:
        key_origin = "the secret_key argument"
    else:
        secret_key, key_origin = read_setting(SECRET_KEY_VAR, env_file)
    if not base_url:
        raise ConfigError(
            f"no base URL: set {BASE_URL_VAR} (in the environment or a .env file), "
            "or start the sandbox with `txkit sandbox` and paste the two lines it prints"
        )
    if not secret_key:
        raise ConfigError(
            f"no secret key: set {SECRET_KEY_VAR} in the environment or in a .env file "
            "in the working directory (never on a command line)"
        )
    register_secret(secret_key)
    check_setting(SECRET_KEY_VAR, secret_key, key_origin, secret=True)
    check_setting(BASE_URL_VAR, base_url, base_origin, secret=False)
    _refuse_url_parts(base_url, base_origin)
    try:
        url = httpx.URL(base_url.rstrip("/"))
    except httpx.InvalidURL as exc:
        raise ConfigError(
            f"{BASE_URL_VAR} (from {base_origin}) is not a URL ({scrub(str(exc), secret_key)})"
            ": give one such as https://api.example.com"
        ) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"{BASE_URL_VAR} must be an http(s) URL such as https://api.example.com, "
            f"got {scrub(base_url, secret_key)!r}"
        )
    if url.scheme == "http" and not is_loopback(url.host):
        raise ConfigError(
            f"refusing to send the secret key over plain http:// to {url.host}: anyone on "
            "the network could read it. Use https://, or http:// only to this machine "
            "(127.0.0.1, localhost) such as the sandbox"
        )
    return url, secret_key


def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (``create_ssl_context()``: certifi's CAs, or
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set), built once per process and setting.

    Building one loads the whole CA bundle, most of a :class:`Client`'s cost, paid again by
    every client and probe otherwise. A context is safe to share
    between clients and threads; httpx reads the two variables when it builds one, so they
    are part of the key.
    """
    return _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()


# key_fingerprint's PBKDF2 is slow by design, and a store syncs again and again with one key: each
# (salt, key) is hashed once per process. Looked up by a SHA-256 of both, so the cache holds no key.
_FINGERPRINTS: dict[bytes, str] = {}
_FINGERPRINTS_KEPT = 64
_fingerprints_lock = threading.Lock()


def _fingerprint(key: bytes, salt: bytes) -> str:
    lookup = hashlib.sha256(len(salt).to_bytes(8, "big") + salt + key).digest()
    with _fingerprints_lock:
        found = _FINGERPRINTS.get(lookup)
    if found is None:
        found = hashlib.pbkdf2_hmac("sha256", key, salt, 100_000).hex()
        with _fingerprints_lock:
            if len(_FINGERPRINTS) >= _FINGERPRINTS_KEPT:
                del _FINGERPRINTS[next(iter(_FINGERPRINTS))]
            _FINGERPRINTS[lookup] = found
    return found


class Client:
    """A configured connection to the export endpoint.

    Args:
        base_url: the service's base address; default ``TXKIT_BASE_URL`` (environment, then
            ``.env``).
        secret_key: the merchant's secret key; default ``TXKIT_SECRET_KEY`` (environment, then
            ``.env``). Never pass it on a command line.
        timeout: seconds for connect and for each read (at most ``response_deadline``).
        retry: the :class:`RetryPolicy`; default :meth:`RetryPolicy.from_env`.
        transport: an httpx transport (e.g. :class:`httpx.MockTransport` in tests).
        env_file: the ``.env`` file consulted for missing settings.
        seed: seed of the backoff jitter (for reproducible tests).
        max_body_bytes: the largest response body accepted, counted after decompression;
            default ``TXKIT_MAX_BODY_MB`` (in MiB) or 256 MiB. A gzip bomb stops there.
        response_deadline: seconds for a whole response, from sending the request to the last
            byte of the body (not per read: a server that trickles bytes stops here); default
            ``TXKIT_RESPONSE_DEADLINE`` or 120.
        shared_rate_limit: one :class:`~txkit.fetch.ratelimit.SharedLimiter` for every request of
            this client, so a 429 slows all workers down (False: each request only waits its
            own ``Retry-After``, as before; kept for benchmarks).

    Raises:
        ConfigError: no base URL or no key; a key or base URL with whitespace (a trailing
            newline), a control or a non-ASCII character (named with the variable and where
            it came from, before any request); a key about to go over plain ``http://`` to a
            host that is not on this machine; or a bound that is not a positive number.

    Example:
        >>> with txkit.Client() as client:  # reads TXKIT_BASE_URL / TXKIT_SECRET_KEY
        ...     df = txkit.load_transactions(client, status="successful", start="2026-10-01")
    """

    def __init__(
        self,
        base_url: str | None = None,
        secret_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        env_file: str | os.PathLike[str] | None = ".env",
        seed: int | None = None,
        max_body_bytes: int | None = None,
        response_deadline: float | None = None,
        shared_rate_limit: bool = True,
    ) -> None:
        url, secret_key = _settings(base_url, secret_key, env_file)
        self._base_url = url
        self._secret_key = secret_key
        self.bounds = Bounds.resolve(max_body_bytes, response_deadline)
        self._budget = BodyBudget(self.bounds.max_body_bytes)
        self._timeout = min(timeout, self.bounds.response_deadline)
        self.retry = retry or RetryPolicy.from_env()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._http = httpx.Client(
            base_url=url,
            headers={
                "Authorization": f"Bearer {secret_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Accept-Encoding": ACCEPT_ENCODING,
                "User-Agent": "txkit",
            },
            timeout=httpx.Timeout(self._timeout, connect=timeout),
            verify=tls_context(),
            transport=transport,
            # The key goes only to the service: plain http (this machine only) never through a
            # proxy from the environment (a forwarding proxy reads every header); https through
            # one only as TLS inside CONNECT, which httpx does for every https request.
            trust_env=url.scheme == "https",
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
        )
        #: The shared request rate (None when disabled).
        self.limiter = SharedLimiter() if shared_rate_limit else None
        #: Requests sent and retries made, for the export summary.
        self.requests_sent = 0
        self.retries = 0
        #: Retries by cause: ``429``, ``5xx``, ``timeout``, ``dropped``, ``not JSON``.
        self.retry_causes: dict[str, int] = {}

    @property
    def base_url(self) -> str:
        """The service's base address (no secret in it)."""
        return str(self._base_url)

    def key_fingerprint(self, salt: bytes) -> str:
        """A salted, slow hash of the key (PBKDF2-SHA256), to recognise it without keeping it.

        The store records it to refuse data from another key; it reveals nothing usable of
        the key (never the key, nor a prefix of it).
        """
        return _fingerprint(self._secret_key.encode(), salt)

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r}, secret_key='***')"

    __str__ = __repr__

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # ----------------------------------------------------------------------------------------

    def get_transactions(self, params: Mapping[str, str | int]) -> tuple[bytes, httpx.Request]:
        """``GET /transaction`` with ``params``, retried as :class:`RetryPolicy` says.

        Args:
            params: query parameters, already validated.

        Returns:
            The body of a 200 response that looks like JSON, and the request that got it.

        Raises:
            AuthError, BadRequestError: 401/403, and 400/404/409/422 (not retried).
            RateLimitedError, ServerError, NetworkError, ResponseFormatError: still failing
                after every retry.
        """
        attempt = 0
        while True:
            request = self._http.build_request("GET", "/transaction", params=dict(params))
            self._refuse_elsewhere(request)
            sent_at = self.limiter.acquire() if self.limiter is not None else time.monotonic()
            with self._lock:
                self.requests_sent += 1
                _sent_in_process[0] += 1
            try:
                status, headers, body = self._send(request)
            except httpx.TimeoutException as exc:
                failure: Exception = NetworkError(
                    f"timed out after {self._timeout:g}s ({type(exc).__name__})", request=request
                )
                wait, cause = None, "timeout"
            except httpx.TransportError as exc:
                failure = NetworkError(
                    f"connection failed or was dropped ({type(exc).__name__}: "
                    f"{scrub(str(exc), self._secret_key)})",
                    request=request,
                )
                wait, cause = None, "dropped"
            else:
                failure, wait = self._classify(status, headers, body, request)
                if failure is None:
                    return body, request
                cause = _cause(status)
                if status == 429 and self.limiter is not None:
                    self.limiter.throttled(sent_at, wait)
            if attempt >= self.retry.max_retries:
                raise failure
            delay = self._delay(attempt, wait)
            if delay is None:
                raise failure
            log.debug("retrying in %.2fs after: %s", delay, failure)
            with self._lock:
                self.retries += 1
                self.retry_causes[cause] = self.retry_causes.get(cause, 0) + 1
            time.sleep(delay)
            attempt += 1

    def _refuse_elsewhere(self, request: httpx.Request) -> None:
        """The key is sent to the configured service only: a request for another scheme, host
        or port (or, over plain http, through any proxy) is refused before it leaves."""
        url, base = request.url, self._base_url
        if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port):
            raise ConfigError(
                f"refusing to send the secret key to {url.scheme}://{url.host}: only "
                f"{BASE_URL_VAR}'s host {base.host} receives it"
            )
        if url.scheme == "http" and self._http._transport_for_url(url) is not self._http._transport:
            raise ConfigError(
                f"refusing to send the secret key over plain http:// through a proxy to "
                f"{url.host}: a proxy would read it. Use https:// (through a proxy only as TLS "
                "inside CONNECT), or plain http:// to this machine without a proxy"
            )

    def _send(self, request: httpx.Request) -> tuple[int, httpx.Headers, bytes]:
        started = time.monotonic()
        response = self._http.send(request, stream=True)
        try:
            return (
                response.status_code,
                response.headers,
                read_body(response, request, self.bounds, started, self._budget),
            )
        finally:
            response.close()

    def _delay(self, attempt: int, retry_after: float | None) -> float | None:
        """None: the server asks for longer than ``max_retry_after``."""
        with self._lock:
            if retry_after is None:
                return self.retry.backoff(attempt, self._rng)
            if retry_after > self.retry.max_retry_after:
                return None
            # Honour Retry-After, plus up to 10% so that workers do not return in lockstep.
            return retry_after * self._rng.uniform(1.0, 1.1)

    def _classify(
        self, status: int, headers: httpx.Headers, body: bytes, request: httpx.Request
    ) -> tuple[Exception | None, float | None]:
        if status == 200 and body[:64].lstrip()[:1] == b"{":
            return None, None  # the hot path: the body is decoded once, by txkit.decode
        request_id = next((headers[h] for h in _REQUEST_ID_HEADERS if h in headers), None)
        context: dict[str, Any] = {
            "status_code": status,
            "server_message": None,
            "request_id": request_id,
            "request": request,
        }
        if status == 200:
            kind = headers.get("content-type", "no content type")
            return (
                ResponseFormatError(
                    f"the service returned a non-JSON body ({kind}); "
                    f"it starts: {excerpt(scrub(body.decode('utf-8', 'replace')))!r}",
                    **context,
                ),
                None,
            )
        context["server_message"] = self._server_message(body)
        if status == 429:
            return (
                RateLimitedError("rate limited by the service (429)", **context),
                self._retry_after(headers),
            )
        if status >= 500:
            return ServerError(f"the service failed ({status})", **context), None
        if status == 401:
            raise AuthError(
                f"the secret key was rejected (401). Check {SECRET_KEY_VAR}; sandbox and "
                "production keys differ, and a key works only against its own environment",
                **context,
            )
        if status == 403:
            raise AuthError(
                "the service refused access (403); it gives its reason below (e.g. the IP is "
                "not whitelisted, or the account's role or KYC does not allow exports)",
                **context,
            )
        if 400 <= status < 500:
            raise BadRequestError(
                f"the service rejected the request ({status}); it is not retried", **context
            )
        raise ApiError(f"unexpected HTTP status {status}", **context)

    def _server_message(self, body: bytes) -> str | None:
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return excerpt(scrub(body.decode("utf-8", "replace"), self._secret_key)) or None
        if isinstance(doc, dict) and doc.get("message") is not None:
            return scrub(str(doc["message"]), self._secret_key)
        return None

    @staticmethod
    def _retry_after(headers: httpx.Headers) -> float | None:
        return parse_retry_after(headers.get("retry-after"))


#: Retry causes, in the order the summary line names them.
RETRY_CAUSES = ("429", "5xx", "timeout", "dropped", "not JSON")


def _cause(status: int) -> str:
    if status == 429:
        return "429"
    if status >= 500:
        return "5xx"
    return "not JSON"


def describe_retries(causes: Mapping[str, int]) -> str:
    """``"3 retries (2 × 429, 1 timeout)"`` for the summary line; ``"0 retries"`` if none."""
    total = sum(causes.values())
    if not total:
        return "0 retries"
    parts = [f"{causes[c]:,} {c}" for c in RETRY_CAUSES if causes.get(c)]
    parts += [f"{n:,} {c}" for c, n in causes.items() if c not in RETRY_CAUSES and n]
    return f"{total:,} {'retry' if total == 1 else 'retries'} ({', '.join(parts)})"
