"""Deprecated since 0.2.0: ``txkit.tables`` moved to :mod:`txkit.notebook.tables`."""

from txkit._deprecated import warn_moved
from txkit.notebook.tables import *  # noqa: F403
from txkit.notebook.tables import __all__  # noqa: F401

warn_moved("txkit.tables", "txkit.notebook.tables")
