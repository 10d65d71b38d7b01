"""Fault injection for the sandbox: the failure modes real exports meet, reproducibly.

A :class:`Faults` object says which faults the sandbox injects. It is parsed from a spec such
as ``"rate_limit=0.2,server_error=0.1,cap=100,fault_seed=3"`` (``txkit sandbox --faults``) or
built with keyword arguments. Every fault is deterministic under ``fault_seed``: per-request
faults are decided by a random source seeded with the seed and the request's sequence number
(the n-th ``/transaction`` request that passed authentication and validation), and ``drift``
is decided per record id. Faults never apply to authentication or validation errors.

========================  ====================================================================
``rate_limit=P``          429 with ``Retry-After`` (``retry_after=N`` seconds, default 1, 0 allowed)
``rate=R``                a token bucket of R requests per second (burst ``burst=N``, default 5)
                          in front of the service: past it, 429 with ``Retry-After`` = the time
                          until the next token
``retry_after_form=F``    how ``Retry-After`` is written: ``seconds`` (default; an integer, the
                          wait rounded up), ``decimal`` (``0.05``), ``date`` (an HTTP date),
                          ``negative`` (``-1``), ``garbage`` (``soon``) or ``none`` (no header)
``server_error=P``        500, 502 or 503 with an HTML body
``slow=P``                the response waits ``slow_seconds=S`` (default 3) before being sent
``latency=MS``            every ``/transaction`` response waits MS milliseconds (benchmarks)
``drop=P``                the connection is closed without a response
``not_json=P``            200 with an HTML body
``cap=N``                 at most N records per page, silently (``total`` is unaffected)
``max_skip=N``            a ``skip`` above N is refused: 422 naming the limit
                          (``max_skip_mode=reject``, default) or answered with an empty page
                          and the real ``total`` (``max_skip_mode=empty``)
``arrivals=N``            N new records (newer than all others) arrive, one after each served
                          page
``status_changes=N``      N in-flight records change status (and ``updatedAt``), one after each
                          served page: verified -> successful, processing -> failed, others ->
                          abandoned (a record made successful so carries no balance-after
                          fields)
``settle=N``              a live service's churn: after each served page, N in-flight records
                          take their next status (:data:`SETTLE_NEXT`: initiated and ongoing
                          -> pending, pending -> verified or, one in four, abandoned,
                          processing -> verified, verified -> successful), each with a new
                          ``updatedAt``; picked among the records of the page's dates, type
                          and currency (whatever its status filter), else anywhere; it ends
                          when nothing is in flight. Every change is logged
                          (``FaultEffects.settled``) for tests' oracles
``swaps=FROM:TO``         after each of the first ``swap_count=N`` (default 10) served pages,
                          one record enters a ``status=TO`` filter and one leaves it: among the
                          records matching the page's other filters (dates, type, currency),
                          one ``FROM`` record becomes ``TO`` and then one other ``TO`` record
                          becomes the status after ``TO`` (:data:`NEXT_STATUS`), each with a
                          new ``updatedAt``; ``total`` of a ``status=TO`` query is unchanged
``shuffle_ties``          records with equal ``createdAt`` come in a new order on every request
``tie_groups=N``          plants groups of 2 to 5 records with one ``createdAt`` (each moved to
                          its group's oldest), one straddling every N-th position of the full
                          listing (with ``cap=N``, every page boundary); ties then come in a new
                          order on every request, as with ``shuffle_ties`` (N is 0, off, or 6+)
``big_tie=M``             plants one group of M records with one ``createdAt`` 70 % of the way
                          down the listing, mixed across ``transType`` values (a settlement
                          batch); ties come in a new order on every request
``date_shift=H``          ``startDate``/``endDate`` are applied as days in UTC+H (-14 to 14)
``bounds=B``              ``inclusive`` (default), ``exclusive``, ``start_exclusive``,
                          ``end_exclusive``: which of the two days are included
``date_field=F``          the timestamp the date filters apply to: ``createdAt`` (default) or
                          ``updatedAt`` (the sort stays ``createdAt`` descending)
``envelope_extras``       the envelope gains ``requestId`` and ``data`` gains ``page`` (from 1)
                          and ``limit`` (the page size asked for, at most 1000)
``drift=P``               per record: money as numeric strings (``"1500.00"``), whole amounts
                          as integers, unknown fields ``riskScore`` and ``device``
``precision=P``           per record: USDT records' ``toAmount`` and ``feeAmount`` with six
                          decimals (stablecoin amounts), and the undocumented fields
                          ``riskScore`` and ``meta.fraudScore`` as fractions (``0.75``,
                          ``97.5``); records created before ``precision_from=YYYY-MM-DD``
                          (default: none) carry two-decimal amounts and whole scores (``3``):
                          a service whose numbers grow finer over time
``fault_seed=N``          seed of all fault decisions (default 0)
========================  ====================================================================

The ``rate`` bucket is checked first (a 429 there takes no token). Then the probability faults
are decided in the order drop, rate_limit, server_error, not_json: a request gets at most one
of them; ``slow`` and ``latency`` add to any response. ``max_skip`` applies after them. What
each fault does to a request or to the data is in :mod:`txkit.sandbox._effects`.
"""

