"""Where transactions come from: the real service when a key is configured, else the sandbox.

Notebooks and the monthly report call :func:`connect`; it says which source it chose, so an
output never silently mixes sandbox and production numbers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from txkit.config import (
    BASE_URL_VAR,
    SANDBOX,
    SECRET_KEY_VAR,
    SandboxSettings,
    configured,
    key_configured,
    load_dotenv_values,
    sandbox_cache_dir,
    store_root,
)
from txkit.errors import ConfigError
from txkit.fetch.client import Client

__all__ = [
    "DEFAULT_SANDBOX",
    "Source",
    "connect",
    "default_store",
    "default_store_for_url",
    "key_configured",
    "sandbox_files",
]

#: The sandbox's settings when no key is configured (see :data:`txkit.config.SANDBOX`).
DEFAULT_SANDBOX = SANDBOX


@dataclass(frozen=True, slots=True)
class Source:
    """An open source of transactions.

    Attributes:
        client: the connected :class:`~txkit.fetch.client.Client`.
        sandbox: the running sandbox, or None for the configured service.
        description: one line saying which source this is (no secret in it).
        label: a short name of the source for manifests and reports.
        url: the source's identity for the store: the service's base URL, or
            ``sandbox:<settings>`` for the embedded sandbox (whose port and key change).
    """

    client: Client
    sandbox: object | None
    description: str
    label: str = ""
    url: str = ""

    @property
    def store(self) -> Path:
        """The default store of this source (see :func:`default_store_for_url`)."""
        return default_store_for_url(self.url or self.client.base_url)


@contextlib.contextmanager
def connect(
    *, sandbox: bool | None = None, settings: SandboxSettings = DEFAULT_SANDBOX
) -> Iterator[Source]:
    """Open the configured service, or start the embedded sandbox when no key is configured.

    Args:
        sandbox: force the sandbox (True) or the configured service (False); default: the
            sandbox exactly when no ``TXKIT_SECRET_KEY`` is configured.
        settings: the sandbox's seed, size and calendar.

    Yields:
        A :class:`Source`; the client is closed and the sandbox stopped afterwards.

    Raises:
        ConfigError: ``TXKIT_BASE_URL`` is set without a key (the analyst meant the real
            service: starting the sandbox instead would silently report on fake data).
    """
    if sandbox is None:
        if not key_configured() and configured(BASE_URL_VAR):
            raise ConfigError(
                f"{BASE_URL_VAR} is set but {SECRET_KEY_VAR} is not: set {SECRET_KEY_VAR} "
                "(in the environment or a .env file) to use that service, or unset "
                f"{BASE_URL_VAR} to use the embedded sandbox"
            )
        sandbox = not key_configured()
    if not sandbox:
        with Client() as client:
            yield Source(
                client,
                None,
                f"the configured service at {client.base_url}",
                client.base_url,
                client.base_url,
            )
        return
    from txkit.sandbox import Sandbox

    with (
        Sandbox(
            seed=settings.seed,
            records=settings.records,
            start_month=settings.start_month,
            months=settings.months,
            anomaly_rate=settings.anomaly_rate,
        ) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        # Its files are written once per settings, so later readers of the orders (the
        # reconciliation) need not generate the ledger again.
        sandbox_files(settings, ledger=box.ledger)
        yield Source(
            client,
            box,
            f"the embedded sandbox (no {SECRET_KEY_VAR} configured; seed {settings.seed}, "
            f"{settings.records:,} records, {settings.months} months from "
            f"{settings.start_month}) - set {BASE_URL_VAR} and {SECRET_KEY_VAR} for the real "
            "service",
            f"the embedded sandbox (seed {settings.seed}, {settings.records:,} records)",
            f"sandbox:{settings.name}",
        )


def sandbox_files(settings: SandboxSettings = SANDBOX, *, ledger: Any = None) -> Path:
    """The folder of the sandbox's written files (``orders.csv``, ``ground_truth.json``).

    The files of each ``settings`` are written once, with :meth:`Ledger.write_files`, into
    :func:`txkit.config.sandbox_cache_dir` (``data/sandbox/cache/<seed, records, ...>/``);
    later calls only return the folder. The folder appears whole or not at all (it is written
    aside and renamed), so a reader never sees half a file.

    Args:
        settings: the sandbox's seed, size and calendar.
        ledger: the ledger generated with ``settings``, when the caller has it already;
            otherwise it is generated (about a second per 50,000 records).

    Returns:
        The folder.
    """
    folder = sandbox_cache_dir(settings)
    if (folder / "orders.csv").is_file():
        return folder
    if ledger is None:
        from txkit.sandbox import generate_ledger

        ledger = generate_ledger(
            seed=settings.seed,
            records=settings.records,
            start_month=settings.start_month,
            months=settings.months,
            anomaly_rate=settings.anomaly_rate,
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        ledger.write_files(staging)
        staging.chmod(0o755)
        os.rename(staging, folder)
    except OSError:
        if not (folder / "orders.csv").is_file():  # not merely another writer that won
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def default_store_for_url(url: str) -> Path:
    """The default store of a source: ``data/store/sandbox`` for the embedded sandbox,
    ``data/store/<host>`` (``<host>_<port>`` with a port) for a service."""
    base = store_root()
    if url.startswith("sandbox:"):
        return base / "sandbox"
    parsed = urlsplit(url)
    host = (parsed.hostname or "service").lower()
    name = f"{host}_{parsed.port}" if parsed.port else host
    return base / re.sub(r"[^a-z0-9._-]", "_", name)


def default_store(env_file: str = ".env") -> Path:
    """The default store of the source :func:`connect` would choose, without connecting.

    Raises:
        ConfigError: ``TXKIT_BASE_URL`` is set without a key (as :func:`connect`).
    """
    if key_configured(env_file):
        url = os.environ.get(BASE_URL_VAR) or load_dotenv_values(env_file).get(BASE_URL_VAR) or ""
        return default_store_for_url(url)
    if configured(BASE_URL_VAR, env_file):
        raise ConfigError(
            f"{BASE_URL_VAR} is set but {SECRET_KEY_VAR} is not: set {SECRET_KEY_VAR} "
            "(in the environment or a .env file) to use that service, or unset "
            f"{BASE_URL_VAR} to use the embedded sandbox"
        )
    return default_store_for_url("sandbox:")
