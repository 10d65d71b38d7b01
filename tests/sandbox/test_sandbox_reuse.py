"""Sandboxes of one process that generate their ledger share it when the settings are the same
(a notebook starts one per load), and serve the same records as a fresh one."""

from __future__ import annotations

import httpx

from txkit.fetch.client import tls_context
from txkit.sandbox import Sandbox, generate_ledger


def _ids(box: Sandbox) -> list[str]:
    got = httpx.get(
        f"{box.base_url}/transaction",
        params={"limit": 50, "skip": 0},
        headers={"Authorization": f"Bearer {box.secret_key}"},
        verify=tls_context(),
    ).json()
    return [r["id"] for r in got["data"]["transactions"]]


def test_same_settings_share_the_generated_ledger_and_serve_the_same_records() -> None:
    with Sandbox(seed=31, records=800, months=2) as first:
        first_ids, ledger = _ids(first), first.ledger
    with Sandbox(seed=31, records=800, months=2) as again:
        assert again.ledger is ledger  # not generated a second time
        assert _ids(again) == first_ids
    with Sandbox(seed=32, records=800, months=2) as other:
        assert other.ledger is not ledger
    fresh = generate_ledger(seed=31, records=800, months=2)
    with Sandbox(ledger=fresh) as served:
        assert _ids(served) == first_ids
