"""The one-line messages for a store that cannot be reached, read or written: what object
storage's errors mean (credentials, region, network: the settings, not the store), a gap in a
table's commit log, a full or read-only disk, a damaged data file."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from txkit.errors import one_line
from txkit.store._location import is_remote

__all__ = [
    "damaged_message",
    "is_io_error",
    "os_problem",
    "store_problem",
    "write_problem",
]


# What object storage answers when it cannot be reached or refuses (credentials, region, DNS,
# connection, permissions): the store is not damaged, the settings are wrong.
_UNREACHABLE = re.compile(
    r"(?i)credential|region|dns error|connect|error sending request|timed? ?out|access ?denied"
    r"|forbidden|no ?such ?bucket|signature|invalid ?access ?key|non-2xx|\b40[134]\b"
)


def damaged_message(
    store: str | os.PathLike[str], rel: str, month: str, what: str, version: int | None = None
) -> str:
    """The one line for a damaged data file: the file, the month, the repair command."""
    at = f" (table version {version})" if version is not None else ""
    path = f"{str(store).rstrip('/')}/{rel}"
    return (
        f"the store {store}'s data file {path} of {month}{at} {what}; its records cannot be "
        f"trusted: run `txkit sync --store {store} --refresh {month}` to fetch the month again"
    )


def store_problem(store: str | os.PathLike[str], exc: Exception, version: int | None) -> str:
    text = one_line(exc, 300)
    if version is not None and "version" in text.lower():
        return f"the store {store} has no version {version} ({text})"
    if is_remote(store) and _UNREACHABLE.search(text):
        return (
            f"cannot reach the store {store}: {text}; check that the bucket exists and the "
            "object-storage settings (for S3: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
            "AWS_REGION, and AWS_ENDPOINT_URL for MinIO or another S3 API)"
        )
    missing = _log_gap(store)
    if missing:
        return (
            f"the store {store} is missing its commit log entry {missing}: restore that file "
            f"(a backup, or the bucket's versioning), or move the store aside and run `txkit "
            f"sync --store {store}` to fetch it again"
        )
    return (
        f"the store {store} cannot be read: {text}; if a file of it was damaged, restore it, "
        f"or move the store aside and run `txkit sync --store {store}` to fetch it again"
    )


def _log_gap(store: str | os.PathLike[str]) -> str | None:
    if is_remote(store):
        return None
    log = Path(store) / "_delta_log"
    versions = sorted(
        int(p.name.split(".")[0]) for p in log.glob("*.json") if p.name.split(".")[0].isdigit()
    )
    checkpoints = [int(p.name.split(".")[0]) for p in log.glob("*.checkpoint.parquet")]
    start = max(checkpoints, default=versions[0] if versions else 0)
    later = [v for v in versions if v >= start]
    for expected, found in zip(range(start, start + len(later)), later, strict=True):
        if expected != found:
            return str(log / f"{expected:020d}.json")
    return None


def os_problem(store: str | os.PathLike[str], exc: OSError) -> str:
    reasons = {
        errno.ENOSPC: "the disk is full",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EDQUOT: "the disk quota is exceeded",
    }
    reason = reasons.get(exc.errno or 0, one_line(exc.strerror or exc))
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    return (
        f"cannot write to the store {store}: {reason}{where}; the store is left at its previous "
        "version: free space or fix permissions, then run the sync again"
    )


def is_io_error(exc: Exception) -> bool:
    from deltalake.exceptions import DeltaError

    return isinstance(exc, DeltaError) or type(exc).__name__ in ("DeltaError", "GenericError")


def write_problem(store: str | os.PathLike[str], exc: Exception) -> str:
    text = one_line(exc, 300)
    lowered = text.lower()
    if "no space" in lowered:
        reason = "the disk is full"
    elif "read-only" in lowered or "permission denied" in lowered:
        reason = "the store cannot be written (read-only or permission denied)"
    else:
        reason = text
    return (
        f"cannot write to the store {store}: {reason}; the store is left at its previous "
        "version: fix that, then run the sync again"
    )
