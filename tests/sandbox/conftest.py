"""Shared fixtures for the sandbox tests: one small ledger and one running sandbox per session."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import polars as pl
import pytest
from sandbox_helpers import client_for

from tests.factories import Ledgers
from txkit.fetch.client import tls_context
from txkit.sandbox import Sandbox
from txkit.sandbox.ledger import Ledger
from txkit.schema import CURRENCIES

#: The session ledger's arguments: small, with a high anomaly rate so every kind appears.
LEDGER_ARGS: dict[str, Any] = {"seed": 11, "records": 6_000, "anomaly_rate": 0.03}


@pytest.fixture(scope="session")
def ledger(ledgers: Ledgers) -> Ledger:
    return ledgers(**LEDGER_ARGS)


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
    with httpx.Client(
        base_url=sandbox.base_url, headers=headers, timeout=30, verify=tls_context()
    ) as c:
        yield c


@pytest.fixture
def fresh(ledger: Ledger) -> Iterator[Sandbox]:
    """A sandbox of its own (same ledger) for tests that change faults or data."""
    with Sandbox(ledger=ledger) as sb:
        yield sb


#: Served collections relabelled into each currency the generator does not use.
PLANTED_PER_CURRENCY = 3


@pytest.fixture(scope="session")
def every_currency_ledger(ledger: Ledger) -> Ledger:
    """The session ledger with :data:`PLANTED_PER_CURRENCY` served NGN collections moved into
    each currency the generator leaves out (it writes NGN, USD, GHS, KES and USDT only), so a
    currency filter has records to find for every accepted currency."""
    served = set(ledger.export_rows())
    rows = [
        row
        for row, (kind, currency) in enumerate(
            ledger.index.select("transType", "toCurrency").iter_rows()
        )
        if row in served and kind == "collection" and currency == "NGN"
    ]
    present = set(ledger.index["toCurrency"])
    missing = [c for c in CURRENCIES if c not in present]
    bodies = list(ledger._bodies)
    currencies = ledger.index["toCurrency"].to_list()
    step = len(rows) // (len(missing) * PLANTED_PER_CURRENCY + 1)
    picked = iter(rows[step::step])
    for currency in missing:
        for _ in range(PLANTED_PER_CURRENCY):
            row = next(picked)
            old = bodies[row]
            bodies[row] = old.replace(b'"toCurrency":"NGN"', f'"toCurrency":"{currency}"'.encode())
            assert bodies[row] != old
            currencies[row] = currency
    index = ledger.index.with_columns(pl.Series("toCurrency", currencies, dtype=pl.String))
    return dataclasses.replace(ledger, index=index, _bodies=bodies, _export_rows=None)


@pytest.fixture(scope="module")
def every_currency(every_currency_ledger: Ledger) -> Iterator[tuple[httpx.Client, list[dict]]]:
    """A client of a sandbox serving :func:`every_currency_ledger`, and its served records."""
    with Sandbox(ledger=every_currency_ledger) as sb, client_for(sb) as c:
        yield c, every_currency_ledger.exported_records()
