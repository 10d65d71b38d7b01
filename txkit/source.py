"""Deprecated since 0.2.0: ``txkit.source`` moved to :mod:`txkit.fetch.source`."""

from txkit._deprecated import warn_moved
from txkit.fetch.source import *  # noqa: F403
from txkit.fetch.source import __all__  # noqa: F401

warn_moved("txkit.source", "txkit.fetch.source")
