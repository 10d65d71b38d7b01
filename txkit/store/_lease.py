"""Table versions held by running reports against the retention policy (leases).

A report reads one table version for minutes (its notebooks' kernels read it again and
again); a ``txkit store vacuum`` meanwhile, or another sync's retention, with
``TXKIT_STORE_KEEP_DAYS=0``, removed that version under it. Now a running report holds a
*lease*: a small file ``_txkit_leases/lease-*.json`` in the store naming the version, who holds
it and since when; the retention policy keeps every version a live lease holds
(:func:`held_versions`) and records what it removed (:func:`record_removal`), so that a report
whose version vanished anyway (another tool's vacuum, a lease removed by hand) says what
removed it (:meth:`Lease.vanished`).

On a folder store a lease is live while its holder keeps it locked (``flock``): a killed
report's lease is stale at once and removed by the next vacuum. Reading the version and
writing its lease happen under a shared lock of ``_txkit_leases/.guard``; the retention policy
takes it exclusively from reading the leases to its last removal, so a version is either
leased before the policy looks, or read after it is done (never removed in between).

On object storage there is no lock: a lease is an object, live for :data:`LEASE_MAX_AGE`
after it was written (a report never runs that long), and a vacuum that starts between a
report's reading its version and writing its lease (milliseconds) does not see it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, TypeVar

from txkit.errors import StoreError
from txkit.store._location import is_remote, objects
from txkit.store._problems import os_problem
from txkit.store._table import log_versions

__all__ = [
    "LEASES_DIR",
    "LEASE_MAX_AGE",
    "Lease",
    "held_versions",
    "record_removal",
    "retention_guard",
]

log = logging.getLogger("txkit")

#: The store's folder of leases (a name that starts with ``_``: not the table's, as for Delta).
LEASES_DIR = "_txkit_leases"
#: On object storage, a lease older than this is a dead report's (no lock tells it there).
LEASE_MAX_AGE = timedelta(hours=12)
_GUARD = f"{LEASES_DIR}/.guard"
_REMOVALS = f"{LEASES_DIR}/removed.json"
_REMOVALS_KEPT = 20

T = TypeVar("T")


@contextlib.contextmanager
def _guard(store: str | os.PathLike[str], exclusive: bool) -> Iterator[None]:
    """The folder store's guard between leasing and the retention policy (none remote). A
    reader of a store it cannot write (read-only) takes none: it cannot lease either, and
    no vacuum of this user removes anything there."""
    if is_remote(store) or not (Path(store) / "_delta_log").is_dir():
        yield  # remote: no lock there; no table yet: no version to lease or remove
        return
    path = Path(store) / _GUARD
    try:
        path.parent.mkdir(exist_ok=True)
        handle = open(path, "a")  # noqa: SIM115 - closed below
    except OSError as exc:
        if exclusive or exc.errno not in (errno.EACCES, errno.EROFS, errno.EPERM):
            raise StoreError(os_problem(store, exc)) from None
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield  # closing the file releases the lock


@contextlib.contextmanager
def retention_guard(store: str | os.PathLike[str]) -> Iterator[None]:
    """Held by the retention policy from reading the leases to its last removal: no report
    reads and leases a version meanwhile (it waits, then reads what is left)."""
    with _guard(store, exclusive=True):
        yield


class Lease:
    """A running report's hold on the table version it reads (see the module).

    Use as a context manager; :meth:`hold` reads the version and leases it at once.

    Args:
        store: the store folder or URI.
        what: who holds it, as the vacuum names it (``txkit report 2026-10``).
    """

    def __init__(self, store: str | os.PathLike[str], what: str) -> None:
        self.store = store
        self.what = what
        self.version: int | None = None
        self.since = datetime.now(UTC)
        self._rel = f"{LEASES_DIR}/lease-{os.getpid()}-{secrets.token_hex(6)}.json"
        self._handle: IO[str] | None = None

    def hold(self, read: Callable[[], T], version_of: Callable[[T], int]) -> T:
        """``read()``, whose table version (``version_of`` its result) is leased before any
        retention policy can remove it.

        A store that cannot be written (read-only) is read without a lease: no vacuum of
        this user can remove a version from it either.
        """
        with _guard(self.store, exclusive=False):
            value = read()
            self.version = version_of(value)
            self._write()
        return value

    def _write(self) -> None:
        doc = {
            "version": self.version,
            "by": self.what,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": f"{self.since:%Y-%m-%d %H:%M:%SZ}",
        }
        data = json.dumps(doc)
        try:
            if is_remote(self.store):
                objects(self.store).put(self._rel, data.encode())
                return
            path = Path(self.store) / self._rel
            handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - held while it runs
            fcntl.flock(handle, fcntl.LOCK_EX)  # live while locked: a killed holder's is stale
            handle.write(data)
            handle.flush()
            self._handle = handle
        except OSError as exc:
            log.info("no lease on table version %s of %s: %s", self.version, self.store, exc)

    def release(self) -> None:
        """Give the version back to the retention policy (removes the lease)."""
        if self.version is None:
            return
        objects(self.store).delete(self._rel)
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None

    def vanished(self) -> StoreError | None:
        """When the leased version is no longer in the store: the error that says so, and what
        removed it (the retention policy's record), for a report that failed reading it."""
        if self.version is None:
            return None
        try:
            if self.version in log_versions(self.store):
                return None
        except Exception:  # the store cannot be listed: the report's own error says more
            return None
        removal = next(
            (r for r in reversed(_removals(self.store)) if self.version in r.get("dropped", [])),
            None,
        )
        if removal is None:
            by = "by something other than txkit's retention policy (a copy, a manual delete?)"
        else:
            by = (
                f"by {removal.get('by')} (pid {removal.get('pid')} on {removal.get('host')}, "
                f"at {removal.get('at')}), which did not see this report's lease"
            )
        return StoreError(
            f"table version {self.version} of the store {self.store}, which this report "
            f"({self.what}) was reading, was removed while it ran, {by}: run the report again"
        )

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def held_versions(store: str | os.PathLike[str], *, prune: bool = True) -> dict[int, str]:
    """The versions live leases hold, and by whom; with ``prune`` (only under
    :func:`retention_guard`: a lease being written is not locked yet) stale leases, a killed
    report's, are removed on the way.

    Raises:
        StoreError: a lease cannot be read (what it holds is unknown: nothing is removed).
    """
    files = objects(store)
    now = datetime.now(UTC)
    held: dict[int, str] = {}
    for item in files.list(LEASES_DIR):
        name = item.rel.rsplit("/", 1)[-1]
        if not (name.startswith("lease-") and name.endswith(".json")):
            continue
        if is_remote(store):
            if now - item.modified > LEASE_MAX_AGE:
                if prune:
                    files.delete(item.rel)
                continue
            data = files.get(item.rel)
        else:
            live, data = _live(Path(store) / item.rel, prune)
            if not live:
                continue
        try:
            doc = json.loads(data)
            version, by, since = int(doc["version"]), doc["by"], doc["since"]
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"cannot read the lease {item.rel} of {store} ({type(exc).__name__}): the version "
                "it holds is unknown, so the retention policy removes nothing; if no report "
                "runs, delete that file"
            ) from None
        held.setdefault(version, f"held by a running {by} (pid {doc.get('pid')}, since {since})")
    return held


