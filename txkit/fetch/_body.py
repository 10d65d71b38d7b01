"""Reading a response body within bounds: a maximum decompressed size and a whole-response
deadline.

httpx decompresses a body in one call per received chunk and without a size limit, so a gzip
bomb (a few MB that inflate to many GB) would be inflated whole into memory; its timeout
applies to each read, so a server that trickles a byte a second never times out. This module
reads the raw bytes itself, inflates ``gzip``/``deflate`` in pieces of at most
:data:`PIECE` bytes while counting them, and stops at the first byte over the maximum, or at
the first chunk after the deadline. Each breach raises
:class:`~txkit.errors.LimitExceededError` naming the bound and how to raise it.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from txkit.config import DEADLINE_VAR, MAX_BODY_VAR, setting_value
from txkit.errors import ConfigError, LimitExceededError, NetworkError, ResponseFormatError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_RESPONSE_DEADLINE",
    "BodyBudget",
    "Bounds",
    "read_body",
]

#: Default maximum decompressed body: a page of 1000 records is about 1.3 MB.
DEFAULT_MAX_BODY_BYTES = 256 * 2**20
#: Default deadline for a whole response (headers and body), in seconds.
DEFAULT_RESPONSE_DEADLINE = 120.0
#: Largest piece inflated at once.
PIECE = 1 << 20
#: Content codings txkit asks for (and decodes itself).
ACCEPT_ENCODING = "gzip, deflate"


@dataclass(frozen=True, slots=True)
class Bounds:
    """The limits every response is read within.

    Attributes:
        max_body_bytes: the largest body accepted, counted after decompression.
        response_deadline: seconds from sending a request to the body's last byte.
    """

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    response_deadline: float = DEFAULT_RESPONSE_DEADLINE

    @classmethod
    def resolve(cls, max_body_bytes: int | None, response_deadline: float | None) -> Bounds:
        """The given values, else ``TXKIT_MAX_BODY_MB`` / ``TXKIT_RESPONSE_DEADLINE``, else the
        defaults.

        Raises:
            ConfigError: a value that is not positive, or a variable that is not a number.
        """
        if max_body_bytes is None:
            mb = setting_value(MAX_BODY_VAR, None)
            max_body_bytes = DEFAULT_MAX_BODY_BYTES if mb is None else int(float(mb) * 2**20)
        if response_deadline is None:
            deadline = setting_value(DEADLINE_VAR, None)
            response_deadline = float(deadline or DEFAULT_RESPONSE_DEADLINE)
        if max_body_bytes < 1 or not response_deadline > 0:
            raise ConfigError(
                "max_body_bytes and response_deadline must be positive, got "
                f"{max_body_bytes!r} and {response_deadline!r}"
            )
        return cls(int(max_body_bytes), float(response_deadline))

    def too_large(self, request: Any) -> LimitExceededError:
        mb = self.max_body_bytes / 2**20
        return LimitExceededError(
            f"the response body is larger than the maximum of {mb:g} MB after decompression "
            f"(max_body_bytes); if the service's pages really are that large, raise it with "
            f"{MAX_BODY_VAR}=<MB> or Client(max_body_bytes=...), or ask for smaller pages",
            bound="max_body_bytes",
            limit=self.max_body_bytes,
            request=request,
        )

    def too_slow(self, request: Any, received: int) -> LimitExceededError:
        return LimitExceededError(
            f"the response was not complete within its deadline of {self.response_deadline:g} s "
            f"({received:,} bytes received; response_deadline); raise it with "
            f"{DEADLINE_VAR}=<seconds> or Client(response_deadline=...) for a slow service",
            bound="response_deadline",
            limit=self.response_deadline,
            request=request,
        )


class BodyBudget:
    """The decompressed bytes of every body being read at once by one client, together at most
    ``max_body_bytes``: eight concurrent bombs cannot hold eight times the bound (thread-safe).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        """Reserve ``n`` bytes; False (nothing reserved) when that would pass the limit."""
        with self._lock:
            if self.held + n > self.limit:
                return False
            self.held += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self.held -= n


