"""Deprecated since 0.2.0: ``txkit.plots`` moved to :mod:`txkit.notebook.plots`."""

from txkit._deprecated import warn_moved
from txkit.notebook.plots import *  # noqa: F403
from txkit.notebook.plots import __all__  # noqa: F401

warn_moved("txkit.plots", "txkit.notebook.plots")
