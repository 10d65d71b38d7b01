"""Errors raised by txkit.

Every error txkit raises on purpose derives from :class:`TxkitError`::

    TxkitError
    ├── ConfigError               a setting that cannot be used (key, base URL, TXKIT_*, .env,
    │                             txkit.toml, materiality.toml), or the key about to go elsewhere
    │                             than the service (the CLI exits 2)
    ├── ApiError                  the service answered, but not with what was asked for
    │   ├── AuthError             401 (key rejected) and 403 (forbidden, e.g. IP not whitelisted)
    │   ├── BadRequestError       400, 404, 409, 422: the request itself is wrong; never retried
    │   ├── RateLimitedError      429 after every retry was spent
    │   ├── ServerError           5xx after every retry was spent
    │   └── ResponseFormatError   a body that is not JSON, or not the documented envelope
    ├── NetworkError              timeouts and dropped connections after every retry was spent
    ├── SchemaError               a field whose value cannot be converted without loss
    ├── LimitExceededError        a bound of txkit was hit (body size, response deadline, ...)
    ├── IncompleteExportError     the records fetched do not add up to the service's total
    │   └── RecordsMovingError    records kept moving in and out while read (a status filter
    │                             falls back to the status applied locally)
    ├── ParameterError            an argument or notebook parameter not accepted (a month
    │                             ``2026-5``, an unknown source): names it and the accepted
    │                             values (also a ``ValueError``)
    ├── NoRecordsError            a month with no records to check (outside the sandbox's
    │                             calendar): nothing computed from nothing (also a ``ValueError``)
    ├── DataFileError             a file the user gave (orders) cannot be read as it is: names
    │                             the file, the lines and what to do (also a ``ValueError``)
    ├── ProjectError              a close project cannot be made or updated as asked (``txkit
    │                             init`` on an existing one): names the folder (a ``ValueError``)
    ├── StoreError                the store cannot be used as asked (another source or account,
    │   │                         a folder that is not a store, cannot write)
    │   ├── StoreLockedError      another sync holds the lock, or committed meanwhile
    │   ├── StoreDamagedError     a data file missing or not the bytes committed (names the month)
    │   ├── StoreVersionError     a table version the store does not have (also a ``ValueError``)
    │   └── RegisterFormatError   the exception register was written by a newer txkit
    ├── ReportSignedError         a locked month would change (``--reopen``), a signature
    │                             against the sign-off rules, or a report and a signature of a
    │                             month at once
    └── NotebookFailedError       a report's notebook raised an error (names the notebook, the cell)

Warnings (``warnings.warn``), for results that are returned but deserve a look::

    UserWarning
    ├── IncompleteExportWarning   an export returned although it does not add up
    │                             (``allow_incomplete=True``)
    └── ProfileWarning            a service profile found but not used (another base URL,
                                  unreadable, another format)

Caller mistakes (an unknown status, a malformed date, start after end) raise ``ValueError``
before any request is sent; a month, day or notebook parameter raises :class:`ParameterError`,
which is one.

In Jupyter a txkit error shows as the CLI's one line (``txkit: error: ...``), not a traceback
(:meth:`TxkitError._render_traceback_`, the hook IPython asks an exception for); the cell
still fails, so Run All stops there.

Messages never contain the secret key: every message, attribute text, ``repr`` and pickle of
a txkit error goes through :func:`txkit._scrub.scrub` (the configured key in any encoding, and
anything key-shaped). Requests are kept as :class:`RequestInfo` (method and URL, no headers):
an error never holds the ``Authorization`` header, so a caller that pickles or logs it cannot
leak the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from txkit._scrub import scrub

__all__ = [
    "ApiError",
    "AuthError",
    "BadRequestError",
    "ConfigError",
    "DataFileError",
    "IncompleteExportError",
    "IncompleteExportWarning",
    "LimitExceededError",
    "NetworkError",
    "NoRecordsError",
    "NotebookFailedError",
    "ParameterError",
    "ProfileWarning",
    "ProjectError",
    "RateLimitedError",
    "RecordsMovingError",
    "RegisterFormatError",
    "ReportSignedError",
    "RequestInfo",
    "ResponseFormatError",
    "SchemaError",
    "ServerError",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "StoreVersionError",
    "TxkitError",
    "describe_request",
    "excerpt",
    "one_line",
    "scrub",
]

# Where a Rust backtrace starts in an error's text (delta-rs with RUST_BACKTRACE=1 appends one):
# a "stack backtrace:" line, or the first numbered frame ("   0: <unknown>").
_BACKTRACE_LINE = re.compile(r"(?i)^\s*(?:stack backtrace:?|backtrace:?|\d+: \S.*)\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def excerpt(body: bytes | str, limit: int = 200) -> str:
    """A short, printable, scrubbed excerpt of a response body for error messages.

    The text is scrubbed *before* it is shortened, so a key cut in half by the limit cannot
    leave its first half behind.
    """
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    body = scrub(" ".join(body.split()))
    return body if len(body) <= limit else body[:limit] + f"... ({len(body)} characters)"


def one_line(text: object, limit: int | None = None) -> str:
    """The text of an error (often a library's) as one line: a Rust backtrace appended to it
    (``RUST_BACKTRACE=1``) and terminal colour codes removed, whitespace collapsed, and cut at
    ``limit`` characters.

    Example:
        >>> one_line("Kernel error: bad JSON\\n   0: <unknown>\\n   1: start_thread")
        'Kernel error: bad JSON'
    """
    lines = []
    for line in _ANSI.sub("", str(text)).splitlines():
        if _BACKTRACE_LINE.match(line) and lines:
            break
        lines.append(line)
    flat = " ".join(" ".join(lines).split())
    return flat if limit is None or len(flat) <= limit else flat[:limit] + "..."


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What an error keeps of a request: its method and URL (scrubbed), never its headers.

    Attributes:
        method: ``GET``.
        url: the full URL without user info, e.g. ``https://api.example.com/transaction?skip=0``.
    """

    method: str
    url: str

    @classmethod
    def of(cls, request: Any) -> RequestInfo | None:
        """A :class:`RequestInfo` from an :class:`httpx.Request` (or one already made)."""
        if request is None or isinstance(request, RequestInfo):
            return request
        url = request.url.copy_with(username=None, password=None)
        return cls(str(request.method), scrub(str(url)))

    def __str__(self) -> str:
        return f"{self.method} {self.url}"


def describe_request(request: Any) -> str | None:
    """``GET /transaction?status=successful`` - never headers, so never the key."""
    info = RequestInfo.of(request)
    return None if info is None else str(info)


def _clean(value: Any) -> Any:
    """Text scrubbed; anything else kept unless its repr holds a secret (then its scrubbed repr)."""
    if value is None or isinstance(value, bool | int | float | RequestInfo):
        return value
    if isinstance(value, str):
        return scrub(value)
    shown = repr(value)
    cleaned = scrub(shown)
    return value if cleaned == shown else cleaned


def _restore(cls: type[TxkitError], args: tuple[Any, ...], state: dict[str, Any]) -> TxkitError:
    """Without ``__init__``, whose arguments differ."""
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class TxkitError(Exception):
    """Root of every error txkit raises on purpose.

    Its message (``args``), its attributes, ``str``, ``repr`` and pickle are scrubbed of the
    secret key (see :mod:`txkit._scrub`).
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*(_clean(arg) for arg in args))

    def __str__(self) -> str:
        return scrub(super().__str__())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        state = {name: _clean(value) for name, value in self.__dict__.items()}
        return _restore, (type(self), tuple(_clean(arg) for arg in self.args), state)

    def cli_line(self) -> str:
        """The one line the CLI prints for this error (``txkit: error: ...``): the message
        alone for the user's own mistakes (a ``ValueError``), else with the class's name."""
        text = one_line(self)
        if not isinstance(self, ValueError):
            text = f"{type(self).__name__}: {text}"
        return f"txkit: error: {text}"

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of the traceback: an analyst's typo in a notebook
        # parameter reads as the CLI's one line, not 30 lines of txkit's internals.
        return [self.cli_line()]


class ParameterError(TxkitError, ValueError):
    """An argument or notebook parameter that is not accepted (``month = "2026-5"``, an
    unknown ``source``); the message names it and the accepted values."""


class ProjectError(TxkitError, ValueError):
    """A close project cannot be made or updated as asked (``txkit init`` on an existing
    project, ``txkit notebooks`` outside one); the message names the folder and what to do."""


class ConfigError(TxkitError):
    """The client is not configured well enough to make a request."""


class ApiError(TxkitError):
    """The service answered with an error.

    Attributes:
        status_code: the HTTP status (200 when the body said ``success: false``).
        server_message: the ``message`` of the service's JSON envelope, if any.
        request_id: the service's request id header, if it sent one.
        request: the request's method and URL (:class:`RequestInfo`; no headers).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        server_message: str | None = None,
        request_id: str | None = None,
        request: Any = None,
    ) -> None:
        self.status_code = status_code
        self.server_message = None if server_message is None else scrub(server_message)
        self.request_id = None if request_id is None else scrub(request_id)
        self.request = RequestInfo.of(request)
        parts = [message]
        if status_code is not None:
            parts.append(f"HTTP {status_code}")
        if self.server_message:
            parts.append(f"server said: {self.server_message!r}")
        if self.request_id:
            parts.append(f"request id {self.request_id}")
        described = describe_request(self.request)
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

    def __init__(self, message: str, *, request: Any = None) -> None:
        self.request = RequestInfo.of(request)
        described = describe_request(self.request)
        super().__init__(f"{message} | request: {described}" if described else message)


