"""Shared fixtures for the sandbox tests: one small ledger and one running sandbox per session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from txkit.sandbox import Sandbox, generate_ledger
from txkit.sandbox.ledger import Ledger

#: The session ledger's arguments: small, with a high anomaly rate so every kind appears.
LEDGER_ARGS: dict[str, Any] = {"seed": 11, "records": 6_000, "anomaly_rate": 0.03}


@pytest.fixture(scope="session")
def ledger() -> Ledger:
    return generate_ledger(**LEDGER_ARGS)


@pytest.fixture(scope="session")
def records(ledger: Ledger) -> list[dict[str, Any]]:
    """The served records, parsed, in export order (read-only: do not mutate)."""
    return ledger.exported_records()


@pytest.fixture(scope="session")
def sandbox(ledger: Ledger) -> Iterator[Sandbox]:
    """A sandbox without faults, shared by the read-only tests (never change its faults)."""
    with Sandbox(ledger=ledger) as sb:
        yield sb


@pytest.fixture(scope="session")
def client(sandbox: Sandbox) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {sandbox.secret_key}"}
    with httpx.Client(base_url=sandbox.base_url, headers=headers, timeout=30) as c:
        yield c


@pytest.fixture
def fresh(ledger: Ledger) -> Iterator[Sandbox]:
    """A sandbox of its own (same ledger) for tests that change faults or data."""
    with Sandbox(ledger=ledger) as sb:
        yield sb
