"""Deprecated since 0.2.0: the decoder's names were here before :mod:`txkit.decode`.

``from txkit.frame import decode_pages`` still works and warns; import from
:mod:`txkit.decode` (decoding) and :func:`txkit.activity_history` instead.
"""

from txkit._deprecated import warn_moved
from txkit.analysis.activity import activity_history
from txkit.decode import *  # noqa: F403
from txkit.decode import __all__ as _decode

__all__ = [*_decode, "activity_history"]

warn_moved("txkit.frame", "txkit.decode (activity_history: txkit)")
