"""``txkit probe`` over real HTTP: a matrix of sandbox settings, the request budget, the
profile file, ``load_profile`` and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import polars as pl
import pytest

from txkit.cli import main
from txkit.fetch.client import tls_context
from txkit.fetch.profile import FINDINGS, Finding
from txkit.probe import ProfileWarning, ServiceProfile, load_profile, probe_service
from txkit.probe.session import ProbeSession, ProbeStopped
from txkit.sandbox import Sandbox, generate_ledger
from txkit.sandbox.ledger import Ledger

KEY = "sk_sandbox_PROBE_distinctive_7f3a9c"


@pytest.fixture(scope="module")
def ledger(ledgers) -> Ledger:
    return ledgers(seed=7, records=20_000)  # the run's cache: any module's of these settings


@pytest.fixture
def sandbox(ledger: Ledger) -> Iterator[Sandbox]:
    with Sandbox(ledger=ledger, secret_key=KEY) as sb:
        yield sb


def run_probe(sb: Sandbox, faults: str | None, **kwargs: Any) -> tuple[ServiceProfile, int]:
    """Probe ``sb`` under ``faults``; returns the profile and the requests the sandbox served."""
    sb.faults = faults
    sb.reset()
    before = sb.request_count
    profile = probe_service(sb.base_url, sb.secret_key, env_file=None, **kwargs)
    return profile, sb.request_count - before


CLEAN: dict[str, Any] = {
    "default_limit": 50,
    "max_limit": 1000,
    "max_skip": None,
    "max_skip_mode": None,
    "order": "createdAt desc",
    "ties_stable": True,
    "total_counts_all_matching": True,
    "date_field": "createdAt",
    "start_inclusive": True,
    "end_inclusive": True,
    "utc_offset_hours": 0,
    "envelope_extras": [],
    "rate_limit": None,
}
DATES = ("date_field", "start_inclusive", "end_inclusive", "utc_offset_hours")

#: (faults, what differs from CLEAN, findings that must be known, not just unknown)
MATRIX: list[tuple[str | None, dict[str, Any], tuple[str, ...]]] = [
    (None, {}, tuple(CLEAN)),
    (
        "cap=37,shuffle_ties,bounds=exclusive,date_shift=1",
        {
            "default_limit": 37,
            "max_limit": 37,
            "ties_stable": False,
            "start_inclusive": False,
            "end_inclusive": False,
            "utc_offset_hours": 1,
        },
        ("max_limit", "ties_stable", *DATES),
    ),
    (
        "bounds=start_exclusive,date_shift=-5",
        {"start_inclusive": False, "utc_offset_hours": -5},
        DATES,
    ),
    (
        "drift=0.3,bounds=end_exclusive,date_shift=14",
        {"end_inclusive": False, "utc_offset_hours": 14},
        (*DATES, "fields_beyond_document"),
    ),
    (
        "date_shift=-12,cap=400",
        {"max_limit": 400, "default_limit": 50, "utc_offset_hours": -12},
        ("max_limit", *DATES),
    ),
    (
        "rate_limit=0.15,retry_after=0,fault_seed=2",
        {"rate_limit": "seen"},
        ("rate_limit", "max_limit", *DATES),
    ),
    (
        "max_skip=3000,envelope_extras",
        {
            "max_skip": 3000,
            "max_skip_mode": "reject",
            "envelope_extras": ["data.limit", "data.page", "requestId"],
        },
        ("max_skip", "max_skip_mode", "envelope_extras", *DATES),
    ),
    (
        "max_skip=2500,max_skip_mode=empty,date_field=updatedAt,bounds=exclusive,date_shift=-5",
        {
            "max_skip": 2500,
            "max_skip_mode": "empty",
            "date_field": "updatedAt",
            "start_inclusive": False,
            "end_inclusive": False,
            "utc_offset_hours": -5,
        },
        ("max_skip", "max_skip_mode", *DATES),
    ),
    ("date_field=updatedAt", {"date_field": "updatedAt"}, DATES),
    (
        # 20 records a page span hours: the windows are thinned by a transType/currency filter
        "cap=20,bounds=start_exclusive,date_shift=-10",
        {"default_limit": 20, "max_limit": 20, "start_inclusive": False, "utc_offset_hours": -10},
        ("max_limit", *DATES),
    ),
    # A bucket of 1 a second (burst 5): the probe's 10 requests meet a 429 unless they take
    # 5 s (rate=10 needed only 0.5 s, and a busy machine saw none). About 5.6 s of waiting.
    ("rate=1", {"rate_limit": "seen"}, ("rate_limit", "max_limit", "ties_stable", *DATES)),
    (
        # groups of 2 to 5 across every page boundary, reshuffled on every request (issue 22)
        "cap=37,tie_groups=37,fault_seed=1",
        {"default_limit": 37, "max_limit": 37, "ties_stable": False},
        ("max_limit", "ties_stable", "largest_tie_group", *DATES),
    ),
]


def check(profile: ServiceProfile, expected: dict[str, Any], must_know: tuple[str, ...]) -> None:
    assert set(profile.findings) == set(FINDINGS)
    for name, want in expected.items():
        finding = profile.findings[name]
        if finding.certainty == "unknown":
            assert name not in must_know, f"{name} unknown: {finding.detail}"
            assert finding.value is None and finding.detail, name
            continue
        if want == "seen":
            assert finding.value and finding.value["responses_429"] > 0, finding
        else:
            assert finding.value == want, f"{name}: {finding} (expected {want!r})"


@pytest.mark.slow
@pytest.mark.parametrize(("faults", "changes", "must_know"), MATRIX, ids=lambda v: str(v)[:40])
def test_matrix(
    sandbox: Sandbox, faults: str | None, changes: dict[str, Any], must_know: tuple[str, ...]
) -> None:
    profile, served = run_probe(sandbox, faults)
    check(profile, {**CLEAN, **changes}, must_know)
    assert served == profile.requests <= 60
    assert profile.base_url == sandbox.base_url
    if faults and "cap=20" in faults:
        assert profile.windows
        assert all(set(w) & {"transType", "currency"} for w in profile.windows)
    largest = profile.findings["largest_tie_group"]
    if faults and "tie_groups" in faults:
        assert largest.value >= 2 and largest.certainty == "measured"
        assert "ties reshuffled (largest group seen" in profile.describe()
    fields = profile.findings["fields_beyond_document"].value
    if faults and "drift" in faults:
        assert set(fields) == {"riskScore", "device.os", "device.appVersion"}
        assert fields["riskScore"]["types"] == ["number"]
        assert fields["device.os"]["types"] == ["string"]
        assert 0.1 < fields["riskScore"]["share"] < 0.5
    else:
        assert fields == {}


@pytest.mark.slow
def test_measured_dates_give_exact_windows(sandbox: Sandbox, ledger: Ledger) -> None:
    """server_window() from a probed profile covers the UTC days asked, and no more than the
    service's own window: checked against the records the service returns."""
    profile, _ = run_probe(sandbox, "bounds=start_exclusive,date_shift=-5")
    first, last = date(2026, 10, 10), date(2026, 10, 12)
    start, end = profile.server_window(first, last)
    headers = {"Authorization": f"Bearer {KEY}"}
    params: dict[str, str | int] = {"startDate": str(start), "endDate": str(end), "limit": 1000}
    body = httpx.get(
        f"{sandbox.base_url}/transaction", params=params, headers=headers, verify=tls_context()
    ).json()
    got = [_ms(r["createdAt"]) for r in body["data"]["transactions"]]
    low, high = profile.served_range(start, end)
    assert got and all(low <= t < high for t in got)
    everything = _served_created(ledger).get_column("createdAt").to_list()
    wanted = [t for t in everything if _day_ms(first) <= t < _day_ms(last + timedelta(days=1))]
    assert set(wanted) <= set(got)
    assert len(got) == sum(low <= t < high for t in everything)


