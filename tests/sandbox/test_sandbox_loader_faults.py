"""Faults the loader must survive (issues 11 and 16), each over real HTTP.

Date bounds at either end and day offsets of -12 to +14 hours against a brute-force filter,
offset caps in both modes, status swaps during an export, a token-bucket rate limit, every
form of ``Retry-After``, extra envelope keys, and date filters on ``updatedAt``.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import pytest
from sandbox_helpers import client_for, fetch_all

from txkit.sandbox import Faults, Sandbox, generate_ledger
from txkit.sandbox.faults import NEXT_STATUS, retry_after_value
from txkit.sandbox.ledger import Ledger, parse_record

_ENDS = {
    "inclusive": (True, True),
    "exclusive": (False, False),
    "start_exclusive": (False, True),
    "end_exclusive": (True, False),
}


@functools.cache
def _moment(iso: str) -> datetime:
    """An ISO timestamp as an aware datetime, each string parsed once: the brute force reads
    20,000 of them for each of 216 settings (4 s of CPU when parsed every time)."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _expected(
    records: list[dict[str, Any]],
    start: date,
    end: date,
    *,
    shift: int = 0,
    bounds: str = "inclusive",
    field: str = "createdAt",
) -> list[str]:
    """Brute force: the ids whose ``field``, read as a day in UTC+shift, is in the window."""
    with_start, with_end = _ENDS[bounds]
    out = []
    for r in records:
        day = (_moment(r[field]) + timedelta(hours=shift)).date()
        after_start = start < day or (with_start and day == start)
        before_end = day < end or (with_end and day == end)
        if after_start and before_end:
            out.append(r["id"])
    return out


def _ids(c: httpx.Client, **params: Any) -> tuple[list[str], int]:
    got, total = fetch_all(c, **params)
    return [r["id"] for r in got], total


# -- date bounds and offsets --------------------------------------------------------------------

_WINDOWS = [(date(2026, 3, 9), date(2026, 3, 11)), (date(2026, 6, 1), date(2026, 6, 1))]
#: A window of the dense ledger: about 700 records a day, records in every hour.
_DENSE_WINDOW = (date(2026, 3, 10), date(2026, 3, 12))


@pytest.fixture(scope="module")
def dense() -> Iterator[Sandbox]:
    """A sandbox over one month of 20,000 records: every UTC hour holds records."""
    ledger = generate_ledger(seed=5, records=20_000, start_month="2026-03", months=1)
    with Sandbox(ledger=ledger) as sb:
        yield sb


@pytest.fixture(scope="module")
def dense_records(dense: Sandbox) -> list[dict[str, Any]]:
    """The served records a day or less from the dense window, the only ones a day offset of
    -12 to +14 hours can bring into it (the brute force ran over the 20,000 for each of the
    216 settings: 3 s of CPU). The oracle is no weaker: a record left out that the service
    returns makes the answers differ. Only these are parsed, in export order, chosen by the
    index's ``createdAt`` (parsing the 20,000 to keep 3,500 was 0.6 s of CPU)."""
    start, end = _DENSE_WINDOW
    low, high = start - timedelta(days=1), end + timedelta(days=2)
    ledger = dense.ledger
    created = ledger.index.get_column("createdAt").to_list()  # epoch ms, by chronological row
    low_ms, high_ms = (int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()) * 1000
                       for d in (low, high))  # fmt: skip
    rows = [row for row in ledger.export_rows() if low_ms <= created[row] < high_ms]
    near = [parse_record(ledger.body(row)) for row in rows]
    assert all(low.isoformat() <= r["createdAt"] < high.isoformat() for r in near)
    assert len(near) > 3_000  # about 700 a day
    return near


@pytest.mark.slow
@pytest.mark.parametrize("bounds", list(_ENDS))
def test_every_bound_and_offset_matches_a_brute_force_filter(
    dense: Sandbox, dense_records: list[dict[str, Any]], bounds: str
) -> None:
    start, end = _DENSE_WINDOW
    results = set()
    try:
        with client_for(dense) as c:
            for shift in range(-12, 15):
                dense.faults = Faults(date_shift=shift, bounds=bounds)
                got, total = _ids(c, startDate=start.isoformat(), endDate=end.isoformat())
                want = _expected(dense_records, start, end, shift=shift, bounds=bounds)
                assert got == want, shift
                assert total == len(want)
                results.add(tuple(got))
    finally:
        dense.faults = None
    # Each offset moves records across the window's edges: every answer differs.
    assert len(results) == 27


