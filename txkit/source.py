"""Where transactions come from: the real service when a key is configured, else the sandbox.

Notebooks and the monthly report call :func:`connect`; it says which source it chose, so an
output never silently mixes sandbox and production numbers.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from txkit.client import BASE_URL_VAR, SECRET_KEY_VAR, Client, load_dotenv_values
from txkit.errors import ConfigError

__all__ = ["DEFAULT_SANDBOX", "Source", "connect", "key_configured"]


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """The embedded sandbox used when no key is configured (fixed, so outputs reproduce)."""

    seed: int = 7
    records: int = 60_000
    start_month: str = "2025-11"
    months: int = 12


DEFAULT_SANDBOX = SandboxSettings()


@dataclass(frozen=True, slots=True)
class Source:
    """An open source of transactions.

    Attributes:
        client: the connected :class:`~txkit.client.Client`.
        sandbox: the running sandbox, or None for the configured service.
        description: one line saying which source this is (no secret in it).
        label: a short name of the source for manifests and reports.
    """

    client: Client
    sandbox: object | None
    description: str
    label: str = ""


def _configured(name: str, env_file: str = ".env") -> bool:
    return bool(os.environ.get(name) or load_dotenv_values(env_file).get(name))


def key_configured(env_file: str = ".env") -> bool:
    """True when ``TXKIT_SECRET_KEY`` is set in the environment or in ``env_file``."""
    return _configured(SECRET_KEY_VAR, env_file)


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
        if not key_configured() and _configured(BASE_URL_VAR):
            raise ConfigError(
                f"{BASE_URL_VAR} is set but {SECRET_KEY_VAR} is not: set {SECRET_KEY_VAR} "
                "(in the environment or a .env file) to use that service, or unset "
                f"{BASE_URL_VAR} to use the embedded sandbox"
            )
        sandbox = not key_configured()
    if not sandbox:
        with Client() as client:
            yield Source(
                client, None, f"the configured service at {client.base_url}", client.base_url
            )
        return
    from txkit.sandbox import Sandbox

    with (
        Sandbox(
            seed=settings.seed,
            records=settings.records,
            start_month=settings.start_month,
            months=settings.months,
        ) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        yield Source(
            client,
            box,
            f"the embedded sandbox (no {SECRET_KEY_VAR} configured; seed {settings.seed}, "
            f"{settings.records:,} records, {settings.months} months from "
            f"{settings.start_month}) - set {BASE_URL_VAR} and {SECRET_KEY_VAR} for the real "
            "service",
            f"the embedded sandbox (seed {settings.seed}, {settings.records:,} records)",
        )
