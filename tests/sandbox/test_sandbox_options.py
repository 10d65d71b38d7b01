"""Ledger options: balance model, zero balances, order dates and late payments."""

from __future__ import annotations

import collections
import json
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from sandbox_helpers import chronological, expected_violations, wallets

from txkit.sandbox import Sandbox, check_balance_model, check_fees, generate_ledger
from txkit.sandbox.ledger import BALANCE_MODELS, Ledger, parse_record

#: The orders columns these tests read (the orders also name the `customer`, for grouped
#: payments).
ORDER_COLUMNS = ["reference", "amount", "currency", "status", "date"]

_FOUR = (
    "toBalanceAfterAvailable",
    "toBalanceAfterLedger",
    "fromBalanceAfterAvailable",
    "fromBalanceAfterLedger",
)


#: Records of the balance-model ledgers: each of the 12 (3 seeds x 2 models x 2 zero rates) plants
#: 10 of every anomaly kind and 40 or more zero balances (8,000 took twice the CPU for no case
#: more).
RECORDS = 4_000


@cache
def _ledger(seed: int, model: str, zero_rate: float, records: int = RECORDS) -> Ledger:
    return generate_ledger(
        seed=seed,
        records=records,
        anomaly_rate=0.03,
        balance_model=model,
        zero_balance_rate=zero_rate,
    )


