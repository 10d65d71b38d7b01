"""Pinned generator output: the same seed gives byte-identical ledgers across refactors.

The digests below were taken from the generator before it was split into phase modules. A
change to any of them changes the data every notebook, test and benchmark sees: it must be
deliberate, and the commit that changes a digest says why. History: ``orders`` and
``ground_truth.json`` changed once, on purpose, when orders got their own order dates (a
little before the payment) and planted late payments, and the ground truth got the
``late_payments``, ``zero_balances`` and ``repeat_underpayers`` keys, and again when orders
named their ``customer`` and planted orders paid in parts and collections paying several
orders (``order_groups`` in the ground truth; the records did not change); the records
(``served``, ``all``) changed once, on purpose, when reversed records got their
``updatedAt`` 1 to 14 days after payment (only those records' ``updatedAt`` moved). The
index, the planted anomalies (``anomalies``) and the arrivals keep the digests taken before
the split.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from txkit.sandbox import generate_ledger


def _digests(**args: Any) -> dict[str, str]:
    ledger = generate_ledger(**args)
    served = hashlib.sha256()
    for body in ledger.export_bodies():
        served.update(body + b"\n")
    every = hashlib.sha256()
    for row in range(len(ledger.index)):
        every.update(ledger.body(row) + b"\n")
    arrivals = hashlib.sha256()
    for arrival in ledger.arrivals(70, fault_seed=2):
        arrivals.update(repr(arrival).encode())
    return {
        "served": served.hexdigest(),
        "all": every.hexdigest(),
        "index": hashlib.sha256(ledger.index.write_csv().encode()).hexdigest(),
        "orders": hashlib.sha256(ledger.orders_csv()).hexdigest(),
        "anomalies": hashlib.sha256(orjson.dumps(ledger.ground_truth)).hexdigest(),
        "truth": hashlib.sha256(ledger.ground_truth_json()).hexdigest(),
        "arrivals": arrivals.hexdigest(),
    }


_PINNED: list[tuple[dict[str, Any], dict[str, str]]] = [
    (
        {"seed": 11, "records": 6_000, "anomaly_rate": 0.03},
        {
            "served": "516bc290cb4ca3fe8415c1bb2b9c1e952b7c52a67fd224034890e762375dffa4",
            "all": "3968f71216d44f2402278ac6921102b6e889e38de158709f9b83a82021cd1fc3",
            "index": "ab35c1a8d2dd855cd5fd145688f1497c8f2f7222dfaaad4cfc3ee3117a0a452f",
            "orders": "80f1de1c0ef18c3f595109297f1ec92e6c2e62c0746e6314df0474ad358acb97",
            "anomalies": "a120a64a7042bbe54b2d1eb3b13e68c2568a75481b0d839f7d0cee79d5cb31c2",
            "truth": "1723162ee12cb2653e3fc70c25c64e8f357323b85d0ffce1d1395e511ae68f5c",
            "arrivals": "8de6e3dedd6aa510928b44facea43675595a4f233cbceecf9ebca5d59fa036e8",
        },
    ),
    (
        # The default seed and size: notebooks' pinned outputs are computed from it.
        {"seed": 7, "records": 20_000},
        {
            "served": "2a946ab1f5f1cec245b9a721bcb683238a19fd9e7d0b8d595ae51dcd18a5f7e0",
            "all": "81ad96b945cdc3b2dc1994e158eb5b17d52d771fb7611a2595bb4339545c53c7",
            "index": "6683a73e6631d05c6affff3e31d169f049371261b6e1d45b120f067e681bd6ea",
            "orders": "bd780c401b127cd1bbb2ff12409b00305406594028fe2af867717f748945e79f",
            "anomalies": "d61363681f095ff2fa676729b3f46f1e889008aa9e51860266cea42c32f8a3fa",
            "truth": "c83a40040ba0a481fc7713acec392cd184ffcace55cc939fa2c0c5b91c218287",
            "arrivals": "b4d4ea066a04e8ad4c08c87d30d0b7325ac684d1eb6a46ee387a9e19fbc49d12",
        },
    ),
    (
        {"seed": 3, "records": 40, "months": 2, "start_month": "2026-01"},
        {
            "served": "d75f21690471f2017235f7c363720a0444efea39cb6071d894bbc71ef0540408",
            "all": "89117172919527c0553c7668895dcc8f2eccf259abc0b489d495795f405daa7c",
            "index": "5b5e80f11b77589821dc687c5813c83851451c50523223d5656342e200128fa1",
            "orders": "fd3873e1f35ef82497a689191f7921e6b2adf6a4a648c740dba3908df3f77d53",
            "anomalies": "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
            "truth": "34c996b546b50bcae3d33862271492caffb385ccc3ed0d2f98f8a93340f856c0",
            "arrivals": "867f4a4420a2b88037879b014a5e18807c665a24059b0c9c1df941fe4c290bef",
        },
    ),
    (
        {"seed": 5, "records": 0},
        {
            "served": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "all": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "index": "b2c296de35fcfe8558c1baee9001ae1effcfdacdfe769cdffd3dafc79ad0996e",
            "orders": "86a1aebe866f7e1fecd50f05a6d9c6e57a931ee3dc9d0e95b1c446259f384375",
            "anomalies": "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
            "truth": "5c295d2a820f36c4fb917cc18af5003b462279a1a64e69e41256fe4636e84b7c",
            "arrivals": "601b1a0e0db2fde5ec06fceea934cbdd8148c3a6c0d43b55568a5b01f5ff281e",
        },
    ),
    (
        {
            "seed": 11,
            "records": 6_000,
            "anomaly_rate": 0.03,
            "balance_model": "fee-only",
            "zero_balance_rate": 0.2,
        },
        {
            "served": "a121a9babe70ded31f36450bc2d7705cbb8a46d30366563ec229d38ebd24a4b1",
            "all": "4279da7e0855f05d3bca63e53353f7c73d35980e9a522ae2eb06868bc9f09aff",
            "index": "39ef0f9b89c62e14cfa2825fcebf8015fc34cb46cd66e36cc001cfa7599d1c06",
            "orders": "80f1de1c0ef18c3f595109297f1ec92e6c2e62c0746e6314df0474ad358acb97",
            "anomalies": "1ad87dee9406169baf6451fab32c197f9c8e604a456689c52431b7f7c31a1660",
            "truth": "8d07f8af2b7fb600868f2b068b8ca9f6f20b6442ff3f00c8da7653a1b79fb369",
            "arrivals": "7df6c6cd6c28b27cbe656090c280d3cc624fcca863e9cdd9d3a61781663fca07",
        },
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "expected"), _PINNED, ids=["seed11-6k", "default", "tiny", "empty", "fee-only-zero"]
)
def test_same_seed_gives_pinned_bytes(args: dict[str, Any], expected: dict[str, str]) -> None:
    assert _digests(**args) == expected
