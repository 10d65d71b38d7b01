"""Benchmark the sandbox: ledger generation (time, peak memory) and serving throughput.

Run::

    .venv/bin/python benchmarks/bench_sandbox.py            # 1,000,000 records
    .venv/bin/python benchmarks/bench_sandbox.py --records 200000

It prints the generation time and the process's peak resident memory, the time to index the
ledger for serving, and the records served per second over real HTTP on loopback for a full
export in pages of 1000 (raw bytes, and with the client parsing the JSON), for a filtered
export, and for small pages.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable

import httpx
import orjson

from txkit.sandbox import Sandbox, generate_ledger


def _peak_rss_gb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e9


def _export(
    client: httpx.Client, params: dict[str, str], *, limit: int, parse: bool
) -> tuple[int, float]:
    """Fetch every page of a query; returns (records, seconds)."""
    handle: Callable[[bytes], int]
    if parse:

        def handle(content: bytes) -> int:
            return len(orjson.loads(content)["data"]["transactions"])
    else:

        def handle(content: bytes) -> int:
            return content.count(b'{"_id":')

    started = time.perf_counter()
    skip = 0
    count = 0
    while True:
        response = client.get("/transaction", params={**params, "skip": skip, "limit": limit})
        response.raise_for_status()
        got = handle(response.content)
        count += got
        skip += limit
        if got < limit:
            return count, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    baseline = _peak_rss_gb()
    started = time.perf_counter()
    ledger = generate_ledger(seed=args.seed, records=args.records)
    generation = time.perf_counter() - started
    print(f"records:                 {args.records:,}")
    print(f"generation:              {generation:.1f} s")
    print(f"peak memory (RSS):       {_peak_rss_gb():.2f} GB (process baseline {baseline:.2f} GB)")

    started = time.perf_counter()
    sandbox = Sandbox(ledger=ledger).start()
    print(f"indexing for serving:    {time.perf_counter() - started:.1f} s")
    headers = {"Authorization": f"Bearer {sandbox.secret_key}"}
    try:
        with httpx.Client(base_url=sandbox.base_url, headers=headers, timeout=60) as client:
            client.get("/transaction", params={"limit": 1})  # connect
            for label, params, limit, parse in (
                ("full export, raw bytes", {}, 1000, False),
                ("full export, JSON parsed", {}, 1000, True),
                (
                    "status+currency filter",
                    {"status": "successful", "currency": "NGN"},
                    1000,
                    False,
                ),
                ("one month", {"startDate": "2026-03-01", "endDate": "2026-03-31"}, 1000, False),
            ):
                count, seconds = _export(client, params, limit=limit, parse=parse)
                print(
                    f"served {label + ':':27s}{count / seconds:>10,.0f} records/s "
                    f"({count:,} records in {seconds:.1f} s)"
                )
            started = time.perf_counter()
            for k in range(500):
                client.get("/transaction", params={"limit": 50, "skip": k * 50})
            per_request = (time.perf_counter() - started) / 500
            print(f"small pages (limit 50):  {per_request * 1000:.2f} ms per request")
    finally:
        sandbox.stop()
    print(f"peak memory at the end:  {_peak_rss_gb():.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
