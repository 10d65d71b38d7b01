"""fee_tax_mismatches lists exactly the fee and tax mismatches the sandbox planted, with the
rules read from the records."""

from __future__ import annotations

from decimal import Decimal

import polars as pl
import pytest
from analysis_cases import load_case

from txkit.analysis import fee_rules, fee_tax_mismatches
from txkit.analysis.fees import FeeRule


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_the_planted_fee_and_tax_mismatches_and_nothing_else(seed: int) -> None:
    case = load_case(seed, 0.02)
    planted = {
        (a["id"], a["kind"]): a
        for a in case.ledger.ground_truth
        if a["kind"] in ("fee_mismatch", "tax_mismatch")
    }
    assert len(planted) > 10
    listed = fee_tax_mismatches(case.frame)
    assert {(r["id"], r["kind"]) for r in listed.iter_rows(named=True)} == set(planted)
    for row in listed.iter_rows(named=True):
        truth = planted[(row["id"], row["kind"])]
        assert row["field"] == truth["field"]
        assert row["reported"] == Decimal(truth["reported"])
        # The rule's exact value rounds (half up, to the cent) to what the schedule charged.
        assert row["expected"].quantize(Decimal("0.01"), "ROUND_HALF_UP") == Decimal(
            truth["expected"]
        )
        assert row["difference"] == row["reported"] - row["expected"]
    shown = fee_rules(case.frame)
    # The rules a notebook has already shown give the same list (read once, not twice).
    assert fee_tax_mismatches(case.frame, shown).equals(listed)
    rules = [r for r in shown if isinstance(r, FeeRule)]
    tax = {r.currency: r.percent_bp for r in rules if r.kind == "tax"}
    assert tax["NGN"] == 750


def test_a_group_no_rule_explains_is_named_not_checked() -> None:
    fees = ["1.00", "2.00", "3.00", "4.00", "5.00"]
    frame = pl.DataFrame(
        {
            "id": list("abcde"),
            "createdAt": pl.Series(range(5)).cast(pl.Datetime("ms", "UTC")),
            "status": ["successful"] * 5,
            "transType": ["transfer"] * 5,
            "toCurrency": ["KES"] * 5,
            "toAmount": [Decimal("100.00")] * 5,
            "feeAmount": [Decimal(f) for f in fees],
            "taxAmount": [Decimal(f) * Decimal("0.075") for f in fees],
        }
    )
    rules = fee_rules(frame)
    assert rules[0] == (
        "transfer KES: no flat fee or percentage explains 90% of its 5 records; not checked"
    )
    assert fee_tax_mismatches(frame).is_empty()
    with pytest.raises(ValueError, match="missing columns"):
        fee_tax_mismatches(frame.drop("taxAmount"))


def test_an_ambiguous_rate_reads_as_the_roundest_the_records_allow() -> None:
    """Small USDT fees leave every rate from 7.44 % to 7.54 % within half a cent of their
    taxes: the rule is 7.50 %, not the run's middle 7.49 %."""
    from decimal import Decimal

    from txkit.analysis.fees import _best_bp, _roundest

    assert _roundest(744, 755) == 750 and _roundest(139, 142) == 140 and _roundest(7, 8) == 7
    # 0.75 on 10.00 admits 745 to 755 bp, 0.82 on 11.00 admits 741 to 750: 745 to 750 fit both
    # (the middle, 747, is what the rule read before).
    pairs = pl.DataFrame(
        {"tax": [Decimal("0.75"), Decimal("0.82")], "fee": [Decimal("10.00"), Decimal("11.00")]},
        schema={"tax": pl.Decimal(38, 6), "fee": pl.Decimal(38, 6)},
    )
    assert _best_bp(pairs, "tax", "fee") == 750


def test_each_record_is_checked_exactly_even_beyond_polars_digits() -> None:
    """The rules are checked on the columns; half a cent is in, a millionth more is out, and
    an amount too large for polars' 38 digits (1e30 x 140 bp) is checked record by record."""
    fitting = ["1000", "2500", "5000", "7000", "8000", "9000", "10000", "11000", "12000",
               "13000", "14000", "33333.33", "50000", "75000.50", "100000", "120000"]  # fmt: skip
    to = [Decimal(t) for t in fitting] + [Decimal("500000"), Decimal("1e30")]
    fee = [t * Decimal("0.014") for t in to[:-2]] + [Decimal("2000")] * 2
    # Half a cent above the rule fits; a millionth more does not; no fee at all does not.
    to += [Decimal("20000"), Decimal("30000"), Decimal("40000")]
    fee += [Decimal("280.005"), Decimal("420.005001"), Decimal("0")]
    tax = [(f * Decimal("0.075")).quantize(Decimal("0.000001")) for f in fee]
    n = len(to)
    frame = pl.DataFrame(
        {
            "id": [f"r{i:02d}" for i in range(n)],
            "createdAt": pl.Series(range(n)).cast(pl.Datetime("ms", "UTC")),
            "status": ["successful"] * n,
            "transType": ["collection"] * n,
            "toCurrency": ["NGN"] * n,
            "toAmount": to,
            "feeAmount": fee,
            "taxAmount": tax,
        },
        schema_overrides={c: pl.Decimal(38, 6) for c in ("toAmount", "feeAmount", "taxAmount")},
    )
    rules = fee_rules(frame)
    assert [r if isinstance(r, str) else r.describe() for r in rules] == [
        "collection NGN: 1.40 % of toAmount, capped at 2,000.00 NGN (19 of 21 records)",
        "tax NGN: 7.50 % of the fee (20 of 20 records)",
    ]
    listed = fee_tax_mismatches(frame, rules)
    assert listed.select("id", "kind", "expected").rows() == [
        ("r19", "fee_mismatch", Decimal("420")),
        ("r20", "fee_mismatch", Decimal("560")),
    ]
