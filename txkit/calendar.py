"""The calendar txkit works in: UTC days and ``YYYY-MM`` months, their bounds and parsing.

Every day and month given by a user (a CLI flag, a notebook parameter, a function argument) is
read here, so that every bad value fails the same way: a one-line ``ValueError`` that names the
argument, the value and the accepted format (a :class:`~txkit.errors.ParameterError`, which
is a ``ValueError`` and shows as that one line in Jupyter). Days are limited to :data:`MIN_DAY` ..
:data:`MAX_DAY` so that the loader's margin days and month arithmetic can never overflow.

Parsing is strict: ASCII digits only, nothing around them. A value with a space or a line
break around it (``" 2026-10"``, ``"2026-10\n"``) or with other digits (full-width
``２０２６-１０``, Arabic-Indic) is refused with a hint, never read as something else: a lenient
parse once let the stripped value choose the dates while the raw one was looked up in the
store. Callers parse once, at the edge, and pass the returned value on.
"""

from __future__ import annotations

import calendar as _stdlib_calendar
import re
import unicodedata
from datetime import UTC, date, datetime, timedelta

from txkit.errors import ParameterError

__all__ = [
    "MAX_DAY",
    "MIN_DAY",
    "DateLike",
    "month_bounds",
    "month_of",
    "months_between",
    "next_month",
    "parse_day",
    "parse_month",
    "previous_month",
    "previous_months",
]

DateLike = date | datetime | str

#: The first and last days txkit accepts (the epoch to the end of year 9998: a day of margin
#: or a month's end past them always exists).
MIN_DAY = date(1970, 1, 1)
MAX_DAY = date(9998, 12, 31)

# [0-9], not \d (which matches every script's digits), and fullmatch, not ^...$ ($ matches
# before a trailing newline).
_DAY_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MONTH_RE = re.compile(r"([0-9]{4})-([0-9]{2})")
_DAY_FORMAT = "a date, a datetime or a 'YYYY-MM-DD' string"
_RANGE = f"accepted days are {MIN_DAY} to {MAX_DAY}"


def _hint(value: object, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str):
        return ""
    if value != value.strip() and pattern.fullmatch(value.strip()):
        return " (remove the spaces or line breaks around it)"
    folded = unicodedata.normalize("NFKC", value).strip()
    folded = "".join(str(unicodedata.digit(c)) if c.isdigit() else c for c in folded)
    if folded != value.strip() and pattern.fullmatch(folded):
        return " (type the digits as ASCII 0-9, not full-width or other digits)"
    return ""


def _in_range(day: date, name: str, value: object) -> date:
    if not MIN_DAY <= day <= MAX_DAY:
        raise ParameterError(f"{name} {value!r} is out of range: {_RANGE} (YYYY-MM-DD)")
    return day


