"""Fault injection: parsing, determinism, and each fault mode over real HTTP."""

from __future__ import annotations

import collections
import json
import re
import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sandbox_helpers import client_for, fetch_all

from txkit.fetch.client import tls_context
from txkit.sandbox import Faults, Sandbox, check_balance_model
from txkit.sandbox.faults import drift_body
from txkit.sandbox.ledger import Ledger, decimal_money, parse_record

# -- parsing ------------------------------------------------------------------------------------


def test_parse_a_full_spec_and_print_it_back() -> None:
    spec = (
        "rate_limit=0.2,retry_after=0,server_error=0.1,slow=0.05,slow_seconds=1.5,latency=20,"
        "drop=0.01,not_json=0.02,cap=100,arrivals=3,status_changes=2,shuffle_ties,date_shift=-5,"
        "bounds=end_exclusive,drift=0.3,fault_seed=9"
    )
    faults = Faults.parse(spec)
    assert faults.rate_limit == 0.2 and faults.retry_after == 0
    assert faults.cap == 100 and faults.shuffle_ties is True and faults.date_shift == -5
    assert faults.bounds == "end_exclusive" and faults.fault_seed == 9
    assert Faults.parse(str(faults)) == faults
    assert faults.active


@pytest.mark.parametrize("spec", [None, "", "none", " , "])
def test_empty_specs_mean_no_faults(spec: str | None) -> None:
    faults = Faults.parse(spec)
    assert faults == Faults() and not faults.active and str(faults) == "none"


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("ratelimit=0.2", r"unknown fault 'ratelimit'; accepted: rate_limit=P.*fault_seed=N"),
        ("rate_limit=1.5", r"'rate_limit' needs a probability from 0 to 1, got 1.5"),
        ("rate_limit=-0.1", r"'rate_limit' needs a probability"),
        ("rate_limit=lots", r"'rate_limit' needs a probability from 0 to 1, got 'lots'"),
        ("drop=nan", r"'drop' needs a probability"),
        ("rate_limit", r"fault 'rate_limit' needs a value"),
        ("retry_after=-1", r"'retry_after' needs a non-negative integer"),
        ("cap=0", r"'cap' needs an integer of at least 1"),
        ("cap=ten", r"'cap' needs an integer of at least 1, got 'ten'"),
        ("arrivals=1.5", r"'arrivals' needs a non-negative integer"),
        ("date_shift=15", r"'date_shift' needs an integer number of hours from -14 to 14"),
        ("bounds=open", r"'bounds' needs one of inclusive, exclusive, start_exclusive"),
        ("shuffle_ties=maybe", r"'shuffle_ties' needs true or false"),
        ("tie_groups=3", r"'tie_groups' needs 0 \(off\) or an integer of at least 6, got 3"),
        ("big_tie=-1", r"'big_tie' needs a non-negative integer"),
        ("slow_seconds=-1", r"'slow_seconds' needs a number of seconds"),
        ("cap=5,cap=6", r"fault 'cap' given more than once"),
    ],
)
def test_bad_specs_name_the_fault_and_the_accepted_values(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Faults.parse(spec)


def test_assignments_are_validated_too() -> None:
    faults = Faults()
    with pytest.raises(ValueError, match="probability"):
        faults.server_error = 2
    with pytest.raises(ValueError, match="bounds"):
        faults.bounds = "both"
    with pytest.raises(AttributeError, match="unknown fault"):
        faults.ratelimit = 1  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="rate_limit"):
        Faults(rate_limit=3)


def test_decisions_are_deterministic_and_follow_the_probabilities() -> None:
    faults = Faults.parse("rate_limit=0.2,server_error=0.1,drop=0.05,not_json=0.05,fault_seed=4")
    first = [faults.decide(seq) for seq in range(1, 2001)]
    assert first == [faults.decide(seq) for seq in range(1, 2001)]
    other = Faults.parse("rate_limit=0.2,server_error=0.1,drop=0.05,not_json=0.05,fault_seed=5")
    assert first != [other.decide(seq) for seq in range(1, 2001)]
    counts = collections.Counter(
        "drop" if d.drop else "html" if d.not_json else d.status for d in first
    )
    assert 60 < counts["drop"] < 140  # 5 %
    assert 300 < counts[429] < 480  # 95 % of 20 %
    assert {500, 502, 503} <= set(counts)


# -- each fault over HTTP -----------------------------------------------------------------------


def _get(c: httpx.Client, **params: Any) -> httpx.Response:
    return c.get("/transaction", params=params or {"limit": 5})


