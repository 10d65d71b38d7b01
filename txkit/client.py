"""Deprecated since 0.2.0: ``txkit.client`` moved to :mod:`txkit.fetch.client`."""

from txkit._deprecated import warn_moved
from txkit.fetch.client import *  # noqa: F403
from txkit.fetch.client import __all__  # noqa: F401

warn_moved("txkit.client", "txkit.fetch (or txkit)")