class _Inflater:
    """Bounded decoding of one content coding (``gzip``, ``x-gzip``, ``deflate``)."""

    def __init__(self, coding: str, request: Any) -> None:
        self.coding = coding
        self.request = request
        self._raw_deflate: bool | None = None if coding == "deflate" else False
        self._d = self._new()

    def _new(self) -> Any:
        if self.coding in ("gzip", "x-gzip"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if self._raw_deflate else zlib.MAX_WBITS)

    def _corrupt(self) -> ResponseFormatError:
        return ResponseFormatError(
            f"the response's {self.coding}-compressed body is corrupt", request=self.request
        )

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Yield the decoded pieces of ``data`` (each at most :data:`PIECE` bytes)."""
        buf = data
        while True:
            try:
                out = self._d.decompress(buf, PIECE)
            except zlib.error:
                if self._raw_deflate is None:
                    # "deflate" is meant to be zlib-wrapped, but some servers send raw deflate.
                    self._raw_deflate = True
                    self._d = self._new()
                    continue
                raise self._corrupt() from None
            if self._raw_deflate is None:
                self._raw_deflate = False
            if out:
                yield out
            buf = self._d.unconsumed_tail
            if self._d.eof:
                rest = self._d.unused_data
                if self.coding == "deflate" or not rest.strip(b"\0"):
                    return
                self._d = self._new()  # the next member of a multi-member gzip body
                buf = rest
                continue
            if not buf and len(out) < PIECE:
                return

    def finish(self) -> None:
        if not self._d.eof:
            raise NetworkError(
                f"the {self.coding}-compressed body ended early (the connection was cut)",
                request=self.request,
            )


def read_body(
    response: httpx.Response,
    request: Any,
    bounds: Bounds,
    started: float,
    budget: BodyBudget | None = None,
) -> bytes:
    """Read a streamed response's body within ``bounds``.

    Args:
        response: a response sent with ``stream=True`` (its raw bytes not yet read).
        request: the request, for error context.
        bounds: the :class:`Bounds`.
        started: ``time.monotonic()`` when the request was sent.
        budget: the client's :class:`BodyBudget` shared by the bodies read at once.

    Returns:
        The decoded body.

    Raises:
        LimitExceededError: the body (or the bodies being read at once) is larger than
            ``max_body_bytes`` once decoded, or not complete ``response_deadline`` seconds
            after ``started``.
        ResponseFormatError: a content coding txkit did not ask for, or a corrupt body.
    """
    if response.is_stream_consumed:
        # A response built in memory (httpx.MockTransport in unit tests) was read already.
        if len(response.content) > bounds.max_body_bytes:
            raise bounds.too_large(request)
        return response.content
    codings = [
        c.strip().lower()
        for c in response.headers.get("content-encoding", "").split(",")
        if c.strip() and c.strip().lower() != "identity"
    ]
    if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
        raise ResponseFormatError(
            f"the service sent an unsupported content coding {', '.join(codings)!r} "
            f"(txkit asks for {ACCEPT_ENCODING})",
            request=request,
        )
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > bounds.max_body_bytes:
        raise bounds.too_large(request)
    inflater = _Inflater(codings[0], request) if codings else None
    budget = budget if budget is not None else BodyBudget(bounds.max_body_bytes)
    deadline = started + bounds.response_deadline
    pieces: list[bytes] = []
    size = 0
    received = 0
    try:
        for chunk in response.iter_raw():
            received += len(chunk)
            for piece in inflater.feed(chunk) if inflater is not None else (chunk,):
                if not budget.take(len(piece)):
                    raise bounds.too_large(request)
                size += len(piece)
                pieces.append(piece)
            if time.monotonic() > deadline:
                raise bounds.too_slow(request, received)
        if inflater is not None:
            inflater.finish()
        return b"".join(pieces)
    finally:
        pieces.clear()
        budget.release(size)
