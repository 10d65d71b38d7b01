"""The service profile: what ``txkit probe`` found, how sure it is, and how it is stored.

A :class:`ServiceProfile` holds one :class:`Finding` per key of :data:`FINDINGS`, the base
URL it was measured against (never the key), when, and with how many requests. It is written
as JSON (``data/service-profile.json`` by default, atomically) and read back by
:func:`load_profile`, which returns it only for the same base URL. The loader-facing helpers
(:meth:`ServiceProfile.page_size`, :meth:`ServiceProfile.server_window`,
:meth:`ServiceProfile.served_range`) turn the findings into query parameters.

JSON layout (``format`` = :data:`FORMAT`)::

    {"format": "txkit-service-profile/1", "base_url": "https://...",
     "measured_at": "2026-11-23T13:05:12Z", "requests": 31, "max_requests": 60,
     "seconds": 2.4, "records_sampled": 1180,
     "findings": {"max_limit": {"value": 1000, "certainty": "measured",
                                "detail": "asked for 5,000 of 19,984: got 1,000"}, ...}}
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

from txkit.config import data_dir
from txkit.errors import ProfileWarning, scrub
from txkit.output import atomic_path

__all__ = [
    "CERTAINTIES",
    "DATE_FINDINGS",
    "DEFAULT_PATH",
    "FINDINGS",
    "FORMAT",
    "Finding",
    "ProfileWarning",
    "ServiceProfile",
    "default_path",
    "load_profile",
]

FORMAT: Final = "txkit-service-profile/1"
#: Where ``txkit probe`` writes and :func:`load_profile` looks by default (as of import; see
#: :func:`default_path`).
DEFAULT_PATH: Final = data_dir() / "service-profile.json"


def default_path() -> Path:
    """``service-profile.json`` in the data folder (``TXKIT_DATA_DIR``, else ``data/``)."""
    return data_dir() / "service-profile.json"


CERTAINTIES: Final = ("measured", "inferred", "unknown")
Certainty = Literal["measured", "inferred", "unknown"]

#: Every finding, in table order, with what its value means.
FINDINGS: Final[dict[str, str]] = {
    "default_limit": "records in a page when no limit is sent",
    "max_limit": "largest page the service serves (a larger limit is capped or refused)",
    "max_skip": "largest skip still served (null: none found); max_skip_mode says how it fails",
    "max_skip_mode": "past max_skip: 'reject' (4xx) or 'empty' (empty pages, real total)",
    "order": "sort order of the listing, e.g. 'createdAt desc'",
    "ties_stable": "records with equal createdAt come back in the same order every time",
    "largest_tie_group": "the most records sharing one createdAt in the sample (1: no ties)",
    "total_counts_all_matching": "data.total equals the records a full listing returns",
    "date_field": "the timestamp startDate/endDate filter on",
    "start_inclusive": "the startDate day itself is included",
    "end_inclusive": "the endDate day itself is included",
    "utc_offset_hours": "where the service's days start: UTC+H",
    "envelope_extras": "keys beyond success/message/data and data.transactions/data.total",
    "fields_beyond_document": "undocumented record fields: JSON types and share of records",
    "rate_limit": "429 responses seen (count, Retry-After values)",
}

#: The findings that say how the date filters work (the date probe's; all needed to plan windows).
DATE_FINDINGS: Final = ("date_field", "start_inclusive", "end_inclusive", "utc_offset_hours")

_DAY_MS: Final = 86_400_000
_HOUR_MS: Final = 3_600_000


@dataclass(frozen=True, slots=True)
class Finding:
    """One measured property of the service.

    Attributes:
        value: the finding (JSON-compatible), or None when unknown or absent.
        certainty: ``measured`` (observed directly), ``inferred`` (follows from what was
            observed, with a stated assumption) or ``unknown``.
        detail: the evidence, or for ``unknown`` the reason.
    """

    value: Any
    certainty: Certainty
    detail: str

    def __post_init__(self) -> None:
        if self.certainty not in CERTAINTIES:
            raise ValueError(
                f"certainty must be one of {', '.join(CERTAINTIES)}, got {self.certainty!r}"
            )

    @property
    def known(self) -> bool:
        """True when measured or inferred."""
        return self.certainty != "unknown"

    def to_json(self) -> dict[str, Any]:
        """``{"value": ..., "certainty": ..., "detail": ...}``."""
        return {"value": self.value, "certainty": self.certainty, "detail": self.detail}


def unknown(reason: str) -> Finding:
    """A finding that could not be made, with the reason."""
    return Finding(None, "unknown", reason)


@dataclass(slots=True)
class ServiceProfile:
    """What ``txkit probe`` measured about one service (one base URL).

    Attributes:
        base_url: the service's base address (no key).
        measured_at: when the probe ran (UTC).
        findings: one :class:`Finding` per key of :data:`FINDINGS`.
        requests: requests sent (every attempt, retries included).
        max_requests: the budget the probe ran with.
        seconds: how long the probe took.
        records_sampled: unique records the findings are based on.
    """

    base_url: str
    measured_at: datetime
    findings: dict[str, Finding]
    requests: int = 0
    max_requests: int = 0
    seconds: float = 0.0
    records_sampled: int = 0
    windows: list[dict[str, Any]] = field(default_factory=list)

    # -- values for the loader -------------------------------------------------------------

    def value(self, name: str) -> Any:
        """The value of finding ``name`` when measured or inferred, else None."""
        finding = self.findings.get(name)
        return finding.value if finding is not None and finding.known else None

    def page_size(self, default: int = 1000) -> int:
        """The page size to ask for: the measured ``max_limit``, else ``default``."""
        value = self.value("max_limit")
        return int(value) if isinstance(value, int) and value > 0 else default

    def describe(self) -> str:
        """One line for a loader's summary: what of the profile is known and used."""
        parts = [f"profile of {self.measured_at:%Y-%m-%d}", f"pages of {self.page_size()}"]
        if self.dates_known:
            bounds = "/".join(
                "incl" if self.value(n) else "excl" for n in ("start_inclusive", "end_inclusive")
            )
            offset = self.value("utc_offset_hours")
            parts.append(f"dates on {self.value('date_field')} ({bounds}, UTC{offset:+g})")
        else:
            parts.append("date semantics unknown")
        if self.value("max_skip") is not None:
            parts.append(f"max skip {self.value('max_skip'):,} ({self.value('max_skip_mode')})")
        if self.ties_stable:
            parts.append("ties in a stable order")
        elif self.value("ties_stable") is False:
            largest = self.value("largest_tie_group")
            parts.append(f"ties reshuffled (largest group seen {largest})")
        return ", ".join(parts)

    @property
    def ties_stable(self) -> bool:
        """True when equal-``createdAt`` records were measured in the same order every time
        (an export then needs no tie bookkeeping; inferred from few groups is not enough)."""
        finding = self.findings.get("ties_stable")
        return finding is not None and finding.value is True and finding.certainty == "measured"

    @property
    def dates_known(self) -> bool:
        """True when the date field, both bounds and the offset are all known."""
        return all(self.value(name) is not None for name in DATE_FINDINGS)

    def served_range(self, start_date: date | None, end_date: date | None) -> tuple[int, int]:
        """The ``[low, high)`` range of the date field, in epoch ms, that the service returns
        for ``startDate=start_date&endDate=end_date`` (per the measured bounds and offset).

        Args:
            start_date, end_date: the days sent (None: that bound is not sent).

        Returns:
            ``(low, high)``; ``-inf``/``inf`` stand for a bound not sent (as floats).

        Raises:
            ValueError: when the date semantics are not all known (see :attr:`dates_known`).
        """
        self._require_dates()
        offset_ms = round(float(self.value("utc_offset_hours")) * _HOUR_MS)
        low: float = -math.inf
        high: float = math.inf
        if start_date is not None:
            low = _day_ms(start_date) - offset_ms
            if not self.value("start_inclusive"):
                low += _DAY_MS
        if end_date is not None:
            high = _day_ms(end_date) + _DAY_MS - offset_ms
            if not self.value("end_inclusive"):
                high -= _DAY_MS
        return low, high  # type: ignore[return-value]

    def server_window(self, first: date, last: date) -> tuple[date, date]:
        """The ``startDate``/``endDate`` to send so that the service's window is the smallest
        one holding every instant of the UTC days ``first``..``last`` (both included).

        The window is on :attr:`date_field`: when that is not ``createdAt``, a window on
        ``createdAt`` cannot be asked for (query open-ended and filter locally instead).

        Args:
            first, last: UTC days, both included.

        Returns:
            ``(startDate, endDate)`` to send.

        Raises:
            ValueError: when the date semantics are not all known, or ``first > last``.
        """
        self._require_dates()
        if first > last:
            raise ValueError(f"first day {first} is after last day {last}")
        want_low = _day_ms(first)
        want_high = _day_ms(last) + _DAY_MS
        start = first + timedelta(days=2)
        while self.served_range(start, None)[0] > want_low:
            start -= timedelta(days=1)
        end = last - timedelta(days=2)
        while self.served_range(None, end)[1] < want_high:
            end += timedelta(days=1)
        return start, end

    def query_window(self, first: date, last: date) -> tuple[date | None, date | None]:
        """The ``startDate``/``endDate`` to send for the records *created* on the UTC days
        ``first``..``last`` (None: do not send that bound); filter ``createdAt`` locally
        whenever :attr:`filters_created` is False.

        * ``date_field`` is ``createdAt``: :meth:`server_window`.
        * ``updatedAt``: a record is updated at or after it is created, so the window's start
          on ``updatedAt`` is safe and its end is not: ``(start, None)``.
        * any other field: ``(None, None)``, the whole listing.

        Raises:
            ValueError: when the date semantics are not all known, or ``first > last``.
        """
        start, end = self.server_window(first, last)
        field = self.value("date_field")
        if field == "createdAt":
            return start, end
        if field == "updatedAt":
            return start, None
        return None, None

    @property
    def filters_created(self) -> bool:
        """True when the service's date filters apply to ``createdAt`` (known, measured or
        inferred): a window of :meth:`server_window` then needs no local filter beyond the
        edges."""
        return self.value("date_field") == "createdAt"

    def _require_dates(self) -> None:
        if not self.dates_known:
            missing = [
                f"{name} ({self.findings[name].detail})"
                for name in DATE_FINDINGS
                if name in self.findings and not self.findings[name].known
            ]
            raise ValueError(
                "the profile does not know the service's date semantics: " + "; ".join(missing)
            )

    # -- JSON ------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The profile as a JSON-compatible dict (the layout in the module docstring)."""
        return {
            "format": FORMAT,
            "base_url": self.base_url,
            "measured_at": self.measured_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "requests": self.requests,
            "max_requests": self.max_requests,
            "seconds": round(self.seconds, 2),
            "records_sampled": self.records_sampled,
            "windows": self.windows,
            "findings": {
                name: self.findings[name].to_json()
                for name in sorted(self.findings, key=_finding_rank)
            },
        }

    @classmethod
    def from_json(cls, doc: Any) -> ServiceProfile:
        """Rebuild a profile from :meth:`to_json` output.

        Raises:
            ValueError: not a txkit service profile of this format (the message says why).
        """
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise ValueError(f"not a txkit service profile (format {found!r}, expected {FORMAT})")
        try:
            findings = {
                name: Finding(item["value"], item["certainty"], str(item["detail"]))
                for name, item in doc["findings"].items()
            }
            return cls(
                base_url=str(doc["base_url"]),
                measured_at=datetime.strptime(doc["measured_at"], "%Y-%m-%dT%H:%M:%SZ").replace(
                    tzinfo=UTC
                ),
                findings=findings,
                requests=int(doc.get("requests", 0)),
                max_requests=int(doc.get("max_requests", 0)),
                seconds=float(doc.get("seconds", 0.0)),
                records_sampled=int(doc.get("records_sampled", 0)),
                windows=list(doc.get("windows", [])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(
                f"malformed txkit service profile ({type(exc).__name__}: {exc})"
            ) from None

    def save(
        self, path: str | os.PathLike[str] | None = None, *, secret: str | None = None
    ) -> Path:
        """Write the profile as JSON, atomically (a reader never sees half a file).

        Args:
            path: the file; default :func:`default_path`.
            secret: a key to make sure is not in the file (scrubbed if it were).

        Returns:
            The path written.
        """
        text = json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"
        text = scrub(text, secret)
        path = Path(path) if path is not None else default_path()
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
        return path

    def table(self) -> str:
        """The findings as a plain-text table (finding, value, certainty, detail)."""
        rows = [("finding", "value", "certainty", "detail")]
        for name in FINDINGS:
            finding = self.findings.get(name)
            if finding is None:
                continue
            rows.append((name, _show(name, finding.value), finding.certainty, finding.detail))
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = []
        for k, row in enumerate(rows):
            lines.append("  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3])
            if k == 0:
                lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 6)
        return "\n".join(lines)


def _finding_rank(name: str) -> tuple[int, str]:
    order = list(FINDINGS)
    return (order.index(name) if name in order else len(order), name)


def _show(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "fields_beyond_document" and isinstance(value, dict):
        return f"{len(value)} field(s)" + (": " + ", ".join(list(value)[:4]) if value else "")
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _day_ms(day: date) -> int:
    return (day.toordinal() - date(1970, 1, 1).toordinal()) * _DAY_MS


def _normal(url: str) -> str:
    return url.strip().rstrip("/")


def load_profile(
    base_url: str, path: str | os.PathLike[str] | None = None
) -> ServiceProfile | None:
    """The profile ``txkit probe`` wrote for ``base_url``, if there is one.

    Args:
        base_url: the base address of the service about to be queried (``Client.base_url``).
        path: the profile file; default :func:`default_path` (``data/service-profile.json``,
            or under ``TXKIT_DATA_DIR``).

    Returns:
        The :class:`ServiceProfile`, or None when there is no file, or (with a
        :class:`ProfileWarning`) when the file is for another base URL or is not a readable
        profile.

    Example:
        >>> profile = load_profile(client.base_url)
        >>> page_size = profile.page_size() if profile else 1000
    """
    file = Path(path) if path is not None else default_path()
    if not file.is_file():
        return None
    try:
        profile = ServiceProfile.from_json(json.loads(file.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        warnings.warn(f"service profile {file} ignored: {exc}", ProfileWarning, stacklevel=2)
        return None
    if _normal(profile.base_url) != _normal(base_url):
        warnings.warn(
            f"service profile {file} ignored: it was measured for {profile.base_url}, not "
            f"{_normal(base_url)} (run `txkit probe` against this service to measure it)",
            ProfileWarning,
            stacklevel=2,
        )
        return None
    return profile