def _live(path: Path, prune: bool) -> tuple[bool, bytes]:
    """Whether a folder store's lease is held (locked by its holder), and its bytes; a stale
    one is removed with ``prune``."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return False, b""  # released meanwhile
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True, handle.read()
        if prune:
            with contextlib.suppress(OSError):
                path.unlink()  # its holder is gone (killed): the lease is stale
        return False, b""


def _removals(store: str | os.PathLike[str]) -> list[dict[str, object]]:
    try:
        doc = json.loads(objects(store).get(_REMOVALS))
    except Exception:  # none yet, or unreadable: no record to cite
        return []
    return [r for r in doc if isinstance(r, dict)] if isinstance(doc, list) else []


def record_removal(store: str | os.PathLike[str], dropped: list[int], by: str) -> None:
    """Note which versions the retention policy removed, by whom and when (the last
    :data:`_REMOVALS_KEPT` removals), for :meth:`Lease.vanished`."""
    if not dropped:
        return
    entry = {
        "at": f"{datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}",
        "by": by,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "dropped": dropped,
    }
    record = [*_removals(store), entry][-_REMOVALS_KEPT:]
    with contextlib.suppress(OSError):  # the removal is done; its note is a courtesy
        objects(store).put(_REMOVALS, json.dumps(record).encode())
