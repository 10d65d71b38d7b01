"""not_reported_balances lists exactly the zero-balance records the sandbox planted."""

from __future__ import annotations

import polars as pl
import pytest
from analysis_cases import load_case

from txkit.analysis import balance_summary, not_reported_balances


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_not_reported_balances_are_the_planted_zero_balances(seed: int) -> None:
    case = load_case(seed, 0.01, zero_balance_rate=0.05)
    planted = sorted(e["id"] for e in case.ledger.zero_balances)
    assert planted, "the ledger must plant zero balances"
    listed = not_reported_balances(case.frame)
    assert sorted(listed["id"].to_list()) == planted
    assert listed.columns[:4] == ["id", "createdAt", "transType", "currency"]
    # The same records balance_summary counts as not reported (one per record, ledger side).
    summary = balance_summary(case.frame)
    assert int(summary.filter(pl.col("side") == "ledger")["not_reported"].sum()) == len(planted)


def test_not_reported_balances_without_balance_fields_and_bad_input() -> None:
    frame = pl.DataFrame(
        {
            "id": ["a", "b"],
            "createdAt": pl.Series([0, 1]).cast(pl.Datetime("ms", "UTC")),
            "status": ["successful", "failed"],
            "transType": ["transfer", "transfer"],
            "toCurrency": ["KES", "KES"],
        }
    )
    assert not_reported_balances(frame)["id"].to_list() == ["a"]
    with pytest.raises(ValueError, match="missing columns"):
        not_reported_balances(frame.drop("status"))
