"""The one scrubber for every text that leaves txkit: messages, logs, progress, written files.

:func:`scrub` removes the configured secret key, whatever its shape, in every form it is likely
to travel in: as is, URL-encoded (``quote`` and ``quote_plus``, upper- or lower-case hex),
JSON-escaped, and base64 (standard and URL-safe, at each of the three byte alignments, so the
key is found inside a longer base64 text such as a Basic credential). On top of that it removes
anything shaped like a key or a bearer token (``sk_...``, ``pk_...``, ``Bearer ...``), so a key
that was never configured here (another environment's) is removed too.

Keys are known from :func:`register_secret` (every :class:`txkit.client.Client` registers its
own) and from ``TXKIT_SECRET_KEY`` in the environment at the time of the call. Other modules
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
from urllib.parse import quote, quote_plus

__all__ = ["REDACTED", "ScrubFilter", "register_secret", "scrub", "scrub_bytes", "secret_forms"]

#: What a removed secret is replaced with.
REDACTED = "***"

_SECRET_VAR = "TXKIT_SECRET_KEY"
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

    Args:
        secret: a key; ``None`` or ``""`` is ignored.
    """
    if not secret:
        return
    with _lock:
        if secret not in _registered:
            _registered.append(secret)


def _base64_forms(raw: bytes) -> set[str]:
    """The part of ``base64(prefix + raw + suffix)`` that depends only on ``raw``, for each of
    the three alignments of ``raw`` in the encoded bytes, standard and URL-safe."""
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


def _secrets(extra: tuple[str | None, ...]) -> list[str]:
    with _lock:
        found = list(_registered)
    env = os.environ.get(_SECRET_VAR)
    for secret in (env, *extra):
        if secret and secret not in found:
            found.append(secret)
    return found


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` without any known secret (in any of its forms) or key-shaped token.

    Args:
        text: any text about to leave txkit.
        *secrets: more secrets to remove besides the registered ones and ``TXKIT_SECRET_KEY``.

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