def _served_created(ledger: Ledger) -> pl.DataFrame:
    """``id`` and ``createdAt`` (epoch ms) of the records the ledger serves, from its index:
    the records' own createdAt, without parsing 20,000 bodies (1 s of CPU)."""
    return ledger.index.filter(~pl.col("hidden")).select("id", "createdAt")


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def _day_ms(day: date) -> int:
    return (day.toordinal() - date(1970, 1, 1).toordinal()) * 86_400_000


@pytest.mark.slow
@pytest.mark.parametrize("budget", [2, 5, 9, 20, 33])
def test_budget_never_exceeded(sandbox: Sandbox, budget: int) -> None:
    profile, served = run_probe(sandbox, "cap=37,shuffle_ties", max_requests=budget)
    assert served == profile.requests <= budget
    unknown = [f for f in profile.findings.values() if f.certainty == "unknown"]
    assert all(f.detail and f.value is None for f in unknown)
    if budget <= 9:
        assert any("budget" in f.detail for f in unknown)


@pytest.mark.parametrize(
    ("faults", "retry_after"),
    [
        ("rate_limit=0.5,retry_after=0,fault_seed=4", "0"),
        ("rate=4,burst=2", None),
        ("rate_limit=0.3,retry_after_form=garbage,fault_seed=1", "soon"),
    ],
)
@pytest.mark.slow
def test_budget_counts_429_retries(
    sandbox: Sandbox, faults: str, retry_after: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Backoffs of 20 ms, not 1 s, 2 s, 4 s (8.9 s of the 9.1 s with "soon"): what is counted
    # here is requests, not seconds (the backoff itself: the test below).
    monkeypatch.setenv("TXKIT_BACKOFF_BASE", "0.01")
    profile, served = run_probe(sandbox, faults, max_requests=12)
    assert served == profile.requests <= 12
    seen = profile.findings["rate_limit"].value
    assert seen["responses_429"] >= 2
    assert retry_after is None or seen["retry_after"] == [retry_after]


@pytest.mark.parametrize(("base", "first"), [(None, 1.0), ("0.01", 0.02)])
def test_the_probe_backs_off_as_txkit_backoff_base_says(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, base: str | None, first: float
) -> None:
    """Each 429 without a usable Retry-After doubles the wait: 1 s, 2 s by default."""
    if base is None:
        monkeypatch.delenv("TXKIT_BACKOFF_BASE", raising=False)
    else:
        monkeypatch.setenv("TXKIT_BACKOFF_BASE", base)
    sandbox.faults = "rate_limit=1,retry_after_form=garbage"
    slept: list[float] = []
    with (
        ProbeSession(
            sandbox.base_url, KEY, env_file=None, max_requests=2, sleep=slept.append
        ) as session,
        pytest.raises(ProbeStopped, match="budget"),
    ):
        session.get({"limit": 1})
    # The backoffs, and between them the pause of the pace the first 429 set (0.25 s).
    assert slept[0] == first and slept[-1] == 2 * first and 0 < slept[1] <= 0.25, slept
    assert session.retry_after_values == ["soon", "soon"]


@pytest.mark.slow
def test_too_few_records_near_midnight_is_unknown_with_reason() -> None:
    sparse = generate_ledger(seed=3, records=40)
    with Sandbox(ledger=sparse, faults="bounds=exclusive,date_shift=3") as sb:
        profile = probe_service(sb.base_url, sb.secret_key, env_file=None)
    truth = {"date_field": "createdAt", "start_inclusive": False, "end_inclusive": False,
             "utc_offset_hours": 3}  # fmt: skip
    for name, want in truth.items():
        finding = profile.findings[name]
        assert finding.value == want or (finding.certainty == "unknown" and finding.detail)
    assert any(profile.findings[n].certainty == "unknown" for n in truth)


# -- the profile file and load_profile ----------------------------------------------------


def test_profile_round_trip_and_base_url_match(sandbox: Sandbox, tmp_path: Path) -> None:
    profile, _ = run_probe(sandbox, "cap=37")
    path = profile.save(tmp_path / "nested" / "profile.json")
    text = path.read_text()
    assert KEY not in text
    doc = json.loads(text)
    assert doc["base_url"] == sandbox.base_url and doc["format"] == "txkit-service-profile/1"
    assert list(doc["findings"]) == [n for n in FINDINGS if n in doc["findings"]]
    assert [p.name for p in path.parent.iterdir()] == ["profile.json"]  # no temp file left
    loaded = load_profile(sandbox.base_url + "/", path)
    assert loaded is not None
    assert loaded.findings == profile.findings
    assert loaded.page_size() == 37
    assert loaded.describe().startswith("profile of ") and "pages of 37" in loaded.describe()
    assert "dates on createdAt (incl/incl, UTC+0)" in loaded.describe()
    with pytest.warns(ProfileWarning, match="measured for"):
        assert load_profile("https://api.example.com", path) is None
    assert load_profile(sandbox.base_url, tmp_path / "missing.json") is None


@pytest.mark.parametrize(
    "content", ["{not json", '{"format": "other/1"}', '{"format": "txkit-service-profile/1"}']
)
def test_unreadable_profile_is_ignored_with_a_warning(tmp_path: Path, content: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.warns(ProfileWarning, match="ignored"):
        assert load_profile("http://127.0.0.1:1", path) is None


def test_server_window_needs_known_dates() -> None:
    profile = ServiceProfile(
        "http://127.0.0.1:1",
        datetime(2026, 11, 1),
        {"date_field": Finding(None, "unknown", "no records near midnight")},
    )
    assert profile.page_size() == 1000
    with pytest.raises(ValueError, match="no records near midnight"):
        profile.server_window(date(2026, 10, 1), date(2026, 10, 31))


@pytest.mark.parametrize(
    ("start_inclusive", "end_inclusive", "offset"),
    [(True, True, 0), (False, False, 1), (True, False, -5), (False, True, 14), (True, True, 5.5)],
)
def test_server_window_is_the_smallest_covering(
    start_inclusive: bool, end_inclusive: bool, offset: float
) -> None:
    findings = {
        "date_field": Finding("createdAt", "measured", ""),
        "start_inclusive": Finding(start_inclusive, "measured", ""),
        "end_inclusive": Finding(end_inclusive, "measured", ""),
        "utc_offset_hours": Finding(offset, "measured", ""),
    }
    profile = ServiceProfile("http://127.0.0.1:1", datetime(2026, 11, 1), findings)
    first, last = date(2026, 10, 1), date(2026, 10, 31)
    start, end = profile.server_window(first, last)
    low, high = profile.served_range(start, end)
    assert low <= _day_ms(first) and high >= _day_ms(last + timedelta(days=1))
    one = timedelta(days=1)
    assert profile.served_range(start + one, end)[0] > _day_ms(first)
    assert profile.served_range(start, end - one)[1] < _day_ms(last + one)


# -- the command line -----------------------------------------------------------------------


@pytest.mark.slow
def test_cli_probe_writes_profile_and_never_the_key(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TXKIT_DATA_DIR", raising=False)
    monkeypatch.setenv("TXKIT_BASE_URL", sandbox.base_url)
    monkeypatch.setenv("TXKIT_SECRET_KEY", KEY)
    sandbox.faults = "bounds=end_exclusive,date_shift=1"
    before = sandbox.request_count
    assert main(["probe", "--max-requests", "40"]) == 0
    out, err = capsys.readouterr()
    assert sandbox.request_count - before <= 40
    written = tmp_path / "data" / "service-profile.json"
    for text in (out, err, written.read_text()):
        assert KEY not in text and "PROBE_distinctive" not in text
    assert "end_inclusive" in out and "measured" in out and str(written.name) in out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profile = load_profile(sandbox.base_url)
    assert profile is not None
    assert profile.value("end_inclusive") is False and profile.value("utc_offset_hours") == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--max-requests", "1"], "at least 2"), (["--out", "p.txt"], "must end in .json")],
)
def test_cli_probe_bad_arguments(argv: list[str], message: str, tmp_path: Path) -> None:
    # A fresh process: the CLI tells bad arguments (exit 2) by no request having been sent.
    env = {**os.environ, "TXKIT_BASE_URL": "http://127.0.0.1:1", "TXKIT_SECRET_KEY": KEY}
    done = subprocess.run(
        [sys.executable, "-m", "txkit.cli", "probe", *argv],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert KEY not in done.stderr + done.stdout and not (tmp_path / "data").exists()


def test_cli_probe_rejected_key(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch,
                                capsys: Any, tmp_path: Path) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TXKIT_BASE_URL", sandbox.base_url)
    monkeypatch.setenv("TXKIT_SECRET_KEY", "sk_sandbox_wrong_key_123456")
    assert main(["probe"]) == 1
    err = capsys.readouterr().err
    assert "401" in err and "wrong_key" not in err
    assert not (tmp_path / "data").exists()


# -- a hostile service: a real HTTP server in front of the sandbox --------------------------


class _Front(ThreadingHTTPServer):
    """Forwards to the sandbox; refuses ``limit`` above ``max_limit`` with 422 (naming it)
    and adds envelope keys."""

    daemon_threads = True
    max_limit = 300
    max_skip: int | None = None
    skip_mode = "reject"
    ignore_dates = False
    echo_key = False
    served = 0

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _FrontHandler)
        self.upstream = httpx.Client(base_url=upstream, timeout=30, verify=tls_context())


class _FrontHandler(BaseHTTPRequestHandler):
    server: _Front

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.served += 1
        query = parse_qs(urlsplit(self.path).query)
        cap = self.server.max_skip
        skip = int(query.get("skip", ["0"])[0])
        beyond = cap is not None and skip > cap
        if int(query.get("limit", ["50"])[0]) > self.server.max_limit:
            status = 422
            # A careless service that echoes the caller's key in its message.
            echoed = self.headers["Authorization"] if self.server.echo_key else ""
            message = f"limit must be at most {self.server.max_limit}{echoed}"
            body = json.dumps({"success": False, "message": message}).encode()
        elif beyond and self.server.skip_mode == "reject":
            status = 422
            body = json.dumps({"success": False, "message": f"skip above {cap}"}).encode()
        else:
            headers = {"Authorization": self.headers["Authorization"]}
            path = self.path
            if self.server.ignore_dates:
                kept = {k: v for k, v in query.items() if k not in ("startDate", "endDate")}
                path = "/transaction?" + urlencode(kept, doseq=True)
            upstream = self.server.upstream.get(path, headers=headers)
            status = upstream.status_code
            doc = upstream.json()
            if status == 200:
                doc["requestId"] = "req_1"
                doc["data"]["page"] = 1
                if beyond:
                    doc["data"]["transactions"] = []
            body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def front(sandbox: Sandbox) -> Iterator[_Front]:
    server = _Front(sandbox.base_url)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        server.upstream.close()
        thread.join(timeout=5)


@pytest.mark.slow
def test_refused_large_limit_and_envelope_extras(front: _Front, sandbox: Sandbox) -> None:
    sandbox.faults = "bounds=end_exclusive"
    url = f"http://127.0.0.1:{front.server_address[1]}"
    profile = probe_service(url, KEY, env_file=None, max_requests=50)
    assert front.served == profile.requests <= 50
    max_limit = profile.findings["max_limit"]
    assert max_limit.value == 300 and max_limit.certainty == "inferred"
    assert "limit=5,000 refused (HTTP 422: limit must be at most 300)" in max_limit.detail
    assert profile.findings["envelope_extras"].value == ["data.page", "requestId"]
    assert profile.value("end_inclusive") is False and profile.value("start_inclusive") is True
    assert profile.base_url == url


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["reject", "empty"])
@pytest.mark.parametrize("cap", [3000, 12_345])
def test_max_skip_both_modes(front: _Front, sandbox: Sandbox, mode: str, cap: int) -> None:
    sandbox.faults = None
    front.max_limit, front.max_skip, front.skip_mode = 10_000, cap, mode
    url = f"http://127.0.0.1:{front.server_address[1]}"
    profile = probe_service(url, KEY, env_file=None)
    assert front.served == profile.requests <= 60
    assert profile.findings["max_skip"] == Finding(
        cap, "measured", f"skip={cap:,} served one record, skip={cap + 1:,} did not"
    )
    assert profile.value("max_skip_mode") == mode
    if mode == "reject":
        assert f"skip above {cap}" in profile.findings["max_skip_mode"].detail
    assert profile.value("max_limit") == 1000 and profile.value("date_field") == "createdAt"


@pytest.mark.slow
def test_query_window_for_updated_at_returns_every_created_record(
    sandbox: Sandbox, ledger: Ledger
) -> None:
    """Against a service filtering on updatedAt, the window query_window() gives, filtered
    on createdAt locally, holds exactly the records created in the UTC days asked."""
    profile, _ = run_probe(sandbox, "date_field=updatedAt,bounds=end_exclusive,date_shift=1")
    assert profile.value("date_field") == "updatedAt" and not profile.filters_created
    first, last = date(2026, 10, 20), date(2026, 10, 24)
    start, end = profile.query_window(first, last)
    assert end is None and start is not None
    headers = {"Authorization": f"Bearer {KEY}"}
    got: dict[str, int] = {}
    skip = 0
    while True:
        params: dict[str, str | int] = {"startDate": str(start), "skip": skip, "limit": 1000}
        body = httpx.get(
            f"{sandbox.base_url}/transaction", params=params, headers=headers, verify=tls_context()
        )
        page = body.json()["data"]["transactions"]
        got.update((r["id"], _ms(r["createdAt"])) for r in page)
        skip += len(page)
        if not page:
            break
    low, high = _day_ms(first), _day_ms(last + timedelta(days=1))
    mine = {i for i, t in got.items() if low <= t < high}
    served = _served_created(ledger).filter(pl.col("createdAt").is_between(low, high, "left"))
    truth = set(served.get_column("id"))
    assert mine == truth and len(truth) > 100


def test_readings_that_agree_on_every_window_are_inferred(sandbox: Sandbox) -> None:
    """An exclusive start at UTC+12 and an inclusive one at UTC-12 (with the other end the
    other way) select the same records for every query: one is reported, inferred, and
    computes the service's windows exactly."""
    profile, served = run_probe(sandbox, "bounds=start_exclusive,date_shift=12")
    assert served <= 60
    for name in ("start_inclusive", "end_inclusive", "utc_offset_hours"):
        finding = profile.findings[name]
        assert finding.certainty == "inferred" and "same window for every query" in finding.detail
    start, end = date(2026, 10, 10), date(2026, 10, 12)
    hour = 3_600_000
    truth = (_day_ms(start) + 24 * hour - 12 * hour, _day_ms(end) + 24 * hour - 12 * hour)
    assert profile.served_range(start, end) == truth


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("createdAt", (date(2026, 10, 1), date(2026, 10, 31))),
        ("updatedAt", (date(2026, 10, 1), None)),
        ("paidAt", (None, None)),
    ],
)
def test_query_window_per_date_field(field: str, expected: tuple[date | None, date | None]) -> None:
    findings = {
        "date_field": Finding(field, "measured", ""),
        "start_inclusive": Finding(True, "measured", ""),
        "end_inclusive": Finding(True, "measured", ""),
        "utc_offset_hours": Finding(0, "measured", ""),
        "max_skip": Finding(10_000, "measured", ""),
        "max_skip_mode": Finding("reject", "measured", ""),
    }
    profile = ServiceProfile("http://127.0.0.1:1", datetime(2026, 11, 1), findings)
    assert profile.query_window(date(2026, 10, 1), date(2026, 10, 31)) == expected
    assert profile.filters_created is (field == "createdAt")
    assert f"dates on {field} (incl/incl, UTC+0)" in profile.describe()
    assert "max skip 10,000 (reject)" in profile.describe()


@pytest.mark.slow
def test_a_service_ignoring_date_filters_is_found_out(front: _Front, sandbox: Sandbox) -> None:
    sandbox.faults = None
    front.max_limit, front.ignore_dates = 10_000, True
    url = f"http://127.0.0.1:{front.server_address[1]}"
    profile = probe_service(url, KEY, env_file=None)
    assert front.served == profile.requests <= 60
    for name in ("date_field", "start_inclusive", "end_inclusive", "utc_offset_hours"):
        finding = profile.findings[name]
        assert finding.certainty == "unknown" and "ignore startDate/endDate" in finding.detail
    assert profile.value("max_limit") == 1000 and profile.value("order") == "createdAt desc"


def test_a_key_echoed_by_the_service_never_reaches_the_profile(
    front: _Front, sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.faults = None
    front.echo_key = True
    url = f"http://127.0.0.1:{front.server_address[1]}"
    profile = probe_service(url, KEY, env_file=None, max_requests=8)
    assert "limit must be at most 300" in profile.findings["max_limit"].detail
    saved = profile.save(tmp_path / "p.json").read_text()
    for text in (profile.table(), saved, repr(profile)):
        assert KEY not in text and "PROBE_distinctive" not in text
