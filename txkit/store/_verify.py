"""``txkit store verify``: every data file of a version checked against its recorded digest."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from txkit.errors import StoreError
from txkit.store._location import StoreLike, digest_of, objects, store_location
from txkit.store._read import _digests
from txkit.store._state import _state_of
from txkit.store._table import log_problems, open_table, table_files


@dataclass(frozen=True)
class FileCheck:
    """One data file of a version, checked.

    Attributes:
        path: the file, relative to the store.
        month: its month partition.
        size: its size in the log (bytes).
        status: ``ok`` (its digest matches), ``damaged`` (it does not), ``missing``, or
            ``unverified`` (no digest recorded: a file another tool added; ``detail`` says
            whether it reads).
        detail: what was found.
    """

    path: str
    month: str
    size: int
    status: str
    detail: str = ""


def verify_store(
    store: StoreLike = None,
    *,
    version: int | None = None,
    others: Sequence[Callable[[str | os.PathLike[str]], list[FileCheck]]] = (),
) -> list[FileCheck]:
    """Check every data file of a table version against the digest its commit recorded.

    Args:
        store: the store folder or URI.
        version: a table version (default: the newest).
        others: more checks of files kept in the store (the exception register's:
            :func:`txkit.register.register_file_checks`), added after the table's.

    Returns:
        One :class:`FileCheck` per file, in month order.

    Raises:
        StoreError: the store has no table, or its log cannot be read.
    """
    store = store_location(store)
    table = open_table(store, version)
    if table is None:
        extra = [check for other in others for check in other(store)]
        if extra:  # a register alone (written by txkit.register's tests and tools)
            return extra
        raise StoreError(f"the store {store} has no table yet: nothing to verify")
    digests = _digests(table, store)
    files = objects(store)
    out = []
    for rel, month, size in sorted(table_files(table), key=lambda f: (f[1], f[0])):
        try:
            data = files.get(rel)
        except Exception as exc:  # a lost file (OSError, or obstore's not-found)
            out.append(FileCheck(rel, month, size, "missing", " ".join(str(exc).split())[:120]))
            continue
        expected = digests.get(rel)
        if expected is None:
            try:
                pl.read_parquet(io.BytesIO(data))
                detail = "unverified (no digest recorded); it reads"
            except Exception as exc:  # any parse failure
                detail = (
                    "unverified (no digest recorded); it does not read: "
                    + " ".join(str(exc).split())[:120]
                )
            out.append(FileCheck(rel, month, size, "unverified", detail))
        elif digest_of(data) != expected:
            out.append(
                FileCheck(rel, month, size, "damaged", f"{len(data):,} bytes, digest differs")
            )
        else:
            out.append(FileCheck(rel, month, size, "ok"))
    # The log itself, against what the store's commits recorded (a removed or moved entry).
    for rel, month, what in log_problems(table_files(table), digests):
        out.append(FileCheck(rel, month, 0, "missing", what))
    out += _uncovered(table, store)
    return out + [check for other in others for check in other(store)]


def _uncovered(table: object, store: StoreLike) -> list[FileCheck]:
    """Months the store's coverage records rows of but of which the Delta log lists no file
    (found also for files without a recorded digest)."""
    try:
        coverage = _state_of(table, store).coverage
    except StoreError:  # a table txkit did not write: no coverage to compare
        return []
    months = {month for _, month, _ in table_files(table)}
    return [
        FileCheck(
            f"month={month}/",
            month,
            0,
            "missing",
            f"the store's coverage records {cov.rows:,} rows of {month} but the Delta "
            "log lists no file of it",
        )
        for month, cov in sorted(coverage.items())
        if cov.rows > 0 and month not in months
    ]


#: The ``month`` of the exception register's files in a :class:`FileCheck`.
REGISTER: str = "register"


def format_verify(
    store: str | os.PathLike[str],
    checks: list[FileCheck],
    version: int | None,
    *,
    repairs: Mapping[str, str] | None = None,
) -> tuple[str, bool]:
    """The printable result of :func:`verify_store` and whether the version is whole;
    ``repairs``: the command that repairs damaged files of another kind than the table's (by
    their ``month``, e.g. :data:`REGISTER`)."""
    bad = [c for c in checks if c.status in ("damaged", "missing")]
    unverified = [c for c in checks if c.status == "unverified"]
    at = f"table version {version}" if version is not None else "the newest version"
    register = sum(c.month == REGISTER for c in checks)
    files = f"{len(checks) - register} data file(s)" + (
        f" and {register} exception register file(s)" if register else ""
    )
    lines = [
        f"store {store}, {at}: {files}, "
        f"{sum(c.status == 'ok' for c in checks)} verified, {len(bad)} damaged or missing, "
        f"{len(unverified)} unverified (no digest recorded: not written by txkit sync)"
    ]
    for check in bad + unverified:
        lines.append(f"  {check.status}: {check.path} ({check.month}) {check.detail}".rstrip())
    if any(c.month != REGISTER for c in bad):
        months = sorted({c.month for c in bad if c.month != REGISTER})
        refresh = " ".join(f"--refresh {m}" for m in months)
        lines.append(f"repair: txkit sync --store {store} {refresh}")
    if any(c.month == REGISTER for c in bad) and repairs and REGISTER in repairs:
        lines.append(f"repair: {repairs[REGISTER]}")
    if not bad and any(c.month != REGISTER for c in unverified):
        months = sorted({c.month for c in unverified if c.month != REGISTER})
        refresh = " ".join(f"--refresh {m}" for m in months)
        lines.append(f"to give them digests: txkit sync --store {store} {refresh}")
    return "\n".join(lines), not bad
