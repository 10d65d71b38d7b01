"""The txkit sandbox: a local HTTP service speaking the transaction export interface.

It serves a deterministic synthetic ledger (:func:`generate_ledger`) with planted anomalies
and optional injected faults (:class:`Faults`), for tests, notebooks and benchmarks::

    from txkit.sandbox import Sandbox

    with Sandbox(records=20_000, faults="rate_limit=0.1") as sb:
        ...  # sb.base_url, sb.secret_key, sb.ledger

From a shell: ``txkit sandbox`` (see ``txkit/cli/_sandbox.py``).
"""

from txkit.sandbox.faults import Faults
from txkit.sandbox.ledger import (
    Ledger,
    check_balance_model,
    check_fees,
    generate_ledger,
    load_ledger,
    save_ledger,
)
from txkit.sandbox.server import DEFAULT_LIMIT, MAX_LIMIT, Sandbox

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "Faults",
    "Ledger",
    "Sandbox",
    "check_balance_model",
    "check_fees",
    "generate_ledger",
    "load_ledger",
    "save_ledger",
]
