"""The analysis library: plain functions that take polars frames and return polars frames.

Every function accepts the frame :func:`txkit.load_transactions` returns (eager or lazy) and
returns an eager :class:`polars.DataFrame`. Money stays exact: decimal in, decimal out, with
integer minor units in between; never a float.

* :mod:`txkit.analysis.reconcile`: the export's collections against the merchant's orders.
* :func:`read_orders` (from :mod:`txkit.inputs.orders`, where every file a merchant gives is
  read): the merchant's orders file as the frame :func:`reconcile` takes. No module here opens
  a file.
* :mod:`txkit.analysis.underpayments`: payments below or above the expected amount.
* :mod:`txkit.analysis.balances`: the balance-after fields against the balance model.
* :mod:`txkit.analysis.balance_models`: the candidate balance models and the choice of one
  per wallet.
* :mod:`txkit.analysis.overview`: what is in an export (volumes, statuses, fees), as a module.
* :mod:`txkit.analysis.trends`: month over month figures, read lazily with projected columns.
"""

from txkit.analysis import overview
from txkit.analysis.activity import activity_history
from txkit.analysis.balance_models import (
    BALANCE_MODELS,
    NO_MODEL_FITS,
    balance_model_choice,
    describe_balance_models,
)
from txkit.analysis.balances import (
    BREAK_KINDS,
    balance_breaks,
    balance_model_fit,
    balance_summary,
    balance_summary_and_breaks,
)
from txkit.analysis.fees import fee_rules, fee_tax_mismatches
from txkit.analysis.not_reported import not_reported_balances
from txkit.analysis.reconcile import (
    AGREED_CATEGORIES,
    CATEGORIES,
    DEFAULT_DATE_TOLERANCE,
    describe_matching,
    duplicate_references,
    reconcile,
    reconcile_summary,
)
from txkit.analysis.trends import METRIC_COLUMNS, month_over_month, monthly_metrics, trend_table
from txkit.analysis.underpayments import (
    COUNTED_STATUSES,
    activity_comparison,
    repeat_shortfalls,
    underpayment_summary,
    underpayments,
)

# The orders file is read in txkit.inputs; its reader stays importable here, where the docs
# and notebooks show it beside reconcile.
from txkit.inputs.orders import MAX_ORDER_DECIMALS, OrdersFile, read_orders, read_orders_file

__all__ = [
    "AGREED_CATEGORIES",
    "BALANCE_MODELS",
    "BREAK_KINDS",
    "CATEGORIES",
    "COUNTED_STATUSES",
    "DEFAULT_DATE_TOLERANCE",
    "MAX_ORDER_DECIMALS",
    "METRIC_COLUMNS",
    "NO_MODEL_FITS",
    "OrdersFile",
    "activity_comparison",
    "activity_history",
    "balance_breaks",
    "balance_model_choice",
    "balance_model_fit",
    "balance_summary",
    "balance_summary_and_breaks",
    "describe_balance_models",
    "describe_matching",
    "duplicate_references",
    "fee_rules",
    "fee_tax_mismatches",
    "month_over_month",
    "monthly_metrics",
    "not_reported_balances",
    "overview",
    "read_orders",
    "read_orders_file",
    "reconcile",
    "reconcile_summary",
    "repeat_shortfalls",
    "trend_table",
    "underpayment_summary",
    "underpayments",
]
