"""The ``txkit`` command line: ``init``, ``notebooks``, ``sandbox``, ``export``, ``sync``,
``store``, ``report``, ``probe`` and ``exceptions``; ``txkit --version``.

The secret key is never a flag: it comes from ``TXKIT_SECRET_KEY`` or a ``.env`` file.
Errors are printed as one scrubbed line (``txkit: error: ...``), never as a traceback, by one
top-level handler (:func:`describe_failure`); exit codes: 0 success, 1 any failure (HTTP,
format, incomplete export, file system), 2 only the user's own bad arguments. Output paths are
checked (a probe file is written) before any request is sent.

One module per command group: ``_project`` (``init``, ``notebooks``), ``_export``, ``_sync``,
``_store``, ``_report``, ``_sandbox``, ``_probe``, ``_exceptions``; ``_args`` holds the
argument types, ``_main`` the parser and the failure handler.
"""

from txkit.cli._args import day_arg, month_arg, version_arg
from txkit.cli._main import build_parser, describe_failure, main
from txkit.output import check_writable

__all__ = [
    "build_parser",
    "check_writable",
    "day_arg",
    "describe_failure",
    "main",
    "month_arg",
    "version_arg",
]
