"""Helpers for the analysis tests: sandbox ledgers loaded into frames, small frame builders.

The frames come from the ledger's served record bytes, decoded by ``txkit.decode`` (no HTTP
server), so the analysis functions see the same columns and types as after an export. Ledgers
are cached for the whole session (generating and decoding is the slow part of these tests).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import Any

import polars as pl

import txkit.decode
from tests.factories import LEDGERS
from txkit.sandbox.ledger import Ledger
from txkit.schema import COLUMNS

SEEDS = (1, 2, 3)
RATES = (0.0, 0.01, 0.03)
RECORDS = 10_000
PAGE = 5_000


@dataclass(frozen=True)
class Case:
    """One generated ledger and its served records as a loaded frame."""

    ledger: Ledger
    frame: pl.DataFrame

    def truth(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.ledger.ground_truth if e["kind"] in kinds]


def frame_from_bodies(bodies: list[bytes]) -> pl.DataFrame:
    """Decode record bodies into a finalized frame, in pages of PAGE records."""
    frames = []
    for start in range(0, len(bodies), PAGE):
        chunk = bodies[start : start + PAGE]
        body = (
            b'{"success":true,"message":"ok","data":{"total":%d,"transactions":[' % len(bodies)
            + b",".join(chunk)
            + b"]}}"
        )
        frames.append(txkit.decode.decode_page(body).frame)
    return txkit.decode.finalize(txkit.decode.combine(frames))


def load_case(
    seed: int,
    rate: float,
    records: int = RECORDS,
    balance_model: str = "net",
    zero_balance_rate: float = 0.0,
) -> Case:
    """A generated ledger (see :func:`generate_ledger` for the options) and its frame."""
    return _case(seed, rate, records, balance_model, zero_balance_rate)


@cache  # by value: load_case(1, 0.03) and load_case(1, 0.03, RECORDS, "net") are one case
def _case(seed: int, rate: float, records: int, balance_model: str, zero_rate: float) -> Case:
    settings = {"seed": seed, "records": records, "anomaly_rate": rate,
                "balance_model": balance_model, "zero_balance_rate": zero_rate}  # fmt: skip
    ledger = LEDGERS(**settings)
    # Decoded once a run, as the ledger is generated once: every worker asked for the same
    # cases and decoded them again (Arrow IPC keeps the frame's types as they are).
    frame = LEDGERS.once(
        ("case", sorted(settings.items())),
        ".arrow",
        lambda: frame_from_bodies(ledger.export_bodies()),
        lambda made, path: made.write_ipc(path),
        lambda path: pl.read_ipc(path),
    )
    return Case(ledger, frame)


def ms(text: str) -> datetime:
    """A UTC timestamp from ``2026-01-01T00:00:00.000Z`` style text."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def dec(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def tx_frame(rows: list[dict[str, Any]], money_scale: int = 2) -> pl.DataFrame:
    """A frame with every schema column from a few hand-written records.

    Money may be given as text (``"10.50"``) and timestamps as ISO text; absent fields are null.
    """
    schema = {
        name: pl.Decimal(38, money_scale) if isinstance(dtype, pl.Decimal) else dtype
        for name, dtype in COLUMNS.items()
    }
    data: dict[str, list[Any]] = {}
    for name, dtype in schema.items():
        values = [row.get(name) for row in rows]
        if isinstance(dtype, pl.Decimal):
            values = [dec(v) if isinstance(v, str) else v for v in values]
        elif isinstance(dtype, pl.Datetime):
            values = [ms(v) if isinstance(v, str) else v for v in values]
        data[name] = values
    return pl.DataFrame(data, schema=schema)


def month_bounds(month: str) -> tuple[date, date]:
    """First and last day of ``YYYY-MM`` (the tests' own, independent of txkit's calendar)."""
    year, number = map(int, month.split("-"))
    return date(year, number, 1), date(year, number, calendar.monthrange(year, number)[1])
