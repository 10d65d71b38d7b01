"""A transaction service of our own, not the sandbox's code: the benchmark's second service.

Written from the interface document alone (/work/shared/spec/transaction-export-interface.md),
with its own record generator and its own filters; it imports nothing from txkit. It serves
``GET /transaction`` from records generated once at start and encoded once, newest
``createdAt`` first (ties by ``id``), ``startDate``/``endDate`` inclusive UTC days on
``createdAt``, ``transType``/``status``/``currency`` exact, ``skip``/``limit`` (at most 1000),
Bearer authentication. Stdlib only (``http.server.ThreadingHTTPServer``, HTTP/1.1 keep-alive).

    python benchmarks/own_service.py --records 200000 --port 8077 --key sk_own

prints ``http://127.0.0.1:PORT`` once it listens, then serves until killed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TYPES = ("conversion", "settlement", "collection", "transfer")
STATUSES = ("successful", "successful", "successful", "pending", "failed", "reversed", "abandoned")
CURRENCIES = ("NGN", "NGN", "NGN", "USD", "GHS", "KES", "ZAR")
MAX_LIMIT = 1000


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def generate(records: int, seed: int, last_day: str = "2026-10-31") -> list[dict]:
    """``records`` records over the 365 days up to ``last_day``, newest first (ties by id)."""
    rng = random.Random(seed)
    end = datetime.fromisoformat(last_day).replace(tzinfo=UTC) + timedelta(days=1)
    span_ms = 365 * 86_400_000
    out = []
    for n in range(records):
        created = end - timedelta(milliseconds=rng.randrange(1, span_ms))
        updated = created + timedelta(seconds=rng.randrange(0, 7200))
        rid = f"{rng.getrandbits(96):024x}"
        amount = round(rng.uniform(100, 500_000), 2)
        fee = round(amount * 0.014, 2)
        out.append(
            {
                "_id": rid,
                "id": rid,
                "transType": rng.choice(TYPES),
                "status": rng.choice(STATUSES),
                "toAmount": amount,
                "toCurrency": rng.choice(CURRENCIES),
                "transactionReference": f"OWN-{seed}-{n:08d}",
                "customerEmail": f"customer{rng.randrange(5000)}@example.com",
                "isRecurrent": False,
                "postProcess": None,
                "isManual": rng.random() < 0.05,
                "source": None,
                "customNotifyEmails": [],
                "childTransactionIds": [],
                "disputeReferences": [],
                "disputes": [],
                "hasRollingReserve": False,
                "feeAmount": fee,
                "taxAmount": round(fee * 0.075, 2),
                "createdAt": _iso(created),
                "updatedAt": _iso(updated),
                "paidAt": _iso(updated),
                "toBalanceAfterAvailable": round(rng.uniform(0, 9_000_000), 2),
                "toBalanceAfterLedger": round(rng.uniform(0, 9_000_000), 2),
                "fromBalanceAfterAvailable": 0,
                "fromBalanceAfterLedger": 0,
                "rollingReserve": {
                    "isInReserve": False,
                    "amount": 0,
                    "reserveReleaseDate": _iso(created + timedelta(days=30)),
                },
                "merchantInfo": {"name": "Own Test Shop"},
                "meta": {
                    "accountName": f"Payer {rng.randrange(900)}",
                    "bankName": "Own Bank",
                    "paymentChannel": "VA",
                },
            }
        )
    out.sort(key=lambda r: r["id"])
    out.sort(key=lambda r: r["createdAt"], reverse=True)  # newest first; ties by id (stable)
    return out


class Ledger:
    """The records, each encoded once, and one index (positions) per filter combination."""

    def __init__(self, records: list[dict]) -> None:
        self.bodies = [json.dumps(r, separators=(",", ":")).encode() for r in records]
        self.records = records
        # The createdAt days, descending as the records, for bisection.
        self.days_desc = [r["createdAt"][:10] for r in records]
        self._cache: dict[tuple, list[int]] = {}
        self._lock = threading.Lock()

    def select(self, params: dict[str, str]) -> range | list[int]:
        lo, hi = 0, len(self.records)
        if "endDate" in params:  # records on or before endDate: from the first such position
            lo = _first_not_after(self.days_desc, params["endDate"])
        if "startDate" in params:  # records on or after startDate: up to the last such one
            hi = _first_before(self.days_desc, params["startDate"])
        hi = max(lo, hi)
        fields = tuple((k, params[k]) for k in ("transType", "status", "currency") if k in params)
        if not fields:
            return range(lo, hi)
        key = (lo, hi, fields)
        with self._lock:
            cached = self._cache.get(key)
        if cached is None:
            names = {"transType": "transType", "status": "status", "currency": "toCurrency"}
            cached = [
                p for p in range(lo, hi) if all(self.records[p][names[k]] == v for k, v in fields)
            ]
            with self._lock:
                self._cache[key] = cached
        return cached


def _first_not_after(days_desc: list[str], day: str) -> int:
    """The first position whose day is <= ``day`` (days descending)."""
    return _count_greater(days_desc, day)


def _first_before(days_desc: list[str], day: str) -> int:
    """The first position whose day is < ``day``."""
    return _count_greater(days_desc, _previous(day))


def _count_greater(days_desc: list[str], day: str) -> int:
    lo, hi = 0, len(days_desc)
    while lo < hi:
        mid = (lo + hi) // 2
        if days_desc[mid] > day:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _previous(day: str) -> str:
    return (datetime.fromisoformat(day) - timedelta(days=1)).date().isoformat()


def make_handler(ledger: Ledger, key: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path.rstrip("/") != "/transaction":
                self._send(404, b'{"success":false,"message":"not found"}')
                return
            if self.headers.get("Authorization") != f"Bearer {key}":
                self._send(401, b'{"success":false,"message":"unauthorized"}')
                return
            params = {k: v[-1] for k, v in parse_qs(url.query).items()}
            try:
                skip = max(0, int(params.get("skip", 0)))
                limit = min(MAX_LIMIT, max(1, int(params.get("limit", 10))))
                for name in ("startDate", "endDate"):
                    if name in params:
                        datetime.strptime(params[name], "%Y-%m-%d")
            except ValueError:
                self._send(400, b'{"success":false,"message":"bad query"}')
                return
            chosen = ledger.select(params)
            page = [ledger.bodies[p] for p in chosen[skip : skip + limit]]
            body = (
                b'{"success":true,"message":"Transactions retrieved","data":{"transactions":['
                + b",".join(page)
                + b'],"total":%d}}' % len(chosen)
            )
            self._send(200, body)

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", default="sk_own_service")
    args = parser.parse_args()
    ledger = Ledger(generate(args.records, args.seed))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(ledger, args.key))
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
