"""The sandbox's ``/transaction`` query: its parameters parsed and checked (400 when malformed,
422 when well-formed but not accepted; the message names the parameter and the accepted
values), shared by the HTTP handler and the fault layer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Final
from urllib.parse import parse_qs

from txkit.sandbox.ledger import DAY_MS, HOUR_MS
from txkit.schema import CURRENCIES, STATUSES, TRANS_TYPES

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "Query"]

#: Page size when ``limit`` is not given.
DEFAULT_LIMIT: Final = 50
#: Largest page; a larger ``limit`` is silently capped to it.
MAX_LIMIT: Final = 1000

_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_DATE_RE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INT_RE: Final = re.compile(r"^-?\d+$")


class _BadParameter(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Query:
    """A validated ``/transaction`` query."""

    trans_type: str | None = None
    status: str | None = None
    currency: str | None = None
    start_date: date | None = None
    end_date: date | None = None
    skip: int = 0
    limit: int = DEFAULT_LIMIT

    @classmethod
    def parse(cls, query_string: str) -> Query:
        """Validate a query string.

        Args:
            query_string: the URL's query, e.g. ``status=successful&limit=100``.

        Returns:
            The :class:`Query` (``limit`` already capped at :data:`MAX_LIMIT`).

        Raises:
            _BadParameter: with the HTTP status (400 or 422) and a message naming the
                parameter and the accepted values.
        """
        params = parse_qs(query_string, keep_blank_values=True)
        values: dict[str, str] = {}
        for name in ("transType", "status", "currency", "startDate", "endDate", "skip", "limit"):
            given = params.get(name)
            if given is None:
                continue
            if len(given) > 1:
                raise _BadParameter(
                    400, f"Parameter '{name}' was given {len(given)} times; give it at most once"
                )
            values[name] = given[0]
        trans_type = _choice(values, "transType", TRANS_TYPES)
        status = _choice(values, "status", STATUSES)
        currency = _choice(values, "currency", CURRENCIES)
        start = _day(values, "startDate")
        end = _day(values, "endDate")
        if start is not None and end is not None and start > end:
            raise _BadParameter(
                422,
                f"Invalid date range: startDate {start.isoformat()} is after endDate "
                f"{end.isoformat()}; startDate must be on or before endDate",
            )
        skip = _integer(values, "skip", 0, minimum=0)
        limit = min(_integer(values, "limit", DEFAULT_LIMIT, minimum=1), MAX_LIMIT)
        return cls(trans_type, status, currency, start, end, skip, limit)

    def window(
        self, date_shift: int = 0, bounds: str = "inclusive"
    ) -> tuple[int | None, int | None]:
        """The ``createdAt`` range ``[low, high)`` in epoch ms selected by the dates.

        Args:
            date_shift: apply the days in UTC+``date_shift`` hours (a fault; 0 normally).
            bounds: which of the two days are included (a fault; ``inclusive`` normally).

        Returns:
            ``(low, high)``; ``None`` where no bound was given.
        """
        shift = date_shift * HOUR_MS
        low = high = None
        if self.start_date is not None:
            low = (self.start_date.toordinal() - _EPOCH_ORDINAL) * DAY_MS - shift
            if bounds in ("exclusive", "start_exclusive"):
                low += DAY_MS
        if self.end_date is not None:
            high = (self.end_date.toordinal() - _EPOCH_ORDINAL + 1) * DAY_MS - shift
            if bounds in ("exclusive", "end_exclusive"):
                high -= DAY_MS
        return low, high


def _choice(values: dict[str, str], name: str, accepted: Sequence[str]) -> str | None:
    value = values.get(name)
    if value is None:
        return None
    if value not in accepted:
        raise _BadParameter(
            422, f"Invalid {name} {value!r}: {name} must be one of {', '.join(accepted)}"
        )
    return value


def _day(values: dict[str, str], name: str) -> date | None:
    value = values.get(name)
    if value is None:
        return None
    if not _DATE_RE.match(value):
        raise _BadParameter(
            400, f"Invalid {name} {value!r}: {name} must be a date in the format YYYY-MM-DD"
        )
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise _BadParameter(
            400, f"Invalid {name} {value!r}: not a real calendar date (format YYYY-MM-DD)"
        ) from None


def _integer(values: dict[str, str], name: str, default: int, *, minimum: int) -> int:
    value = values.get(name)
    if value is None:
        return default
    what = "a non-negative integer" if minimum == 0 else "a positive integer"
    extra = f" (values above {MAX_LIMIT} are capped at {MAX_LIMIT})" if name == "limit" else ""
    if not _INT_RE.match(value):
        raise _BadParameter(400, f"Invalid {name} {value!r}: {name} must be {what}{extra}")
    # Huge numbers are beyond any page or count: no need to parse them exactly.
    number = int(value) if len(value) <= 18 else (-1 if value.startswith("-") else 10**18)
    if number < minimum:
        raise _BadParameter(422, f"Invalid {name} {value!r}: {name} must be {what}{extra}")
    return number
