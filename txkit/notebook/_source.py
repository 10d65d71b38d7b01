"""The one sentence every notebook's output begins with: where its records come from.

Sandbox or service, the store, the month: the same words in all eight notebooks, in
JupyterLab and in the report, so that nobody reads synthetic figures for real ones (the
sandbox was named only inside a long "as run" line, and 07 never named it).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from txkit import config
from txkit.store import read_state, store_name

__all__ = ["source_sentence"]

_SANDBOX = (
    f"the embedded sandbox (synthetic data: no {config.SECRET_KEY_VAR} is configured; set "
    f"{config.BASE_URL_VAR} and {config.SECRET_KEY_VAR} for the real service)"
)


def _service(url: str) -> str:
    if url.startswith("sandbox:"):
        return _SANDBOX
    return f"the service at {urlsplit(url).hostname or url}"


def source_sentence(
    month: str,
    *,
    source: str = "auto",
    store: str | os.PathLike[str] | None = None,
    version: int | None = None,
    store_label: str | None = None,
    plain: bool = False,
) -> str:
    """``**Source:** ...`` as Markdown: the sandbox or the service (its host, never the key),
    the store that holds (or receives) its records, and the month.

    A notebook reading a store (``source="store"``, as in a report) names the source the
    store was synced from, as the store records it. ``store_label`` names a store the page
    made for itself (07's temporary register) instead of its folder. ``plain``: the same
    sentence without Markdown, as ``txkit report`` prints it.
    """
    text = _sentence(month, source, store, version, store_label)
    return text.replace("**", "") if plain else text


def _sentence(
    month: str,
    source: str,
    store: str | os.PathLike[str] | None,
    version: int | None,
    store_label: str | None,
) -> str:
    if source == "store":
        where = store if store is not None else config.default_store()
        state = read_state(where, version=version)
        name = store_label or f"{store_name(where)}, table version {state.version}"
        return f"**Source:** {_service(state.source.url)} · **store:** {name} · **month:** {month}"
    if source == "sandbox" or (source == "auto" and not config.key_configured()):
        origin, where = _SANDBOX, config.store_for_url("sandbox:")
    else:
        url = config.read_setting(config.BASE_URL_VAR)[0] or ""
        origin, where = _service(url), config.store_for_url(url)
    name = store_label or store_name(store if store is not None else where)
    return f"**Source:** {origin} · **store:** {name} · **month:** {month}"
