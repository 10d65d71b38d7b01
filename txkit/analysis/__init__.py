"""The analysis library: plain functions that take polars frames and return polars frames.

Every function accepts the frame :func:`txkit.load_transactions` returns (eager or lazy) and
returns an eager :class:`polars.DataFrame`. Money stays exact: decimal in, decimal out, with
integer minor units in between; never a float.

* :mod:`txkit.analysis.reconcile`: the export's collections against the merchant's orders.
* :mod:`txkit.analysis.underpayments`: payments below or above the expected amount.
* :mod:`txkit.analysis.balances`: the balance-after fields against the balance model.
* :mod:`txkit.analysis.overview`: what is in an export (volumes, statuses, fees), as a module.
"""

from txkit.analysis import overview
from txkit.analysis.balances import BREAK_KINDS, balance_breaks, balance_summary
from txkit.analysis.reconcile import (
    CATEGORIES,
    duplicate_references,
    read_orders,
    reconcile,
    reconcile_summary,
)
from txkit.analysis.underpayments import (
    activity_comparison,
    repeat_shortfalls,
    underpayment_summary,
    underpayments,
)

__all__ = [
    "BREAK_KINDS",
    "CATEGORIES",
    "activity_comparison",
    "balance_breaks",
    "balance_summary",
    "duplicate_references",
    "overview",
    "read_orders",
    "reconcile",
    "reconcile_summary",
    "repeat_shortfalls",
    "underpayment_summary",
    "underpayments",
]
