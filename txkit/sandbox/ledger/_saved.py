"""A generated ledger saved to a file and read back, so that each process that starts the
embedded sandbox (every notebook's kernel, every report) need not generate it again.

The file is a pickle compressed with zlib, read by an unpickler that builds only the ledger's
own classes: a file in the data folder can be swapped by anyone who can write there, and a
plain pickle would run what it names. Whatever cannot be read (absent, cut short, written by
another version, naming anything else) is reported as absent, and the caller generates.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import pickle
import tempfile
import zlib
from pathlib import Path

import polars as pl

from txkit.sandbox._render import Context
from txkit.sandbox.ledger._bank import BankAccount, _Line
from txkit.sandbox.ledger._records import Ledger

__all__ = ["load_ledger", "save_ledger"]

_MAGIC = b"txkit-ledger-1\n"
# What a ledger's pickle names, and nothing else (a class is built from its state only).
_ALLOWED = {
    (cls.__module__, cls.__qualname__): cls
    for cls in (Ledger, Context, BankAccount, _Line, pl.DataFrame, datetime.date)
}


class _LedgerUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a ledger") from None


def save_ledger(ledger: Ledger, path: Path, *, keep: int = 4) -> None:
    """Write ``ledger`` to ``path`` whole or not at all (written aside, then renamed), and
    remove all but the ``keep`` most recently used ``*.ledger`` files beside it (each
    generator version has its own); a folder that cannot be written is left as it is (the
    ledger is generated next time)."""
    # zlib level 1: most of level 6's saving at a fraction of its time to write, and read
    # back far faster than a generation (docs/benchmarks.md, Sandbox).
    data = _MAGIC + zlib.compress(pickle.dumps(ledger, protocol=5), 1)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(staging, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)
        _prune(path.parent, keep)


def _prune(folder: Path, keep: int) -> None:
    def used(file: Path) -> float:
        try:
            return file.stat().st_mtime
        except FileNotFoundError:  # removed by another process meanwhile
            return 0.0

    for old in sorted(folder.glob("*.ledger"), key=used, reverse=True)[keep:]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()


def load_ledger(path: Path) -> Ledger | None:
    """The ledger :func:`save_ledger` wrote to ``path``, or None when there is none that can
    be read as one."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(_MAGIC):
        return None
    try:
        ledger = _LedgerUnpickler(io.BytesIO(zlib.decompress(data[len(_MAGIC) :]))).load()
    except Exception:  # any damage, of any kind, means the same: generate it again
        return None
    if not isinstance(ledger, Ledger):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: kept by the next save's pruning
    return ledger
