"""State that lives for one notebook, in a kernel that may run several in turn.

The report runs its notebooks in lanes, one kernel each (:mod:`txkit.report._lanes`); between
two notebooks the lane calls :func:`new_notebook` in the kernel. What a module keeps per
notebook (the tables' numbering, warnings said once) is held here, by name, rather than in
the module: a new notebook starts with none of it, as in a new kernel, and no module has to
register anything for that to hold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["new_notebook", "notebook_value"]

T = TypeVar("T")

_VALUES: dict[str, Any] = {}


def notebook_value(name: str, make: Callable[[], T]) -> T:
    """This notebook's value called ``name`` (a module's dotted name and what it is), made by
    ``make`` at its first use in the notebook."""
    if name not in _VALUES:
        _VALUES[name] = make()
    return _VALUES[name]


def new_notebook() -> None:
    """The next notebook starts with none of the previous one's values."""
    _VALUES.clear()
