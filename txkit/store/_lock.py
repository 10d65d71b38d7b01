"""Exclusive use of a local store for one sync (object stores rely on Delta's conflict check)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from txkit.errors import StoreError, StoreLockedError
from txkit.store._location import LOCK_NAME, check_store, is_remote
from txkit.store._problems import os_problem

__all__ = ["LOCK_NAME", "locked"]


@contextlib.contextmanager
def locked(store: str | os.PathLike[str]) -> Iterator[None]:
    """Exclusive use of a local store for one sync (object stores: Delta's conflict check).

    The lock file is removed when the sync ends (a file left saying ``pid 6356 since ...``
    after every run read as a sync still running). It is removed while still locked, so a
    process that opened it just before locks a file no longer in the store: it sees that and
    opens the new one.
    """
    check_store(store)
    if is_remote(store):
        yield
        return
    path = Path(store)
    lock_path = path / LOCK_NAME
    for _ in range(20):
        try:
            path.mkdir(parents=True, exist_ok=True)
            handle = open(lock_path, "a+")  # noqa: SIM115 - held for the whole sync
        except OSError as exc:
            raise StoreError(os_problem(store, exc)) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise StoreLockedError(
                f"another sync is running on {store} ({holder}); wait for it to finish, "
                "then run this one again"
            ) from None
        try:
            current = os.stat(lock_path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle.fileno()).st_ino:
            break
        handle.close()  # locked a file the previous holder had just removed: open the new one
    else:
        raise StoreLockedError(f"could not lock {lock_path}: it keeps being replaced")
    try:
        # Who holds it, for the message of a sync refused meanwhile; on a full disk the line
        # may not be written, and the sync reports the disk itself.
        with contextlib.suppress(OSError):
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}")
            handle.flush()
        yield
    finally:
        with contextlib.suppress(OSError):
            lock_path.unlink()
        with contextlib.suppress(OSError):  # unflushed holder line on a full disk
            handle.close()
