"""The probe's HTTP session: read-only GETs under a hard request budget.

Every attempt counts against the budget, retries included: the :class:`~txkit.fetch.client.Client`
is built with no retries of its own and a transport that counts each request, refuses to send
one past the budget (whatever the client does), and remembers the last ``Retry-After``.
A 429 stops sending: the session waits what ``Retry-After`` asks (or backs off when it says
nothing usable: 1 s, then twice as long each time, or from ``TXKIT_BACKOFF_BASE`` as for an
export), slows down for the rest of the probe, and gives up with
:class:`ProbeStopped` when the wait is too long or the 429s do not end. 5xx, timeouts and
dropped connections are retried twice; 400/404/409/422 come back as a :class:`Page` with
their status (the probe learns from them); 401/403 raise.
"""

from __future__ import annotations

import email.utils
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import orjson

from txkit.config import SECRET_KEY_VAR, backoff_base_setting, load_dotenv_values
from txkit.errors import (
    BadRequestError,
    NetworkError,
    RateLimitedError,
    ResponseFormatError,
    ServerError,
    scrub,
)
from txkit.fetch.client import Client, RetryPolicy, tls_context

__all__ = ["Page", "ProbeSession", "ProbeStopped"]

ENVELOPE_KEYS: Final = frozenset({"success", "message", "data"})
DATA_KEYS: Final = frozenset({"transactions", "total"})
#: The longest Retry-After the probe waits for; a longer one ends the probe.
MAX_WAIT: Final = 60.0
#: The slowest pace after 429s: one request per this many seconds.
MAX_INTERVAL: Final = 4.0
_TRANSIENT_RETRIES: Final = 2
_RATE_LIMIT_RETRIES: Final = 4


class ProbeStopped(Exception):
    """The probe cannot send another request (budget spent, or the service keeps refusing)."""


@dataclass(slots=True)
class Page:
    """One response: the records and total of a 200, or the status and message of a 4xx."""

    params: dict[str, str | int]
    status: int
    records: list[dict[str, Any]] = field(default_factory=list)
    total: int | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        """True for a 200."""
        return self.status == 200


class _BudgetSpent(Exception):
    """Raised by the transport itself: not an httpx error, so no client retries it."""


class _CountingTransport(httpx.BaseTransport):
    """Counts every request, refuses to send past the budget, and keeps the last response's
    Retry-After."""

    def __init__(self, inner: httpx.BaseTransport, budget: int) -> None:
        self.inner = inner
        self.budget = budget
        self.count = 0
        self.last_retry_after: str | None = None
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            if self.count >= self.budget:
                raise _BudgetSpent
            self.count += 1
            self.last_retry_after = None
        response = self.inner.handle_request(request)
        self.last_retry_after = response.headers.get("retry-after")
        return response

    def close(self) -> None:
        self.inner.close()