from __future__ import annotations

import math
import random
import re
import time
import zlib
from dataclasses import dataclass, fields
from email.utils import formatdate
from typing import Any, ClassVar, Final

from txkit.schema import STATUSES

__all__ = [
    "BOUNDS",
    "DATE_FIELDS",
    "MAX_SKIP_MODES",
    "NEXT_STATUS",
    "RETRY_AFTER_FORMS",
    "SETTLE_NEXT",
    "Decision",
    "Faults",
    "drift_body",
    "precision_body",
    "retry_after_value",
]

#: Accepted values of ``bounds``.
BOUNDS: Final[tuple[str, ...]] = ("inclusive", "exclusive", "start_exclusive", "end_exclusive")
#: Accepted values of ``max_skip_mode``.
MAX_SKIP_MODES: Final[tuple[str, ...]] = ("reject", "empty")
#: Accepted values of ``retry_after_form``.
RETRY_AFTER_FORMS: Final[tuple[str, ...]] = (
    "seconds",
    "decimal",
    "date",
    "negative",
    "garbage",
    "none",
)
#: Accepted values of ``date_field``.
DATE_FIELDS: Final[tuple[str, ...]] = ("createdAt", "updatedAt")
#: What a ``swaps=FROM:TO`` record of status ``TO`` becomes when it leaves the filter.
NEXT_STATUS: Final[dict[str, str]] = {
    "initiated": "pending",
    "ongoing": "pending",
    "pending": "processing",
    "processing": "verified",
    "verified": "successful",
    "successful": "reversed",
}

#: The next status of an in-flight record under ``settle`` (pending may instead be abandoned).
SETTLE_NEXT: Final[dict[str, str]] = {
    "initiated": "pending",
    "ongoing": "pending",
    "pending": "verified",
    "processing": "verified",
    "verified": "successful",
}

_PROBABILITIES: Final = (
    "rate_limit",
    "server_error",
    "slow",
    "drop",
    "not_json",
    "drift",
    "precision",
)
_COUNTS: Final = {
    "retry_after": 0,
    "cap": 1,
    "arrivals": 0,
    "status_changes": 0,
    "settle": 0,
    "max_skip": 0,
    "swap_count": 0,
    "burst": 1,
    "tie_groups": 0,
    "big_tie": 0,
}
_FLAGS: Final = ("shuffle_ties", "envelope_extras")
_CHOICES: Final = {
    "bounds": BOUNDS,
    "max_skip_mode": MAX_SKIP_MODES,
    "retry_after_form": RETRY_AFTER_FORMS,
    "date_field": DATE_FIELDS,
}
_USAGE: Final = (
    "rate_limit=P, retry_after=N, rate=R, burst=N, "
    "retry_after_form=seconds|decimal|date|negative|garbage|none, server_error=P, slow=P, "
    "slow_seconds=S, latency=MS, drop=P, not_json=P, cap=N, max_skip=N, "
    "max_skip_mode=reject|empty, arrivals=N, status_changes=N, settle=N, swaps=FROM:TO, "
    "swap_count=N, "
    "shuffle_ties, tie_groups=N (0 or 6+), big_tie=M, date_shift=H (-14..14), "
    "bounds=inclusive|exclusive|start_exclusive|end_exclusive, date_field=createdAt|updatedAt, "
    "envelope_extras, drift=P, precision=P, precision_from=YYYY-MM-DD, fault_seed=N (P is a "
    "probability from 0 to 1, R requests per second)"
)


@dataclass(frozen=True, slots=True)
class Decision:
    """What the sandbox does with one request.

    Attributes:
        drop: close the connection without a response.
        status: an error status to answer with (429, 500, 502, 503), or None.
        not_json: answer 200 with an HTML body.
        delay: seconds to wait before answering (latency plus slow).
    """

    drop: bool = False
    status: int | None = None
    not_json: bool = False
    delay: float = 0.0


