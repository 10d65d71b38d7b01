"""The settings files (``.env``, ``txkit.toml``, ``materiality.toml``) read within bounds:
their size, their encoding and, for TOML, their nesting (issue 48). :mod:`txkit.config`
re-exports these names."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from txkit.errors import ConfigError

#: The largest settings file read (``.env``, ``txkit.toml``, ``materiality.toml``), in bytes:
#: a few lines each, so a larger one is not a settings file.
MAX_SETTINGS_FILE_BYTES = 1 << 20
#: The deepest nesting of arrays and tables read from a TOML settings file (the files use two).
MAX_SETTINGS_DEPTH = 16


def read_settings_bytes(path: Path, form: str) -> bytes:
    """The bytes of a settings file, read within :data:`MAX_SETTINGS_FILE_BYTES` (checked
    before reading, and while reading: the file may grow meanwhile).

    Args:
        path: the file.
        form: what the file holds, for the error (``a few lines of NAME=value``).

    Raises:
        ConfigError: the file cannot be read, or is larger than the bound (naming both).
    """
    limit = MAX_SETTINGS_FILE_BYTES
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            raw = handle.read(limit + 1) if size <= limit else b""
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if size > limit or len(raw) > limit:
        raise ConfigError(
            f"{path.absolute()} is {max(size, len(raw)):,} bytes, more than a settings file "
            f"holds (at most {limit:,} bytes of {form}): is it the right file?"
        )
    return raw


def read_settings_toml(path: Path, form: str) -> dict[str, Any]:
    """A TOML settings file (``txkit.toml``, ``materiality.toml``), read within bounds: at
    most :data:`MAX_SETTINGS_FILE_BYTES`, UTF-8, TOML, nested at most
    :data:`MAX_SETTINGS_DEPTH` deep (tomllib recurses once per level: a deeper file ended as
    a ``RecursionError`` blamed on the service).

    Args:
        path: the file.
        form: what it holds, for the errors (``[orders] and [bank] tables of key = "value"``).

    Raises:
        ConfigError: one line naming the file, what is wrong and the accepted form.
    """
    raw = read_settings_bytes(path, form)
    path = path.absolute()
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path} is not UTF-8 text (line {line}): save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}): fix it or delete it") from None
    except RecursionError:
        doc = None
    if doc is None or _depth(doc) > MAX_SETTINGS_DEPTH:
        raise ConfigError(
            f"{path} nests arrays or tables more than {MAX_SETTINGS_DEPTH} deep: it holds {form}"
        )
    return doc


def _depth(doc: object) -> int:
    """How many arrays and tables deep ``doc`` nests below the document, counted without
    recursion (``a = [[1]]``: 2)."""
    deepest, todo = 0, [(doc, 0)]
    while todo:
        item, depth = todo.pop()
        if not isinstance(item, dict | list):
            continue
        children = item.values() if isinstance(item, dict) else item
        deepest = max(deepest, depth)
        if depth > MAX_SETTINGS_DEPTH:  # refused anyway: stop walking
            break
        todo.extend((child, depth + 1) for child in children)
    return deepest
