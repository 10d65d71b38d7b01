"""Compatibility façade: the decoder's public names where they were before :mod:`txkit.decode`.

``from txkit.frame import decode_pages`` keeps working; new code imports from
:mod:`txkit.decode` (decoding) and :mod:`txkit.analysis.activity` (:func:`activity_history`).
"""

from txkit.analysis.activity import activity_history
from txkit.decode import (
    BATCH_PAGES,
    DecodedPage,
    RawPage,
    assemble,
    build_frames,
    combine,
    decode_page,
    decode_pages,
    dedupe_latest,
    finalize,
    read_page,
)

__all__ = [
    "BATCH_PAGES",
    "DecodedPage",
    "RawPage",
    "activity_history",
    "assemble",
    "build_frames",
    "combine",
    "decode_page",
    "decode_pages",
    "dedupe_latest",
    "finalize",
    "read_page",
]