def parse_day(value: DateLike | None, name: str = "day") -> date | None:
    """Read a day given as ``date``, ``datetime`` (its UTC date) or ``'YYYY-MM-DD'``.

    Args:
        value: the day, or None.
        name: the argument's name, for the error message.

    Returns:
        The day, or None when ``value`` is None.

    Raises:
        ValueError: anything else (spaces around it, non-ASCII digits), an impossible date
            such as ``2026-02-30``, or a day outside :data:`MIN_DAY` .. :data:`MAX_DAY`
            (e.g. ``0001-01-01``).

    Example:
        >>> parse_day("2026-10-31", "end")
        datetime.date(2026, 10, 31)
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        try:
            day = (value.astimezone(UTC) if value.tzinfo else value).date()
        except OverflowError:
            raise ParameterError(f"{name} {value!r} is out of range: {_RANGE}") from None
        return _in_range(day, name, value)
    if isinstance(value, date):
        return _in_range(value, name, value)
    if isinstance(value, str) and _DAY_RE.fullmatch(value):
        try:
            day = date.fromisoformat(value)
        except ValueError:
            raise ParameterError(
                f"{name} {value!r} is not a real calendar date (YYYY-MM-DD)"
            ) from None
        return _in_range(day, name, value)
    if isinstance(value, str):
        raise ParameterError(
            f"{name} must be YYYY-MM-DD (e.g. 2026-10-31), got {value!r}{_hint(value, _DAY_RE)}"
        )
    raise ParameterError(f"{name} must be {_DAY_FORMAT}, got {value!r}")


def parse_month(value: str, name: str = "month") -> str:
    """Check a ``'YYYY-MM'`` month (ASCII digits, nothing around them) and return it.

    Raises:
        ValueError: not exactly ``YYYY-MM`` (spaces or a line break around it, non-ASCII
            digits), not a real month, or outside the accepted years.

    Example:
        >>> parse_month("2026-10")
        '2026-10'
    """
    match = _MONTH_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None or not 1 <= int(match.group(2)) <= 12:
        raise ParameterError(
            f"{name} must be YYYY-MM (e.g. 2026-10), got {value!r}{_hint(value, _MONTH_RE)}"
        )
    if not MIN_DAY.year <= int(match.group(1)) <= MAX_DAY.year:
        raise ParameterError(
            f"{name} {value!r} is out of range: accepted months are "
            f"{MIN_DAY:%Y-%m} to {MAX_DAY:%Y-%m} (YYYY-MM)"
        )
    return match.group(0)


def month_bounds(month: str) -> tuple[date, date]:
    """First and last day of ``'YYYY-MM'``.

    Raises:
        ValueError: not a ``YYYY-MM`` month (see :func:`parse_month`).

    Example:
        >>> month_bounds("2026-02")
        (datetime.date(2026, 2, 1), datetime.date(2026, 2, 28))
    """
    text = parse_month(month)
    year, mon = int(text[:4]), int(text[5:])
    return date(year, mon, 1), date(year, mon, _stdlib_calendar.monthrange(year, mon)[1])


def month_of(day: date) -> str:
    """The ``'YYYY-MM'`` month of a day."""
    return f"{day.year:04d}-{day.month:02d}"


def previous_month(month: str) -> str:
    """The calendar month before ``month``: ``previous_month("2026-01") == "2025-12"``."""
    return previous_months(month, 1)[0]


def next_month(month: str) -> str:
    """The calendar month after ``month``: ``next_month("2026-12") == "2027-01"``."""
    _, last = month_bounds(month)
    return month_of(last + timedelta(days=1))


def previous_months(month: str, count: int) -> list[str]:
    """The ``count`` calendar months before ``month``, oldest first.

    Raises:
        ValueError: a bad month, a negative count, or months before :data:`MIN_DAY`.

    >>> previous_months("2026-01", 2)
    ['2025-11', '2025-12']
    """
    first, _ = month_bounds(month)
    if count < 0:
        raise ParameterError(f"count must be 0 or more, got {count}")
    index = first.year * 12 + first.month - 1
    if index - count < MIN_DAY.year * 12:
        raise ParameterError(
            f"{count} month(s) before {month} is out of range: accepted months start at "
            f"{MIN_DAY:%Y-%m}"
        )
    return [f"{i // 12:04d}-{i % 12 + 1:02d}" for i in range(index - count, index)]


def months_between(first: date, last: date) -> list[str]:
    """Every ``'YYYY-MM'`` month from the one of ``first`` to the one of ``last``, included.

    >>> months_between(date(2025, 12, 5), date(2026, 2, 1))
    ['2025-12', '2026-01', '2026-02']
    """
    out = []
    year, month = first.year, first.month
    while (year, month) <= (last.year, last.month):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def no_records_line(month: str, covers: tuple[str, str] | None, where: str = "the sandbox") -> str:
    """The one line said for a month without records, where a page would otherwise compute
    figures (or an all-clear) from nothing: ``no records of 2026-11: the sandbox covers
    2025-11 to 2026-10``.

    Args:
        month: ``YYYY-MM``.
        covers: the first and last month the source holds; None when unknown or none.
        where: the source, as a reader names it (``the sandbox``, ``the store data/...``).
    """
    if covers is None:
        return f"no records of {month}: {where} holds none of that month"
    return f"no records of {month}: {where} covers {covers[0]} to {covers[1]}"
