"""Deprecation warnings that name the new home and the version (as polars does).

A module that moved keeps a small shim at its old path: importing it warns once, with the
warning pointed at the user's import line (not at txkit's or importlib's frames), and gives
the names of the new home.
"""

from __future__ import annotations

import inspect
import warnings

__all__ = ["warn_moved", "warn_renamed"]


def _stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside txkit and importlib (the user's import
    line), for a ``warnings.warn`` called by this function's caller. Like ``warnings``
    itself, importlib's bootstrap frames are not counted."""
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # the caller: stacklevel 1
    level = 1
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.partition(".")[0] not in ("txkit", "importlib"):
            return level
        frame = frame.f_back
        name = frame.f_code.co_filename if frame is not None else ""
        if not ("importlib" in name and "_bootstrap" in name):
            level += 1
    return 1


def warn_moved(old: str, new: str, since: str = "0.2.0") -> None:
    """Warn that the module ``old`` moved to ``new`` (``DeprecationWarning``)."""
    warnings.warn(
        f"{old} is deprecated since {since}: import from {new}",
        DeprecationWarning,
        stacklevel=_stacklevel(),
    )


def warn_renamed(old: str, new: str, since: str = "0.2.0") -> None:
    """Warn that the name ``old`` is replaced by ``new`` (``DeprecationWarning``)."""
    warnings.warn(
        f"{old} is deprecated since {since}: use {new}",
        DeprecationWarning,
        stacklevel=_stacklevel(),
    )
