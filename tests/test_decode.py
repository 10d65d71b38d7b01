"""txkit.decode: one rule between copies of a record (dedupe_latest), in the loader and store."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

import txkit
from tests.factories import page, record
from tests.hostile import HostileServer, Reply, Seen
from txkit.decode import decode_page, decode_pages, dedupe_latest
from txkit.store._sync import _merge

EARLY = "2026-01-02T03:04:06.000Z"
LATE = "2026-01-02T03:09:00.000Z"


def _copy(status: str, updated: str | None, index: int = 0) -> pl.DataFrame:
    return decode_page(page([record(index, status=status, updatedAt=updated)])).frame


@pytest.mark.parametrize("updated", [EARLY, None], ids=["equal", "missing"])
def test_a_tie_keeps_the_copy_fetched_later_in_both_orders(updated: str | None) -> None:
    pending, successful = _copy("pending", updated), _copy("successful", updated)
    assert dedupe_latest([pending, successful])["status"].to_list() == ["successful"]
    assert dedupe_latest([successful, pending])["status"].to_list() == ["pending"]
    # Within one frame, the lower row is the later one.
    both = pl.concat([successful, pending])
    assert dedupe_latest(both)["status"].to_list() == ["pending"]


def test_the_newest_updated_at_wins_whatever_the_order() -> None:
    old, new = _copy("pending", EARLY), _copy("successful", LATE)
    for frames in ([old, new], [new, old]):
        assert dedupe_latest(frames)["status"].to_list() == ["successful"]
    # A copy with updatedAt beats one without, in either order.
    dated, undated = _copy("successful", EARLY), _copy("pending", None)
    for frames in ([dated, undated], [undated, dated]):
        assert dedupe_latest(frames)["status"].to_list() == ["successful"]


def test_distinct_records_are_all_kept_and_a_missing_id_fails() -> None:
    frames = [_copy("pending", EARLY, 0), _copy("successful", EARLY, 1), _copy("failed", LATE, 0)]
    out = dedupe_latest(frames).sort("status")
    assert out["status"].to_list() == ["failed", "successful"]
    no_id = decode_page(page([record(2, id=None)])).frame
    with pytest.raises(txkit.SchemaError, match="has no id"):
        dedupe_latest([no_id])


def test_the_store_uses_the_same_rule() -> None:
    stored = _copy("pending", EARLY).with_columns(month=pl.lit("2026-01"))
    refetched = _copy("successful", EARLY)
    assert _merge(stored, refetched)["status"].to_list() == ["successful"]
    newer_stored = _copy("successful", LATE)
    assert _merge(newer_stored, _copy("pending", EARLY))["status"].to_list() == ["successful"]


@pytest.mark.slow
def test_loader_keeps_successful_over_an_earlier_pending_copy_with_the_same_updated_at(
    hostile_server,
) -> None:
    """Pass 1 misses a record (so a second pass runs); between the passes record 1 turns from
    pending to successful without a new updatedAt. The later copy must win."""
    passes = {"n": 0}

    def respond(seen: Seen) -> Reply:
        skip = int(seen.query.get("skip", 0))
        if skip == 0:
            passes["n"] += 1
        if passes["n"] == 1:
            records = [record(0), record(1, status="pending", updatedAt=EARLY)] if skip == 0 else []
        else:
            records = [record(0), record(1, status="successful", updatedAt=EARLY), record(2)]
            records = records[skip:]
        return Reply(body=page(records, total=3))

    server: HostileServer = hostile_server(respond)
    stats = txkit.ExportStats()
    with server.client() as client:
        df = txkit.load_transactions(client, stats=stats, progress=False)
    assert stats.passes == 2
    assert df.height == 3
    assert df.filter(pl.col("id") == record(1)["id"])["status"].to_list() == ["successful"]
    assert df["updatedAt"][1] == datetime(2026, 1, 2, 3, 4, 6, tzinfo=UTC)


@pytest.mark.parametrize("threads", [1, 2])
def test_decode_pages_keeps_the_later_body_across_fast_and_exact_pages(threads: int) -> None:
    # An unknown field sends a page to the exact path; frames must still follow page order.
    fast = page([record(0, status="pending", updatedAt=EARLY), record(1)])
    exact = page([record(0, status="successful", updatedAt=EARLY, riskScore=3), record(2)])
    bodies = [page([record(3)]), fast, exact, page([record(4)])]
    out = decode_pages(bodies, threads=threads)
    assert out.filter(pl.col("id") == record(0)["id"])["status"].to_list() == ["successful"]
    bodies = [page([record(3)]), exact, fast, page([record(4)])]
    out = decode_pages(bodies, threads=threads)
    assert out.filter(pl.col("id") == record(0)["id"])["status"].to_list() == ["pending"]
    assert out.height == 5
