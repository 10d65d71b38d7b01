"""Small helpers that keep notebook cells short: load a month, show a table, list findings.

* one run (``_outputs``): :func:`outputs` gives a notebook's :class:`Outputs`, which loads,
  shows and writes with the run's month, source, page, downloads folder and masking set once
  (``out.load_month()``, ``out.table(df)``, ``out.exceptions(...)``, ``out.download(...)``);

Everything shown is deterministic for a given source and month (no timings, ports or
request ids), so the committed notebook outputs can be compared by nbval.

* loading (``_load``): :func:`load_month`, :func:`load_history`, :func:`load_margin`,
  :func:`load_orders` (a frame and a :class:`LoadInfo` that says what it holds),
  :func:`trend_records` (the months of the trends, lazily from the store),
  :func:`load_bank_statements` (``_close``: the merchant's bank statements),
  :func:`load_register` (``_register``: the exception register, with :func:`owner_counts`
  and :func:`register_findings`);
* showing (``_display``): :func:`display_table`, :func:`display_exceptions` (in a report, with
  CSV and Excel downloads marked new, still open or resolved: ``_downloads``,
  ``_open_items``), :func:`what_to_look_at`, :func:`as_run` (a page's one line on what it
  read); :func:`report_history` (what each month's report listed);
* :mod:`txkit.notebook.tables` (formatted tables), :mod:`txkit.notebook.plots` (matplotlib
  figures; imported on its own, it loads matplotlib) and :mod:`txkit.notebook.findings` (the
  "what to look at" sentences computed from analysis results).
"""

from txkit.notebook._close import (
    load_bank_statements,
    publish_table,
    resolve_bank_statements,
    sandbox_statements,
)
from txkit.notebook._display import as_run, display_exceptions, display_table, what_to_look_at
from txkit.notebook._downloads import (
    count_by_currency,
    read_downloads,
    report_folder,
    report_history,
)
from txkit.notebook._load import (
    LoadInfo,
    load_history,
    load_margin,
    load_month,
    load_orders,
    load_orders_file,
    trend_records,
)
from txkit.notebook._open_items import OpenCounts
from txkit.notebook._outputs import Outputs, outputs
from txkit.notebook._recompute import build_register, month_keys, read_all_orders, recomputer
from txkit.notebook._register import (
    RegisterInfo,
    load_register,
    owner_counts,
    register_findings,
)
from txkit.notebook._source import source_sentence

__all__ = [
    "LoadInfo",
    "OpenCounts",
    "Outputs",
    "RegisterInfo",
    "as_run",
    "build_register",
    "count_by_currency",
    "display_exceptions",
    "display_table",
    "load_bank_statements",
    "load_history",
    "load_margin",
    "load_month",
    "load_orders",
    "load_orders_file",
    "load_register",
    "month_keys",
    "outputs",
    "owner_counts",
    "publish_table",
    "read_all_orders",
    "read_downloads",
    "recomputer",
    "register_findings",
    "report_folder",
    "report_history",
    "resolve_bank_statements",
    "sandbox_statements",
    "source_sentence",
    "trend_records",
    "what_to_look_at",
]
