"""The monthly report (``txkit report``): sync the month, run the notebooks, write HTML.

:func:`run_report` reads as its steps in ``_run``: ``_plan`` (the request checked, the days to
sync, the sync), ``_execute`` (the notebooks run by papermill in the lanes' kernels:
``_lanes``, ``_kernels``), ``_manifest`` (the register's events, ``report.json``), ``_pages``
(headlines and the index: ``_headlines``, ``_html``), ``_publish`` (the swap into
``reports/YYYY-MM/``). The exception downloads the notebooks write are :mod:`txkit.notebook`'s.
Reports run in turn in one process inside :func:`keep_kernels` share their notebooks' kernels.
"""

from txkit.errors import NotebookFailedError
from txkit.report._kernels import clean_kernel_folders, keep_kernels
from txkit.report._manifest import reproduce_command
from txkit.report._plan import OrdersCheck, ReportRequest, check_orders
from txkit.report._publish import clean_leftovers
from txkit.report._run import ReportResult, run_report

__all__ = [
    "NotebookFailedError",
    "OrdersCheck",
    "ReportRequest",
    "ReportResult",
    "check_orders",
    "clean_kernel_folders",
    "clean_leftovers",
    "keep_kernels",
    "reproduce_command",
    "run_report",
]
