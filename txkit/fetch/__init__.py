"""Fetching the export: one verified, complete set of records per query.

The layers of one fetch, each in its own module:

* :mod:`~txkit.fetch.client`: HTTP, authentication, retries and error mapping
  (:class:`Client`), bounded body reading (``_body``) and one shared, adaptive rate limit
  (:mod:`~txkit.fetch.ratelimit`);
* :mod:`~txkit.fetch.pages`: one server query read in offset passes verified against its
  ``total`` (:class:`ExportStats` says what it took);
* ``_windows`` (a package, one module per proof: span, edges, split, confirm): one set of
  filters over UTC days (date windows, edge proofs, splits, the confirming re-read);
* ``_ties``: tie groups (equal ``createdAt``) cut by page edges, found and sized;
* :mod:`~txkit.fetch.load`: :func:`load_transactions`, the filters, date margins and dedupe;
* :mod:`~txkit.fetch.profile`: the service's measured behaviour (``txkit probe`` writes it,
  the loader reads it);
* :mod:`~txkit.fetch.progress`: the progress bar;
* :mod:`~txkit.fetch.source`: the configured service, or the embedded sandbox when no key is
  configured (not imported here: it starts :mod:`txkit.sandbox`, which uses this package).
"""

from txkit.fetch.client import Client, RetryPolicy, describe_retries
from txkit.fetch.load import ExportOptions, load_transactions, validate_filters
from txkit.fetch.pages import ExportStats
from txkit.fetch.profile import ServiceProfile, load_profile

__all__ = [
    "Client",
    "ExportOptions",
    "ExportStats",
    "RetryPolicy",
    "ServiceProfile",
    "describe_retries",
    "load_profile",
    "load_transactions",
    "validate_filters",
]
