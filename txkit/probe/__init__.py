"""``txkit probe``: measure what the interface document leaves out, from the service itself.

The probe sends a bounded number of read-only ``GET /transaction`` requests and finds the
default and maximum page size, the maximum ``skip``, the sort order and whether ties keep their
order, what ``total`` counts, which timestamp the date filters apply to, whether each bound is
inclusive and where the service's days start, the envelope's extra keys and the undocumented
record fields. Each finding says how sure it is. The result, a :class:`ServiceProfile`, is
written as JSON and read back by the loader with :func:`load_profile` (same base URL only).

Modules: :mod:`~txkit.probe.run` (the steps), :mod:`~txkit.probe.dates` (date semantics),
:mod:`~txkit.probe.sample` (order, ties, totals, fields),
:mod:`~txkit.probe.session` (budgeted HTTP), :mod:`~txkit.fetch.profile` (the profile, JSON).

Example:
    >>> from txkit.probe import probe_service, load_profile
    >>> profile = probe_service(max_requests=60)   # TXKIT_BASE_URL / TXKIT_SECRET_KEY
    >>> profile.save()                              # data/service-profile.json
    >>> load_profile(profile.base_url).page_size()
    1000
"""

from txkit.fetch.profile import (
    DEFAULT_PATH,
    FINDINGS,
    Finding,
    ProfileWarning,
    ServiceProfile,
    default_path,
    load_profile,
)
from txkit.probe.run import DEFAULT_MAX_REQUESTS, probe_service

__all__ = [
    "DEFAULT_MAX_REQUESTS",
    "DEFAULT_PATH",
    "FINDINGS",
    "Finding",
    "ProfileWarning",
    "ServiceProfile",
    "default_path",
    "load_profile",
    "probe_service",
]
