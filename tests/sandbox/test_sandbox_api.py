"""The sandbox's ``GET /transaction`` over real HTTP: filters, pagination, order, errors."""

from __future__ import annotations

import http.client
import itertools
import json
import random
import re
import socket
from typing import Any

import httpx
import pytest
from sandbox_helpers import brute_force, fetch_all, utc_day

from txkit.fetch.client import tls_context
from txkit.sandbox import DEFAULT_LIMIT, MAX_LIMIT, Sandbox
from txkit.sandbox.ledger import Ledger
from txkit.schema import CURRENCIES, STATUSES, TRANS_TYPES

# -- envelope, defaults, pagination -------------------------------------------------------------


def test_default_page_is_the_newest_records_in_the_documented_envelope(
    client: httpx.Client, ledger: Ledger
) -> None:
    response = client.get("/transaction")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["x-request-id"]
    body = response.json()
    assert body["success"] is True
    assert body["message"] == "Transactions retrieved"
    assert set(body) == {"success", "message", "data"}
    assert set(body["data"]) == {"transactions", "total"}
    served = ledger.export_bodies()
    assert body["data"]["total"] == len(served)
    assert len(body["data"]["transactions"]) == DEFAULT_LIMIT
    # The page is the pre-rendered bytes, joined: byte-identical to the ledger's records.
    expected = b'{"success":true,"message":"Transactions retrieved","data":{"transactions":['
    expected += b",".join(served[:DEFAULT_LIMIT]) + b'],"total":%d}}' % len(served)
    assert response.content == expected


def test_limit_above_the_maximum_is_silently_capped(client: httpx.Client) -> None:
    for limit in (MAX_LIMIT + 1, 5_000, 10**30):
        data = client.get("/transaction", params={"limit": limit}).json()["data"]
        assert len(data["transactions"]) == MAX_LIMIT


@pytest.mark.slow
@pytest.mark.parametrize(
    ("skip", "limit"),
    [(0, 1), (0, 10), (7, 13), (100, 1000), (5_990, 50), (5_999, 50), (6_000, 10), (10**6, 5)],
)
def test_skip_and_limit_select_a_slice_of_the_export_order(
    client: httpx.Client, records: list[dict[str, Any]], skip: int, limit: int
) -> None:
    data = client.get("/transaction", params={"skip": skip, "limit": limit}).json()["data"]
    assert data["total"] == len(records)
    assert [r["id"] for r in data["transactions"]] == [
        r["id"] for r in records[skip : skip + limit]
    ]


@pytest.mark.slow
def test_pages_concatenate_to_the_whole_export_exactly_once(
    client: httpx.Client, records: list[dict[str, Any]]
) -> None:
    got, total = fetch_all(client)
    assert total == len(records)
    assert [r["id"] for r in got] == [r["id"] for r in records]


def test_order_is_newest_first_with_ties_by_id_ascending(records: list[dict[str, Any]]) -> None:
    keys = [(r["createdAt"], r["id"]) for r in records]
    for (created_a, id_a), (created_b, id_b) in itertools.pairwise(keys):
        assert created_a > created_b or (created_a == created_b and id_a < id_b)
    ties = sum(1 for a, b in itertools.pairwise(keys) if a[0] == b[0])
    assert ties > 0.005 * len(keys), "the ledger should have createdAt ties to order"


def test_unknown_parameters_are_ignored(
    client: httpx.Client, records: list[dict[str, Any]]
) -> None:
    data = client.get("/transaction", params={"page": 3, "sort": "asc"}).json()["data"]
    assert data["total"] == len(records)


# -- filters ------------------------------------------------------------------------------------


def _check(client: httpx.Client, records: list[dict[str, Any]], params: dict[str, str]) -> None:
    got, total = fetch_all(client, **params)
    expected = brute_force(records, **params)
    assert total == len(expected), params
    assert [r["id"] for r in got] == expected, params


@pytest.mark.parametrize("trans_type", TRANS_TYPES)
def test_trans_type_filter(client: httpx.Client, records: list[dict], trans_type: str) -> None:
    _check(client, records, {"transType": trans_type})


@pytest.mark.slow
@pytest.mark.parametrize("status", STATUSES)
def test_status_filter(client: httpx.Client, records: list[dict], status: str) -> None:
    _check(client, records, {"status": status})
    assert brute_force(records, status=status), f"no {status} record in the ledger"


@pytest.mark.slow
@pytest.mark.parametrize("currency", CURRENCIES)
def test_currency_filter_matches_to_currency(
    every_currency: tuple[httpx.Client, list[dict]], currency: str
) -> None:
    """Every accepted currency has records here (the generator's five, and three planted in
    each of the others), so the filter is checked to find them, not merely to find nothing."""
    client, records = every_currency
    expected = brute_force(records, currency=currency)
    assert expected, f"no {currency} record to filter"
    assert len(expected) < len(records)  # and the others are left out
    _check(client, records, {"currency": currency})


