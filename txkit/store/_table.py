"""A store's Delta table: opening it at a version, its versions, its data files read and
checked against their digests, and the folders a store may be made in."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from txkit.errors import StoreDamagedError, StoreError, StoreVersionError
from txkit.store._location import (
    LOCK_NAME,
    ObjectStore,
    check_version,
    digest_of,
    is_remote,
    objects,
    storage_options,
    table_uri,
)
from txkit.store._problems import damaged_message, store_problem

__all__ = [
    "describe_versions",
    "log_versions",
    "new_store_beside",
    "open_table",
    "read_verified",
    "refuse_foreign_folder",
    "table_files",
]


#: What txkit itself keeps in a store's folder (anything else means it is not a store).
#: ``_register``: the exception register, a second Delta table in the store (txkit.register).
_OWN_ENTRIES = ("_delta_log", LOCK_NAME, "_register")


def table_files(table: Any) -> list[tuple[str, str, int]]:
    """The data files of a DeltaTable's version: ``(path relative to the store, month,
    size)``, in log order."""
    import polars as pl

    adds = pl.DataFrame(table.get_add_actions(flatten=True))
    if adds.height == 0:
        return []
    months = adds["partition.month"] if "partition.month" in adds.columns else None
    return [
        (path, months[i] if months is not None else "", size)
        for i, (path, size) in enumerate(zip(adds["path"], adds["size_bytes"], strict=True))
    ]


def log_problems(
    files: list[tuple[str, str, int]], digests: dict[str, str]
) -> list[tuple[str, str, str]]:
    """Where the Delta log disagrees with what the store's own commits recorded: a file whose
    digest txkit recorded but that the log no longer lists (an ``add`` removed), and a file
    the log files under another month than the folder it was written in (an entry moved).
    Each: ``(path, month, what)``, one per month the disagreement touches. ``files``: the
    version's files (:func:`table_files`); ``digests``: what txkit recorded for them (empty:
    a table txkit did not write, nothing to compare)."""
    if not digests:
        return []
    listed = {rel for rel, _, _ in files}
    out = []
    for rel in sorted(set(digests) - listed):
        out.append((rel, _folder_month(rel) or "?", "is recorded by the store's commits but the "
                    "Delta log no longer lists it (its add was removed)"))  # fmt: skip
    for rel, month, _ in files:
        folder = _folder_month(rel)
        if folder is not None and folder != month:
            out.append((rel, month, f"is filed under {month} in the Delta log but was written "
                        f"as {folder}'s (month={folder}/): its entry was moved"))  # fmt: skip
            out.append((rel, folder, f"was written as {folder}'s but the Delta log files it "
                        f"under {month}: its entry was moved"))  # fmt: skip
    return out


def _folder_month(rel: str) -> str | None:
    head = rel.split("/", 1)[0]
    return head.removeprefix("month=") if head.startswith("month=") else None


def read_verified(
    files: ObjectStore,
    store: str | os.PathLike[str],
    rel: str,
    month: str,
    expected: str | None,
    version: int | None = None,
) -> bytes:
    """A data file's bytes, proven to be those committed when ``expected`` (its recorded
    digest) is given; a file without one (another tool added it) is returned as it is.

    Raises:
        StoreDamagedError: the file is missing or its digest differs (names the month and the
            command that fetches it again).
    """
    try:
        data = files.get(rel)
    except Exception as exc:  # a lost file; obstore raises FileNotFoundError or its own errors
        if not isinstance(exc, OSError) and not type(exc).__module__.startswith("obstore"):
            raise
        raise StoreDamagedError(
            damaged_message(store, rel, month, "is missing or cannot be read", version),
            months=[month],
            path=rel,
        ) from None
    if expected is not None and digest_of(data) != expected:
        raise StoreDamagedError(
            damaged_message(
                store,
                rel,
                month,
                "does not match the digest recorded when it was committed (its bytes changed)",
                version,
            ),
            months=[month],
            path=rel,
        )
    return data


def new_store_beside(store: str | os.PathLike[str]) -> str:
    """A store location beside ``store`` that holds nothing yet (``S-2``, ``S-3``, ...), for
    data that must not go into ``store``."""
    base = str(store).rstrip("/")
    for n in range(2, 100):
        candidate = f"{base}-{n}"
        if is_remote(candidate) or not os.path.exists(candidate):
            return candidate
    return f"{base}-new"


def refuse_foreign_folder(store: str | os.PathLike[str]) -> None:
    """Refuse a local folder that holds something other than a txkit store (``/``, a home
    folder, a project): a sync would otherwise write its table and lock among those files.

    Accepted: a folder that does not exist yet, an empty one, a Delta table, or only txkit's
    own files
    (``month=...`` folders and the lock that a first sync killed before its commit leaves).

    Raises:
        StoreError: the folder holds other files (the message names a few).
    """
    if is_remote(store):
        return
    path = Path(store)
    if not path.is_dir():
        return
    try:
        entries = sorted(p.name for p in path.iterdir())
    except OSError:
        return  # unreadable: the write itself names the problem
    if "_delta_log" in entries:
        return
    foreign = [
        name
        for name in entries
        if name not in _OWN_ENTRIES
        and not name.startswith("month=")
        and not name.startswith(".txkit-probe-")
    ]
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        shown = ", ".join(foreign[:3]) + more
        raise StoreError(
            f"--store {store} is a folder that is not a txkit store (it holds {shown}): give a "
            "new or empty folder, or an existing store"
        )


def open_table(store: str | os.PathLike[str], version: int | None = None) -> Any:
    """The DeltaTable, or None when there is none yet.

    Raises:
        ValueError: a malformed store, or a version that is not a whole number 0 or more.
        StoreVersionError: a version the table does not have (the message lists those it has).
        StoreError: a store that cannot be read.
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    version = check_version(version)
    uri, options = table_uri(store), storage_options(store)
    try:
        table = DeltaTable(uri, version=version, storage_options=options)
        if version is None and not is_remote(store):
            # Every version has a checkpoint (txkit.store._write), which outlives a lost commit
            # entry: without that entry (and txkit's metadata in it) the table is the version
            # before, whole, as a Delta log without the checkpoint would read. A stat of the
            # local file; on object storage a commit is one atomic conditional write.
            at = table.version()
            while at > 0 and not (Path(store) / "_delta_log" / f"{at:020d}.json").exists():
                at -= 1
            if at != table.version():
                table = DeltaTable(uri, version=at, storage_options=options)
        return table
    except TableNotFoundError:
        if version is not None:
            missing = _missing_version(store, version)
            if missing is not None:
                raise missing from None
            raise StoreVersionError(
                f"the store {store} has no table yet, so no version {version}"
            ) from None
        return None
    except Exception as exc:  # delta-rs raises several types for a damaged or absent log
        if version is not None:
            missing = _missing_version(store, version)
            if missing is not None:
                raise missing from None
        raise StoreError(store_problem(store, exc, version)) from None