@pytest.mark.slow
def test_the_bound_matrix_is_discriminating(dense_records: list[dict[str, Any]]) -> None:
    """Every (bounds, offset) setting that selects a different span of time selects
    different records from the window: the matrix test above cannot pass by accident."""
    start, end = _DENSE_WINDOW
    settings = list(itertools.product(_ENDS, range(-12, 15)))
    spans = set()
    for bounds, shift in settings:
        with_start, with_end = _ENDS[bounds]
        low = datetime(start.year, start.month, start.day) - timedelta(hours=shift)
        high = datetime(end.year, end.month, end.day) + timedelta(days=1, hours=-shift)
        spans.add(
            (
                low + timedelta(days=0 if with_start else 1),
                high - timedelta(days=0 if with_end else 1),
            )
        )
    answers = {
        tuple(_expected(dense_records, start, end, shift=shift, bounds=bounds))
        for bounds, shift in settings
    }
    # start_exclusive at +12..+14 h spans the same hours as end_exclusive at -12..-10 h.
    assert len(spans) == 105
    assert len(answers) == len(spans)


@pytest.mark.slow
@pytest.mark.parametrize("shift", [-12, 1, 14])
def test_bounds_and_offsets_on_the_small_ledger(
    fresh: Sandbox, records: list[dict[str, Any]], shift: int
) -> None:
    with client_for(fresh) as c:
        for bounds, (start, end) in itertools.product(_ENDS, _WINDOWS):
            fresh.faults = Faults(date_shift=shift, bounds=bounds)
            got, total = _ids(c, startDate=start.isoformat(), endDate=end.isoformat())
            want = _expected(records, start, end, shift=shift, bounds=bounds)
            assert got == want and total == len(want), (bounds, start)


# -- offset caps --------------------------------------------------------------------------------


def test_max_skip_rejects_past_the_limit_with_a_message_naming_it(fresh: Sandbox) -> None:
    fresh.faults = "max_skip=200"
    with client_for(fresh) as c:
        at_limit = c.get("/transaction", params={"skip": 200, "limit": 50})
        past = c.get("/transaction", params={"skip": 201, "limit": 50})
    assert at_limit.status_code == 200 and len(at_limit.json()["data"]["transactions"]) == 50
    assert past.status_code == 422
    body = past.json()
    assert body["success"] is False
    assert "skip must be at most 200" in body["message"] and "201" in body["message"]


def test_max_skip_empty_mode_gives_empty_pages_with_the_real_total(
    fresh: Sandbox, records: list[dict[str, Any]]
) -> None:
    fresh.faults = "max_skip=300,max_skip_mode=empty"
    with client_for(fresh) as c:
        first = c.get("/transaction", params={"skip": 0, "limit": 100}).json()["data"]
        inside = c.get("/transaction", params={"skip": 300, "limit": 100}).json()["data"]
        past = c.get("/transaction", params={"skip": 301, "limit": 100})
    assert first["total"] == len(records)
    assert [r["id"] for r in inside["transactions"]] == [r["id"] for r in records[300:400]]
    assert past.status_code == 200
    assert past.json()["data"] == {"transactions": [], "total": len(records)}


# -- swaps --------------------------------------------------------------------------------------


