"""The notebook loaders of the days around a month (notebook 02's month ends), on the embedded
sandbox over real HTTP."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from txkit import Client
from txkit.notebook import load_margin, load_month, load_orders
from txkit.sandbox import Sandbox, generate_ledger
from txkit.store import sync


@pytest.mark.slow
def test_the_days_around_a_month_and_their_orders() -> None:
    df, _ = load_month("2026-09", source="sandbox")
    around, note = load_margin("2026-09", days=2, source="sandbox")
    assert around is not None and around.height > 0
    days = around["createdAt"].dt.date().unique().sort().to_list()
    assert days == [date(2026, 8, 30), date(2026, 8, 31), date(2026, 10, 1), date(2026, 10, 2)]
    assert around.join(df, on="id", how="semi").is_empty()
    # str(): the line, whether the loader returns it as text or as an object that prints it
    assert str(note).startswith(
        f"Days around the month: {around.height:,} transactions of 2026-08-30"
    )
    orders, origin = load_orders("sandbox", "2026-09", margin_days=2)
    dated = orders["date"].drop_nulls()
    assert dated.min() == date(2026, 8, 30) and dated.max() == date(2026, 10, 2)
    assert str(origin).endswith("orders in 2026-09 and the 2 day(s) around it")
    plain, _ = load_orders("sandbox", "2026-09")
    assert plain.height < orders.height
    assert plain["date"].drop_nulls().is_between(date(2026, 9, 1), date(2026, 9, 30)).all()
    assert load_margin("2026-09", days=0, source="sandbox")[0] is None


@pytest.mark.parametrize(("days", "message"), [(-1, "days must be"), (1.5, "days must be")])
def test_bad_margins_are_refused(days: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_margin("2026-09", days=days, source="sandbox")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source must be one of"):
        load_margin("2026-09", days=1, source="nowhere")


@pytest.mark.slow
def test_the_days_around_a_month_from_the_store(tmp_path: Path) -> None:
    """From the store: the neighbouring months it holds, cut to the days around the month."""
    ledger = generate_ledger(seed=21, records=4_000)
    store = tmp_path / "store"
    with Sandbox(ledger=ledger) as box:
        with Client(box.base_url, box.secret_key, env_file=None) as client:
            sync(
                client, start="2026-08-01", end="2026-09-30", store=store, today=date(2026, 11, 21)
            )
        served = [
            r["id"]
            for r in box.served_records()
            if "2026-08-29" <= r["createdAt"][:10] <= "2026-08-31"
        ]
    around, note = load_margin("2026-09", days=3, source="store", store=str(store))
    assert around is not None and sorted(around["id"]) == sorted(served)  # October: not stored
    assert str(note).startswith(
        f"Days around the month: {around.height:,} transactions of 2026-08-29"
    )
    assert "from the store " in str(note)
