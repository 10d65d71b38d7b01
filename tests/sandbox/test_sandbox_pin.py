"""Pinned generator output: the same seed gives byte-identical ledgers across refactors.

The digests below were taken from the generator before it was split into phase modules. A
change to any of them changes the data every notebook, test and benchmark sees: it must be
deliberate, and the commit that changes a digest says why.
"""

from __future__ import annotations

import hashlib
from typing import Any

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
        "truth": hashlib.sha256(ledger.ground_truth_json()).hexdigest(),
        "arrivals": arrivals.hexdigest(),
    }


_PINNED: list[tuple[dict[str, Any], dict[str, str]]] = [
    (
        {"seed": 11, "records": 6_000, "anomaly_rate": 0.03},
        {
            "served": "4cfc70a1fda88af4ea998d9150e2d9867f328ecf5fe2130d8f393dc48961cb3b",
            "all": "eca0c03ce31483ebc61c409e2ad3b922fa9ccdc2db95bab2df6565569ef98879",
            "index": "ab35c1a8d2dd855cd5fd145688f1497c8f2f7222dfaaad4cfc3ee3117a0a452f",
            "orders": "791ed5133b507dfd5fb22326214cb8d137c257a0bb810aa3795b6b9eb18ae132",
            "truth": "848318f99daa6c51c3bc742640d3e89f0ff2539a68b5d0f640e4e579e46ef6ce",
            "arrivals": "8de6e3dedd6aa510928b44facea43675595a4f233cbceecf9ebca5d59fa036e8",
        },
    ),
    (
        # The default seed and size: notebooks' pinned outputs are computed from it.
        {"seed": 7, "records": 20_000},
        {
            "served": "6732d18dfc7bb53159cdb0efde1a4821b335cbe70328538a3bdb4db6b4739f40",
            "all": "da60e6edffbdbc90a027232d6c00df8392c61da7a340b6daa0124944d712e991",
            "index": "6683a73e6631d05c6affff3e31d169f049371261b6e1d45b120f067e681bd6ea",
            "orders": "7df34ed881d5b399afcb13710086de81727a147e48e01a0019bad0296816209d",
            "truth": "e60b18443e3ecf971f7c352a53735f55a9d91f909c1bbf3de857bd9d85200210",
            "arrivals": "b4d4ea066a04e8ad4c08c87d30d0b7325ac684d1eb6a46ee387a9e19fbc49d12",
        },
    ),
    (
        {"seed": 3, "records": 40, "months": 2, "start_month": "2026-01"},
        {
            "served": "d75f21690471f2017235f7c363720a0444efea39cb6071d894bbc71ef0540408",
            "all": "89117172919527c0553c7668895dcc8f2eccf259abc0b489d495795f405daa7c",
            "index": "5b5e80f11b77589821dc687c5813c83851451c50523223d5656342e200128fa1",
            "orders": "697d5ad41bcd53b953a974150a40b88f05d70784cd11ed695bf23adb9959c25c",
            "truth": "b4bb0da746ad7c31ad5ed8b7b6d1f58573103a7bb4848c1eb705a44ca5b0fbee",
            "arrivals": "867f4a4420a2b88037879b014a5e18807c665a24059b0c9c1df941fe4c290bef",
        },
    ),
    (
        {"seed": 5, "records": 0},
        {
            "served": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "all": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "index": "b2c296de35fcfe8558c1baee9001ae1effcfdacdfe769cdffd3dafc79ad0996e",
            "orders": "9c9d1d190d522797555a0791508e7e0124fe89e694cf471c64f5338661b82caa",
            "truth": "6e0e8d97416988b1ec43090c7a6deb3b65391fa824db8f18c0c7d4cee1cda36f",
            "arrivals": "601b1a0e0db2fde5ec06fceea934cbdd8148c3a6c0d43b55568a5b01f5ff281e",
        },
    ),
]


@pytest.mark.parametrize(
    ("args", "expected"), _PINNED, ids=["seed11-6k", "default", "tiny", "empty"]
)
def test_same_seed_gives_pinned_bytes(args: dict[str, Any], expected: dict[str, str]) -> None:
    assert _digests(**args) == expected
