"""Only regular files, within a size limit, checked before a byte is read."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from txkit.config import MAX_INPUT_VAR, max_input_bytes, not_found
from txkit.errors import DataFileError

__all__ = ["check_input", "max_unzipped_bytes", "read_input"]

#: A workbook is a ZIP of XML: its parts may decompress to this many times the input limit.
UNZIPPED_FACTOR = 8


def max_unzipped_bytes() -> int:
    """The most a workbook's parts may decompress to (``TXKIT_MAX_INPUT_MB`` x 8)."""
    return max_input_bytes() * UNZIPPED_FACTOR


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:,.1f} MB"


def check_input(path: str | Path, *, what: str = "file") -> os.stat_result:
    """The file's status, once it is a regular file within ``TXKIT_MAX_INPUT_MB``.

    Raises:
        DataFileError: no such file, a symbolic link loop or a dangling link, a folder, a
            device, a FIFO or a socket, not readable, or over the size limit.
    """
    path = Path(path)
    try:
        status = path.stat()  # follows links: a loop raises ELOOP here
    except OSError as exc:
        raise _unreadable(path, exc, what) from None
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise DataFileError(path, "is a folder", "give the file itself", what=what)
    kinds = (
        (stat.S_ISFIFO, "a named pipe (FIFO), not a file (reading it could wait forever)"),
        (stat.S_ISCHR, "a device, not a file (it may never end)"),
        (stat.S_ISBLK, "a device, not a file"),
        (stat.S_ISSOCK, "a socket, not a file"),
    )
    for test, kind in kinds:
        if test(mode):
            raise DataFileError(path, f"is {kind}", "give a regular file", what=what)
    if not stat.S_ISREG(mode):
        raise DataFileError(path, "is not a regular file", "give a regular file", what=what)
    limit = max_input_bytes()
    if status.st_size > limit:
        raise DataFileError(
            path,
            f"is {_mb(status.st_size)}, over the {_mb(limit)} read ({MAX_INPUT_VAR})",
            f"check that it is the right file, or raise {MAX_INPUT_VAR}",
            what=what,
        )
    return status


def _unreadable(path: Path, exc: OSError, what: str) -> DataFileError:
    if exc.errno == errno.ELOOP:
        return DataFileError(
            path,
            "is a symbolic link loop (its links lead back to themselves, never to a file)",
            "give the file itself, or fix the link",
            what=what,
        )
    if exc.errno == errno.ENOENT:
        if path.is_symlink():
            target = os.readlink(path)
            return DataFileError(
                path,
                f"is a symbolic link to {target}, which does not exist",
                "give the file itself, or fix the link",
                what=what,
            )
        return DataFileError(
            path,
            f"no such file ({not_found(path)})",
            "check the path (a relative path is read from the project folder)",
            what=what,
        )
    if exc.errno == errno.ENOTDIR:
        return DataFileError(
            path, "a part of the path is not a folder", "check the path", what=what
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return DataFileError(
            path, "cannot be read: permission denied", "fix its permissions", what=what
        )
    return DataFileError(
        path, f"cannot be read ({exc.strerror or exc})", "check the path", what=what
    )


def read_input(path: str | Path, *, what: str = "file") -> bytes:
    """The bytes of a regular file within ``TXKIT_MAX_INPUT_MB`` (:func:`check_input`); a
    file that grows past the limit while it is read is refused too."""
    path = Path(path)
    check_input(path, what=what)
    limit = max_input_bytes()
    try:
        with path.open("rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        raise _unreadable(path, exc, what) from None
    if len(data) > limit:
        raise DataFileError(
            path,
            f"grew past the {_mb(limit)} read ({MAX_INPUT_VAR}) while it was read",
            f"check that it is the right file, or raise {MAX_INPUT_VAR}",
            what=what,
        )
    return data