@dataclass
class Faults:
    """The faults a sandbox injects (all off by default). Mutable: a running sandbox reads
    them on every request, so tests can change them between requests. Assignments are
    validated like parsed values.
    """

    rate_limit: float = 0.0
    retry_after: int = 1
    server_error: float = 0.0
    slow: float = 0.0
    slow_seconds: float = 3.0
    latency: float = 0.0
    drop: float = 0.0
    not_json: float = 0.0
    cap: int | None = None
    arrivals: int = 0
    status_changes: int = 0
    settle: int = 0
    shuffle_ties: bool = False
    tie_groups: int = 0
    big_tie: int = 0
    date_shift: int = 0
    bounds: str = "inclusive"
    drift: float = 0.0
    rate: float = 0.0
    burst: int = 5
    retry_after_form: str = "seconds"
    max_skip: int | None = None
    max_skip_mode: str = "reject"
    swaps: str | None = None
    swap_count: int = 10
    date_field: str = "createdAt"
    envelope_extras: bool = False
    precision: float = 0.0
    precision_from: str | None = None
    fault_seed: int = 0

    ACCEPTED: ClassVar[str] = _USAGE

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, _validate(name, value))

    @classmethod
    def parse(cls, spec: str | None) -> Faults:
        """Parse a spec such as ``"rate_limit=0.2,cap=100,shuffle_ties,fault_seed=3"``.

        Args:
            spec: comma-separated ``name=value`` items (``shuffle_ties`` and
                ``envelope_extras`` may stand alone);
                ``None``, ``""`` or ``"none"`` means no faults.

        Returns:
            The :class:`Faults`.

        Raises:
            ValueError: naming the unknown fault or bad value, and listing the accepted ones.
        """
        faults = cls()
        if spec is None or spec.strip().lower() in ("", "none"):
            return faults
        seen: set[str] = set()
        for item in spec.split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if name not in _FIELD_NAMES:
                raise ValueError(f"unknown fault {name!r}; accepted: {_USAGE}")
            if name in seen:
                raise ValueError(f"fault {name!r} given more than once")
            seen.add(name)
            if not sep:
                if name not in _FLAGS:
                    raise ValueError(f"fault {name!r} needs a value; accepted: {_USAGE}")
                raw = "true"
            setattr(faults, name, _convert(name, raw.strip()))
        return faults

    @property
    def active(self) -> bool:
        """Whether any fault is on."""
        return self != Faults(fault_seed=self.fault_seed)

    def decide(self, seq: int) -> Decision:
        """Decide the faults of the ``seq``-th data request (deterministic).

        Args:
            seq: the request's sequence number (1 for the first ``/transaction`` request that
                passed authentication and validation).

        Returns:
            The :class:`Decision`.
        """
        rng = random.Random(f"txkit-faults:{self.fault_seed}:{seq}")
        u_drop, u_rate, u_server, u_code, u_html, u_slow = (rng.random() for _ in range(6))
        delay = self.latency / 1000 + (self.slow_seconds if u_slow < self.slow else 0.0)
        if u_drop < self.drop:
            return Decision(drop=True, delay=delay)
        if u_rate < self.rate_limit:
            return Decision(status=429, delay=delay)
        if u_server < self.server_error:
            return Decision(status=(500, 502, 503)[int(u_code * 3)], delay=delay)
        if u_html < self.not_json:
            return Decision(not_json=True, delay=delay)
        return Decision(delay=delay)

    @property
    def ties_shuffled(self) -> bool:
        """Whether records with equal ``createdAt`` come in a new order on every request."""
        return self.shuffle_ties or self.tie_groups > 0 or self.big_tie > 0

    @property
    def planted_ties(self) -> tuple[int, int, int] | None:
        """``(tie_groups, big_tie, fault_seed)`` when ties are planted in the data, else None."""
        if not self.tie_groups and not self.big_tie:
            return None
        return self.tie_groups, self.big_tie, self.fault_seed

    @property
    def swap_statuses(self) -> tuple[str, str] | None:
        """``(FROM, TO)`` of the ``swaps`` fault, or None when it is off."""
        if self.swaps is None:
            return None
        source, _, target = self.swaps.partition(":")
        return source, target

    def precise(self, record_id: str) -> bool:
        """Whether ``precision`` alters the record with this id (deterministic per id)."""
        if self.precision <= 0:
            return False
        return _unit(f"precision:{self.fault_seed}:{record_id}") < self.precision

    def drifted(self, record_id: str) -> bool:
        """Whether ``drift`` alters the record with this id (deterministic per id and seed)."""
        if self.drift <= 0:
            return False
        return _unit(f"{self.fault_seed}:{record_id}") < self.drift

    def __str__(self) -> str:
        """The spec of the faults that differ from the defaults (``"none"`` if none)."""
        items = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if f.name in _FLAGS:
                items.append(f.name)
            else:
                items.append(f"{f.name}={value}")
        return ",".join(items) or "none"


