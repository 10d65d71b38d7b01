"""Writing frames to files: Parquet or CSV, atomically (a reader never sees half a file).

CSV files are safe to open in a spreadsheet: every text cell that a spreadsheet would run as a
formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is neutralised
with a leading ``'`` (:func:`csv_safe`, as OWASP recommends). Parquet keeps the values as they
are, except that either format never holds the secret key: a value a server echoed it into is
written with ``***`` in its place, with a warning (:func:`txkit._scrub.scrub_frame`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl

from txkit._scrub import scrub_frame
from txkit.schema import COLUMNS, CSV_JSON_COLUMNS

__all__ = [
    "FORMULA_START",
    "atomic_path",
    "check_writable",
    "csv_safe",
    "write_frame",
]

FORMATS = {".parquet": "Parquet", ".csv": "CSV"}


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it to read it, which
    another thread writing a file at that moment would see)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(target: Path) -> int:
    """The mode a plain ``open(target, "w")`` would leave: the existing file's, else 0666 less
    the umask. ``mkstemp`` creates 0600, which made the report's downloads unreadable where its
    pages (0644) were served or shared."""
    with contextlib.suppress(OSError):
        return target.stat().st_mode & 0o7777
    return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it replaces ``target`` at once,
    with the mode a plain write would give it (:func:`file_mode`).

    On any error the temporary file is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        tmp_path.chmod(file_mode(target))
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


#: What a spreadsheet may read as the start of a formula (OWASP "CSV injection").
FORMULA_START = r"^[=+\-@\t\r]"


def csv_safe(df: pl.DataFrame) -> pl.DataFrame:
    """Neutralise text cells a spreadsheet would run as formulas, for CSV and Excel files.

    Every text (or categorical) cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a
    carriage return gets a leading ``'``, so ``=HYPERLINK(...)`` is shown as text, not run.
    Numbers, dates and nulls are unchanged; so is the frame passed in.

    Args:
        df: the frame about to be written as CSV or Excel (lists and structs already as text).

    Returns:
        The frame with those cells prefixed.

    Example:
        >>> csv_safe(pl.DataFrame({"a": ["=1+1", "ok", "-2"]}))["a"].to_list()
        ["'=1+1", 'ok', "'-2"]
    """
    text = [
        name
        for name, dtype in df.schema.items()
        if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))
    ]
    if not text:
        return df
    return df.with_columns(
        pl.when(pl.col(name).cast(pl.String).str.contains(FORMULA_START))
        .then(pl.lit("'") + pl.col(name).cast(pl.String))
        .otherwise(pl.col(name).cast(pl.String))
        .alias(name)
        for name in text
    )


def _to_json(value: object) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value, default=str)


def write_frame(df: pl.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``df`` to ``path`` as Parquet or CSV (chosen by the extension), atomically.

    CSV cells that a spreadsheet would run as formulas are neutralised (:func:`csv_safe`);
    Parquet is written as it is. In both, the secret key (in any form) is replaced by ``***``
    wherever a server echoed it into a value, with a one-line warning.

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
        ".csv": lambda frame, p: csv_safe(_csv_ready(frame)).write_csv(p),
    }
    suffix = path.suffix.lower()
    if suffix not in writers:
        raise ValueError(
            f"cannot write {path.name!r}: the output file must end in "
            f"{' or '.join(FORMATS)} ({', '.join(FORMATS.values())})"
        )
    df, _ = scrub_frame(df, where=f"the export {path.name}")
    with atomic_path(path) as tmp:
        writers[suffix](df, tmp)
    return path


def check_writable(path: Path, *, is_file: bool, flag: str) -> None:
    """Raise ``OSError`` (with the file name) unless ``path`` can be written: a file whose
    folder accepts a new file with some data in it, or a folder that does; ``ValueError`` (a bad
    argument) for a folder given as a file or the other way round.

    Args:
        path: the output file or folder (it or its parents may not exist yet).
        is_file: ``path`` is a file (else a folder).
        flag: the option that named it, for the message.
    """
    if is_file and path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a folder: give a file name")
    if not is_file and path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a file: give a folder")
    folder = path.parent if is_file else path
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{existing} is not a folder", str(path))
    try:
        fd, probe = tempfile.mkstemp(prefix=".txkit-probe-", dir=existing)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        block = memoryview(b"\0" * 65536)  # a full disk fails here, before the export starts
        while block:
            block = block[os.write(fd, block) :]
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(fd)
        os.unlink(probe)