@pytest.mark.slow
@pytest.mark.parametrize(
    "dates",
    [
        {"startDate": "2026-01-15", "endDate": "2026-01-15"},
        {"startDate": "2026-02-01", "endDate": "2026-02-28"},
        {"startDate": "2025-12-31", "endDate": "2026-01-01"},
        {"startDate": "2026-10-01"},
        {"endDate": "2025-11-03"},
        {"startDate": "2020-01-01", "endDate": "2030-12-31"},
        {"startDate": "2027-01-01"},
        {"endDate": "2025-10-31"},
    ],
)
def test_date_filters_are_inclusive_utc_days_on_created_at(
    client: httpx.Client, records: list[dict], dates: dict[str, str]
) -> None:
    _check(client, records, dates)


def test_day_bounds_include_the_first_and_last_millisecond(
    client: httpx.Client, records: list[dict]
) -> None:
    day = utc_day(records[len(records) // 2]["createdAt"]).isoformat()
    got, _ = fetch_all(client, startDate=day, endDate=day)
    assert got
    assert all(r["createdAt"].startswith(day) for r in got)
    assert len(got) == sum(1 for r in records if r["createdAt"].startswith(day))


@pytest.mark.slow
def test_filter_combinations(client: httpx.Client, records: list[dict]) -> None:
    rng = random.Random(5)
    days = sorted({r["createdAt"][:10] for r in records})
    for _ in range(60):
        params: dict[str, str] = {}
        if rng.random() < 0.5:
            params["transType"] = rng.choice(TRANS_TYPES)
        if rng.random() < 0.5:
            params["status"] = rng.choice(("successful", "failed", "pending", "abandoned"))
        if rng.random() < 0.5:
            params["currency"] = rng.choice(("NGN", "USD", "GHS", "KES", "USDT", "ZAR"))
        if rng.random() < 0.6:
            start, end = sorted(rng.sample(days, 2))
            if rng.random() < 0.5:
                params["startDate"] = start
            if rng.random() < 0.7:
                params["endDate"] = end
        _check(client, records, params)


def test_pagination_within_a_filter(client: httpx.Client, records: list[dict]) -> None:
    params = {"status": "successful", "currency": "NGN"}
    expected = brute_force(records, **params)
    for skip, limit in [(0, 7), (3, 100), (len(expected) - 2, 10), (len(expected), 10)]:
        data = client.get("/transaction", params={**params, "skip": skip, "limit": limit}).json()[
            "data"
        ]
        assert data["total"] == len(expected)
        assert [r["id"] for r in data["transactions"]] == expected[skip : skip + limit]


# -- authentication -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (None, "Authorization header missing"),
        ("Bearer sk_sandbox_wrong", "Invalid or expired secret key"),
        ("Bearer", "Invalid or expired secret key"),
        ("Basic dXNlcjpwYXNz", "Invalid or expired secret key"),
        ("{key}", "Invalid or expired secret key"),  # the key without "Bearer"
        ("Bearer {key}x", "Invalid or expired secret key"),
        ("Bearer {upper}", "Invalid or expired secret key"),
    ],
)
def test_missing_or_wrong_key_is_401_with_an_envelope(
    sandbox: Sandbox, header: str | None, match: str
) -> None:
    headers = {}
    if header is not None:
        headers["Authorization"] = header.format(
            key=sandbox.secret_key, upper=sandbox.secret_key.upper()
        )
    response = httpx.get(f"{sandbox.base_url}/transaction", headers=headers, verify=tls_context())
    assert response.status_code == 401
    assert response.headers["x-request-id"]
    body = response.json()
    assert body["success"] is False
    assert body["data"] == {}
    assert re.search(match, body["message"])
    assert sandbox.secret_key not in response.text


def test_bearer_scheme_is_case_insensitive(sandbox: Sandbox) -> None:
    headers = {"Authorization": f"bearer {sandbox.secret_key}"}
    assert (
        httpx.get(
            f"{sandbox.base_url}/transaction", headers=headers, verify=tls_context()
        ).status_code
        == 200
    )


def test_auth_is_checked_before_parameters(sandbox: Sandbox) -> None:
    response = httpx.get(
        f"{sandbox.base_url}/transaction", params={"status": "nope"}, verify=tls_context()
    )
    assert response.status_code == 401


# -- bad parameters -----------------------------------------------------------------------------

_STATUS_LIST = ", ".join(STATUSES)


