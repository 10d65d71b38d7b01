"""Helpers for the sandbox tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import httpx

from txkit.sandbox import Sandbox


def client_for(sb: Sandbox) -> httpx.Client:
    """An authenticated client for ``sb`` (use as a context manager)."""
    headers = {"Authorization": f"Bearer {sb.secret_key}"}
    return httpx.Client(base_url=sb.base_url, headers=headers, timeout=30)


def fetch_all(c: httpx.Client, **params: Any) -> tuple[list[dict[str, Any]], int]:
    """Every page of a query with limit 1000; returns (records, total of the first page)."""
    out: list[dict[str, Any]] = []
    skip = 0
    total = None
    while True:
        response = c.get("/transaction", params={**params, "skip": skip, "limit": 1000})
        assert response.status_code == 200, response.text
        data = response.json()["data"]
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
