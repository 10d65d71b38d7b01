"""State that lives for one notebook, in a kernel that may run several in turn.

The report runs its notebooks in lanes, one kernel each (:mod:`txkit.report._lanes`); between
two notebooks the lane calls :func:`new_notebook` in the kernel, so that what a module keeps
per notebook (the tables' numbering, warnings said once) starts again as in a new kernel.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["new_notebook", "per_notebook"]

_RESETS: list[Callable[[], None]] = []


def per_notebook(reset: Callable[[], None]) -> Callable[[], None]:
    """Register ``reset`` (no arguments) to run before each next notebook; returns it."""
    _RESETS.append(reset)
    return reset


def new_notebook() -> None:
    """Start every registered per-notebook state again."""
    for reset in _RESETS:
        reset()
