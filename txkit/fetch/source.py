"""Where transactions come from: the real service when a key is configured, else the sandbox.

Notebooks and the monthly report call :func:`connect`; it says which source it chose, so an
output never silently mixes sandbox and production numbers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from txkit import sandbox as _sandbox  # looked up at each call (tests replace generate_ledger)
from txkit.config import (
    BASE_URL_VAR,
    SANDBOX,
    SECRET_KEY_VAR,
    SandboxSettings,
    key_configured,
    refuse_base_url_without_key,
    sandbox_cache_dir,
    sandbox_ledger_file,
    store_for_url,
)
from txkit.fetch.client import Client

__all__ = [
    "Source",
    "connect",
    "sandbox_files",
    "sandbox_ledger",
]


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
        """The store of this source (see :func:`txkit.config.store_for_url`)."""
        return store_for_url(self.url or self.client.base_url)


@contextlib.contextmanager
def connect(
    *, sandbox: bool | None = None, settings: SandboxSettings = SANDBOX
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
        refuse_base_url_without_key()
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
    with (
        _sandbox.Sandbox(ledger=sandbox_ledger(settings)) as box,
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
        ledger = sandbox_ledger(settings)
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


#: The last ledger this process generated or read, by its file: a process that connects
#: again (a notebook's second load, a report's sync and its register) reuses it.
_last: dict[Path, Any] = {}
_reading = threading.Lock()


@contextlib.contextmanager
def _one_generator(folder: Path) -> Iterator[None]:
    """Processes that find no saved ledger generate it one at a time, each reading what the
    one before saved: kernels and a report that start together generated it each."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)  # the folder itself is the lock: no file left
    except OSError:  # a folder that cannot be written: each process generates its own
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when closed, or when the process dies
        yield
    finally:
        os.close(fd)


def sandbox_ledger(settings: SandboxSettings = SANDBOX) -> Any:
    """The sandbox's ledger of ``settings``: read from the user's cache
    (:func:`txkit.config.sandbox_ledger_file`) when an earlier process saved it there, else
    generated and saved for the next one, whatever its project.

    Reading a saved ledger is several times cheaper than generating it (docs/benchmarks.md,
    Sandbox). The file's name holds the generator's digest, so a changed
    generator is never read from an older file.
    """
    path = sandbox_ledger_file(settings)
    with _reading:
        if path in _last:
            return _last[path]
        ledger = _sandbox.load_ledger(path)
        if ledger is None:
            with _one_generator(path.parent):
                ledger = _sandbox.load_ledger(path)  # saved by the process waited for
                if ledger is None:
                    ledger = _sandbox.generate_ledger(
                        seed=settings.seed,
                        records=settings.records,
                        start_month=settings.start_month,
                        months=settings.months,
                        anomaly_rate=settings.anomaly_rate,
                    )
                    _sandbox.save_ledger(ledger, path)
        _last.clear()
        _last[path] = ledger
        return ledger