class ResponseFormatError(ApiError):
    """The body is not JSON, or not the documented ``{success, message, data}`` envelope."""


class SchemaError(TxkitError):
    """A field's value cannot be converted to the column's type without losing information.

    Attributes:
        record_id: the ``id`` of the offending record.
        field: the flattened column name.
        value: the offending value as received, or its scrubbed ``repr`` when it held the key.
    """

    def __init__(self, message: str, *, record_id: str | None, field: str, value: object) -> None:
        self.record_id = _clean(record_id)
        self.field = _clean(field)
        self.value = _clean(value)
        shown = excerpt(scrub(repr(value)), 120)
        super().__init__(f"{message}: record {record_id!r}, field {field!r}, value {shown}")


class LimitExceededError(TxkitError):
    """A bound that protects time or memory was hit (e.g. a decompressed body over the maximum
    size, a response slower than its deadline). Not retried.

    Attributes:
        bound: the bound's name, e.g. ``max_body_bytes``.
        limit: its value.
    """

    def __init__(self, message: str, *, bound: str, limit: float, request: Any = None) -> None:
        self.bound = bound
        self.limit = limit
        self.request = RequestInfo.of(request)
        described = describe_request(self.request)
        super().__init__(f"{message} | request: {described}" if described else message)


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


class RecordsMovingError(IncompleteExportError):
    """Records kept moving in and out of a window while it was read: passes that never add
    up, one-page windows that never agree, re-reads that keep finding another set (not a
    limit of the service, such as a day above the offset cap). A status query falls back to
    the status applied locally on it (docs/completeness.md); anywhere else it is the export's
    failure."""


