"""The one scrubber for every text that leaves txkit: messages, logs, progress, written files.

:func:`scrub` removes the configured secret key, whatever its shape, in every form it is likely
to travel in: as is, URL-encoded (``quote`` and ``quote_plus``, upper- or lower-case hex),
JSON-escaped, and base64 (standard and URL-safe, at each of the three byte alignments, so the
key is found inside a longer base64 text such as a Basic credential). On top of that it removes
anything shaped like a key or a bearer token (``sk_...``, ``pk_...``, ``Bearer ...``), so a key
that was never configured here (another environment's) is removed too.

:func:`scrub_frame` does the same for the records txkit writes to files (exports, the store,
the report's downloads), so a server that echoes the key inside a record value cannot get it
written out. On data it removes only the known keys' forms, not the key-shaped patterns: a
legitimate value (a reference such as ``pk_2026...``, a note saying ``Bearer``) must survive.

Keys are known from :func:`register_secret` (every :class:`txkit.fetch.Client` registers its
own) and from the environment variables :func:`watch_secret_variable` names (``txkit.config``
names ``TXKIT_SECRET_KEY``), read at the time of the call. Other modules
that write text out (reports, manifests, CSV) call :func:`scrub` or :func:`scrub_bytes` on it.

Example:
    >>> register_secret("k3y!/+=odd")
    >>> scrub("merchant key k3y!/+=odd is not active")
    'merchant key *** is not active'
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import threading
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "REDACTED",
    "ScrubFilter",
    "register_secret",
    "scrub",
    "scrub_bytes",
    "scrub_frame",
    "secret_forms",
    "watch_secret_variable",
]

#: What a removed secret is replaced with.
REDACTED = "***"

#: Environment variables whose values are secrets (see :func:`watch_secret_variable`).
_secret_variables: list[str] = []
#: Shorter secrets are still removed as they are, but not in encoded forms (too many false hits).
_MIN_ENCODED = 6
_TOKEN_RE = re.compile(
    r"(?i)(bearer\s+|basic\s+|authorization[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+"
    r"|\b(?:sk|pk|rk)_[A-Za-z0-9_\-]{8,}"
)

_lock = threading.Lock()
_registered: list[str] = []
_forms_cache: dict[str, tuple[str, ...]] = {}


def register_secret(secret: str | None) -> None:
    """Remember ``secret`` so that every later :func:`scrub` removes it (idempotent).

    A key with whitespace around it (a secrets file's trailing newline) is remembered without
    it too: that is the key a server would echo.

    Args:
        secret: a key; ``None``, ``""`` or whitespace alone is ignored (it would replace every
            space of every message).
    """
    with _lock:
        for form in _usable(secret):
            if form not in _registered:
                _registered.append(form)


def _usable(secret: str | None) -> list[str]:
    if not secret or not secret.strip():
        return []
    return list(dict.fromkeys((secret, secret.strip())))


def _base64_forms(raw: bytes) -> set[str]:
    """The part of ``base64(prefix + raw + suffix)`` that depends only on ``raw``: three
    alignments, standard and URL-safe."""
    forms: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
        # Characters that mix the prefix's bits in (at the start) or the suffix's (at the end).
        start = (shift * 4 + 2) // 3
        end = ((shift + len(raw)) * 4) // 3
        core = encoded[start:end]
        if len(core) >= _MIN_ENCODED:
            forms.add(core)
            forms.add(core.replace("+", "-").replace("/", "_"))
    return forms


def secret_forms(secret: str) -> tuple[str, ...]:
    """Every form of ``secret`` that :func:`scrub` removes, longest first.

    Args:
        secret: the key.

    Returns:
        The key itself, its URL-encoded, JSON-escaped and base64 forms.
    """
    cached = _forms_cache.get(secret)
    if cached is not None:
        return cached
    forms = {secret}
    if len(secret) >= _MIN_ENCODED:
        for encoded in (quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret)):
            forms.add(encoded)
            forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded))
        forms.add(json.dumps(secret)[1:-1])
        forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
        forms |= _base64_forms(secret.encode("utf-8"))
    ordered = tuple(sorted(forms, key=len, reverse=True))
    with _lock:
        _forms_cache[secret] = ordered
    return ordered


def watch_secret_variable(name: str) -> None:
    """Treat the value of the environment variable ``name`` as a secret wherever it is found,
    read at each call (so also a key no client has read). The variable's name is
    :mod:`txkit.config`'s to know; this module imports nothing of txkit's."""
    with _lock:
        if name not in _secret_variables:
            _secret_variables.append(name)


def _secrets(extra: tuple[str | None, ...]) -> list[str]:
    with _lock:
        found = list(_registered)
        names = list(_secret_variables)
    env = [os.environ.get(name) for name in names]
    for secret in (*env, *extra):
        for form in _usable(secret):
            if form not in found:
                found.append(form)
    return found


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` without any known secret (in any of its forms) or key-shaped token.

    Args:
        text: any text about to leave txkit.
        *secrets: more secrets to remove besides the registered ones and ``TXKIT_SECRET_KEY``
            (every watched variable).

    Returns:
        The text with each secret replaced by ``***``.
    """
    if not isinstance(text, str):
        text = str(text)
    for secret in _secrets(secrets):
        for form in secret_forms(secret):
            if form in text:
                text = text.replace(form, REDACTED)
    return _TOKEN_RE.sub(lambda m: (m.group(1) or "") + REDACTED, text)


def scrub_bytes(data: bytes, *secrets: str | None) -> bytes:
    """:func:`scrub` for bytes (decoded as UTF-8; undecodable bytes are kept as they were).

    Args:
        data: bytes about to be written.
        *secrets: more secrets to remove.

    Returns:
        The scrubbed bytes (the same object when nothing was found).
    """
    text = data.decode("utf-8", errors="surrogateescape")
    cleaned = scrub(text, *secrets)
    if cleaned == text:
        return data
    return cleaned.encode("utf-8", errors="surrogateescape")


def _frame_forms(secrets: tuple[str | None, ...]) -> list[str]:
    forms = {form for secret in _secrets(secrets) for form in secret_forms(secret)}
    return sorted(forms, key=lambda form: (-len(form), form))


def _hits(expr: pl.Expr, dtype: pl.DataType, forms: list[str]) -> pl.Expr | None:
    import polars as pl

    if dtype == pl.String:
        return expr.str.contains_any(forms).fill_null(False).cast(pl.UInt32)
    if isinstance(dtype, pl.List):
        inner = _hits(pl.element(), dtype.inner, forms)
        if inner is None:
            return None
        return expr.list.eval(inner).list.sum().fill_null(0).cast(pl.UInt32)
    if isinstance(dtype, pl.Struct):
        parts = [
            hit
            for f in dtype.fields
            if (hit := _hits(expr.struct.field(f.name), f.dtype, forms)) is not None
        ]
        return pl.sum_horizontal(parts).cast(pl.UInt32) if parts else None
    return None


def _named(name: str, forms: list[str]) -> bool:
    return any(form in name for form in forms)


def _clean_name(name: str, forms: list[str]) -> str:
    for form in forms:
        name = name.replace(form, REDACTED)
    return name


def _replaced(expr: pl.Expr, dtype: pl.DataType, forms: list[str]) -> pl.Expr:
    import polars as pl

    if dtype == pl.String:
        return expr.str.replace_many(forms, [REDACTED] * len(forms), leftmost=True)
    if isinstance(dtype, pl.List) and _has_text(dtype.inner, forms):
        return expr.list.eval(_replaced(pl.element(), dtype.inner, forms))
    if isinstance(dtype, pl.Struct) and _has_text(dtype, forms):
        fields = [f for f in dtype.fields if _has_text(f.dtype, forms)]
        out = expr.struct.with_fields(
            [_replaced(pl.field(f.name), f.dtype, forms).alias(f.name) for f in fields]
        ) if fields else expr  # fmt: skip
        if any(_named(f.name, forms) for f in dtype.fields):
            out = out.struct.rename_fields([_clean_name(f.name, forms) for f in dtype.fields])
        return out
    return expr


def _has_text(dtype: pl.DataType, forms: list[str]) -> bool:
    import polars as pl

    if dtype == pl.String:
        return True
    if isinstance(dtype, pl.List):
        return _has_text(dtype.inner, forms)
    if isinstance(dtype, pl.Struct):
        return any(_named(f.name, forms) or _has_text(f.dtype, forms) for f in dtype.fields)
    return False


def _names_hit(dtype: pl.DataType, forms: list[str]) -> int:
    import polars as pl

    if isinstance(dtype, pl.List):
        return _names_hit(dtype.inner, forms)
    if isinstance(dtype, pl.Struct):
        return sum(_named(f.name, forms) + _names_hit(f.dtype, forms) for f in dtype.fields)
    return 0


_frame_log = logging.getLogger("txkit.scrub")


def scrub_frame(
    df: pl.DataFrame, *secrets: str | None, where: str = "a file"
) -> tuple[pl.DataFrame, int]:
    """``df`` without any known secret (in any of its forms) in any text value or name.

    Every ``String`` value is searched, including those nested in ``List`` and ``Struct``
    columns at any depth, and so are column and struct field names; each form found is
    replaced by ``***``. Only the configured keys' forms are removed (:func:`secret_forms`),
    not the key-shaped patterns :func:`scrub` also removes from messages: those could match
    legitimate values. Other types (numbers, dates, categoricals) cannot carry a server's echo
    in txkit's frames and are left alone.

    The search is one vectorised pass (Aho-Corasick over all forms at once); the frame is
    rewritten only in the columns where something was found. When anything was replaced, one
    warning line says how many values and where (the values themselves are never logged).

    Args:
        df: the records about to be written.
        *secrets: more secrets to remove besides the registered ones and ``TXKIT_SECRET_KEY``
            (every watched variable).
        where: what is being written, for the warning (``"the export x.csv"``).

    Returns:
        The scrubbed frame (``df`` itself when nothing was found) and how many values (text
        values plus names) were replaced.

    Example:
        >>> register_secret("k3y!/+=odd")
        >>> scrub_frame(pl.DataFrame({"note": ["echo k3y!/+=odd", "ok"]}))[0]["note"].to_list()
        ['echo ***', 'ok']
    """
    import polars as pl

    forms = _frame_forms(secrets)
    if not forms or df.width == 0:
        return df, 0
    schema = df.schema
    checks = {
        name: hit
        for name, dtype in schema.items()
        if (hit := _hits(pl.col(name), dtype, forms)) is not None
    }
    counts: dict[str, int] = {}
    if checks and df.height:
        row = df.select(hit.sum().alias(name) for name, hit in checks.items()).row(0, named=True)
        counts = {name: int(n) for name, n in row.items() if n}
    names = {name: _named(name, forms) + _names_hit(schema[name], forms) for name in schema}
    total = sum(counts.values()) + sum(names.values())
    if not total:
        return df, 0
    rewrite = [
        _replaced(pl.col(name), schema[name], forms).alias(name)
        for name in schema
        if counts.get(name) or names[name]
    ]
    out = df.with_columns(rewrite).rename(
        {name: _clean_name(name, forms) for name in schema if _named(name, forms)}
    )
    _frame_log.warning(
        "the secret key was found in %d value(s) of the records and replaced by %s before "
        "writing %s (the server echoes the key in its data)",
        total,
        REDACTED,
        where,
    )
    return out, total


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs each record's final message (and its exception text).

    txkit installs it on the ``txkit`` logger; the CLI also puts it on its handler, so records of
    other libraries (httpx) pass through it too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the record, scrub its parts
            message = f"{record.msg} {record.args}"
        record.msg = scrub(message)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            # Format the traceback now, scrubbed, so handlers never format the raw exception.
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


_FILTER = ScrubFilter()


def install_log_filter(logger: logging.Logger | logging.Handler) -> None:
    """Put the scrubbing filter on ``logger`` (or a handler), once."""
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


install_log_filter(logging.getLogger("txkit"))
