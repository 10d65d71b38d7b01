"""Ask the kernel to read this environment's large shared libraries ahead, in the background.

``make test`` runs it before anything else: every pytest worker maps polars, delta-rs,
DuckDB, Daft and Arrow (about 830 MB) as it starts, and on a cold page cache their page
faults, a few kilobytes at a time, kept the workers waiting on the disk (docs/benchmarks.md).
Read ahead whole, the files arrive while ``ruff`` and the workers' own start run. Nothing is
read where the system has no ``posix_fadvise`` (macOS).
"""

from __future__ import annotations

import contextlib
import os
import sysconfig
from pathlib import Path

#: Smaller libraries are cheaper to fault in than to list.
SMALLEST = 1 << 20


def read_ahead(folders: set[str]) -> int:
    """Ask for every shared library of at least :data:`SMALLEST` bytes under ``folders`` to be
    read ahead; returns how many bytes were asked for."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    asked = 0
    for folder in folders:
        for path in Path(folder).rglob("*.so*"):
            with contextlib.suppress(OSError):
                size = path.stat().st_size
                if size < SMALLEST:
                    continue
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                finally:
                    os.close(fd)
                asked += size
    return asked


if __name__ == "__main__":
    read_ahead({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})
