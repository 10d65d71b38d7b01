"""Real MT940 and camt.053 files from public repositories (``tests/data/real/*/MANIFEST.toml``:
source, commit, licence), each read and compared with the values its source's own tests
assert: balances, entry counts, amounts, references. A file its source refuses as damaged is
refused here too, in one line."""

from __future__ import annotations

import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement
from txkit.inputs.camt._read import read as read_camt

REAL = Path(__file__).resolve().parent.parent / "data" / "real"


def _manifest(fmt: str) -> list[dict[str, Any]]:
    return tomllib.loads((REAL / fmt / "MANIFEST.toml").read_text(encoding="utf-8"))["file"]


def _cases(fmt: str) -> list[Any]:
    return [pytest.param(fmt, r, id=r["file"]) for r in _manifest(fmt)]


@pytest.mark.parametrize(("fmt", "record"), _cases("mt940") + _cases("camt053"))
def test_a_real_file_reads_as_its_source_asserts(fmt: str, record: dict[str, Any]) -> None:
    path = REAL / fmt / record["file"]
    if "refused" in record:
        with pytest.raises(DataFileError) as caught:
            read_statement(path)
        message = str(caught.value)
        assert "\n" not in message and record["refused"] in message, message
        return
    statement = read_statement(path)
    entries, balances = statement.entries, statement.balances
    amounts = [Decimal(str(a)) for a in entries["amount"]]
    if fmt == "camt053":
        # The source counts bank entries (Ntry); a batch booking is read as its details.
        read = read_camt(path, path.read_bytes())
        count = len({e.group or e.line for e in read.entries})
    else:
        count = entries.height
    if "entries" in record:
        assert count == record["entries"]
    if "amount_sum" in record:
        assert sum(amounts, Decimal(0)) == Decimal(record["amount_sum"])
    if "amount_sum_minor" in record:
        assert sum(amounts, Decimal(0)) * 100 == Decimal(record["amount_sum_minor"])
    if "amounts" in record:
        assert amounts == [Decimal(a) for a in record["amounts"]]
    if "references" in record:
        assert [r or "" for r in entries["reference"]] == record["references"]
    if "opening" in record:
        assert [Decimal(str(a)) for a in balances["opening"]] == [
            Decimal(a) for a in record["opening"]
        ]
    if "closing" in record:
        assert [Decimal(str(a)) for a in balances["closing"]] == [
            Decimal(a) for a in record["closing"]
        ]
    if "last_closing" in record:
        assert Decimal(str(balances["closing"][-1])) == Decimal(record["last_closing"])
    if "rows" in record:
        assert entries.height == record["rows"]
    for statement_id, expected in record.get("by_statement", {}).items():
        mine = entries.filter(pl.col("statement") == statement_id)
        read = read_camt(path, path.read_bytes())
        assert (
            len({e.group or e.line for e in read.entries if e.statement == statement_id})
            == (expected["entries"])
        )
        total = sum((Decimal(str(a)) for a in mine["amount"]), Decimal(0))
        assert total * 100 == Decimal(expected["amount_sum_minor"])
        rows = balances.filter(pl.col("statement") == statement_id)
        assert rows.height == ("closing_minor" in expected)
        row = rows.row(0, named=True) if rows.height else {}
        if "opening_minor" in expected:
            assert Decimal(str(row["opening"])) * 100 == Decimal(expected["opening_minor"])
        if "closing_minor" in expected:
            assert Decimal(str(row["closing"])) * 100 == Decimal(expected["closing_minor"])
    # Every statement with balances is proven: its opening plus its entries is its closing.
    unproven = balances.filter(pl.col("closing").is_null() & pl.col("opening").is_not_null())
    assert unproven.height == 0
