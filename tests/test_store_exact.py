"""Writing to the store never changes a value: narrower columns are widened (older files
rewritten under the wider type in the same commit), or the sync fails naming the record.

The sandbox plays a service whose numbers grow finer (``precision`` fault): six-decimal USDT
amounts and fractional undocumented scores from one day on, whole ones before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable

from txkit import Client, load_transactions
from txkit.sandbox import Sandbox, generate_ledger
from txkit.store import StoreError, read_months, read_state, scan_store, sync
from txkit.store._write import commit

TODAY = date(2026, 11, 21)


@pytest.fixture(scope="module")
def ledger():
    return generate_ledger(seed=21, records=4_000)


@pytest.fixture
def box(ledger) -> Iterator[Sandbox]:
    # Finer numbers from 5 October on (past the loader's day of margin); September's records
    # carry whole scores.
    with Sandbox(ledger=ledger, faults="precision=1,precision_from=2026-10-05") as sandbox:
        yield sandbox


def as_stored(loaded: pl.DataFrame, stored: pl.DataFrame) -> pl.DataFrame:
    """The loader's frame in the store's (wider) types: an exact up-cast, checked below."""
    return loaded.select(
        [pl.col(c).cast(stored.schema[c]) for c in stored.columns if c in loaded.columns]
    )


def test_six_decimal_amounts_and_fractional_scores_widen_the_table(
    box: Sandbox, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        sync(client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
        first = read_months(["2026-09"], store=store)
        assert first.schema["toAmount"] == pl.Decimal(38, 2)
        assert first.schema["riskScore"] == pl.Int64 and first.schema["meta.fraudScore"] == pl.Int64
        result = sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        exported = {
            m: load_transactions(client, start=f"{m}-01", end=f"{m}-{last}")
            for m, last in (("2026-09", 30), ("2026-10", 31))
        }
    assert result.version == 1
    october = read_months(["2026-10"], store=store)
    usdt = october.filter(pl.col("toCurrency") == "USDT")
    assert usdt.height > 0
    # The export keeps six decimals; so does the store, value for value.
    assert exported["2026-10"].schema["toAmount"] == pl.Decimal(38, 6)
    assert october.schema["toAmount"] == pl.Decimal(38, 6)
    assert october.schema["feeAmount"] == pl.Decimal(38, 6)
    assert october.schema["riskScore"] == pl.Decimal(38, 2)
    assert october.schema["meta.fraudScore"] == pl.Decimal(38, 1)
    assert all(v.as_tuple().exponent == -6 for v in usdt["toAmount"])
    assert any(v % Decimal("0.01") for v in usdt["toAmount"])  # not rounded to cents
    assert any(v % 1 for v in october["riskScore"].drop_nulls())  # 0.75 stays 0.75
    assert any(v % 1 for v in october["meta.fraudScore"].drop_nulls())  # 97.5 stays 97.5
    for month, stored in (("2026-09", read_months(["2026-09"], store=store)), ("2026-10", october)):
        loaded = exported[month]
        assert stored.height == loaded.height
        assert stored.select(loaded.columns).equals(as_stored(loaded, stored))
    # September's file was rewritten under the wider types in the same commit: its values
    # are unchanged, and the whole table reads with one schema in any Delta reader.
    assert read_months(["2026-09"], store=store).equals(
        as_stored(first, october).select(first.columns)
    )
    table = DeltaTable(str(store))
    assert table.protocol().min_reader_version == 1  # no reader feature (typeWidening)
    whole = pl.scan_delta(str(store)).collect()
    assert whole.schema["toAmount"] == pl.Decimal(38, 6)
    assert whole.height == first.height + october.height
    lazy = scan_store(store).filter(pl.col("month") == "2026-10").collect()
    assert lazy.drop("month").equals(october)
    # Time travel: version 0 still reads as it was written.
    assert scan_store(store, version=0).collect().drop("month").sort("id").equals(first.sort("id"))


def test_a_narrower_new_value_is_cast_up_exactly(box: Sandbox, tmp_path: Path) -> None:
    """October first (six decimals), then September (two): September's amounts are stored
    under the wider type, value for value."""
    store = tmp_path / "store"
    with Client(box.base_url, box.secret_key, env_file=None) as client:
        sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        sync(client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
        loaded = load_transactions(client, start="2026-09-01", end="2026-09-30")
    stored = read_months(["2026-09"], store=store)
    assert stored.schema["toAmount"] == pl.Decimal(38, 6)
    assert stored.select(loaded.columns).equals(as_stored(loaded, stored))


def _frame(ids: list[str], month: str, **columns: pl.Series) -> pl.DataFrame:
    from txkit.schema import COLUMNS

    base = pl.DataFrame(schema=COLUMNS).clear(len(ids))
    base = base.with_columns(
        pl.Series("id", ids),
        pl.lit(f"{month}-05T10:00:00.000Z")
        .str.to_datetime("%Y-%m-%dT%H:%M:%S%.3fZ", time_unit="ms", time_zone="UTC")
        .alias("createdAt"),
    )
    return base.with_columns(*columns.values(), pl.lit(month).alias("month"))


META = {"format": 1, "source": {"url": "test", "fingerprint": None, "salt": None, "label": ""},
        "lookback_days": 7, "coverage": {}}  # fmt: skip


def test_a_value_no_type_holds_fails_naming_the_record_and_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # An undocumented field stored as lists of text, then a number: no type holds both.
    commit(store, None, [_frame(["a1"], "2026-09", tags=pl.Series("tags", [["x", "y"]]))],
           ["2026-09"], META)  # fmt: skip
    bad = _frame(["b7"], "2026-10", tags=pl.Series("tags", [Decimal("0.75")]))
    with pytest.raises(StoreError) as info:
        commit(store, 0, [bad], ["2026-10"], META)
    message = str(info.value)
    assert "record b7" in message and "tags" in message and "'0.75'" in message
    assert "nothing was written" in message and "\n" not in message
    assert read_state(store).version == 0
    assert sorted(p.name for p in store.iterdir()) == ["_delta_log", "month=2026-09"]
    # The advice: a new store for this source; it takes the records.
    suggested = message.rsplit("--store ", 1)[1].rstrip(")")
    assert suggested == f"{store}-2"
    assert commit(suggested, None, [bad], ["2026-10"], META) == 0


def test_a_widening_that_cannot_hold_a_stored_value_fails_naming_it(tmp_path: Path) -> None:
    """A 19-digit integer stored, then a value with 20 decimals: Decimal(38, 20) would not
    hold the integer; polars' strict cast is not trusted, the cast back is compared."""
    store = tmp_path / "store"
    big = 9_000_000_000_000_000_001
    commit(store, None, [_frame(["a1"], "2026-09", score=pl.Series("score", [big]))],
           ["2026-09"], META)  # fmt: skip
    fine = Decimal("0." + "0" * 19 + "1")
    new = _frame(["b2"], "2026-10", score=pl.Series("score", [fine], pl.Decimal(38, 20)))
    with pytest.raises(StoreError) as info:
        commit(store, 0, [new], ["2026-10"], META)
    message = str(info.value)
    assert "record a1" in message and "score" in message and str(big) in message
    assert read_state(store).version == 0
    assert read_months(["2026-09"], store=store)["score"].to_list() == [big]


