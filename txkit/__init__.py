"""txkit: exact, complete transaction exports into polars DataFrames, with analyst notebooks.

Example:
    >>> import txkit
    >>> with txkit.Client() as client:  # TXKIT_BASE_URL / TXKIT_SECRET_KEY
    ...     df = txkit.load_transactions(client, status="successful", start="2026-10-01",
    ...                                  end="2026-10-31")
"""

import importlib
from typing import TYPE_CHECKING, Any

from txkit.errors import (
    ApiError,
    AuthError,
    BadRequestError,
    ConfigError,
    DataFileError,
    IncompleteExportError,
    LimitExceededError,
    NetworkError,
    RateLimitedError,
    ResponseFormatError,
    SchemaError,
    ServerError,
    TxkitError,
)

#: txkit's version, written here only: pyproject.toml and `txkit --version` read it.
__version__ = "0.1.0"

if TYPE_CHECKING:
    from txkit.analysis.activity import activity_history
    from txkit.fetch.client import Client, RetryPolicy
    from txkit.fetch.load import IncompleteExportWarning, load_transactions
    from txkit.fetch.pages import ExportStats
    from txkit.inputs.orders import read_orders
    from txkit.privacy import mask_pii
    from txkit.store import scan_store, sync

# Imported when first used, not by `import txkit`: the client, the store, polars' readers and
# the analysis (and through them the sandbox) load only for the names a caller touches.
_LAZY = {
    "activity_history": "txkit.analysis.activity",
    "read_orders": "txkit.inputs.orders",
    "Client": "txkit.fetch.client",
    "RetryPolicy": "txkit.fetch.client",
    "IncompleteExportWarning": "txkit.fetch.load",
    "load_transactions": "txkit.fetch.load",
    "ExportStats": "txkit.fetch.pages",
    "mask_pii": "txkit.privacy",
    "scan_store": "txkit.store",
    "sync": "txkit.store",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'txkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ApiError",
    "AuthError",
    "BadRequestError",
    "Client",
    "ConfigError",
    "DataFileError",
    "ExportStats",
    "IncompleteExportError",
    "IncompleteExportWarning",
    "LimitExceededError",
    "NetworkError",
    "RateLimitedError",
    "ResponseFormatError",
    "RetryPolicy",
    "SchemaError",
    "ServerError",
    "TxkitError",
    "activity_history",
    "load_transactions",
    "mask_pii",
    "read_orders",
    "scan_store",
    "sync",
]