_FIELD_NAMES: Final = frozenset(f.name for f in fields(Faults))


def _convert(name: str, raw: str) -> Any:
    try:
        if name in _PROBABILITIES or name in ("slow_seconds", "latency", "rate"):
            return float(raw)
        if name in _FLAGS:
            lowered = raw.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if name in _CHOICES or name in ("swaps", "precision_from"):
            return raw
        return int(raw)
    except ValueError:
        raise ValueError(_bad(name, raw)) from None


def _bad(name: str, value: Any) -> str:
    wanted = {
        "slow_seconds": "a number of seconds from 0 to 600",
        "latency": "a number of milliseconds from 0 to 600000",
        "shuffle_ties": "true or false",
        "envelope_extras": "true or false",
        "date_shift": "an integer number of hours from -14 to 14",
        "fault_seed": "an integer",
        "cap": "an integer of at least 1",
        "burst": "an integer of at least 1",
        "tie_groups": "0 (off) or an integer of at least 6",
        "rate": "a number of requests per second from 0 (off) to 100000",
        "swaps": ("FROM:TO, two different statuses with TO one of " + ", ".join(NEXT_STATUS)),
        "precision_from": "a day YYYY-MM-DD",
        **{k: "one of " + ", ".join(v) for k, v in _CHOICES.items()},
    }
    if name in _PROBABILITIES:
        what = "a probability from 0 to 1"
    elif name in _COUNTS:
        what = wanted.get(name, "a non-negative integer")
    else:
        what = wanted[name]
    return f"fault {name!r} needs {what}, got {value!r}; accepted: {_USAGE}"


def _validate(name: str, value: Any) -> Any:
    if name not in _FIELD_NAMES:
        raise AttributeError(f"unknown fault {name!r}; accepted: {_USAGE}")
    if name in _FLAGS:
        if not isinstance(value, bool):
            raise ValueError(_bad(name, value))
        return value
    if name in _CHOICES:
        if value not in _CHOICES[name]:
            raise ValueError(_bad(name, value))
        return value
    if name == "swaps":
        return _validate_swaps(value)
    if name == "precision_from":
        if value is not None and not (
            isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)
        ):
            raise ValueError(_bad(name, value))
        return value
    if isinstance(value, bool):
        raise ValueError(_bad(name, value))
    if name in _PROBABILITIES or name in ("slow_seconds", "latency", "rate"):
        if not isinstance(value, int | float) or math.isnan(value):
            raise ValueError(_bad(name, value))
        high = {"slow_seconds": 600.0, "latency": 600_000.0, "rate": 100_000.0}.get(name, 1.0)
        if not 0 <= value <= high:
            raise ValueError(_bad(name, value))
        return float(value)
    if name in ("cap", "max_skip") and value is None:
        return None
    if not isinstance(value, int):
        raise ValueError(_bad(name, value))
    if name == "date_shift" and not -14 <= value <= 14:
        raise ValueError(_bad(name, value))
    if name in _COUNTS and value < _COUNTS[name]:
        raise ValueError(_bad(name, value))
    if name == "tie_groups" and 0 < value < 6:
        raise ValueError(_bad(name, value))
    return value


