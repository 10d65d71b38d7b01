"""Deprecated since 0.2.0: ``txkit.trends`` moved to :mod:`txkit.analysis.trends` (the
figures) and :mod:`txkit.notebook` (``trend_records``, ``report_history``: what is loaded)."""

from txkit._deprecated import warn_moved
from txkit.analysis.trends import *  # noqa: F403
from txkit.analysis.trends import __all__ as _figures
from txkit.notebook import report_history, trend_records

__all__ = [*_figures, "report_history", "trend_records"]

warn_moved("txkit.trends", "txkit.analysis (trend_records, report_history: txkit.notebook)")
