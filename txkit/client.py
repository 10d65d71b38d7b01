"""HTTP access to the export endpoint: configuration, authentication, retries, error mapping.

:class:`Client` sends ``GET {base_url}/transaction`` with ``Authorization: Bearer <key>`` and
``Content-Type: application/json`` and returns the raw body of a successful page; everything
about pages and completeness lives in :mod:`txkit.pages`, everything about JSON in
:mod:`txkit.frame`.

Configuration comes from arguments, else the environment (``TXKIT_BASE_URL``,
``TXKIT_SECRET_KEY``), else a ``.env`` file in the working directory. The key never appears in
a repr, an error message or a log line.
"""

from __future__ import annotations

import email.utils
import hashlib
import ipaddress
import json
import logging
import os
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

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

__all__ = ["Client", "RetryPolicy", "load_dotenv_values"]

log = logging.getLogger("txkit")

BASE_URL_VAR = "TXKIT_BASE_URL"
SECRET_KEY_VAR = "TXKIT_SECRET_KEY"
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-correlation-id")


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

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        return min(self.backoff_cap, self.backoff_base * 2**attempt) * rng.uniform(0.5, 1.0)


def load_dotenv_values(path: str | os.PathLike[str] = ".env") -> dict[str, str]:
    """Read ``KEY=VALUE`` lines of a ``.env`` file (``#`` comments, optional quotes, ``export``).

    Args:
        path: the file; a missing file gives an empty dict.

    Returns:
        The variables it sets.
    """
    file = Path(path)
    if not file.is_file():
        return {}
    values: dict[str, str] = {}
    for line in file.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), bracketed or not."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Client:
    """A configured connection to the export endpoint.

    Args:
        base_url: the service's base address; default ``TXKIT_BASE_URL`` (environment, then
            ``.env``).
        secret_key: the merchant's secret key; default ``TXKIT_SECRET_KEY`` (environment, then
            ``.env``). Never pass it on a command line.
        timeout: seconds for connect and for each read.
        retry: the :class:`RetryPolicy`.
        transport: an httpx transport (e.g. :class:`httpx.MockTransport` in tests).
        env_file: the ``.env`` file consulted for missing settings.
        seed: seed of the backoff jitter (for reproducible tests).

    Raises:
        ConfigError: no base URL or no key, or a key about to go over plain ``http://`` to a
            host that is not on this machine.

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
    ) -> None:
        dotenv = load_dotenv_values(env_file) if env_file is not None else {}
        base_url = base_url or os.environ.get(BASE_URL_VAR) or dotenv.get(BASE_URL_VAR)
        secret_key = secret_key or os.environ.get(SECRET_KEY_VAR) or dotenv.get(SECRET_KEY_VAR)
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
        url = httpx.URL(base_url.rstrip("/"))
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
        self._base_url = url
        self._secret_key = secret_key
        self._timeout = timeout
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._http = httpx.Client(
            base_url=url,
            headers={
                "Authorization": f"Bearer {secret_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": "txkit",
            },
            timeout=httpx.Timeout(timeout),
            transport=transport,
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
        )
        #: Requests sent and retries made, for the export summary.
        self.requests_sent = 0
        self.retries = 0

    @property
    def base_url(self) -> str:
        """The service's base address (no secret in it)."""
        return str(self._base_url)

    def key_fingerprint(self, salt: bytes) -> str:
        """A salted, slow hash of the key (PBKDF2-SHA256), to recognise it without keeping it.

        The store records it to refuse data from another key; it reveals nothing usable of
        the key (never the key, nor a prefix of it).
        """
        digest = hashlib.pbkdf2_hmac("sha256", self._secret_key.encode(), salt, 100_000)
        return digest.hex()

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
            with self._lock:
                self.requests_sent += 1
            try:
                response = self._http.send(request)
            except httpx.TimeoutException as exc:
                failure: Exception = NetworkError(
                    f"timed out after {self._timeout:g}s ({type(exc).__name__})", request=request
                )
                wait = None
            except httpx.TransportError as exc:
                failure = NetworkError(
                    f"connection failed or was dropped ({type(exc).__name__}: "
                    f"{scrub(str(exc), self._secret_key)})",
                    request=request,
                )
                wait = None
            else:
                failure, wait = self._classify(response, request)
                if failure is None:
                    return response.content, request
            if attempt >= self.retry.max_retries:
                raise failure
            delay = self._delay(attempt, wait)
            if delay is None:
                raise failure
            log.warning("retrying in %.2fs after: %s", delay, failure)
            with self._lock:
                self.retries += 1
            time.sleep(delay)
            attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before the next attempt; None when the server asks for too long."""
        with self._lock:
            if retry_after is None:
                return self.retry.backoff(attempt, self._rng)
            if retry_after > self.retry.max_retry_after:
                return None
            # Honour Retry-After, plus up to 10% so that workers do not return in lockstep.
            return retry_after * self._rng.uniform(1.0, 1.1)

    def _classify(
        self, response: httpx.Response, request: httpx.Request
    ) -> tuple[Exception | None, float | None]:
        """Map a response to (error or None, Retry-After seconds when rate limited)."""
        status = response.status_code
        body = response.content
        if status == 200 and body[:64].lstrip()[:1] == b"{":
            return None, None  # the hot path: the body is decoded once, by txkit.frame
        request_id = next(
            (response.headers[h] for h in _REQUEST_ID_HEADERS if h in response.headers), None
        )
        context: dict[str, Any] = {
            "status_code": status,
            "server_message": None,
            "request_id": request_id,
            "request": request,
        }
        if status == 200:
            kind = response.headers.get("content-type", "no content type")
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
                self._retry_after(response),
            )
        if status >= 500:
            return ServerError(f"the service failed ({status})", **context), None
        if status == 401:
            raise AuthError(
                "the secret key was rejected (401). Check TXKIT_SECRET_KEY; sandbox and "
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
    def _retry_after(response: httpx.Response) -> float | None:
        value = response.headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if value else None
            if parsed is None:
                return None
            return max(0.0, parsed.timestamp() - time.time())