@pytest.mark.parametrize(
    ("params", "code", "match"),
    [
        ({"status": "paid"}, 422, f"status 'paid'.*one of {_STATUS_LIST}"),
        ({"status": "SUCCESSFUL"}, 422, "Invalid status 'SUCCESSFUL'"),
        ({"status": ""}, 422, "Invalid status ''"),
        ({"transType": "refund"}, 422, "transType 'refund'.*conversion, settlement, collection"),
        ({"currency": "EUR"}, 422, "currency 'EUR'.*NGN, USD, GHS.*USDT, USDC"),
        ({"currency": "ngn"}, 422, "Invalid currency 'ngn'"),
        ({"startDate": "2026-1-5"}, 400, "startDate '2026-1-5'.*YYYY-MM-DD"),
        ({"startDate": "20260105"}, 400, "startDate '20260105'.*YYYY-MM-DD"),
        ({"startDate": "2026-02-30"}, 400, "startDate '2026-02-30'.*not a real calendar date"),
        ({"endDate": "2026-13-01"}, 400, "endDate '2026-13-01'.*not a real calendar date"),
        ({"endDate": "yesterday"}, 400, "endDate 'yesterday'.*YYYY-MM-DD"),
        ({"endDate": "2026-01-05T00:00:00Z"}, 400, "endDate.*YYYY-MM-DD"),
        (
            {"startDate": "2026-03-02", "endDate": "2026-03-01"},
            422,
            "startDate 2026-03-02 is after endDate 2026-03-01",
        ),
        ({"skip": "-1"}, 422, "skip '-1'.*non-negative integer"),
        ({"skip": "1.5"}, 400, "skip '1.5'.*non-negative integer"),
        ({"skip": "ten"}, 400, "skip 'ten'.*non-negative integer"),
        ({"skip": ""}, 400, "Invalid skip ''"),
        ({"limit": "0"}, 422, "limit '0'.*positive integer"),
        ({"limit": "-5"}, 422, "limit '-5'.*positive integer"),
        ({"limit": "1e3"}, 400, "limit '1e3'.*positive integer"),
        ({"limit": "20.0"}, 400, "limit '20.0'.*positive integer"),
        ({"limit": " 5"}, 400, "Invalid limit ' 5'"),
        ({"limit": "-99999999999999999999999"}, 422, "limit '-9+'.*positive integer"),
        ({"status": ["successful", "failed"]}, 400, "'status' was given 2 times"),
        ({"skip": ["1", "2"]}, 400, "'skip' was given 2 times"),
    ],
)
def test_bad_parameter_is_rejected_with_a_message_naming_it(
    client: httpx.Client, params: dict[str, Any], code: int, match: str
) -> None:
    response = client.get("/transaction", params=params)
    assert response.status_code == code
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["x-request-id"]
    body = response.json()
    assert body["success"] is False
    assert body["data"] == {}
    assert re.search(match, body["message"]), body["message"]
    assert "Traceback" not in response.text


# -- paths, methods, protocol -------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/transactions", "/transaction/123", "/v1/transaction"])
def test_unknown_path_is_404_json(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.json()["success"] is False
    assert response.headers["x-request-id"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_other_methods_are_405_json(client: httpx.Client, method: str) -> None:
    response = client.request(method, "/transaction", json={"amount": 1})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    assert response.json()["success"] is False
    # The body was consumed: the connection stays usable.
    assert client.get("/transaction", params={"limit": 1}).status_code == 200


def test_head_is_405_without_a_body(sandbox: Sandbox) -> None:
    response = httpx.head(f"{sandbox.base_url}/transaction", verify=tls_context())
    assert response.status_code == 405
    assert response.content == b""


def test_trailing_slash_is_the_same_path(client: httpx.Client) -> None:
    assert client.get("/transaction/", params={"limit": 1}).status_code == 200


def test_keep_alive_serves_several_requests_on_one_connection(sandbox: Sandbox) -> None:
    conn = http.client.HTTPConnection(sandbox.host, sandbox.port, timeout=10)
    headers = {"Authorization": f"Bearer {sandbox.secret_key}"}
    try:
        for skip in range(3):
            conn.request("GET", f"/transaction?limit=2&skip={skip}", headers=headers)
            response = conn.getresponse()
            body = response.read()
            assert response.status == 200
            assert int(response.headers["Content-Length"]) == len(body)
            assert len(json.loads(body)["data"]["transactions"]) == 2
        assert conn.sock is not None  # still the same, open socket
    finally:
        conn.close()


def test_malformed_request_line_gets_a_json_error(sandbox: Sandbox) -> None:
    with socket.create_connection((sandbox.host, sandbox.port), timeout=10) as sock:
        sock.sendall(b"GARBAGE\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert b"X-Request-Id:" in head
    assert json.loads(body)["success"] is False


def test_request_ids_differ(client: httpx.Client) -> None:
    ids = {
        client.get("/transaction", params={"limit": 1}).headers["x-request-id"] for _ in range(5)
    }
    assert len(ids) == 5


# -- record content as served -------------------------------------------------------------------

_MONEY_VALUE = re.compile(
    rb'"(toAmount|fromAmount|amount|feeAmount|taxAmount|expectedAmount|'
    rb'(?:to|from)BalanceAfter(?:Available|Ledger))":([^,}]*)'
)


def test_money_is_rendered_with_at_most_two_decimals(ledger: Ledger) -> None:
    for body in ledger.export_bodies():
        for _, value in _MONEY_VALUE.findall(body):
            assert re.fullmatch(rb"-?\d+(\.\d\d)?", value), (value, body[:60])


def test_every_served_record_is_valid_json_with_id_equal_to__id(ledger: Ledger) -> None:
    for body in ledger.export_bodies():
        record = json.loads(body)
        assert record["id"] == record["_id"]
        assert re.fullmatch(r"[0-9a-f]{24}", record["id"])
