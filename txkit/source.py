"""Deprecated since 0.2.0: ``txkit.source`` moved to :mod:`txkit.fetch.source`.

Its store location rule (``default_store``, ``default_store_for_url``) and ``key_configured``
are in :mod:`txkit.config`.
"""

from txkit import config as _config
from txkit._deprecated import warn_moved
from txkit.fetch.source import *  # noqa: F403
from txkit.fetch.source import __all__ as _moved

default_store = _config.default_store
default_store_for_url = _config.store_for_url
key_configured = _config.key_configured

__all__ = [*_moved, "default_store", "default_store_for_url", "key_configured"]

warn_moved(
    "txkit.source", "txkit.fetch.source (the store location and key_configured: txkit.config)"
)