def test_rounding_casts_are_caught_by_casting_back(tmp_path: Path) -> None:
    """The cast the store used before (polars' strict cast) rounds a reduced scale silently;
    the store's own cast refuses it."""
    from txkit.store._write import cast_exactly

    frame = pl.DataFrame({"id": ["r1"], "toAmount": [Decimal("12.345678")]},
                         schema={"id": pl.String, "toAmount": pl.Decimal(38, 6)})  # fmt: skip
    assert frame["toAmount"].cast(pl.Decimal(38, 2), strict=True).to_list() == [Decimal("12.35")]
    with pytest.raises(StoreError, match=r"record r1 .* toAmount '12\.345678'"):
        cast_exactly(frame, "toAmount", pl.Decimal(38, 2), store="S", month="2026-10")
    wide = cast_exactly(frame, "toAmount", pl.Decimal(38, 8), store="S", month="2026-10")
    assert wide.to_list() == [Decimal("12.34567800")]


def test_reading_never_rounds_a_timestamp_finer_than_milliseconds(tmp_path: Path) -> None:
    """The read casts stored microseconds to the loader's milliseconds: exact for what txkit
    writes; a finer value (another writer's) is named, not truncated."""
    from datetime import UTC, datetime

    store = tmp_path / "store"
    frame = _frame(["t1"], "2026-09").with_columns(
        pl.lit(datetime(2026, 9, 5, 10, 0, 0, 123, tzinfo=UTC))
        .cast(pl.Datetime("us", "UTC"))
        .alias("createdAt")
    )
    commit(store, None, [frame], ["2026-09"], META)
    with pytest.raises(StoreError, match=r"record t1's createdAt = 2026-09-05T10:00:00\.000123"):
        read_months(["2026-09"], store=store)
    with pytest.raises(StoreError, match="finer than the milliseconds"):
        scan_store(store).collect()
