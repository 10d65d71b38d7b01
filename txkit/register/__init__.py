"""The exception register: every exception of every report section, across months.

A second Delta table in the store (``STORE/_register``, :mod:`._table`) logs each report run and
the items its exception lists held, and every annotation (status, category, owner,
explanation) with who and when. :func:`register_view` folds it into one row per item as of a
month: age from the item's own date to the month's end, its bucket, materiality
(``materiality.toml``, :mod:`._materiality`). :mod:`._sign` signs a report and locks its
month; :func:`retention_policy` keeps the versions signed reports cite.
See docs/register.md.
"""

from txkit.register._carry import (
    RECOMPUTED,
    UNDERPAYMENT_HISTORY,
    Recompute,
    Recomputed,
)
from txkit.register._index import RegisterSummary, summarise
from txkit.register._keep import keep_signed, register_file_checks, retention_policy
from txkit.register._lock import locked_message, month_lock, month_state
from txkit.register._materiality import CONFIG_FILE, Materiality, load_materiality
from txkit.register._model import (
    BUCKETS,
    CATEGORIES,
    FLUX_SECTION,
    OPEN_STATUSES,
    SECTIONS,
    STATUSES,
    age_bucket,
    default_category,
    register_items,
    wallet_items,
)
from txkit.register._ready import shown_keys, unexplained_flux
from txkit.register._sign import (
    ROLES,
    Target,
    compare_reports,
    history_block,
    newest_revision,
    print_pack,
    refuse_signed,
    revision_lines,
    revisions,
    sign_reopening,
    sign_report,
    signature_block,
    signed_versions,
    signoff_block,
)
from txkit.register._state import (
    ITEMS_SUFFIX,
    REGISTER_COLUMNS,
    annotate,
    bucket_counts,
    commit_report,
    explain,
    filter_items,
    record_report,
    register_view,
    report_events,
    reported_months,
    with_revision,
)
from txkit.register._table import (
    append_events,
    check_parts,
    read_events,
    register_uri,
    repair_command,
    repair_register,
)
from txkit.register._verify import own_signatures, refuse_overwrite, verify_report
from txkit.register._xlsx import read_xlsx_text

__all__ = [
    "BUCKETS",
    "CATEGORIES",
    "CONFIG_FILE",
    "FLUX_SECTION",
    "ITEMS_SUFFIX",
    "OPEN_STATUSES",
    "RECOMPUTED",
    "REGISTER_COLUMNS",
    "ROLES",
    "SECTIONS",
    "STATUSES",
    "UNDERPAYMENT_HISTORY",
    "Materiality",
    "Recompute",
    "Recomputed",
    "RegisterSummary",
    "Target",
    "age_bucket",
    "annotate",
    "append_events",
    "bucket_counts",
    "check_parts",
    "commit_report",
    "compare_reports",
    "default_category",
    "explain",
    "filter_items",
    "history_block",
    "keep_signed",
    "load_materiality",
    "locked_message",
    "month_lock",
    "month_state",
    "newest_revision",
    "own_signatures",
    "print_pack",
    "read_events",
    "read_xlsx_text",
    "record_report",
    "refuse_overwrite",
    "refuse_signed",
    "register_file_checks",
    "register_items",
    "register_uri",
    "register_view",
    "repair_command",
    "repair_register",
    "report_events",
    "reported_months",
    "retention_policy",
    "revision_lines",
    "revisions",
    "shown_keys",
    "sign_reopening",
    "sign_report",
    "signature_block",
    "signed_versions",
    "signoff_block",
    "summarise",
    "unexplained_flux",
    "verify_report",
    "wallet_items",
    "with_revision",
]
