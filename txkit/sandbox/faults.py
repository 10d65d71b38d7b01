"""Fault injection for the sandbox: the failure modes real exports meet, reproducibly.

A :class:`Faults` object says which faults the sandbox injects. It is parsed from a spec such
as ``"rate_limit=0.2,server_error=0.1,cap=100,fault_seed=3"`` (``txkit sandbox --faults``) or
built with keyword arguments. Every fault is deterministic under ``fault_seed``: per-request
faults are decided by a random source seeded with the seed and the request's sequence number
(the n-th ``/transaction`` request that passed authentication and validation), and ``drift``
is decided per record id. Faults never apply to authentication or validation errors.

===================  =========================================================================
``rate_limit=P``     429 with ``Retry-After: N`` (``retry_after=N`` seconds, default 1, 0 allowed)
``server_error=P``   500, 502 or 503 with an HTML body
``slow=P``           the response waits ``slow_seconds=S`` (default 3) before being sent
``latency=MS``       every ``/transaction`` response waits MS milliseconds (benchmarks)
``drop=P``           the connection is closed without a response
``not_json=P``       200 with an HTML body
``cap=N``            at most N records per page, silently (``total`` is unaffected)
``arrivals=N``       N new records (newer than all others) arrive, one after each served page
``status_changes=N`` N in-flight records change status (and ``updatedAt``), one after each
                     served page: verified -> successful, processing -> failed, others ->
                     abandoned (a record made successful so carries no balance-after fields)
``shuffle_ties``     records with equal ``createdAt`` come in a new order on every request
``date_shift=H``     ``startDate``/``endDate`` are applied as days in UTC+H (-14 to 14)
``bounds=B``         ``inclusive`` (default), ``exclusive``, ``start_exclusive``, ``end_exclusive``
``drift=P``          per record: money as numeric strings (``"1500.00"``), whole amounts as
                     integers, unknown fields ``riskScore`` and ``device``
``fault_seed=N``     seed of all fault decisions (default 0)
===================  =========================================================================

The probability faults are decided in the order drop, rate_limit, server_error, not_json: a
request gets at most one of them; ``slow`` and ``latency`` add to any response.
"""

from __future__ import annotations

import math
import random
import re
import zlib
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Final

__all__ = ["BOUNDS", "Decision", "Faults", "drift_body"]

#: Accepted values of ``bounds``.
BOUNDS: Final[tuple[str, ...]] = ("inclusive", "exclusive", "start_exclusive", "end_exclusive")

_PROBABILITIES: Final = ("rate_limit", "server_error", "slow", "drop", "not_json", "drift")
_COUNTS: Final = {"retry_after": 0, "cap": 1, "arrivals": 0, "status_changes": 0}
_USAGE: Final = (
    "rate_limit=P, retry_after=N, server_error=P, slow=P, slow_seconds=S, latency=MS, drop=P, "
    "not_json=P, cap=N, arrivals=N, status_changes=N, shuffle_ties, date_shift=H (-14..14), "
    "bounds=inclusive|exclusive|start_exclusive|end_exclusive, drift=P, fault_seed=N "
    "(P is a probability from 0 to 1)"
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
    shuffle_ties: bool = False
    date_shift: int = 0
    bounds: str = "inclusive"
    drift: float = 0.0
    fault_seed: int = 0

    ACCEPTED: ClassVar[str] = _USAGE

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, _validate(name, value))

    @classmethod
    def parse(cls, spec: str | None) -> Faults:
        """Parse a spec such as ``"rate_limit=0.2,cap=100,shuffle_ties,fault_seed=3"``.

        Args:
            spec: comma-separated ``name=value`` items (``shuffle_ties`` may stand alone);
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
                if name != "shuffle_ties":
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
            if f.name == "shuffle_ties":
                items.append("shuffle_ties")
            else:
                items.append(f"{f.name}={value}")
        return ",".join(items) or "none"


_FIELD_NAMES: Final = frozenset(f.name for f in fields(Faults))


def _convert(name: str, raw: str) -> Any:
    """Convert the text of a parsed value to the field's type (validated by :func:`_validate`)."""
    try:
        if name in _PROBABILITIES or name in ("slow_seconds", "latency"):
            return float(raw)
        if name == "shuffle_ties":
            lowered = raw.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if name == "bounds":
            return raw
        return int(raw)
    except ValueError:
        raise ValueError(_bad(name, raw)) from None


def _bad(name: str, value: Any) -> str:
    wanted = {
        "slow_seconds": "a number of seconds from 0 to 600",
        "latency": "a number of milliseconds from 0 to 600000",
        "shuffle_ties": "true or false",
        "date_shift": "an integer number of hours from -14 to 14",
        "bounds": "one of " + ", ".join(BOUNDS),
        "fault_seed": "an integer",
        "cap": "an integer of at least 1",
    }
    if name in _PROBABILITIES:
        what = "a probability from 0 to 1"
    elif name in _COUNTS:
        what = wanted.get(name, "a non-negative integer")
    else:
        what = wanted[name]
    return f"fault {name!r} needs {what}, got {value!r}; accepted: {_USAGE}"


def _validate(name: str, value: Any) -> Any:
    """Check a field value; return it normalised, or raise ValueError."""
    if name not in _FIELD_NAMES:
        raise AttributeError(f"unknown fault {name!r}; accepted: {_USAGE}")
    if name == "shuffle_ties":
        if not isinstance(value, bool):
            raise ValueError(_bad(name, value))
        return value
    if name == "bounds":
        if value not in BOUNDS:
            raise ValueError(_bad(name, value))
        return value
    if isinstance(value, bool):
        raise ValueError(_bad(name, value))
    if name in _PROBABILITIES or name in ("slow_seconds", "latency"):
        if not isinstance(value, int | float) or math.isnan(value):
            raise ValueError(_bad(name, value))
        high = {"slow_seconds": 600.0, "latency": 600_000.0}.get(name, 1.0)
        if not 0 <= value <= high:
            raise ValueError(_bad(name, value))
        return float(value)
    if name == "cap" and value is None:
        return None
    if not isinstance(value, int):
        raise ValueError(_bad(name, value))
    if name == "date_shift" and not -14 <= value <= 14:
        raise ValueError(_bad(name, value))
    if name in _COUNTS and value < _COUNTS[name]:
        raise ValueError(_bad(name, value))
    return value


def _unit(text: str) -> float:
    """A deterministic number in [0, 1) from ``text`` (CRC-32; not Python's salted hash)."""
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
