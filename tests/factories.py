"""Hand-written records and pages for unit tests (the sandbox provides realistic ones), and
the one way tests run the CLI."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any ``TXKIT_`` variable (a developer's key or URL
    never leaks into a test), progress off, the checkout importable, the AWS SDK kept off the
    network's instance metadata (tests send nothing beyond loopback); plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    fixed = {"TXKIT_PROGRESS": "0", "PYTHONPATH": str(ROOT)} | NO_INSTANCE_METADATA
    return env | fixed | dict(extra or {})


#: The AWS SDK (under delta-rs) looks for a region and credentials in EC2 instance metadata, on
#: the network; object_store (under it too) does the same at its own address and ignores
#: AWS_EC2_METADATA_DISABLED. Tests send nothing beyond loopback: the first is disabled, the
#: second pointed at a closed loopback port.
NO_INSTANCE_METADATA = {
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9",
}


def run_cli(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    **kw: Any,
) -> subprocess.CompletedProcess[str]:
    """``python -m txkit.cli ARGS`` in ``cwd`` with :func:`cli_env` (plus ``env``), its
    output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "txkit.cli", *args],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


BASE_RECORD: dict[str, Any] = {
    "_id": "6651a2b3c4d5e6f708192a3b",
    "id": "6651a2b3c4d5e6f708192a3b",
    "transType": "collection",
    "status": "successful",
    "toAmount": 125000.5,
    "toCurrency": "NGN",
    "transactionReference": "TXK-REF-00012345",
    "customerEmail": "ada.test@example.test",
    "isRecurrent": False,
    "postProcess": None,
    "isManual": False,
    "source": None,
    "customNotifyEmails": ["ops@example.test"],
    "childTransactionIds": [],
    "disputeReferences": [],
    "disputes": [],
    "hasRollingReserve": True,
    "feeAmount": 1750,
    "taxAmount": 131.25,
    "createdAt": "2026-01-02T03:04:05.678Z",
    "updatedAt": "2026-01-02T03:04:06.000Z",
    "paidAt": "2026-01-02T03:04:05.900Z",
    "toBalanceAfterAvailable": 12345678.9,
    "toBalanceAfterLedger": 12399999.1,
    "rollingReserve": {
        "isInReserve": True,
        "amount": 6250.03,
        "reserveReleaseDate": "2026-02-02T03:04:05.678Z",
    },
    "merchantInfo": {"name": "Sandbox Merchant Ltd"},
    "meta": {
        "accountName": "TEST CUSTOMER ADA",
        "accountNumber": "0000012345",
        "bankName": "Sandbox Bank",
        "narration": "TRF FROM ADA TO SANDBOX MERCHANT",
        "sessionId": "000013260102030405678901234567",
        "paymentChannel": "VA",
        "customerActivity": {
            "start_time": 1767323045678,
            "time_spent": 42.5,
            "attempts": 1,
            "errors": 0,
            "success": True,
            "mobile": False,
            "input": [],
            "history": [
                {"type": "action", "message": "Opened checkout", "time": None},
                {"type": "error", "message": "Transfer pending", "time": None},
            ],
        },
    },
}


def record(index: int = 0, **changes: Any) -> dict[str, Any]:
    """A copy of :data:`BASE_RECORD` with its own id and the given top-level changes."""
    rec = copy.deepcopy(BASE_RECORD)
    rid = f"{0x6651A2B3C4D5E6F708192A00 + index:024x}"
    rec["_id"] = rec["id"] = rid
    rec["transactionReference"] = f"TXK-REF-{index:08d}"
    rec.update(changes)
    return rec


def page(records: list[dict[str, Any]], total: int | None = None, **envelope: Any) -> bytes:
    """A compact JSON page in the documented envelope."""
    doc = {
        "success": True,
        "message": "Transactions retrieved",
        "data": {"transactions": records, "total": len(records) if total is None else total},
    }
    doc.update(envelope)
    return json.dumps(doc, separators=(",", ":")).encode()
