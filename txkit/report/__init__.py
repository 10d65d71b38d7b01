"""The monthly report (``txkit report``): sync the month, run the notebooks, write HTML.

:func:`run_report` reads as its steps in ``_run`` (the sync, the notebooks run by papermill,
the headlines, the index, the swap into ``reports/YYYY-MM/``); ``_html`` renders each
executed notebook as a page without code and the index; ``_headlines`` computes the index's
headline figures. The exception downloads the notebooks write are :mod:`txkit.notebook`'s.
Reports run in turn in one process inside :func:`keep_kernels` share their notebooks' kernels.
"""

from txkit.errors import NotebookFailedError
from txkit.report._run import (
    OrdersCheck,
    ReportResult,
    check_orders,
    clean_kernel_folders,
    clean_leftovers,
    keep_kernels,
    reproduce_command,
    run_report,
)

__all__ = [
    "NotebookFailedError",
    "OrdersCheck",
    "ReportResult",
    "check_orders",
    "clean_kernel_folders",
    "clean_leftovers",
    "keep_kernels",
    "reproduce_command",
    "run_report",
]
