"""Writing frames to files: Parquet or CSV, atomically (a reader never sees half a file)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl

from txkit.schema import COLUMNS, CSV_JSON_COLUMNS

__all__ = ["atomic_path", "write_frame"]

FORMATS = {".parquet": "Parquet", ".csv": "CSV"}


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it replaces ``target`` at once.

    On any error the temporary file is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def _csv_ready(df: pl.DataFrame) -> pl.DataFrame:
    """CSV holds no lists or structs: write those columns as JSON text (lossless).

    Known columns as :data:`txkit.schema.CSV_JSON_COLUMNS` says, undocumented ones by type.
    """
    nested = [
        name
        for name, dtype in df.schema.items()
        if dtype.is_nested() and (name in CSV_JSON_COLUMNS or name not in COLUMNS)
    ]
    if not nested:
        return df
    return df.with_columns(
        pl.col(name).map_elements(_to_json, return_dtype=pl.String) for name in nested
    )


def _to_json(value: object) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value, default=str)


def write_frame(df: pl.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``df`` to ``path`` as Parquet or CSV (chosen by the extension), atomically.

    Args:
        df: the frame.
        path: a ``.parquet`` or ``.csv`` file name.

    Returns:
        The written path.

    Raises:
        ValueError: another extension (the message lists the accepted ones).
    """
    path = Path(path)
    writers: dict[str, Callable[[pl.DataFrame, Path], None]] = {
        ".parquet": lambda frame, p: frame.write_parquet(p, compression="zstd"),
        ".csv": lambda frame, p: _csv_ready(frame).write_csv(p),
    }
    suffix = path.suffix.lower()
    if suffix not in writers:
        raise ValueError(
            f"cannot write {path.name!r}: the output file must end in "
            f"{' or '.join(FORMATS)} ({', '.join(FORMATS.values())})"
        )
    with atomic_path(path) as tmp:
        writers[suffix](df, tmp)
    return path