class DataFileError(TxkitError, ValueError):
    """A data file the user gave txkit (the merchant's orders; later bank statements) cannot
    be read as it is. Raised before any request is sent or any notebook starts.

    The message is one line: the file, where in it (lines as a text editor or a spreadsheet
    numbers them, from 1 for the first line, the header included; rows from 1 in a Parquet
    file), the problem and what to do.

    Attributes:
        path: the file, as given.
        lines: where the problem is (empty when it is the whole file), ascending.
        unit: ``line`` (text files) or ``row`` (Parquet and other files without lines).
        problem: what is wrong.
        advice: what to do about it.
    """

    _LISTED = 10

    def __init__(
        self,
        path: object,
        problem: str,
        advice: str,
        *,
        lines: tuple[int, ...] | list[int] = (),
        unit: str = "line",
        what: str = "file",
    ) -> None:
        self.path = str(path)
        self.lines = tuple(int(n) for n in lines)
        self.unit = unit
        self.problem = problem
        self.advice = advice
        where = f"{what} {self.path}"
        if self.lines:
            where += f", {self.where(self.lines, unit)}"
        super().__init__(f"{where}: {problem}; {advice}")

    @classmethod
    def where(cls, lines: tuple[int, ...] | list[int], unit: str = "line") -> str:
        """``line 3``, ``lines 3, 7 and 9``, ``lines 3, 7, ... (42 in all)``."""
        if len(lines) == 1:
            return f"{unit} {lines[0]}"
        shown = [str(n) for n in lines[: cls._LISTED]]
        if len(lines) > cls._LISTED:
            return f"{unit}s {', '.join(shown)}, ... ({len(lines):,} in all)"
        return f"{unit}s {', '.join(shown[:-1])} and {shown[-1]}"


class StoreError(TxkitError):
    """The store cannot be used as asked (another source, a folder that is not a store, damaged
    files)."""


class StoreLockedError(StoreError):
    """Another sync holds the store's lock, or committed to it meanwhile."""


class StoreDamagedError(StoreError):
    """A data file of the store is missing, or its bytes are not those committed (its digest
    differs). The message names the month and the command that fetches it again.

    Attributes:
        months: the damaged months (``YYYY-MM``).
        path: the damaged file, relative to the store.
    """

    def __init__(self, message: str, *, months: list[str], path: str) -> None:
        super().__init__(message)
        self.months = months
        self.path = path


class StoreVersionError(StoreError, ValueError):
    """A table version the store does not have (a bad argument: the CLI exits 2)."""


class RegisterFormatError(StoreError):
    """The exception register was written by a newer txkit (a format this one does not read)."""


class ReportSignedError(TxkitError):
    """A locked month would change: its report, items or pack (the message names the lock
    and ``--reopen "why"``); a signature against the sign-off rules (the preparer first, a
    reviewer who is another person, each role once) or over a pack that does not verify; a
    report and a signature of one month at once."""


class NotebookFailedError(TxkitError):
    """A report notebook raised an error."""


class IncompleteExportWarning(UserWarning):
    """An export was returned although it does not add up (``allow_incomplete=True``)."""


class ProfileWarning(UserWarning):
    """A profile was found but not used (another base URL, unreadable, another format)."""


class NoRecordsError(TxkitError, ValueError):
    """A month with no records to check: nothing is computed from nothing (``no records of
    2026-11: the sandbox covers 2025-11 to 2026-10``). A bad argument: the CLI exits 2."""