def _status_of(records: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {r["id"]: (r["status"], r["updatedAt"]) for r in records}


@pytest.mark.slow
@pytest.mark.parametrize(("source", "target"), [("pending", "verified"), ("initiated", "pending")])
def test_swaps_move_one_record_in_and_one_out_per_request(
    fresh: Sandbox, source: str, target: str
) -> None:
    fresh.faults = f"swaps={source}:{target},swap_count=3,fault_seed=2"
    before = _status_of(fresh.served_records())
    totals = []
    with client_for(fresh) as c:
        for _ in range(5):
            data = c.get("/transaction", params={"status": target, "limit": 5}).json()["data"]
            totals.append(data["total"])
    served = fresh.served_records()
    after = _status_of(served)
    changed = {i: (before[i], after[i]) for i in before if before[i] != after[i]}
    entered = [i for i, ((s, _), (t, _)) in changed.items() if (s, t) == (source, target)]
    left = [i for i, ((s, _), (t, _)) in changed.items() if (s, t) == (target, NEXT_STATUS[target])]
    assert len(entered) == 3 and len(left) == 3 and len(changed) == 6
    # Each change moved updatedAt past every record's createdAt (it happened "now").
    newest = max(r["createdAt"] for r in served)
    assert all(after[i][1] > newest for i in changed)
    # One in, one out: the filter's total is unchanged, while its records are not the same.
    assert len(set(totals)) == 1
    with client_for(fresh) as c:
        now, _ = _ids(c, status=target)
    first = {i for i, (s, _) in before.items() if s == target}
    assert set(now) == (first - set(left)) | set(entered) != first


@pytest.mark.slow
def test_swaps_are_deterministic_under_the_fault_seed(ledger: Ledger) -> None:
    def run(seed: int) -> set[tuple[str, str]]:
        with Sandbox(ledger=ledger, faults=f"swaps=pending:verified,fault_seed={seed}") as sb:
            with client_for(sb) as c:
                for _ in range(4):
                    c.get("/transaction", params={"status": "verified", "limit": 10})
            return {(r["id"], r["status"]) for r in sb.served_records()}

    assert run(1) == run(1)
    assert run(1) != run(2)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("swaps=pending", "'swaps' needs FROM:TO"),
        ("swaps=pending:pending", "'swaps' needs FROM:TO"),
        ("swaps=pending:failed", "TO one of initiated, ongoing, pending, processing, verified"),
        ("swaps=paid:verified", "'swaps' needs FROM:TO"),
        ("max_skip=-1", "'max_skip' needs a non-negative integer"),
        ("max_skip_mode=silent", "'max_skip_mode' needs one of reject, empty"),
        ("rate=-2", "'rate' needs a number of requests per second"),
        ("burst=0", "'burst' needs an integer of at least 1"),
        ("retry_after_form=later", "'retry_after_form' needs one of seconds, decimal, date"),
        ("date_field=paidAt", "'date_field' needs one of createdAt, updatedAt"),
        ("envelope_extras=perhaps", "'envelope_extras' needs true or false"),
    ],
)
def test_bad_loader_fault_specs(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Faults.parse(spec)


def test_new_faults_round_trip_through_their_spec() -> None:
    spec = (
        "rate=20,burst=3,retry_after_form=date,max_skip=100,max_skip_mode=empty,"
        "swaps=pending:verified,swap_count=4,date_field=updatedAt,envelope_extras"
    )
    faults = Faults.parse(spec)
    assert faults.rate == 20.0 and faults.burst == 3 and faults.retry_after_form == "date"
    assert faults.max_skip == 100 and faults.max_skip_mode == "empty"
    assert faults.swap_statuses == ("pending", "verified") and faults.swap_count == 4
    assert faults.date_field == "updatedAt" and faults.envelope_extras is True
    assert Faults.parse(str(faults)) == faults and faults.active
    for item in ("rate=R", "max_skip=N", "swaps=FROM:TO", "retry_after_form=", "envelope_extras"):
        assert item in Faults.ACCEPTED


# -- rate limit and Retry-After -----------------------------------------------------------------


@pytest.mark.slow
def test_rate_allows_a_burst_of_five_then_429_with_retry_after(fresh: Sandbox) -> None:
    fresh.faults = "rate=2,retry_after_form=decimal"
    with client_for(fresh) as c:
        codes = [c.get("/transaction", params={"limit": 1}).status_code for _ in range(7)]
        assert codes[:5] == [200] * 5 and codes[5:] == [429, 429]
        limited = c.get("/transaction", params={"limit": 1})
        wait = float(limited.headers["retry-after"])
        assert 0 < wait <= 0.5
        assert limited.json()["message"].startswith("Rate limit exceeded")
        time.sleep(wait + 0.02)
        assert c.get("/transaction", params={"limit": 1}).status_code == 200


@pytest.mark.slow
@pytest.mark.serial  # counts requests served in 1.5 s
def test_rate_holds_the_request_rate_over_time(fresh: Sandbox) -> None:
    fresh.faults = "rate=20"
    ok = limited = 0
    with client_for(fresh) as c:
        started = time.monotonic()
        while time.monotonic() - started < 1.5:
            response = c.get("/transaction", params={"limit": 1})
            if response.status_code == 200:
                ok += 1
            else:
                assert response.status_code == 429
                assert response.headers["retry-after"] == "1"  # integer seconds, rounded up
                limited += 1
        elapsed = time.monotonic() - started
    assert limited > 0
    assert 5 + 20 * elapsed - 3 <= ok <= 5 + 20 * elapsed + 1


@pytest.mark.slow
@pytest.mark.parametrize("form", ["seconds", "decimal", "date", "negative", "garbage", "none"])
def test_every_retry_after_form(fresh: Sandbox, form: str) -> None:
    fresh.faults = f"rate_limit=1,retry_after=2,retry_after_form={form}"
    with client_for(fresh) as c:
        response = c.get("/transaction", params={"limit": 1})
    assert response.status_code == 429
    value = response.headers.get("retry-after")
    if form in ("seconds", "decimal"):
        assert value == "2"
    elif form == "date":
        assert value is not None and value.endswith(" GMT")
        wait = (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
        assert 0.5 < wait <= 3.1
    elif form == "negative":
        assert value == "-1"
    elif form == "garbage":
        assert value == "soon"
    else:
        assert value is None


def test_retry_after_values() -> None:
    assert retry_after_value("seconds", 0.05) == "1"
    assert retry_after_value("seconds", 0) == "0"
    assert retry_after_value("seconds", 3) == "3"
    assert retry_after_value("decimal", 0.05) == "0.05"
    assert retry_after_value("decimal", 1.25) == "1.25"
    assert retry_after_value("date", 1.2, now=1_700_000_000.5) == "Tue, 14 Nov 2023 22:13:22 GMT"
    assert math.isclose(
        parsedate_to_datetime(retry_after_value("date", 30, now=0) or "").timestamp(), 30
    )


# -- envelope extras ----------------------------------------------------------------------------


def test_envelope_extras_add_request_id_page_and_limit(
    fresh: Sandbox, records: list[dict[str, Any]]
) -> None:
    fresh.faults = "envelope_extras"
    with client_for(fresh) as c:
        response = c.get("/transaction", params={"skip": 40, "limit": 20})
        default = c.get("/transaction", params={"limit": 2000})
    body = response.json()
    assert body["requestId"] == response.headers["x-request-id"]
    assert list(body) == ["success", "message", "requestId", "data"]
    data = body["data"]
    assert (data["page"], data["limit"], data["total"]) == (3, 20, len(records))
    assert [r["id"] for r in data["transactions"]] == [r["id"] for r in records[40:60]]
    assert default.json()["data"]["limit"] == 1000  # the page size the service applies


# -- date filters on updatedAt ------------------------------------------------------------------


def test_records_are_updated_days_after_creation(records: list[dict[str, Any]]) -> None:
    late = [r for r in records if (_moment(r["updatedAt"]) - _moment(r["createdAt"])).days >= 1]
    assert len(late) > 20
    days = [(_moment(r["updatedAt"]) - _moment(r["createdAt"])).days for r in late]
    assert max(days) >= 7 and sum(d >= 2 for d in days) > 10


@pytest.mark.slow
@pytest.mark.parametrize(("shift", "bounds"), [(0, "inclusive"), (1, "end_exclusive")])
def test_date_field_updated_at_filters_on_updated_at(
    fresh: Sandbox, records: list[dict[str, Any]], shift: int, bounds: str
) -> None:
    fresh.faults = Faults(date_field="updatedAt", date_shift=shift, bounds=bounds)
    reversed_ids = {r["id"] for r in records if r["status"] == "reversed"}
    differ = 0
    with client_for(fresh) as c:
        for start, end in [
            (date(2026, 3, 1), date(2026, 3, 31)),
            (date(2026, 6, 1), date(2026, 6, 30)),
            (date(2026, 10, 1), date(2026, 10, 31)),
        ]:
            params = {"startDate": start.isoformat(), "endDate": end.isoformat()}
            got, total = _ids(c, **params)
            want = _expected(records, start, end, shift=shift, bounds=bounds, field="updatedAt")
            assert got == want and total == len(want)
            created = _expected(records, start, end, shift=shift, bounds=bounds)
            differ += set(got) != set(created)
            filtered, _ = _ids(c, **params, status="reversed")
            assert filtered == [i for i in want if i in reversed_ids]
    assert differ == 3  # the difference is observable in every month


@pytest.mark.slow
def test_date_field_follows_status_changes(fresh: Sandbox) -> None:
    """A record changed during the export is found on its new updatedAt's day."""
    fresh.faults = "status_changes=2,date_field=updatedAt"
    with client_for(fresh) as c:
        c.get("/transaction", params={"limit": 1})
        c.get("/transaction", params={"limit": 1})
        changed = {r["id"]: r for r in fresh.served_records() if r["id"] in fresh._store.changed}
        assert len(changed) == 2
        for record in changed.values():
            day = record["updatedAt"][:10]
            got, _ = _ids(c, startDate=day, endDate=day)
            assert record["id"] in got
