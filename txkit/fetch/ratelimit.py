"""One request budget shared by every worker of an export: the service's rate limit, learned.

Nothing documents the service's rate limit, so txkit learns it at run time. Every request of
a :class:`~txkit.fetch.client.Client` (all of an export's workers share one) first takes a slot from
a :class:`SharedLimiter`:

* Until the service answers 429 there is no limit but ``concurrency``.
* A 429 cuts the shared rate to :attr:`SharedLimiter.beta` times the rate at which requests
  were really sent over the last second (the whole export slows down, not only the worker
  that got it). 429s of requests sent before that cut are the same event and do not cut
  again; a 429 of a request sent after it cuts again, so a rate far above the service's
  limit comes down geometrically within a fraction of a second.
* While requests succeed the rate grows back along a cubic curve (as TCP CUBIC does): quickly
  towards the rate of the last cut, slowly around it, then faster again to probe for more,
  so it settles just under the service's limit with a 429 only every few seconds.
* The request that got the 429 waits its ``Retry-After`` (any form: seconds, an HTTP date;
  a negative or unreadable value means exponential backoff) before it is sent again. A long
  ``Retry-After`` (at least :attr:`SharedLimiter.pause_after` seconds, a quota window rather
  than a momentary excess) pauses every worker until it has passed.

Slots are reserved under a lock and then slept for once, so workers never spin.
"""

from __future__ import annotations

import email.utils
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC

__all__ = ["SharedLimiter", "parse_retry_after"]

_DELTA_RE = re.compile(r"^\d{1,12}(?:\.\d{1,6})?$")


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value.

    Args:
        value: the header's text: delta seconds (``"2"``, also ``"1.5"``) or an HTTP date
            (``"Wed, 21 Oct 2026 07:28:00 GMT"``; one in the past means 0).
        now: the current epoch time (default :func:`time.time`).

    Returns:
        The seconds, or None when there is no header or it cannot be read (a negative number,
        ``"soon"``, an impossible date): the caller then backs off exponentially.

    Example:
        >>> parse_retry_after("3"), parse_retry_after("soon"), parse_retry_after("-1")
        (3.0, None, None)
    """
    if value is None:
        return None
    text = value.strip()
    if _DELTA_RE.match(text):
        return float(text)
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        stamp = parsed.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
    return max(0.0, stamp - (time.time() if now is None else now))


class SharedLimiter:
    """An adaptive, shared request rate (see the module docstring).

    Args:
        beta: the rate kept at a 429 (0.8: a cut of 20 %).
        growth: the cubic curve's constant, in requests/s per s³.
        min_rate: the lowest rate a cut goes to, in requests per second.
        pause_after: a ``Retry-After`` of at least this many seconds pauses every worker.
        clock: the monotonic clock (tests pass a fake one).
        sleep: how to wait (default :func:`time.sleep`, looked up at each call).

    Attributes:
        rate: the current rate in requests per second, or None before the first 429.
        cuts: how many times a 429 cut the rate.
    """

    def __init__(
        self,
        *,
        beta: float = 0.8,
        growth: float = 0.4,
        min_rate: float = 0.5,
        pause_after: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self.beta = beta
        self.growth = growth
        self.min_rate = min_rate
        self.pause_after = pause_after
        self.rate: float | None = None
        self.cuts = 0
        self._lock = threading.Lock()
        self._next = 0.0  # the next free slot (monotonic seconds)
        self._paused_until = 0.0
        self._sent: deque[float] = deque()  # send times in the last second
        self._first: float | None = None
        self._cut_at = 0.0
        self._w_max = 0.0
        self._k = 0.0

    def acquire(self) -> float:
        """Wait for this request's slot; returns the monotonic time it was sent at."""
        with self._lock:
            now = self._clock()
            self._grow(now)
            start = max(now, self._paused_until)
            if self.rate is not None:
                start = max(start, self._next)
                self._next = start + 1.0 / self.rate
            self._sent.append(start)
            if self._first is None:
                self._first = start
            while self._sent and self._sent[0] < start - 1.0:
                self._sent.popleft()
        wait = start - now
        if wait > 0:
            (self._sleep or time.sleep)(wait)
        return start

    def throttled(self, sent_at: float, retry_after: float | None) -> None:
        """A request sent at ``sent_at`` got 429 (with ``Retry-After`` seconds, or None)."""
        with self._lock:
            now = self._clock()
            if retry_after is not None and retry_after >= self.pause_after:
                self._paused_until = max(self._paused_until, now + retry_after)
            if self.rate is not None and sent_at < self._cut_at:
                return  # sent before the last cut: part of the event that caused it
            # The rate requests were really sent at (workers or the pipeline may have sent
            # fewer than the rate allowed), over the last second or since the first request.
            window = [t for t in self._sent if t >= now - 1.0]
            span = max(0.25, min(1.0, now - (self._first or now)))
            current = max(1.0, len(window) / span)
            if self.rate is not None:
                self._grow(now)
                current = min(current, self.rate)
            self._w_max = current
            self.rate = max(self.min_rate, current * self.beta)
            self._k = (self._w_max * (1 - self.beta) / self.growth) ** (1 / 3)
            self._cut_at = now
            self._next = max(self._next, now + 1.0 / self.rate)
            self.cuts += 1

    def _grow(self, now: float) -> None:
        if self.rate is None:
            return
        t = now - self._cut_at
        target = self.growth * (t - self._k) ** 3 + self._w_max
        if math.isfinite(target):
            self.rate = max(self.min_rate, target)

    def __repr__(self) -> str:
        shown = "unlimited" if self.rate is None else f"{self.rate:.1f}/s"
        return f"SharedLimiter(rate={shown}, cuts={self.cuts})"