@pytest.mark.parametrize("retry_after", [0, 1, 7])
def test_rate_limit_is_429_with_retry_after(fresh: Sandbox, retry_after: int) -> None:
    fresh.faults = Faults(rate_limit=1.0, retry_after=retry_after)
    with client_for(fresh) as c:
        response = _get(c)
    assert response.status_code == 429
    assert response.headers["retry-after"] == str(retry_after)
    assert response.headers["x-request-id"]
    body = response.json()
    assert body["success"] is False and "Rate limit" in body["message"]


def test_server_errors_are_5xx_with_html(fresh: Sandbox) -> None:
    fresh.faults = "server_error=1"
    codes = set()
    with client_for(fresh) as c:
        for _ in range(30):
            response = _get(c)
            codes.add(response.status_code)
            assert response.headers["content-type"].startswith("text/html")
            assert response.text.lstrip().startswith("<!DOCTYPE html>")
            assert response.headers["x-request-id"]
    assert codes == {500, 502, 503}


def test_not_json_is_200_with_html(fresh: Sandbox) -> None:
    fresh.faults = "not_json=1"
    with client_for(fresh) as c:
        response = _get(c)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


@pytest.mark.slow
def test_drop_closes_the_connection_without_a_response(fresh: Sandbox) -> None:
    fresh.faults = "drop=1"
    with client_for(fresh) as c, pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        _get(c)
    fresh.faults = None
    with client_for(fresh) as c:
        assert _get(c).status_code == 200


@pytest.mark.slow
def test_slow_and_latency_delay_responses(fresh: Sandbox) -> None:
    with client_for(fresh) as c:
        fresh.faults = "slow=1,slow_seconds=0.3"
        started = time.perf_counter()
        assert _get(c).status_code == 200
        assert time.perf_counter() - started >= 0.3
        fresh.faults = "latency=150"
        started = time.perf_counter()
        for _ in range(2):
            assert _get(c).status_code == 200
        assert time.perf_counter() - started >= 0.3
        with pytest.raises(httpx.ReadTimeout):
            fresh.faults = "slow=1,slow_seconds=2"
            c.get("/transaction", timeout=0.3)


@pytest.mark.slow
def test_cap_returns_fewer_records_than_asked_silently(
    fresh: Sandbox, ledger: Ledger, records: list[dict[str, Any]]
) -> None:
    fresh.faults = "cap=7"
    with client_for(fresh) as c:
        data = _get(c, limit=50, skip=3).json()["data"]
    assert len(data["transactions"]) == 7
    assert data["total"] == len(ledger.export_rows())
    served = records  # the session's parse of ledger.exported_records()
    assert [r["id"] for r in data["transactions"]] == [r["id"] for r in served[3:10]]


def test_faults_never_apply_to_auth_or_validation_errors(fresh: Sandbox) -> None:
    # A latency of 20 s: one delayed reply alone would take twice the bound below, so the bound
    # discriminates even on a machine loaded enough to slow a plain reply to seconds.
    fresh.faults = "drop=1,server_error=1,rate_limit=1,latency=20000"
    started = time.perf_counter()
    assert httpx.get(f"{fresh.base_url}/transaction", verify=tls_context()).status_code == 401
    with client_for(fresh) as c:
        assert c.get("/transaction", params={"status": "x"}).status_code == 422
        assert c.get("/nowhere").status_code == 404
    assert time.perf_counter() - started < 10


def test_faults_can_change_between_requests(fresh: Sandbox) -> None:
    with client_for(fresh) as c:
        assert _get(c).status_code == 200
        fresh.faults.rate_limit = 1.0
        assert _get(c).status_code == 429
        fresh.faults.rate_limit = 0.0
        fresh.faults.server_error = 1.0
        assert _get(c).status_code in (500, 502, 503)
        fresh.faults = None
        assert _get(c).status_code == 200


@pytest.mark.slow
def test_the_fault_sequence_is_deterministic_under_the_seed(ledger: Ledger) -> None:
    spec = "rate_limit=0.3,server_error=0.2,not_json=0.1,fault_seed={}"

    def outcomes(seed: int) -> list[int | str]:
        with Sandbox(ledger=ledger, faults=spec.format(seed)) as sb, client_for(sb) as c:
            return [
                "html"
                if r.headers["content-type"].startswith("text/html") and r.status_code == 200
                else r.status_code
                for r in (_get(c) for _ in range(40))
            ]

    first = outcomes(1)
    assert first == outcomes(1)
    assert first != outcomes(2)
    assert {200, 429, "html"} <= set(first)


