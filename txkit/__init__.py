"""txkit: exact, complete transaction exports into polars DataFrames, with analyst notebooks.

Example:
    >>> import txkit
    >>> with txkit.Client() as client:  # TXKIT_BASE_URL / TXKIT_SECRET_KEY
    ...     df = txkit.load_transactions(client, status="successful", start="2026-10-01",
    ...                                  end="2026-10-31")
"""

#: txkit's version, written here only: pyproject.toml and `txkit --version` read it.
__version__ = "0.1.0"

from txkit.analysis.activity import activity_history
from txkit.analysis.orders import read_orders
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
from txkit.fetch.client import Client, RetryPolicy
from txkit.fetch.load import IncompleteExportWarning, load_transactions
from txkit.fetch.pages import ExportStats
from txkit.privacy import mask_pii
from txkit.store import scan_store, sync

# The exception register adds the versions signed reports cite to every retention policy.
import txkit.register  # noqa: F401  isort: skip

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
