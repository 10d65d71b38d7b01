"""Rate-limit benchmark: the shared, adaptive budget beside per-worker retries, in one run.

A service allows ``--rate`` requests a second (token bucket, burst 5, 429 with ``Retry-After``
past it). A 200-page export therefore takes at least ``200 / rate`` seconds (the ideal: 10 s
at 20 requests/s). Each mode runs the same export ``--repeat`` times, alternating, and prints
its median time as a ratio of the ideal and its share of 429 answers among all requests:

* per-worker retries (``Client(shared_rate_limit=False)``): each of the 8 workers waits its
  own ``Retry-After`` and tries again, as txkit did before;
* shared budget (the default): one :class:`txkit.fetch.ratelimit.SharedLimiter` for all workers.

Targets: at most 1.3x the ideal, at most 10 % of requests answered 429.

The service is the sandbox with the ``rate=R`` fault when this sandbox has it, else the
token-bucket server of the test suite (``tests/hostile.py``), a real HTTP server on loopback.

    python benchmarks/bench_ratelimit.py            # rate 20, 200 pages of 50, 3 runs each
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from txkit import Client, RetryPolicy  # noqa: E402
from txkit.fetch.load import load_transactions  # noqa: E402
from txkit.fetch.pages import ExportStats  # noqa: E402

PAGE = 50


@contextlib.contextmanager
def service(rate: float, pages: int) -> Iterator[tuple[str, str, str, int]]:
    """Yield (base URL, key, what it is, rows) of a rate-limited service of ``pages`` pages."""
    from txkit.sandbox.faults import Faults

    if "rate" in Faults.__dataclass_fields__:
        from txkit.sandbox import Sandbox, generate_ledger

        ledger = generate_ledger(seed=3, records=pages * PAGE)
        with Sandbox(ledger=ledger, faults=f"rate={rate:g}") as box:
            rows = len(ledger.export_rows())
            yield box.base_url, box.secret_key, f"sandbox --faults rate={rate:g}", rows
        return
    from tests.hostile import HostileServer, TokenBucket, paged

    with HostileServer(TokenBucket(rate, 5, paged(pages * PAGE, PAGE))) as server:
        what = f"token-bucket server {rate:g}/s burst 5"
        yield server.base_url, "bench-key-0123456789", what, pages * PAGE


def export(base_url: str, key: str, shared: bool) -> tuple[float, int, int, int]:
    """One export: (seconds, rows, requests, 429 answers)."""
    stats = ExportStats()
    policy = RetryPolicy(max_retries=30)
    with Client(base_url, key, env_file=None, retry=policy, shared_rate_limit=shared) as c:
        started = time.perf_counter()
        # One pass (confirm=False): this measures the limiter, and the ideal counts 200 requests;
        # the confirming re-read would add one request per page at the same rate.
        df = load_transactions(c, page_size=PAGE, progress=False, stats=stats, confirm=False)
        seconds = time.perf_counter() - started
        limited = c.retry_causes.get("429", 0)
    return seconds, df.height, stats.requests, limited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ideal = args.pages / args.rate
    runs: dict[bool, list[tuple[float, int, int, int]]] = {False: [], True: []}
    with service(args.rate, args.pages) as (base_url, key, what, rows):
        print(f"{what}: {rows:,} records in pages of {PAGE}, ideal {ideal:.1f} s")
        for _ in range(args.repeat):
            for shared in (False, True):
                runs[shared].append(export(base_url, key, shared))
                time.sleep(1.0)  # let the bucket refill between runs
    print(f"{'mode':<22}{'median s':>10}{'x ideal':>9}{'requests':>10}{'429 share':>11}")
    for shared, label in ((False, "per-worker retries"), (True, "shared budget")):
        seconds = statistics.median(r[0] for r in runs[shared])
        requests = statistics.median(r[2] for r in runs[shared])
        share = statistics.median(r[3] / r[2] for r in runs[shared])
        assert all(r[1] == rows for r in runs[shared]), "rows missing"
        print(f"{label:<22}{seconds:>10.2f}{seconds / ideal:>8.2f}x{requests:>10.0f}{share:>11.1%}")
    print("target: at most 1.30x the ideal and 10.0% 429s")


if __name__ == "__main__":
    main()
