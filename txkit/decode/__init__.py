"""Decoding export pages (JSON bytes) into flat, typed polars DataFrames, exactly.

Two decoders produce the same frame:

* the **fast path** (``_fast``) reads a page with polars' own JSON reader and the wire schema
  (``_wire``, derived from :mod:`txkit.schema`), then flattens and converts it in a handful of
  vectorised expressions, proving from the page's bytes that nothing was dropped or rounded;
* the **exact path** (``_exact``) parses the page with :mod:`json` (``parse_float=Decimal``)
  and converts value by value. It runs only for a page the fast path cannot prove it read
  losslessly, keeps unknown fields, and otherwise raises a :class:`~txkit.errors.SchemaError`
  naming the record, the field and the value.

Frames of different pages are reconciled by :func:`combine` (``_combine``); the page pipeline
(:class:`PageSink`, :func:`decode_pages`, ``_pipeline``) is shared by the loader and by callers
with saved bodies; :func:`dedupe_latest` (``_assemble``) is the one rule for choosing between
copies of a record (newest ``updatedAt``; on a tie, the copy fetched later), used by the loader
and the store.
"""

from txkit.decode._assemble import assemble, dedupe_latest, finalize
from txkit.decode._combine import combine
from txkit.decode._exact import DecodedPage
from txkit.decode._fast import RawPage, build_frames, read_page
from txkit.decode._pipeline import PageSink, decode_page, decode_pages, read_ahead
from txkit.decode._wire import BATCH_PAGES

__all__ = [
    "BATCH_PAGES",
    "DecodedPage",
    "PageSink",
    "RawPage",
    "assemble",
    "build_frames",
    "combine",
    "decode_page",
    "decode_pages",
    "dedupe_latest",
    "finalize",
    "read_ahead",
    "read_page",
]
