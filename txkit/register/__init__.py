"""The exception register: every exception of every report section, across months.

A second Delta table in the store (``STORE/_register``, :mod:`._table`) logs each report run and
the items its exception lists held, and every annotation (status, category, owner,
explanation) with who and when. :func:`register_view` folds it into one row per item as of a
month: age from the item's own date to the month's end, its bucket, materiality
(``materiality.toml``, :mod:`._materiality`). :mod:`._sign` signs a report and locks its month.
See docs/register.md.
"""

from txkit.register._materiality import CONFIG_FILE, Materiality, load_materiality
from txkit.register._model import (
    BUCKETS,
    CATEGORIES,
    SECTIONS,
    STATUSES,
    age_bucket,
    default_category,
    register_items,
)
from txkit.register._sign import sign_report, signed_versions
from txkit.register._state import (
    ITEMS_SUFFIX,
    REGISTER_COLUMNS,
    annotate,
    bucket_counts,
    explain,
    filter_items,
    record_report,
    register_view,
    reported_months,
)
from txkit.register._table import check_parts, read_events, register_uri, repair_command
from txkit.store._retention import KEEP_SOURCES
from txkit.store._verify import EXTRA_CHECKS, REGISTER, FileCheck


def _signed(store: str, table_id: str) -> set[int]:
    # The register lives inside the store it describes, so its signed versions are this
    # table's whatever its id.
    return signed_versions(store)


def _register_files(store: str) -> tuple[list[FileCheck], str]:
    return [
        FileCheck(f"_register/{c.path}", REGISTER, c.size, c.status, c.detail)
        for c in check_parts(store)
    ], repair_command(store)


# Every retention policy keeps the versions signed reports cite (vacuum, compaction), and
# `txkit store verify` checks the register's files: txkit's package imports this module, so
# no store is opened without the hooks in place.
KEEP_SOURCES.append(_signed)
EXTRA_CHECKS.append(_register_files)

__all__ = [
    "BUCKETS",
    "CATEGORIES",
    "CONFIG_FILE",
    "ITEMS_SUFFIX",
    "REGISTER_COLUMNS",
    "SECTIONS",
    "STATUSES",
    "Materiality",
    "age_bucket",
    "annotate",
    "bucket_counts",
    "default_category",
    "explain",
    "filter_items",
    "load_materiality",
    "read_events",
    "record_report",
    "register_items",
    "register_uri",
    "register_view",
    "reported_months",
    "sign_report",
    "signed_versions",
]