def _served_by_id(ledger: Ledger, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The served records of these ids, parsed as :meth:`Ledger.exported_records` parses them
    (only these: parsing 60,000 bodies to read a few cost 2.5 s); a hidden one is missing."""
    served = set(ledger.export_rows())
    row_of = {rid: row for row, rid in enumerate(ledger.index.get_column("id").to_list())}
    return {rid: parse_record(ledger.body(row_of[rid])) for rid in ids if row_of[rid] in served}


def _paid_on(ledger: Ledger) -> dict[str, list[date]]:
    """Each reference's payment days (UTC), earliest first, hidden records included: read
    from the index rather than from 60,000 parsed bodies (2.5 s). A ``duplicate_reference``
    anomaly pays a second order of the same reference later (in 4,000 records of seed 1, the
    next month)."""
    days = ledger.index.group_by("transactionReference").agg(pl.col("createdAt").sort())
    return {
        reference: [datetime.fromtimestamp(ms / 1000, tz=UTC).date() for ms in stamps]
        for reference, stamps in days.iter_rows()
    }


def _violations(ledger: Ledger, records: list[dict[str, Any]], model: str) -> set[tuple]:
    return {(v.id, v.field, v.kind) for v in check_balance_model(records, balance_model=model)}


# -- balance models -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("zero_rate", [0.0, 0.15])
@pytest.mark.parametrize("model", BALANCE_MODELS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_planted_balance_anomalies_are_exact_under_each_model(
    seed: int, model: str, zero_rate: float
) -> None:
    ledger = _ledger(seed, model, zero_rate)
    kinds = collections.Counter(e["kind"] for e in ledger.ground_truth)
    assert all(kinds[k] > 0 for k in ("missing_from_export", "bad_balance", "reserve_mismatch"))
    if zero_rate:
        assert len(ledger.zero_balances) > 10
    else:
        assert ledger.zero_balances == []
    # Parsed once each (the checks only read them): four parses were half the test's CPU.
    every = ledger.all_records()
    got = _violations(ledger, ledger.exported_records(), model)
    assert got == expected_violations(ledger, every)
    full = _violations(ledger, every, model)
    assert full == {k for k in got if k[2] != "jump"}
    # Fees and taxes follow the schedule under both models (only their effect differs).
    fee_ids = {
        e["id"] for e in ledger.ground_truth if e["kind"] in ("fee_mismatch", "tax_mismatch")
    }
    assert {v.id for v in check_fees(every)} == fee_ids


@pytest.mark.slow
@pytest.mark.parametrize("model", BALANCE_MODELS)
def test_the_other_model_breaks_on_most_records(model: str) -> None:
    """The two models are distinguishable: checking with the wrong one floods."""
    ledger = _ledger(1, model, 0.0)
    other = next(m for m in BALANCE_MODELS if m != model)
    records = ledger.exported_records()
    successful = sum(r["status"] == "successful" for r in records)
    wrong = check_balance_model(records, balance_model=other)
    assert len(wrong) > successful // 2


@pytest.mark.slow
def test_fee_only_balances_move_by_amount_net_of_the_fee_only() -> None:
    ledger = _ledger(2, "fee-only", 0.0)
    planted = {e["id"] for e in ledger.ground_truth}
    last: dict[str, Decimal] = {}
    checked = collections.Counter()
    for r in chronological(ledger):
        if r["status"] != "successful":
            continue
        for currency, field in wallets(r):
            before = last.get(currency)
            last[currency] = r[field]
            if before is None or r["id"] in planted or r["transType"] == "conversion":
                continue
            if r["transType"] == "collection":
                move = r["toAmount"] - r["feeAmount"]
            else:
                move = -(r["toAmount"] + r["feeAmount"])
            if r[field] == before + move:
                checked[r["transType"]] += 1
            else:
                checked["other"] += 1
    # Planted anomalies shift a few neighbours (a jump after a hidden record, a value after a
    # corrupted one); everything else moves by amount and fee, tax not deducted.
    assert checked["collection"] > 1_000 and checked["transfer"] > 50
    assert checked["other"] <= 2 * len(planted)


def test_bad_balance_model_is_refused() -> None:
    with pytest.raises(ValueError, match="balance_model must be one of net, fee-only"):
        generate_ledger(records=10, balance_model="gross")
    with pytest.raises(ValueError, match="balance_model must be one of net, fee-only"):
        check_balance_model([], balance_model="gross")
    with pytest.raises(ValueError, match="zero_balance_rate must be a number from 0 to 1"):
        generate_ledger(records=10, zero_balance_rate=1.5)
    with pytest.raises(ValueError, match="late_payments_per_month must be an integer"):
        generate_ledger(records=10, late_payments_per_month=-1)


# -- zero balances ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("model", BALANCE_MODELS)
def test_zero_balance_records_report_four_zeros_while_the_chain_carries_on(model: str) -> None:
    ledger = _ledger(3, model, 0.15)
    every = ledger.all_records()  # parsed once each, read only
    served = ledger.exported_records()
    by_id = {r["id"]: r for r in every}
    zero_ids = {e["id"] for e in ledger.zero_balances}
    anomaly_ids = {e["id"] for e in ledger.ground_truth}
    assert zero_ids and not zero_ids & anomaly_ids
    for entry in ledger.zero_balances:
        record = by_id[entry["id"]]
        assert record["transType"] == "transfer" and record["status"] == "successful"
        assert [record[f] for f in _FOUR] == [0, 0, 0, 0]
        assert entry["reference"] == record["transactionReference"]
        assert entry["createdAt"] == record["createdAt"]
        assert Decimal(entry["fromBalanceAfterLedger"]) >= 0
    # Rendered as the provider's documented KES transfer: integers, not 0.00.
    body = ledger.export_bodies()[[r["id"] for r in served].index(entry["id"])]
    assert b'"fromBalanceAfterLedger":0,' in body and b'"toBalanceAfterLedger":0,' in body
    # The true chain carries on: put the true values back and only planted breaks remain.
    restored = []
    for r in served:
        if r["id"] in zero_ids:
            entry = next(e for e in ledger.zero_balances if e["id"] == r["id"])
            r = {k: v for k, v in r.items() if not k.startswith("toBalanceAfter")}
            r["fromBalanceAfterLedger"] = Decimal(entry["fromBalanceAfterLedger"])
            r["fromBalanceAfterAvailable"] = Decimal(entry["fromBalanceAfterAvailable"])
        restored.append(r)
    got = _violations(ledger, restored, model)
    assert got == expected_violations(ledger, every)


@pytest.mark.slow
def test_zero_balances_change_nothing_else() -> None:
    plain = _ledger(1, "net", 0.0)
    zeroed = _ledger(1, "net", 0.15)
    zero_rows = {
        row
        for row, rid in enumerate(plain.index.get_column("id").to_list())
        if rid in {e["id"] for e in zeroed.zero_balances}
    }
    assert zero_rows
    for row in range(len(plain.index)):
        if row in zero_rows:
            assert plain.body(row) != zeroed.body(row)
        else:
            assert plain.body(row) == zeroed.body(row)
    assert plain.ground_truth == zeroed.ground_truth
    assert plain.orders.equals(zeroed.orders)


def test_zero_balances_are_in_the_ground_truth_file(tmp_path: Path) -> None:
    ledger = _ledger(2, "fee-only", 0.15)
    _, truth = ledger.write_files(tmp_path)
    doc = json.loads(truth.read_bytes())
    assert doc["generator"]["balance_model"] == "fee-only"
    assert doc["generator"]["zero_balance_rate"] == 0.15
    assert doc["zero_balances"] == ledger.zero_balances
    assert doc["late_payments"] == ledger.late_payments
    assert all(e["kind"] == "zero_balance" for e in doc["zero_balances"])
    assert not {e["id"] for e in doc["zero_balances"]} & {e["id"] for e in doc["anomalies"]}


# -- order dates and late payments --------------------------------------------------------------


@pytest.mark.slow
def test_order_dates_precede_payment_within_the_month_except_late_payments(ledgers) -> None:
    ledger = ledgers(seed=7, records=60_000)
    late = {e["reference"]: e for e in ledger.late_payments}
    paid_on = _paid_on(ledger)
    lags = collections.Counter()
    for reference, _amount, _currency, _status, ordered in ledger.orders.select(
        ORDER_COLUMNS
    ).iter_rows():
        if reference not in paid_on:
            continue  # order_extra
        paid = paid_on[reference][0]  # the first payment of a reference
        lags[(paid - ordered).days] += 1
        if reference in late:
            assert ordered == paid - timedelta(days=1) and paid.day == 1
            assert ordered.month != paid.month
        else:
            assert paid - timedelta(days=3) <= ordered <= paid
            assert (ordered.year, ordered.month) == (paid.year, paid.month)
    # Most orders are paid the same day, a real share the next day or later.
    total = sum(lags.values())
    assert lags[0] / total > 0.6
    assert (lags[1] + lags[2] + lags[3]) / total > 0.1
    # Every month start after the first gets late payments (up to three).
    months = collections.Counter(e["createdAt"][:7] for e in ledger.late_payments)
    assert set(months) == {
        f"{y}-{m:02d}" for y, m in [(2025, 12)] + [(2026, k) for k in range(1, 11)]
    }
    assert all(1 <= n <= 3 for n in months.values())
    # The default report month (2026-10) has some: its first orders are dated in September.
    assert months["2026-10"] >= 1


@pytest.mark.slow
def test_late_payments_are_clean_collections_paid_after_midnight() -> None:
    ledger = _ledger(1, "net", 0.0, records=30_000)
    assert len(ledger.late_payments) >= 20  # every month's first day, up to three each
    anomalies = {e["reference"] for e in ledger.ground_truth}
    records = _served_by_id(ledger, [e["id"] for e in ledger.late_payments])
    orders = {row[0]: row for row in ledger.orders.select(ORDER_COLUMNS).iter_rows()}
    for e in ledger.late_payments:
        record = records[e["id"]]  # served, never hidden
        assert e["reference"] not in anomalies
        assert record["transType"] == "collection" and record["status"] == "successful"
        assert record["createdAt"] == e["createdAt"]
        assert re.fullmatch(r"\d{4}-\d{2}-01T0[0-5]:.*", e["createdAt"])
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T2[0-3]:\d{2}:\d{2}\.\d{3}Z", e["ordered_at"])
        assert e["ordered_at"] < e["createdAt"]
        _, amount, currency, status, ordered = orders[e["reference"]]
        assert ordered.isoformat() == e["order_date"] == e["ordered_at"][:10]
        assert (amount, currency, status) == (
            record["toAmount"],
            record["toCurrency"],
            "successful",
        )
        assert Decimal(e["amount"]) == amount


@pytest.mark.slow
def test_late_payments_can_be_turned_off() -> None:
    # The same ledger with late payments on has some, whose orders are in the month before.
    assert generate_ledger(seed=1, records=RECORDS).late_payments
    ledger = generate_ledger(seed=1, records=RECORDS, late_payments_per_month=0)
    assert ledger.late_payments == []
    paid_on = _paid_on(ledger)
    for reference, *_, ordered in ledger.orders.select(ORDER_COLUMNS).iter_rows():
        if reference in paid_on:
            assert (ordered.year, ordered.month) in {(d.year, d.month) for d in paid_on[reference]}


def test_sandbox_passes_the_options_through(tmp_path: Path) -> None:
    with Sandbox(
        records=3_000,
        seed=4,
        balance_model="fee-only",
        zero_balance_rate=0.3,
        data_dir=tmp_path,
    ) as sb:
        assert sb.ledger.balance_model == "fee-only"
        assert sb.ledger.zero_balances
    doc = json.loads((tmp_path / "ground_truth.json").read_bytes())
    assert doc["generator"]["balance_model"] == "fee-only"


# -- repeat underpayers -------------------------------------------------------------------------


@pytest.mark.slow
def test_repeat_underpayers_share_a_customer_in_the_last_month(ledgers) -> None:
    plain = ledgers(seed=7, records=60_000)
    ledger = generate_ledger(seed=7, records=60_000, repeat_underpayers=2)
    assert plain.repeaters == [] and len(ledger.repeaters) == 2
    records = _served_by_id(ledger, [rid for group in ledger.repeaters for rid in group["ids"]])
    changed = 0
    for group in ledger.repeaters:
        assert group["kind"] == "repeat_underpayer" and 2 <= len(group["ids"]) <= 3
        for rid, reference, created in zip(
            group["ids"], group["references"], group["createdAt"], strict=True
        ):
            record = records[rid]
            assert record["customerEmail"] == group["customerEmail"]
            assert record["meta"]["paymentCollectionType"] == "UNDERPAYMENT"
            assert record["transactionReference"] == reference and created.startswith("2026-10")
        changed += len(group["ids"]) - 1
    # Only the regrouped underpayments changed (their customer); everything else is the same.
    differ = [r for r in range(len(plain.index)) if plain.body(r) != ledger.body(r)]
    assert len(differ) == changed
    # The orders name each order's customer: the regrouped underpayments' orders change theirs.
    assert plain.ground_truth == ledger.ground_truth
    assert plain.orders.select(ORDER_COLUMNS).equals(ledger.orders.select(ORDER_COLUMNS))
    doc = json.loads(ledger.ground_truth_json())
    assert doc["repeat_underpayers"] == ledger.repeaters
    assert doc["generator"]["repeat_underpayers"] == 2


def test_repeat_underpayers_is_validated() -> None:
    with pytest.raises(ValueError, match="repeat_underpayers must be an integer from 0 to 100"):
        generate_ledger(records=10, repeat_underpayers=-1)
