"""What the store's own commands need from the register, which lives inside the store: its
signed versions kept by the retention policy, its files checked by ``txkit store verify``.
Passed to the store explicitly (the store never imports the register)."""

from __future__ import annotations

import os
from dataclasses import replace

from txkit.register._sign import signed_versions
from txkit.register._table import check_parts
from txkit.store import REGISTER, FileCheck, RetentionPolicy

__all__ = ["keep_signed", "register_file_checks", "retention_policy"]


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


def register_file_checks(store: str | os.PathLike[str]) -> list[FileCheck]:
    """The exception register's files (``_register/``), each checked against the digest its
    name records, as :func:`txkit.store.verify_store` lists the table's (``others``)."""
    return [
        FileCheck(f"_register/{c.path}", REGISTER, c.size, c.status, c.detail)
        for c in check_parts(store)
    ]
