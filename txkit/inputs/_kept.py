"""What txkit read from a merchant's files, kept by content: read once, taken again.

A report reads the merchant's files several times, each time in its own process: the orders
file when the report checks it before the sync, in notebook 02 (the month's orders) and in
notebook 07 (the register recomputed from every order); the bank statements when the report
checks them, in notebook 06 (the settlements) and for the close summary. Each read checks every
line (a million orders take seconds, a month of a busy account's camt.053 most of a second:
docs/benchmarks.md, Report). The first read is kept in the project's data folder
(``data/cache/<kind>/``) under a digest of the files' resolved paths and bytes, the column
mapping and txkit's code and libraries (:func:`txkit.inputs.code_digest`); a read of the same
files with the same mapping takes the kept frames and record, exact (Parquet keeps the decimals
and dates as they are). Other files, bytes, mapping or txkit read afresh.

The files are digested before and after they are read: a file written meanwhile is read, never
kept. Whatever cannot be read back whole (cut short, another layout, another schema) is read
afresh; a folder that cannot be written keeps nothing; a file that cannot be read is never kept
(its error is raised by each read), nor one a password opened (its record says ``private``):
what it holds stays behind its password.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import xxhash

from txkit import config
from txkit.inputs._digest import code_digest, file_digest

__all__ = ["Kept", "kept_folder", "kept_read"]

#: Reads kept per kind: the most recently used (a project reads one month's files at a time).
_KEEP = 4
_LAYOUT = "txkit-kept-1"

#: A read as kept: its frames by name, and what else the read said (JSON values).
Kept = tuple[dict[str, pl.DataFrame], dict[str, Any]]


def kept_folder(kind: str) -> Path:
    """``data/cache/<kind>/`` in the project's data folder (``orders``, ``statements``)."""
    return config.data_dir() / "cache" / kind


def _key(kind: str, paths: Sequence[Path], mapping: Mapping[str, str]) -> str:
    """The files by their resolved paths (a report names a file relative to the project, its
    kernels absolute) and bytes; the callers checked the files (no link loop) before."""
    what = json.dumps([_LAYOUT, kind, code_digest(), sorted(mapping.items())])
    files = "\n".join(f"{path.resolve()}\n{file_digest(path)}" for path in paths)
    return xxhash.xxh3_128_hexdigest(f"{what}\n{files}".encode())


def kept_read(
    kind: str, paths: Sequence[Path], mapping: Mapping[str, str], read: Callable[[], Kept]
) -> Kept:
    """``read()``'s frames and record for ``paths`` read with ``mapping``: kept from an earlier
    read of the same files, or read now and kept."""
    try:
        key = _key(kind, paths, mapping)
    except OSError:
        return read()  # the read says what is wrong with the file
    folder = kept_folder(kind)
    found = _load(folder, key)
    if found is not None:
        return found
    frames, meta = read()
    if meta.get("private"):
        return frames, meta
    with contextlib.suppress(OSError):
        if _key(kind, paths, mapping) == key:  # not written meanwhile
            _save(folder, key, frames, meta)
    return frames, meta


def _load(folder: Path, key: str) -> Kept | None:
    meta_path = folder / f"{key}.json"
    try:
        kept = json.loads(meta_path.read_text(encoding="utf-8"))
        if (
            not isinstance(kept, dict)
            or kept.get("layout") != _LAYOUT
            or not isinstance(kept.get("read"), dict)
            or not isinstance(kept.get("frames"), dict)
        ):
            return None
        frames = {}
        for name, shape in kept["frames"].items():
            frame = pl.read_parquet(folder / f"{key}.{name}.parquet")
            if shape != {"rows": frame.height, "schema": str(frame.schema)}:
                return None
            frames[name] = frame
        os.utime(meta_path)  # most recently used, kept longest
    except (OSError, ValueError, TypeError, pl.exceptions.PolarsError):
        return None
    return frames, kept["read"]


def _save(folder: Path, key: str, frames: dict[str, pl.DataFrame], meta: dict[str, Any]) -> None:
    """The frames, then their record (each written aside and renamed; the record last, so a
    record never stands without its frames); all but the most recent reads removed."""
    folder.mkdir(parents=True, exist_ok=True)
    shapes = {n: {"rows": f.height, "schema": str(f.schema)} for n, f in frames.items()}
    record = {"layout": _LAYOUT, "frames": shapes, "read": meta}
    for name, frame in frames.items():
        # LZ4 without statistics: a kept frame is always read whole, and zstd (polars'
        # default) took longer to write and to read back (docs/benchmarks.md, Report).
        _write(
            folder / f"{key}.{name}.parquet",
            lambda target, frame=frame: frame.write_parquet(
                target, compression="lz4", statistics=False
            ),
        )
    _write(
        folder / f"{key}.json",
        lambda target: Path(target).write_text(json.dumps(record), encoding="utf-8"),
    )
    records = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in records[_KEEP:]:
        old.unlink(missing_ok=True)
        for part in folder.glob(f"{old.stem}.*.parquet"):
            part.unlink(missing_ok=True)


def _write(path: Path, write: Callable[[str], object]) -> None:
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(staging)
        os.replace(staging, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