def _missing_version(store: str | os.PathLike[str], version: int) -> StoreVersionError | None:
    """None: the table has it, or has no log."""
    versions = _versions(store)
    if versions is None or version in versions:
        return None
    removed = (
        ", the others were removed by the retention policy (`txkit store vacuum`)"
        if version < versions[-1] and versions != list(range(versions[-1] + 1))
        else ""
    )
    return StoreVersionError(
        f"the store {store} has no table version {version}: it has "
        f"{describe_versions(versions)}{removed} (`txkit store status --store {store}` shows "
        "the newest)"
    )


def log_versions(store: str | os.PathLike[str]) -> list[int]:
    """The versions whose commit entries the store's log holds, oldest first (a version the
    retention policy removed has none and cannot be read)."""
    names = (o.rel.rsplit("/", 1)[-1] for o in objects(store).list("_delta_log"))
    return sorted(
        int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()
    )


def _versions(store: str | os.PathLike[str]) -> list[int] | None:
    try:
        return log_versions(store) or None
    except Exception:
        return None


def describe_versions(versions: list[int]) -> str:
    """``versions 0 to 5``, ``only version 3``, ``versions 3, 40 to 72``: runs of versions."""
    runs: list[list[int]] = []
    for v in versions:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return f"only version {runs[0][0]}"
    parts = [f"{a}" if a == b else f"{a} to {b}" for a, b in runs]
    return "versions " + ", ".join(parts)
