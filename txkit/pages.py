"""Deprecated since 0.2.0: ``txkit.pages`` moved to :mod:`txkit.fetch.pages`."""

from txkit._deprecated import warn_moved
from txkit.fetch.pages import *  # noqa: F403
from txkit.fetch.pages import __all__  # noqa: F401

warn_moved("txkit.pages", "txkit.fetch")
