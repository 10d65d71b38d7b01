"""Errors raised by txkit.

Every error txkit raises on purpose derives from :class:`TxkitError`::

    TxkitError
    ├── ConfigError               missing key or base URL, a key about to be sent over plain http
    ├── ApiError                  the service answered, but not with what was asked for
    │   ├── AuthError             401 (key rejected) and 403 (forbidden, e.g. IP not whitelisted)
    │   ├── BadRequestError       400, 404, 409, 422: the request itself is wrong; never retried
    │   ├── RateLimitedError      429 after every retry was spent
    │   ├── ServerError           5xx after every retry was spent
    │   └── ResponseFormatError   a body that is not JSON, or not the documented envelope
    ├── NetworkError              timeouts and dropped connections after every retry was spent
    ├── SchemaError               a field whose value cannot be converted without loss
    └── IncompleteExportError     the records fetched do not add up to the service's total

Caller mistakes (an unknown status, a malformed date, start after end) raise ``ValueError``
before any request is sent.

Messages never contain the secret key: requests are described by method, path and query only,
and server text is shortened and scrubbed of anything that looks like a bearer token.
"""

from __future__ import annotations

import re

import httpx

_TOKEN_RE = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+|\b(sk|pk)_[A-Za-z0-9_\-]{8,}")


def scrub(text: str, *secrets: str | None) -> str:
    """Remove secrets and anything shaped like a bearer token from ``text``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _TOKEN_RE.sub(lambda m: (m.group(1) or "") + "***", text)


def excerpt(body: bytes | str, limit: int = 200) -> str:
    """A short, printable excerpt of a response body for error messages."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    body = " ".join(body.split())
    return body if len(body) <= limit else body[:limit] + f"... ({len(body)} characters)"


def describe_request(request: httpx.Request | None) -> str | None:
    """``GET /transaction?status=successful`` - never headers, so never the key."""
    if request is None:
        return None
    url = request.url.copy_with(username=None, password=None)
    return f"{request.method} {scrub(str(url))}"


class TxkitError(Exception):
    """Root of every error txkit raises on purpose."""


class ConfigError(TxkitError):
    """The client is not configured well enough to make a request."""


class ApiError(TxkitError):
    """The service answered with an error.

    Attributes:
        status_code: the HTTP status (200 when the body said ``success: false``).
        server_message: the ``message`` of the service's JSON envelope, if any.
        request_id: the service's request id header, if it sent one.
        request: the :class:`httpx.Request` (its headers hold the key: never print them).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        server_message: str | None = None,
        request_id: str | None = None,
        request: httpx.Request | None = None,
    ) -> None:
        self.status_code = status_code
        self.server_message = server_message
        self.request_id = request_id
        self.request = request
        parts = [message]
        if status_code is not None:
            parts.append(f"HTTP {status_code}")
        if server_message:
            parts.append(f"server said: {server_message!r}")
        if request_id:
            parts.append(f"request id {request_id}")
        described = describe_request(request)
        if described:
            parts.append(f"request: {described}")
        super().__init__(" | ".join(parts))


class AuthError(ApiError):
    """401 or 403: the key was rejected, or the account may not do this."""


class BadRequestError(ApiError):
    """400, 404, 409 or 422: the service rejected the request itself."""


class RateLimitedError(ApiError):
    """429 Too Many Requests, still returned after every retry."""


class ServerError(ApiError):
    """5xx, still returned after every retry."""


class NetworkError(TxkitError):
    """A timeout or dropped connection, still failing after every retry."""

    def __init__(self, message: str, *, request: httpx.Request | None = None) -> None:
        self.request = request
        described = describe_request(request)
        super().__init__(f"{message} | request: {described}" if described else message)


class ResponseFormatError(ApiError):
    """The body is not JSON, or not the documented ``{success, message, data}`` envelope."""


class SchemaError(TxkitError):
    """A field's value cannot be converted to the column's type without losing information.

    Attributes:
        record_id: the ``id`` of the offending record.
        field: the flattened column name.
        value: the offending value (as received).
    """

    def __init__(self, message: str, *, record_id: str | None, field: str, value: object) -> None:
        self.record_id = record_id
        self.field = field
        self.value = value
        shown = excerpt(repr(value), 120)
        super().__init__(f"{message}: record {record_id!r}, field {field!r}, value {shown}")


class IncompleteExportError(TxkitError):
    """The unique records fetched do not match the total the service reported.

    Attributes:
        expected: the service's ``data.total`` for the query.
        got: the number of unique records fetched.
        attempts: how many full passes were made.
    """

    def __init__(self, message: str, *, expected: int, got: int, attempts: int) -> None:
        self.expected = expected
        self.got = got
        self.attempts = attempts
        super().__init__(
            f"{message}: expected {expected} records (the service's total), "
            f"got {got} unique records after {attempts} pass(es)"
        )
