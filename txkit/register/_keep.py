"""The store's retention policy with the register's own source of versions to keep."""

from __future__ import annotations

import os
from dataclasses import replace

from txkit.register._sign import signed_versions
from txkit.store import RetentionPolicy

__all__ = ["keep_signed", "retention_policy"]


def keep_signed(store: str, table_id: str) -> set[int]:
    """The versions signed reports cite (a retention policy's source). The register lives
    inside the store it describes, so they are this table's, whatever its id."""
    return signed_versions(store)


def retention_policy(
    keep_days: int | None = None, reports: str | os.PathLike[str] | None = None
) -> RetentionPolicy:
    """:meth:`RetentionPolicy.from_config` that also keeps every version a signed report
    cites (:func:`keep_signed`): what ``txkit sync``, ``txkit store vacuum`` and the report
    apply."""
    return replace(RetentionPolicy.from_config(keep_days, reports), sources=(keep_signed,))