class ProbeSession:
    """Budgeted GETs of ``/transaction`` with a client of its own.

    Args:
        base_url, secret_key, env_file, timeout: as for :class:`~txkit.fetch.client.Client`.
        max_requests: the budget: no more requests than this are ever sent.
        sleep: the sleep function (tests may pass a fake one).

    Raises:
        ConfigError: as :class:`~txkit.fetch.client.Client` does, or ``TXKIT_BACKOFF_BASE`` is
            not a number of seconds from 0 to 60.
    """

    def __init__(
        self,
        base_url: str | None = None,
        secret_key: str | None = None,
        *,
        max_requests: int = 60,
        env_file: str | os.PathLike[str] | None = ".env",
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._transport = _CountingTransport(
            httpx.HTTPTransport(verify=tls_context()), max_requests
        )
        # Kept only to scrub it from anything the probe writes or prints.
        self.secret = (
            secret_key
            or os.environ.get(SECRET_KEY_VAR)
            or (load_dotenv_values(env_file).get(SECRET_KEY_VAR) if env_file else None)
        )
        self.client = Client(
            base_url,
            secret_key,
            timeout=timeout,
            retry=RetryPolicy(max_retries=0),
            transport=self._transport,
            env_file=env_file,
            # The session paces itself after a 429 (and counts every request); the client's
            # shared limiter would wait a second time.
            shared_rate_limit=False,
        )
        self.max_requests = max_requests
        self._sleep = sleep
        base = backoff_base_setting()
        #: Seconds of the first backoff (as an export's, ``TXKIT_BACKOFF_BASE``; default 0.5).
        self._backoff = RetryPolicy().backoff_base if base is None else base
        self._interval = 0.0
        self._last_sent = 0.0
        #: 429 responses seen and the Retry-After values they carried.
        self.rate_limited = 0
        self.retry_after_values: list[str | None] = []
        self.envelope_extras: set[str] = set()
        self.responses = 0

    @property
    def base_url(self) -> str:
        """The service's base address (no key)."""
        return self.client.base_url

    @property
    def requests(self) -> int:
        """Requests sent so far (every attempt)."""
        return self._transport.count

    @property
    def remaining(self) -> int:
        """Requests the budget still allows."""
        return self.max_requests - self._transport.count

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()

    def __enter__(self) -> ProbeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, params: dict[str, str | int]) -> Page:
        """``GET /transaction`` with ``params``.

        Returns:
            The :class:`Page`: records and total of a 200, status and message of a 400, 404,
            409 or 422.

        Raises:
            ProbeStopped: the budget is spent, a Retry-After is longer than :data:`MAX_WAIT`,
                the 429s do not end, or the service keeps failing (5xx, network).
            AuthError: 401 or 403.
            ResponseFormatError: a 200 that is not the documented envelope.
        """
        limited = transient = 0
        while True:
            if self.remaining <= 0:
                raise ProbeStopped(f"the request budget ({self.max_requests}) was spent")
            pause = self._last_sent + self._interval - time.monotonic()
            if pause > 0:
                self._sleep(pause)
            self._last_sent = time.monotonic()
            try:
                body, _ = self.client.get_transactions(params)
            except _BudgetSpent:
                raise ProbeStopped(f"the request budget ({self.max_requests}) was spent") from None
            except RateLimitedError:
                limited += 1
                self.rate_limited += 1
                header = self._transport.last_retry_after
                self.retry_after_values.append(header)
                wait = _retry_after(header)
                if wait is None:
                    wait = min(MAX_WAIT, self._backoff * 2.0**limited)  # 1 s, 2 s, 4 s...
                if wait > MAX_WAIT:
                    raise ProbeStopped(
                        f"rate limited (429) with Retry-After {header!r}, longer than the "
                        f"probe waits ({MAX_WAIT:g} s)"
                    ) from None
                if limited > _RATE_LIMIT_RETRIES:
                    raise ProbeStopped(
                        f"rate limited (429) {limited} times in a row on one request"
                    ) from None
                # Slow down (twice as slow per 429, at most one request per MAX_INTERVAL);
                # successes speed up again, a little at a time.
                self._interval = min(MAX_INTERVAL, max(0.25, self._interval * 2))
                self._sleep(wait)
                continue
            except BadRequestError as exc:
                self.responses += 1
                return Page(dict(params), exc.status_code or 400, message=exc.server_message)
            except (ServerError, NetworkError, ResponseFormatError) as exc:
                transient += 1
                if transient > _TRANSIENT_RETRIES:
                    raise ProbeStopped(f"the service kept failing: {exc}") from None
                self._sleep(self._backoff * transient)
                continue
            self.responses += 1
            self._interval = self._interval * 0.8 if self._interval > 0.05 else 0.0
            return self._page(params, body)

    def _page(self, params: dict[str, str | int], body: bytes) -> Page:
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ResponseFormatError(f"the service returned invalid JSON ({exc})") from None
        data = doc.get("data") if isinstance(doc, dict) else None
        records = data.get("transactions") if isinstance(data, dict) else None
        total = data.get("total") if isinstance(data, dict) else None
        if not isinstance(records, list) or not isinstance(total, int) or isinstance(total, bool):
            shape = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
            raise ResponseFormatError(
                "the service's 200 is not the documented envelope "
                f"(data.transactions list and data.total integer); top-level keys: "
                f"{scrub(str(shape))}"
            )
        assert isinstance(doc, dict) and isinstance(data, dict)
        self.envelope_extras.update(k for k in doc if k not in ENVELOPE_KEYS)
        self.envelope_extras.update(f"data.{k}" for k in data if k not in DATA_KEYS)
        return Page(
            dict(params),
            200,
            records=[r for r in records if isinstance(r, dict)],
            total=total,
        )


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if parsed is None or parsed.tzinfo is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())
    if seconds != seconds or seconds < 0:  # NaN or negative: unusable
        return None
    return seconds
