"""The argument types of the ``txkit`` command: each value is parsed once, at the edge.

argparse calls them (``type=``), so a bad argument is exit 2 before anything runs, and the
commands receive the parsed values, never the raw text.
"""

from __future__ import annotations

import argparse
import re
from datetime import date

from txkit.calendar import parse_day, parse_month

__all__ = ["day_arg", "month_arg", "version_arg"]


def _argument_error(exc: ValueError) -> argparse.ArgumentTypeError:
    # The calendar's messages start with the argument's name; argparse names it already.
    return argparse.ArgumentTypeError(str(exc).strip())


def month_arg(text: str) -> str:
    """argparse type of a ``YYYY-MM`` month (ASCII digits, nothing around them)."""
    try:
        return parse_month(text, "")
    except ValueError as exc:
        raise _argument_error(exc) from None


def day_arg(text: str) -> date:
    """argparse type of a ``YYYY-MM-DD`` UTC day (ASCII digits, nothing around them)."""
    try:
        day = parse_day(text, "")
    except ValueError as exc:
        raise _argument_error(exc) from None
    assert day is not None
    return day


#: Delta table versions are signed 64-bit integers.
_MAX_VERSION = 2**63 - 1


def version_arg(text: str) -> int:
    """argparse type of a store table version: a whole number, 0 or more."""
    if not re.fullmatch(r"[0-9]+", text) or int(text) > _MAX_VERSION:
        raise argparse.ArgumentTypeError(
            f"a table version is a whole number, 0 or more (report.json names the one a report "
            f"read; `txkit store status` the newest), got {text!r}"
        )
    return int(text)
