"""Where a store lives and how its Delta table is reached: folder or ``s3://`` URI, storage
options, the refusal of the previous format, the lock of local stores, and the one-line
messages for damaged, full or read-only stores.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from txkit.errors import TxkitError

__all__ = [
    "StoreError",
    "StoreLockedError",
    "is_io_error",
    "is_remote",
    "locked",
    "open_table",
    "os_problem",
    "refuse_old_layout",
    "storage_options",
    "table_uri",
    "write_problem",
]

LOCK_NAME = "_txkit.lock"


class StoreError(TxkitError):
    """The store cannot be used as asked (another source, an old format, damaged files)."""


class StoreLockedError(StoreError):
    """Another sync holds the store's lock, or committed to it meanwhile."""


def is_remote(store: str | os.PathLike[str]) -> bool:
    """True for an object-storage URI (``s3://...``), False for a folder."""
    return "://" in str(store)


def table_uri(store: str | os.PathLike[str]) -> str:
    """The URI delta-rs opens: the URI as given, or the folder's absolute path."""
    return str(store).rstrip("/") if is_remote(store) else str(Path(store).absolute())


def storage_options(store: str | os.PathLike[str]) -> dict[str, str] | None:
    """delta-rs storage options for ``store``: None for a folder; for ``s3://``, the standard
    AWS variables are read by delta-rs itself, plus plain-http endpoints allowed when
    ``AWS_ENDPOINT_URL`` is ``http://`` (a local S3 such as MinIO or moto)."""
    if not str(store).startswith("s3://"):
        return None
    options: dict[str, str] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    # S3 has no atomic rename: commits rely on conditional writes (If-None-Match).
    options.setdefault("conditional_put", "etag")
    return options


def _old_layout(store: str | os.PathLike[str]) -> bool:
    if is_remote(store):
        return False
    path = Path(store)
    return (path / "generations").is_dir() or (path / "current").is_symlink()


def refuse_old_layout(store: str | os.PathLike[str]) -> None:
    if _old_layout(store):
        raise StoreError(
            f"{store} is a store of the previous format (Parquet generations): run "
            f"`txkit store migrate --store {store}` to convert it to a Delta table"
        )


def open_table(store: str | os.PathLike[str], version: int | None = None) -> Any:
    """The DeltaTable, or None when there is none yet."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    refuse_old_layout(store)
    uri, options = table_uri(store), storage_options(store)
    try:
        return DeltaTable(uri, version=version, storage_options=options)
    except TableNotFoundError:
        if version is not None:
            raise StoreError(
                f"the store {store} has no table yet, so no version {version}"
            ) from None
        return None
    except Exception as exc:  # delta-rs raises several types for a damaged or absent log
        raise StoreError(_store_problem(store, exc, version)) from None


def _store_problem(store: str | os.PathLike[str], exc: Exception, version: int | None) -> str:
    text = " ".join(str(exc).split())[:300]
    if version is not None and "version" in text.lower():
        return f"the store {store} has no version {version} ({text})"
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
    """The first missing commit file of a local table's log, if its numbers have a gap."""
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


@contextlib.contextmanager
def locked(store: str | os.PathLike[str]) -> Iterator[None]:
    """Exclusive use of a local store for one sync (object stores: Delta's conflict check)."""
    if is_remote(store):
        yield
        return
    path = Path(store)
    try:
        path.mkdir(parents=True, exist_ok=True)
        handle = open(path / LOCK_NAME, "a+")  # noqa: SIM115 - held for the whole sync
    except OSError as exc:
        raise StoreError(os_problem(store, exc)) from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise StoreLockedError(
                f"another sync is running on {store} ({holder}); wait for it to finish, "
                "then run this one again"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}")
        handle.flush()
        yield
    finally:
        handle.close()


def os_problem(store: str | os.PathLike[str], exc: OSError) -> str:
    reasons = {
        errno.ENOSPC: "the disk is full",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EDQUOT: "the disk quota is exceeded",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    return (
        f"cannot write to the store {store}: {reason}{where}; the store is left at its previous "
        "version: free space or fix permissions, then run the sync again"
    )


def is_io_error(exc: Exception) -> bool:
    from deltalake.exceptions import DeltaError

    return isinstance(exc, DeltaError) or type(exc).__name__ in ("DeltaError", "GenericError")


def write_problem(store: str | os.PathLike[str], exc: Exception) -> str:
    text = " ".join(str(exc).split())[:300]
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
