"""Every default txkit uses in more than one place: folders, the look-back, the sandbox.

The CLI, the store, the report and the notebook helpers read their defaults from here, so a
default is changed once. Relative folders are relative to the working directory, except that
``TXKIT_DATA_DIR`` moves the whole ``data/`` folder (the store, the sandbox's files and the
merchant's orders) elsewhere.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DATA_DIR",
    "HISTORY_MONTHS",
    "LOOKBACK_DAYS",
    "MARGIN_DAYS",
    "NOTEBOOKS_DIR",
    "ORDERS_PATH",
    "REPORTS_DIR",
    "SANDBOX",
    "SANDBOX_DATA_DIR",
    "STORE_DIR",
    "SandboxSettings",
    "data_dir",
    "sandbox_cache_dir",
]

DATA_DIR_VAR = "TXKIT_DATA_DIR"


def data_dir() -> Path:
    """The data folder: ``TXKIT_DATA_DIR`` when set, else ``data`` (in the working directory)."""
    return Path(os.environ.get(DATA_DIR_VAR) or "data")


#: The data folder when this module was imported (see :func:`data_dir`).
DATA_DIR = data_dir()
#: The local store that ``txkit sync`` and ``txkit report`` keep.
STORE_DIR = DATA_DIR / "store"
#: Where ``txkit sandbox`` writes ``orders.csv`` and ``ground_truth.json``.
SANDBOX_DATA_DIR = DATA_DIR / "sandbox"
#: The merchant's expected payments when a key is configured.
ORDERS_PATH = DATA_DIR / "orders.csv"
#: Where ``txkit report`` writes ``YYYY-MM/``.
REPORTS_DIR = Path("reports")
#: The curated notebooks ``txkit report`` executes.
NOTEBOOKS_DIR = Path("notebooks")
#: Days re-fetched before the newest stored record: statuses change after a record is seen.
LOOKBACK_DAYS = 7
#: Months before a report's month that ``txkit report`` syncs for its notebooks' history
#: (underpayments' original references, balance chains): at least every notebook's
#: ``history_months`` default (a test checks).
HISTORY_MONTHS = 3
#: Days after a report's month that ``txkit report`` syncs, where reconciliation looks for
#: payments of orders placed at the month's end: at least notebook 02's ``date_tolerance``.
MARGIN_DAYS = 3


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """The embedded sandbox used when no key is configured (fixed, so outputs reproduce)."""

    seed: int = 7
    records: int = 60_000
    start_month: str = "2025-11"
    months: int = 12
    anomaly_rate: float = 0.01

    @property
    def name(self) -> str:
        """The settings as one word (the sandbox's source identity in a store)."""
        return (
            f"seed{self.seed}-records{self.records}-from{self.start_month}"
            f"-months{self.months}-anomalies{self.anomaly_rate:g}"
        )

    @property
    def key(self) -> str:
        """A folder name that identifies the generated ledger (same key, same bytes): the
        settings and a digest of the generator's code, so a changed generator is not read
        from an older cache."""
        return f"{self.name}-gen{_generator_digest()}"


@functools.cache
def _generator_digest() -> str:
    """A short digest of the sandbox ledger generator's source files."""
    folder = Path(__file__).resolve().parent / "sandbox" / "ledger"
    digest = hashlib.sha256()
    for file in sorted(folder.glob("*.py")):
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:12]


#: The embedded sandbox of notebooks, reports and ``txkit sync`` without a key.
SANDBOX = SandboxSettings()


def sandbox_cache_dir(settings: SandboxSettings = SANDBOX) -> Path:
    """The folder holding the written files of the sandbox generated with ``settings``."""
    return data_dir() / "sandbox" / "cache" / settings.key
