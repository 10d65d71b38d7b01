"""Deprecated since 0.2.0: ``txkit.load`` moved to :mod:`txkit.fetch.load`."""

from txkit._deprecated import warn_moved
from txkit.fetch.load import *  # noqa: F403
from txkit.fetch.load import __all__  # noqa: F401

warn_moved("txkit.load", "txkit.fetch (or txkit)")