@pytest.mark.slow
def test_arrivals_add_newer_records_one_per_page(
    fresh: Sandbox, ledger: Ledger, records: list[dict[str, Any]]
) -> None:
    fresh.faults = "arrivals=3"
    # The newest record, hidden ones too (from the index, not from 6,000 parsed bodies).
    newest_ms = ledger.index.get_column("createdAt").max()
    moment = datetime.fromtimestamp(newest_ms // 1000, tz=UTC)
    last = f"{moment:%Y-%m-%dT%H:%M:%S}.{newest_ms % 1000:03d}Z"
    base = len(ledger.export_rows())
    with client_for(fresh) as c:
        totals = [_get(c, limit=2).json()["data"]["total"] for _ in range(5)]
        newest = _get(c, limit=3).json()["data"]["transactions"]
    assert totals == [base, base + 1, base + 2, base + 3, base + 3]
    assert all(r["createdAt"] > last for r in newest)
    assert [r["createdAt"] for r in newest] == sorted(
        (r["createdAt"] for r in newest), reverse=True
    )
    # Arrivals continue the NGN balance chain: no violation beyond the planted ones.
    before = {(v.id, v.field) for v in check_balance_model(records)}
    after = {(v.id, v.field) for v in check_balance_model(fresh.served_records())}
    assert after == before
    # Offset pagination over a growing list repeats records: the failure mode is real.
    fresh.reset()
    fresh.faults = "arrivals=2"
    with client_for(fresh) as c:
        ids = []
        for skip in range(0, 30, 10):
            ids += [r["id"] for r in _get(c, limit=10, skip=skip).json()["data"]["transactions"]]
    # Pages 2 and 3 start 1 and 2 records later than they should: each repeats one record.
    assert len(ids) - len(set(ids)) == 2


@pytest.mark.slow
def test_status_changes_move_records_between_filters(
    fresh: Sandbox, records: list[dict[str, Any]]
) -> None:
    fresh.faults = "status_changes=3,fault_seed=2"
    served = {r["id"]: r for r in records}
    with client_for(fresh) as c:
        verified_before = _get(c, status="verified").json()["data"]["total"]
        for _ in range(4):
            _get(c)
        changed = fresh._store.changed
        assert len(changed) == 3
        now = {r["id"]: r for r in fresh.served_records()}
        moves = collections.Counter()
        for rid in changed:
            old, new = served[rid], now[rid]
            assert old["status"] != new["status"]
            assert new["updatedAt"] > old["updatedAt"]
            assert {k: v for k, v in old.items() if k not in ("status", "updatedAt")} == {
                k: v for k, v in new.items() if k not in ("status", "updatedAt")
            }
            moves[old["status"], new["status"]] += 1
        verified_after = _get(c, status="verified").json()["data"]["total"]
        assert verified_after == verified_before - moves["verified", "successful"]
        for (_, new_status), n in moves.items():
            got, total = fetch_all(c, status=new_status)
            assert sum(1 for r in got if r["id"] in changed) >= n
            assert total == len(got)


@pytest.mark.slow
def test_shuffle_ties_reorders_equal_created_at_records_per_request(
    fresh: Sandbox, records: list[dict[str, Any]]
) -> None:
    counts = collections.Counter(r["createdAt"] for r in records)
    tie_time = next(t for t, n in counts.items() if n >= 2)
    day = tie_time[:10]
    fresh.faults = "shuffle_ties,fault_seed=1"
    with client_for(fresh) as c:
        orders = [
            [
                r["id"]
                for r in _get(c, startDate=day, endDate=day, limit=1000).json()["data"][
                    "transactions"
                ]
            ]
            for _ in range(8)
        ]
    assert all(sorted(o) == sorted(orders[0]) for o in orders)
    assert len({tuple(o) for o in orders}) > 1
    for order in orders:  # only the order inside tie groups changes
        times = {r["id"]: r["createdAt"] for r in records}
        assert [times[i] for i in order] == sorted((times[i] for i in order), reverse=True)


@pytest.mark.slow
def test_shuffle_ties_moves_records_across_page_boundaries(
    fresh: Sandbox, records: list[dict[str, Any]]
) -> None:
    positions = [
        k for k in range(1, len(records)) if records[k]["createdAt"] == records[k - 1]["createdAt"]
    ]
    boundary = positions[len(positions) // 2]  # a tie straddles skip=boundary
    fresh.faults = "shuffle_ties,fault_seed=3"
    seen = set()
    with client_for(fresh) as c:
        for _ in range(12):
            page = _get(c, skip=boundary - 5, limit=5).json()["data"]["transactions"]
            seen.add(page[-1]["id"])
    assert len(seen) > 1


@pytest.mark.slow
def test_tie_groups_straddle_every_page_boundary_and_reshuffle(fresh: Sandbox) -> None:
    """``tie_groups=37`` with ``cap=37``: a group of 2 to 5 across every boundary of the full
    listing's pages, one group of 45 mixed across types, and a new order on every request."""
    fresh.faults = "cap=37,tie_groups=37,big_tie=45,fault_seed=2"
    served = fresh.served_records()
    created = [r["createdAt"] for r in served]
    sizes = collections.Counter(created)
    assert max(sizes.values()) == 45
    big = next(t for t, n in sizes.items() if n == 45)
    kinds = collections.Counter(r["transType"] for r in served if r["createdAt"] == big)
    assert len(kinds) == 4 and max(kinds.values()) <= 37
    straddling = [
        k
        for k in range(37, len(created), 37)
        if created[k - 1] == created[k] and sizes[created[k]] <= 5
    ]
    assert len(straddling) >= 0.9 * (len(created) // 37 - 2)
    assert all(r["createdAt"] <= r["updatedAt"] for r in served)
    boundary = straddling[3]
    with client_for(fresh) as c:
        pages = {
            tuple(
                r["id"]
                for r in _get(c, skip=boundary - 37, limit=37).json()["data"]["transactions"]
            )
            for _ in range(12)
        }
    assert len(pages) > 1  # the group across skip=boundary comes cut differently
    fresh.faults = None
    assert max(collections.Counter(r["createdAt"] for r in fresh.served_records()).values()) < 45


@pytest.mark.slow
@pytest.mark.parametrize("shift", [-5, 1, 14])
def test_date_shift_applies_days_in_another_timezone(
    fresh: Sandbox, records: list[dict[str, Any]], shift: int
) -> None:
    fresh.faults = Faults(date_shift=shift)
    start, end = date(2026, 3, 1), date(2026, 3, 31)
    with client_for(fresh) as c:
        got, total = fetch_all(c, startDate=start.isoformat(), endDate=end.isoformat())
    expected = [r["id"] for r in records if start <= _local_day(r["createdAt"], shift) <= end]
    assert [r["id"] for r in got] == expected and total == len(expected)


def _local_day(iso: str, shift: int) -> date:
    from datetime import datetime

    moment = datetime.fromisoformat(iso.replace("Z", "+00:00")) + timedelta(hours=shift)
    return moment.date()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bounds", "include_start", "include_end"),
    [
        ("inclusive", True, True),
        ("exclusive", False, False),
        ("start_exclusive", False, True),
        ("end_exclusive", True, False),
    ],
)
def test_bounds_modes(
    fresh: Sandbox,
    records: list[dict[str, Any]],
    bounds: str,
    include_start: bool,
    include_end: bool,
) -> None:
    fresh.faults = Faults(bounds=bounds)
    start, end = "2026-04-10", "2026-04-12"
    with client_for(fresh) as c:
        got, _ = fetch_all(c, startDate=start, endDate=end)
    days = {r["createdAt"][:10] for r in got}
    assert ("2026-04-11" in days) and (start in days) == include_start
    assert (end in days) == include_end
    assert days <= {start, "2026-04-11", end}


@pytest.mark.slow
def test_drift_changes_types_not_values(fresh: Sandbox, records: list[dict[str, Any]]) -> None:
    fresh.faults = "drift=0.5,fault_seed=8"
    with client_for(fresh) as c:
        raw = _get(c, limit=1000).content
        again = _get(c, limit=1000).content
    assert raw == again  # deterministic per record
    page = json.loads(raw, parse_float=Decimal)["data"]["transactions"]
    canonical = records[:1000]
    drifted = [r for r in page if "riskScore" in r]
    assert 300 < len(drifted) < 700
    assert any(isinstance(r["toAmount"], str) for r in drifted)
    assert any(isinstance(r["toAmount"], int) for r in drifted)
    assert any("device" in r and set(r["device"]) == {"os", "appVersion"} for r in drifted)
    for r in drifted:
        assert re.fullmatch(r"\d+\.\d\d", str(r["riskScore"]))
    for served, original in zip(page, canonical, strict=True):
        parsed = decimal_money(served)
        for key in ("riskScore", "device"):
            parsed.pop(key, None)
        assert parsed == original


def test_drift_body_keeps_money_exact() -> None:
    body = (
        b'{"_id":"x","toAmount":1500.00,"feeAmount":21.05,"taxAmount":1.58,'
        b'"toBalanceAfterLedger":300.00,"id":"x"}'
    )
    outputs = {drift_body(body, f"id{k}", 0) for k in range(16)}
    assert b'"toAmount":"1500.00"' in b"".join(outputs)
    assert b'"toAmount":1500,' in b"".join(outputs)
    for out in outputs:
        record = parse_record(out)
        assert record["toAmount"] == Decimal("1500.00")
        assert record["feeAmount"] == Decimal("21.05")
        assert record["toBalanceAfterLedger"] == Decimal("300")
