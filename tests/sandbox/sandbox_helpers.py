"""Helpers for the sandbox tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import httpx
import orjson

from txkit.fetch.client import tls_context
from txkit.sandbox import Sandbox
from txkit.sandbox.ledger import Ledger


def client_for(sb: Sandbox) -> httpx.Client:
    """An authenticated client for ``sb`` (use as a context manager), with txkit's shared TLS
    context (httpx builds one per client otherwise: 21 ms of CPU, a client a test)."""
    headers = {"Authorization": f"Bearer {sb.secret_key}"}
    return httpx.Client(base_url=sb.base_url, headers=headers, timeout=30, verify=tls_context())


def fetch_all(c: httpx.Client, **params: Any) -> tuple[list[dict[str, Any]], int]:
    """Every page of a query with limit 1000; returns (records, total of the first page)."""
    out: list[dict[str, Any]] = []
    skip = 0
    total = None
    while True:
        response = c.get("/transaction", params={**params, "skip": skip, "limit": 1000})
        assert response.status_code == 200, response.text
        # orjson: what response.json() gives (floats for fractions), in a third of its CPU on
        # pages of 1,000 records
        data = orjson.loads(response.content)["data"]
        if total is None:
            total = data["total"]
        out.extend(data["transactions"])
        skip += 1000
        if skip >= data["total"]:
            return out, total


def utc_day(iso: str) -> date:
    """The UTC calendar day of an ISO timestamp such as ``2026-01-02T03:04:05.678Z``."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC).date()


def brute_force(
    records: list[dict[str, Any]],
    *,
    transType: str | None = None,
    status: str | None = None,
    currency: str | None = None,
    startDate: str | None = None,
    endDate: str | None = None,
) -> list[str]:
    """Ids of the records a query should return, in export order."""
    # createdAt is UTC ("...Z"), so its first ten characters are its UTC day, and ISO days
    # compare as strings.
    start = date.fromisoformat(startDate).isoformat() if startDate else None
    end = date.fromisoformat(endDate).isoformat() if endDate else None
    out = []
    for r in records:
        if transType is not None and r["transType"] != transType:
            continue
        if status is not None and r["status"] != status:
            continue
        if currency is not None and r["toCurrency"] != currency:
            continue
        assert r["createdAt"].endswith("Z")
        day = r["createdAt"][:10]
        if start is not None and day < start:
            continue
        if end is not None and day > end:
            continue
        out.append(r["id"])
    return out


def chronological(
    ledger: Ledger, all_records: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Every record (hidden ones too), oldest first (``createdAt``, then ``id``); from
    ``all_records`` (the ledger's :meth:`~Ledger.all_records`) when the caller parsed them."""
    records = ledger.all_records() if all_records is None else all_records
    return sorted(records, key=lambda r: (r["createdAt"], r["id"]))


def wallets(record: dict[str, Any]) -> list[tuple[str, str]]:
    """(currency, ledger field) of each balance side a successful record touches."""
    if record["transType"] == "collection":
        return [(record["toCurrency"], "toBalanceAfterLedger")]
    if record["transType"] == "conversion":
        return [
            (record["fromCurrency"], "fromBalanceAfterLedger"),
            (record["toCurrency"], "toBalanceAfterLedger"),
        ]
    return [(record["toCurrency"], "fromBalanceAfterLedger")]


def expected_violations(
    ledger: Ledger, all_records: list[dict[str, Any]] | None = None
) -> set[tuple[str, str, str]]:
    """(id, field, kind) that check_balance_model must report on the served records
    (``all_records``: the ledger's :meth:`~Ledger.all_records`, if the caller parsed them).

    Zero-balance records are skipped when looking for the next record of a wallet: they
    report no balances (the generator keeps them away from planted balance anomalies).
    """
    zero = {e["id"] for e in ledger.zero_balances}
    ordered = chronological(ledger, all_records)
    position = {r["id"]: k for k, r in enumerate(ordered)}
    expected = set()
    for entry in ledger.ground_truth:
        if entry["kind"] == "bad_balance":
            expected.add((entry["id"], entry["field"], "ledger"))
        elif entry["kind"] == "reserve_mismatch":
            expected.add((entry["id"], entry["field"], "available"))
        elif entry["kind"] == "missing_from_export":
            # The chain jumps at the wallet's next successful record.
            for later in ordered[position[entry["id"]] + 1 :]:
                if later["status"] != "successful" or later["id"] in zero:
                    continue
                hit = [f for c, f in wallets(later) if c == entry["currency"]]
                if hit:
                    expected.add((later["id"], hit[0], "jump"))
                    break
    return expected
