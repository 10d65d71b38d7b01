"""The orders file as :func:`txkit.inputs.read_orders_file` read it, kept by content.

A report reads the merchant's orders file three times, each in its own process: the report
checks it before the sync, notebook 02 matches the month's orders, notebook 07 recomputes the
register from every order. Each read splits and checks every line (a million orders take
seconds: docs/benchmarks.md, Report). The first read is kept in the project's data folder
(``data/cache/orders/``) under a digest of the file's bytes, the column mapping and txkit's
code and libraries (:func:`txkit.inputs.code_digest`); a read of the same bytes with the same
mapping takes the kept frame and notes, exact (Parquet keeps the decimals and dates as they
are). Another file, another mapping or another txkit reads afresh.

The file is digested before and after it is read: a file written meanwhile is read, never
kept. Whatever cannot be read back whole (cut short, another layout, another schema) is read
afresh; a folder that cannot be written keeps nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import xxhash

from txkit import config
from txkit.inputs._digest import code_digest, file_digest

__all__ = ["Kept", "kept_read", "orders_folder"]

#: Reads kept: the most recently used (a project reads one orders file a month).
_KEEP = 4
_LAYOUT = "txkit-orders-1"

#: A read as kept: the frame and what else the read said (JSON values).
Kept = tuple[pl.DataFrame, dict[str, Any]]


def orders_folder() -> Path:
    """``data/cache/orders/`` in the project's data folder."""
    return config.data_dir() / "cache" / "orders"


def _key(path: Path, mapping: dict[str, str]) -> str:
    what = json.dumps([_LAYOUT, code_digest(), sorted(mapping.items())])
    return xxhash.xxh3_128_hexdigest(f"{what}\n{file_digest(path)}".encode())


def kept_read(path: Path, mapping: dict[str, str], read: Callable[[], Kept]) -> Kept:
    """``read()``'s frame and record for ``path`` read with ``mapping``: kept from an earlier
    read of the same bytes, or read now and kept."""
    try:
        key = _key(path, mapping)
    except OSError:
        return read()  # the read says what is wrong with the file
    folder = orders_folder()
    found = _load(folder, key)
    if found is not None:
        return found
    frame, meta = read()
    with contextlib.suppress(OSError):
        if _key(path, mapping) == key:  # not written meanwhile
            _save(folder, key, frame, meta)
    return frame, meta


def _load(folder: Path, key: str) -> Kept | None:
    meta_path, frame_path = folder / f"{key}.json", folder / f"{key}.parquet"
    try:
        kept = json.loads(meta_path.read_text(encoding="utf-8"))
        if not isinstance(kept, dict) or not isinstance(kept.get("read"), dict):
            return None
        frame = pl.read_parquet(frame_path)
        if (
            kept.get("layout") != _LAYOUT
            or kept.get("rows") != frame.height
            or kept.get("schema") != str(frame.schema)
        ):
            return None
        os.utime(meta_path)  # most recently used, kept longest
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return None
    return frame, kept["read"]


def _save(folder: Path, key: str, frame: pl.DataFrame, meta: dict[str, Any]) -> None:
    """The frame, then its record (each written aside and renamed; the record last, so a
    record never stands without its frame); all but the most recent reads removed."""
    folder.mkdir(parents=True, exist_ok=True)
    record = {"layout": _LAYOUT, "rows": frame.height, "schema": str(frame.schema), "read": meta}
    # LZ4 without statistics: the frame is always read whole, and zstd (polars' default) took
    # longer to write and to read back (docs/benchmarks.md, Report).
    _write(
        folder / f"{key}.parquet",
        lambda target: frame.write_parquet(target, compression="lz4", statistics=False),
    )
    _write(
        folder / f"{key}.json",
        lambda target: Path(target).write_text(json.dumps(record), encoding="utf-8"),
    )
    records = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in records[_KEEP:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".parquet").unlink(missing_ok=True)


def _write(path: Path, write: Callable[[str], object]) -> None:
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(staging)
        os.replace(staging, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