def _validate_swaps(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(_bad("swaps", value))
    source, sep, target = value.partition(":")
    if not sep or source not in STATUSES or target not in NEXT_STATUS or source == target:
        raise ValueError(_bad("swaps", value))
    return value


def retry_after_value(form: str, seconds: float, now: float | None = None) -> str | None:
    """The ``Retry-After`` header for a wait of ``seconds``, written in ``form``.

    Args:
        form: one of :data:`RETRY_AFTER_FORMS`.
        seconds: how long the client should wait (0 or more).
        now: the current time (epoch seconds) for the ``date`` form; default: the clock.

    Returns:
        The header's value, or None for ``none`` (send no header).

    Example:
        >>> retry_after_value("seconds", 0.2), retry_after_value("decimal", 0.25)
        ('1', '0.25')
    """
    if form == "seconds":
        return str(math.ceil(seconds))
    if form == "decimal":
        text = f"{seconds:.3f}".rstrip("0").rstrip(".")
        return text or "0"
    if form == "date":
        moment = (time.time() if now is None else now) + seconds
        return formatdate(math.ceil(moment), usegmt=True)
    if form == "negative":
        return "-1"
    if form == "garbage":
        return "soon"
    if form == "none":
        return None
    raise ValueError(f"retry_after_form must be one of {', '.join(RETRY_AFTER_FORMS)}")


def _unit(text: str) -> float:
    """CRC-32, not Python's salted hash: the same number in every process."""
    return zlib.crc32(text.encode()) / 2**32


_MONEY_TO_STRING = re.compile(rb'"(toAmount|fromAmount|amount|feeAmount|taxAmount)":(-?\d+\.\d+)')
_WHOLE_TO_INT = re.compile(
    rb'"((?:to|from)BalanceAfter(?:Available|Ledger)|toAmount|feeAmount)":(-?\d+)\.00(?=[,}])'
)
_DEVICES: Final = (b"android", b"ios", b"web")


def drift_body(body: bytes, record_id: str, fault_seed: int) -> bytes:
    """The ``drift`` rendering of one record: same values, drifted types, extra fields.

    Depending on the record (deterministically), whole money amounts are rendered as integers
    (``1500`` for ``1500.00``), or money amounts as numeric strings (``"1500.00"``); every
    drifted record gains ``riskScore`` (a number with two decimals) and most gain ``device``.

    Args:
        body: the record's canonical JSON bytes (ending in ``}``).
        record_id: the record's id.
        fault_seed: the faults' seed.

    Returns:
        The drifted JSON bytes.
    """
    bits = zlib.crc32(f"drift:{fault_seed}:{record_id}".encode())
    if bits & 1:
        body = _WHOLE_TO_INT.sub(rb'"\1":\2', body)
    else:
        body = _MONEY_TO_STRING.sub(rb'"\1":"\2"', body)
    score = (bits >> 8) % 10_000
    extra = b',"riskScore":%d.%02d' % (score // 100, score % 100)
    if bits & 6:
        device = _DEVICES[(bits >> 1) % 3]
        version = b"%d.%d.%d" % (3 + (bits >> 4) % 2, (bits >> 5) % 10, (bits >> 9) % 20)
        extra += b',"device":{"os":"%s","appVersion":"%s"}' % (device, version)
    return body[:-1] + extra + b"}"


_USDT_MONEY = re.compile(rb'"(toAmount|feeAmount)":(-?\d+\.\d{2})(?=[,}])')
_META_OPEN = re.compile(rb'"meta":\{(\})?')
_CREATED_DAY = re.compile(rb'"createdAt":"(\d{4}-\d{2}-\d{2})')


def precision_body(body: bytes, record_id: str, fault_seed: int, since: str | None) -> bytes:
    """The ``precision`` rendering of one record: finer numbers from ``since`` on.

    From the day ``since`` (all records when None), a USDT record's ``toAmount`` and
    ``feeAmount`` gain four decimals (``12.34`` becomes ``12.345678``: a six-decimal
    stablecoin amount, not the ledger's), and the record gains ``riskScore`` with a fraction
    (``0.75``) and, when it has a ``meta`` object, ``meta.fraudScore`` (``97.5``). Before
    ``since``, the same fields come as whole numbers and the amounts are left as they are.

    Args:
        body: the record's canonical JSON bytes (ending in ``}``).
        record_id: the record's id.
        fault_seed: the faults' seed.
        since: the first day (``YYYY-MM-DD``) of the finer numbers, or None.

    Returns:
        The record's JSON bytes.
    """
    bits = zlib.crc32(f"precision:{fault_seed}:{record_id}".encode())
    day = _CREATED_DAY.search(body)
    fine = since is None or (day is not None and day.group(1).decode() >= since)
    whole = (bits >> 4) % 100
    if fine:
        if b'"toCurrency":"USDT"' in body:
            digits = b"%03d%d" % ((bits >> 8) % 1000, 1 + (bits >> 20) % 9)
            body = _USDT_MONEY.sub(lambda m: m.group(0) + digits, body)
        risk = b"%d.%02d" % (whole // 10, 1 + bits % 99)
        fraud = b"%d.5" % whole
    else:
        risk = b"%d" % (whole // 10)
        fraud = b"%d" % whole
    body = _META_OPEN.sub(
        lambda m: b'"meta":{"fraudScore":' + fraud + (b"}" if m.group(1) else b","), body, count=1
    )
    return body[:-1] + b',"riskScore":' + risk + b"}"
