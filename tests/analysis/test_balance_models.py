"""balance_model_fit / balance_model_choice / balance_breaks(model=...) and not-reported values.

Hand-built chains whose balances move by a known model pin down the fit table, the choice
(including "no model fits" and too few pairs) and not-reported values; the sandbox tests in
test_analysis_ledger_options.py check the same against planted ground truth.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from analysis_cases import tx_frame

from txkit.analysis import (
    BALANCE_MODELS,
    NO_MODEL_FITS,
    balance_breaks,
    balance_model_choice,
    balance_model_fit,
    balance_summary,
    describe_balance_models,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _cents(value: int) -> str:
    return str(Decimal(value).scaleb(-2))


def chain(
    model: str, n: int = 60, seed: int = 1, currency: str = "NGN", start: int = 0
) -> list[dict[str, Any]]:
    """``n`` successful collections and transfers whose balances move by ``model``."""
    rng = random.Random(seed)
    balance = 1_000_000
    rows = []
    for i in range(n):
        amount = rng.randint(1_000, 50_000)
        fee = rng.randint(10, 500)
        tax = fee * 75 // 1000 or 1  # never 0: the models differ on every record
        out = i % 3 == 2
        charged = {"net": fee + tax, "fee-only": fee, "gross": 0}[model]
        balance += -(amount + charged) if out else amount - charged
        rows.append(
            {
                "id": f"{currency}{start + i:04d}",
                "createdAt": T0 + timedelta(minutes=start + i),
                "transType": "transfer" if out else "collection",
                "status": "successful",
                "toAmount": _cents(amount),
                "toCurrency": currency,
                "feeAmount": _cents(fee),
                "taxAmount": _cents(tax),
                "hasRollingReserve": False,
                f"{'from' if out else 'to'}BalanceAfterLedger": _cents(balance),
                f"{'from' if out else 'to'}BalanceAfterAvailable": _cents(balance),
            }
        )
    return rows


def _side(row: dict[str, Any]) -> str:
    return "from" if row["transType"] == "transfer" else "to"


def _set_ledger(row: dict[str, Any], value: str) -> None:
    """A wrong ledger value (available stays right, as with a wrong field in the provider)."""
    row[f"{_side(row)}BalanceAfterLedger"] = value


def _zero(row: dict[str, Any]) -> None:
    for side in ("to", "from"):
        row[f"{side}BalanceAfterLedger"] = "0"
        row[f"{side}BalanceAfterAvailable"] = "0"


@pytest.mark.parametrize("model", ["net", "fee-only", "gross"])
def test_the_fit_table_recognises_each_model(
    model: str, as_input: Callable[[pl.DataFrame], Any]
) -> None:
    frame = tx_frame(chain(model))
    fit = balance_model_fit(as_input(frame))
    assert fit.columns == ["currency", "model", "checked", "fitting", "fit_rate"]
    assert fit["model"].to_list() == list(BALANCE_MODELS)
    assert (fit["checked"] == 59).all()
    rates = dict(fit.select("model", "fit_rate").iter_rows())
    assert rates[model] == 1.0
    assert all(rate < 0.1 for other, rate in rates.items() if other != model)
    choice = balance_model_choice(fit)
    assert choice.rows() == [("NGN", model, 59, 1.0, None)]


@pytest.mark.parametrize("model", ["fee-only", "gross"])
def test_auto_checks_under_the_fitting_model_and_never_floods(model: str) -> None:
    rows = chain(model)
    frame = tx_frame(rows)
    flood = balance_breaks(frame, model="net")
    assert flood.height > 50  # today's fixed model: nearly every value breaks
    assert balance_breaks(frame).is_empty()  # auto is the default
    assert balance_breaks(frame, model="auto").is_empty()
    assert balance_breaks(frame, model=model).is_empty()
    # A planted wrong value and a missing record are found under the chosen model.
    _set_ledger(rows[20], _cents(int(Decimal(rows[20]["toAmount"]) * 100) + 7))
    del rows[40]
    breaks = balance_breaks(tx_frame(rows))
    assert breaks.select("id", "model", "kind").rows() == [
        ("NGN0020", model, "bad_value"),
        ("NGN0041", model, "chain_gap"),
    ]
    summary = balance_summary(tx_frame(rows)).filter(pl.col("side") == "ledger")
    assert summary.select("model", "breaks").row(0) == (model, 2)


def test_each_wallet_gets_its_own_model() -> None:
    rows = chain("fee-only", currency="KES") + chain("net", currency="NGN", start=100)
    frame = tx_frame(rows)
    choice = balance_model_choice(balance_model_fit(frame))
    assert dict(choice.select("currency", "model").iter_rows()) == {
        "KES": "fee-only",
        "NGN": "net",
    }
    assert balance_breaks(frame).is_empty()
    summary = balance_summary(frame)
    assert dict(summary.select("currency", "model").unique().iter_rows()) == {
        "KES": "fee-only",
        "NGN": "net",
    }


def test_a_wallet_no_model_fits_has_no_breaks_and_says_so() -> None:
    rng = random.Random(3)
    rows = chain("net", currency="GHS")
    for row in rows:
        _set_ledger(row, _cents(rng.randint(1, 10**7)))
        row[f"{_side(row)}BalanceAfterAvailable"] = row[f"{_side(row)}BalanceAfterLedger"]
    rows += chain("net", currency="NGN", start=100)
    rows[60 + 30]["toBalanceAfterLedger"] = "1.00"  # a real break in a fitting wallet
    frame = tx_frame(rows)
    choice = balance_model_choice(balance_model_fit(frame))
    ghs = choice.row(by_predicate=pl.col("currency") == "GHS", named=True)
    assert ghs["model"] is None and ghs["note"] == NO_MODEL_FITS
    assert ghs["fit_rate"] is not None and ghs["fit_rate"] < 0.95
    breaks = balance_breaks(frame)
    assert set(breaks["currency"]) == {"NGN"} and breaks["id"][0] == "NGN0130"
    summary = balance_summary(frame).filter(pl.col("currency") == "GHS")
    assert summary["model"].to_list() == [None, None]
    assert (summary["checked"] == 0).all() and (summary["breaks"] == 0).all()
    assert (summary["unverifiable"] == summary["entries"]).all()


def test_the_threshold_is_95_percent_of_pairs() -> None:
    # 41 values, 40 pairs: two missing records cost two pairs (95 %), three cost 92.5 %.
    rows = chain("fee-only", n=44)
    two = [r for i, r in enumerate(rows) if i not in (10, 20)]
    fit = balance_model_fit(tx_frame(two[:41]))
    assert fit.filter(pl.col("model") == "fee-only").select("checked", "fitting").row(0) == (
        40,
        38,
    )
    assert balance_model_choice(fit)["model"].to_list() == ["fee-only"]
    assert balance_breaks(tx_frame(two[:41]))["kind"].to_list() == ["chain_gap", "chain_gap"]
    three = [r for i, r in enumerate(rows) if i not in (10, 20, 30)]
    fit = balance_model_fit(tx_frame(three[:41]))
    assert fit.filter(pl.col("model") == "fee-only")["fitting"].to_list() == [37]
    assert balance_model_choice(fit)["model"].to_list() == [None]
    assert balance_breaks(tx_frame(three[:41])).is_empty()


def test_one_wrong_value_costs_one_pair() -> None:
    rows = chain("net", n=30)
    _set_ledger(rows[10], "12.34")
    fit = balance_model_fit(tx_frame(rows)).filter(pl.col("model") == "net")
    assert fit.select("checked", "fitting").row(0) == (29, 28)


def test_too_few_pairs_keep_the_default_model() -> None:
    rows = chain("fee-only", n=10)
    choice = balance_model_choice(balance_model_fit(tx_frame(rows)))
    assert choice["model"].to_list() == ["net"]
    assert choice["note"][0] == "only 9 pair(s), too few to choose: the default model"


def test_a_small_wallet_takes_the_model_of_the_wallets_together() -> None:
    rows = chain("fee-only", n=10, currency="USDT") + chain("fee-only", currency="NGN", start=100)
    choice = balance_model_choice(balance_model_fit(tx_frame(rows)))
    usdt = choice.row(by_predicate=pl.col("currency") == "USDT", named=True)
    assert usdt["model"] == "fee-only" and usdt["fit_rate"] == 1.0
    assert (
        usdt["note"]
        == "only 9 pair(s), too few to choose: the model that fits the wallets together"
    )
    assert balance_breaks(tx_frame(rows)).is_empty()


def test_opening_pairs_the_first_value() -> None:
    rows = chain("gross", n=25)
    fit = balance_model_fit(tx_frame(rows), opening={"NGN": "10000.00"})
    assert fit.filter(pl.col("model") == "gross").select("checked", "fitting").row(0) == (25, 25)


def test_an_explicit_model_per_wallet_or_none() -> None:
    rows = chain("fee-only", currency="KES") + chain("net", currency="NGN", start=100)
    frame = tx_frame(rows)
    breaks = balance_breaks(frame, model={"KES": "net"})  # NGN: auto
    assert set(breaks["currency"]) == {"KES"} and set(breaks["model"]) == {"net"}
    assert balance_breaks(frame, model={"KES": None, "NGN": "net"}).is_empty()
    choice = balance_model_choice(balance_model_fit(frame))
    assert balance_breaks(frame, model=choice).is_empty()


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("tax-only", "model must be 'auto', one of net, fee-only, gross"),
        ({"NGN": "nett"}, "unknown model"),
        (3, "model must be 'auto'.*got int"),
        (pl.DataFrame({"currency": ["NGN"]}), "needs the columns 'currency' and 'model'"),
    ],
)
def test_bad_models_are_refused(model: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        balance_breaks(tx_frame(chain("net", n=5)), model=model)


def test_choice_refuses_unknown_models() -> None:
    fit = pl.DataFrame({"currency": ["NGN"], "model": ["x"], "checked": [1], "fitting": [1]})
    with pytest.raises(ValueError, match="unknown model.*'x'.*accepted: net, fee-only, gross"):
        balance_model_choice(fit)


# ---------------------------------------------------------------------------------------------
# Not-reported values.


@pytest.mark.parametrize("model", ["net", "fee-only"])
def test_not_reported_values_carry_the_chain_and_a_break_right_after_is_found(
    model: str,
) -> None:
    rows = chain(model)
    for i in (5, 6, 12, 30):
        _zero(rows[i])
    rows[13]["toBalanceAfterLedger"] = None  # absent: not reported either
    rows[13]["toBalanceAfterAvailable"] = None
    clean = tx_frame(rows)
    assert balance_breaks(clean).is_empty()
    ledger = balance_summary(clean).filter(pl.col("side") == "ledger")
    assert ledger.select("model", "entries", "not_reported", "unverifiable", "checked").row(0) == (
        model,
        60,
        5,
        6,
        54,
    )
    # The value right after a not-reported one is wrong: found as a bad value.
    expected = rows[31][f"{_side(rows[31])}BalanceAfterLedger"]
    _set_ledger(rows[31], _cents(int(Decimal(expected) * 100) - 500))
    breaks = balance_breaks(tx_frame(rows))
    assert breaks.select("id", "side", "kind").rows() == [("NGN0031", "ledger", "bad_value")]
    assert breaks["expected"].to_list() == [Decimal(expected)]
    # A missing record right after not-reported ones: found as a gap of its delta.
    rows = chain(model)
    _zero(rows[7])
    gone = rows.pop(8)
    breaks = balance_breaks(tx_frame(rows))
    sign = -1 if gone["transType"] == "transfer" else 1
    charged = {
        "net": Decimal(gone["feeAmount"]) + Decimal(gone["taxAmount"]),
        "fee-only": Decimal(gone["feeAmount"]),
    }[model]
    delta = (
        sign * Decimal(gone["toAmount"]) - charged
        if sign > 0
        else -(Decimal(gone["toAmount"]) + charged)
    )
    assert breaks.select("id", "kind", "difference").rows() == [("NGN0009", "chain_gap", delta)]


def test_partly_zero_balances_are_still_reported() -> None:
    rows = chain("net", n=30)
    rows[10]["toBalanceAfterAvailable"] = "0"  # the ledger value is real: checked
    summary = balance_summary(tx_frame(rows))
    assert summary["not_reported"].sum() == 0
    breaks = balance_breaks(tx_frame(rows))
    assert breaks.select("id", "side").rows() == [("NGN0010", "available")]


def test_the_chosen_models_in_one_sentence() -> None:
    rng = random.Random(5)
    noise = chain("net", currency="GHS", start=500)
    for row in noise:
        _set_ledger(row, _cents(rng.randint(1, 10**7)))
    rows = (
        chain("fee-only", currency="KES")
        + chain("net", currency="NGN", start=100)
        + chain("net", currency="USD", start=200)
        + chain("gross", n=5, currency="USDT", start=300)
        + noise
    )
    choice = balance_model_choice(balance_model_fit(tx_frame(rows)))
    text = describe_balance_models(choice)
    assert text.startswith("Balance model, chosen from the data: ")
    assert "fee-only for KES (100.00% of pairs fit)" in text
    assert "net for NGN, USD (100.00% of pairs fit)" in text
    assert "net for USDT (only 4 pair(s), too few to choose: the default model)" in text
    assert f"{NO_MODEL_FITS}: GHS (best fit " in text
    assert describe_balance_models(choice.clear()).startswith("Balance model: no wallet")
