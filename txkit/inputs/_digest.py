"""Digests that say whether something kept can be used again: a file's bytes, and txkit's own
code with the installed libraries (what the report's execution cache and the kept orders
reads are keyed on)."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from pathlib import Path

import xxhash

import txkit

__all__ = ["code_digest", "file_digest"]


def file_digest(path: Path) -> str:
    """XXH3-128 of a file's bytes.

    Raises:
        OSError: the file cannot be read.
    """
    hasher = xxhash.xxh3_128()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


@functools.cache
def code_digest() -> str:
    """txkit's own code and every installed distribution's version, as one digest: an edited
    txkit (an editable install keeps its version) or an upgraded library reads again."""
    hasher = xxhash.xxh3_128(f"{txkit.__version__} {sys.version}".encode())
    package = Path(txkit.__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        hasher.update(path.relative_to(package).as_posix().encode())
        hasher.update(path.read_bytes())
    hasher.update("\n".join(_installed()).encode())
    return hasher.hexdigest()


def _installed() -> list[str]:
    """Every installed distribution's name and version, as the names of their metadata
    folders on the import path (``polars-2.1.0.dist-info``): reading each one's metadata, as
    :mod:`importlib.metadata` does, took longer than the rest of the digest."""
    found = set()
    for entry in filter(None, sys.path):  # not the working folder ("")
        with contextlib.suppress(OSError), os.scandir(entry) as names:
            found.update(n.name for n in names if n.name.endswith((".dist-info", ".egg-info")))
    return sorted(found)
