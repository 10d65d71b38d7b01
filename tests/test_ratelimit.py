"""Rate limits as one shared budget, against a real token-bucket server; every Retry-After form."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from tests.hostile import HostileServer, Reply, TokenBucket, json_reply, ok_page, paged
from txkit import Client, RetryPolicy
from txkit.errors import RateLimitedError
from txkit.fetch.load import load_transactions
from txkit.fetch.pages import ExportStats
from txkit.fetch.ratelimit import SharedLimiter, parse_retry_after

ROOT = Path(__file__).resolve().parent.parent
KEY = "rate-limit-test-key-0123456789"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("3", 3.0),
        ("0", 0.0),
        (" 1.5 ", 1.5),
        ("-1", None),
        ("soon", None),
        ("", None),
        ("1e3", None),
        ("nan", None),
        ("Wed, 99 Foo 2026 99:99:99 GMT", None),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),  # in the past: now
        (None, None),
    ],
)
def test_parse_retry_after(text: str | None, seconds: float | None) -> None:
    assert parse_retry_after(text) == seconds


def test_parse_retry_after_http_date() -> None:
    now = time.time()
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30, 1)
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37", now=now) == 0.0  # no zone: UTC


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_limiter_cuts_once_per_event_and_recovers() -> None:
    clock = FakeClock()
    limiter = SharedLimiter(clock=clock, sleep=clock.sleep)
    sent = []
    for _ in range(40):  # 40 requests in 1 s: unlimited until the first 429
        sent.append(limiter.acquire())
        clock.now += 0.025
    assert limiter.rate is None and not clock.slept
    limiter.throttled(sent[-1], 1.0)
    assert limiter.rate == pytest.approx(0.8 * 40, rel=0.05)
    first = limiter.rate
    limiter.throttled(sent[-2], 1.0)  # sent before the cut: the same event
    assert limiter.rate == first and limiter.cuts == 1
    # Paced at the new rate: 10 requests take 10 / rate seconds.
    start = clock.now
    for _ in range(10):
        limiter.acquire()
    assert clock.now - start == pytest.approx(10 / first, rel=0.2)
    # A 429 of a request sent after the cut cuts again.
    limiter.throttled(limiter.acquire(), None)
    assert limiter.cuts == 2 and limiter.rate < first
    low = limiter.rate
    clock.now += 30  # requests keep succeeding: the rate grows back past where it was cut
    limiter.acquire()
    assert limiter.rate > first > low


def test_long_retry_after_pauses_every_worker() -> None:
    clock = FakeClock()
    limiter = SharedLimiter(clock=clock, sleep=clock.sleep)
    limiter.throttled(limiter.acquire(), 20.0)
    start = clock.now
    limiter.acquire()
    assert clock.now - start >= 20.0


@pytest.mark.slow
@pytest.mark.serial  # an upper bound on the time waited
@pytest.mark.parametrize(
    "header",
    ["2", "0", "soon", "-5", "Thu, 01 Jan 1970 00:00:00 GMT", None],
)
def test_every_retry_after_form_is_retried(header: str | None) -> None:
    calls = []

    def script(seen) -> Reply:
        calls.append(seen)
        if len(calls) == 1:
            headers = {} if header is None else {"Retry-After": header}
            return json_reply({"success": False, "message": "slow down"}, 429, **headers)
        return ok_page(1)

    policy = RetryPolicy(max_retries=3, backoff_base=0.05, backoff_cap=0.1)
    with HostileServer(script) as server, Client(server.base_url, KEY, retry=policy) as c:
        started = time.monotonic()
        c.get_transactions({})
        waited = time.monotonic() - started
    assert len(calls) == 2 and c.retry_causes == {"429": 1}
    if header == "2":
        assert waited >= 2.0
    else:
        assert waited < 1.5


def run_export(server: HostileServer, shared: bool) -> tuple[float, ExportStats, Client]:
    stats = ExportStats()
    # Retries enough that no page runs out: the per-worker run's 429 share is 81-86 %, and
    # with 30 a page ran out of them now and then (seen in CI: RateLimitedError at skip=600).
    # With 300 (0.86**301 * 60 pages < 1e-18) never; retries cost nothing when not needed.
    policy = RetryPolicy(max_retries=300)
    with Client(server.base_url, KEY, retry=policy, shared_rate_limit=shared) as c:
        started = time.monotonic()
        # One pass: the ideal below counts 60 requests (the confirming re-read would add 60).
        df = load_transactions(
            c, page_size=50, concurrency=8, progress=False, stats=stats, confirm=False
        )
        seconds = time.monotonic() - started
    assert df.height == 60 * 50 and df["id"].n_unique() == df.height
    return seconds, stats, c


@pytest.mark.serial  # measures how many requests a rate limit turned away
@pytest.mark.slow
def test_shared_budget_against_a_token_bucket() -> None:
    """rate 20/s, burst 5, 60 pages: the shared limiter sends fewer 429s than per-worker
    retries (about a fifth as many, here and in the 200-page benchmark), keeps
    ``concurrency`` as a maximum, and its rate settles near the service's instead of
    collapsing (the time it takes is measured in benchmarks/bench_ratelimit.py)."""
    shares = {}
    for shared in (False, True):
        # Retry-After to the millisecond (``0.05``), not whole seconds: a worker of the
        # per-worker run waited 1 s per 429 (3.8-6.9 s against 2.9-3.0 s now). Its share of
        # 429s rose from 27-40 % to 81-83 %; the shared run's stayed 10-17 %.
        bucket = TokenBucket(20, 5, paged(60 * 50, 50), retry_after=lambda wait: f"{wait:.3f}")
        with HostileServer(bucket) as server:
            seconds, stats, c = run_export(server, shared)
            assert server.peak_concurrency <= 8
        assert bucket.limited == stats.retries == c.retry_causes.get("429", 0)
        shares[shared] = bucket.limited / stats.requests
        print(
            f"shared={shared}: {seconds:.2f} s, {stats.requests} requests, {shares[shared]:.0%} 429"
        )
        if shared:
            assert c.limiter is not None and c.limiter.rate is not None
            assert c.limiter.rate >= 20 / 4  # cut near 20/s, not down to its floor (0.5/s)
    # The 10 % target is the benchmark's; under load (CI beside other jobs) 18 % was seen here.
    assert shares[True] <= 0.3 and shares[True] < shares[False]


@pytest.mark.slow
def test_retry_after_garbage_in_the_cli_is_exit_1_not_2(tmp_path: Path) -> None:
    reply = json_reply({"success": False, "message": "Too many"}, 429, **{"Retry-After": "soon"})
    with HostileServer(lambda seen: reply) as server:
        base = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
        env = {
            "PYTHONPATH": str(ROOT),
            "TXKIT_BASE_URL": server.base_url,
            "TXKIT_SECRET_KEY": KEY,
            "TXKIT_MAX_RETRIES": "1",
            "TXKIT_BACKOFF_BASE": "0.01",  # the one backoff waited 0.25-0.5 s
        }
        done = subprocess.run(
            [sys.executable, "-m", "txkit.cli", "export", "-o", "x.parquet"],
            env=base | env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stderr
    assert "RateLimitedError" in done.stderr and "ValueError" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_retry_after_too_long_fails_with_rate_limited() -> None:
    reply = json_reply({"success": False, "message": "quota"}, 429, **{"Retry-After": "86400"})
    with (
        HostileServer(lambda seen: reply) as server,
        Client(server.base_url, KEY) as c,
        pytest.raises(RateLimitedError, match="429"),
    ):
        c.get_transactions({})


@pytest.fixture
def limited_sandbox(sandboxes):
    with sandboxes.clean(seed=4, records=1_500) as box:  # a full bucket, no faults left over
        yield box


@pytest.mark.serial  # measures how many requests a rate limit turned away
@pytest.mark.slow
@pytest.mark.parametrize("form", ["seconds", "decimal", "date", "negative", "garbage", "none"])
def test_sandbox_rate_fault_every_retry_after_form(limited_sandbox, form: str) -> None:
    """The sandbox's token bucket (rate=30, burst 5) in each Retry-After form: the export is
    complete, only 429s are retried, and most requests get through the first time."""
    box = limited_sandbox
    # 30/s: the export's 60-odd requests take 2 s instead of 3 s at 20/s; 429s were still 7-9
    # of them (10-13 %), and without the shared limiter 47-85 % (as at 20/s), so the share
    # below still tells the two apart. At 40/s one run saw a single 429: too close to none.
    box.faults = f"rate=30,retry_after_form={form}"
    stats = ExportStats()
    policy = RetryPolicy(max_retries=30, backoff_base=0.2, backoff_cap=2.0)
    with Client(box.base_url, box.secret_key, env_file=None, retry=policy) as c:
        started = time.monotonic()
        df = load_transactions(c, page_size=50, progress=False, stats=stats)
        seconds = time.monotonic() - started
    expected = len(box.ledger.export_rows())
    assert df.height == expected and df["id"].n_unique() == expected
    # The form was sent and read: without a 429 this test would prove nothing about it.
    assert c.retry_causes.get("429", 0) > 0, (form, c.retry_causes)
    assert set(c.retry_causes) == {"429"}
    share = c.retry_causes["429"] / stats.requests
    print(f"{form}: {seconds:.2f} s, {stats.requests} requests, {share:.0%} 429")
    assert share <= 0.4
    assert c.limiter is not None and (c.limiter.rate is None or c.limiter.rate >= 30 / 4)
