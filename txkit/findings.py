"""Deprecated since 0.2.0: ``txkit.findings`` moved to :mod:`txkit.notebook.findings`."""

from txkit._deprecated import warn_moved
from txkit.notebook.findings import *  # noqa: F403
from txkit.notebook.findings import __all__  # noqa: F401

warn_moved("txkit.findings", "txkit.notebook.findings")
