"""The generated ledger: determinism, its balance model and fees, ground truth, realism."""

from __future__ import annotations

import collections
import csv
import io
import itertools
import json
import re
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from sandbox_helpers import chronological as _chronological
from sandbox_helpers import client_for
from sandbox_helpers import expected_violations as _expected_violations
from sandbox_helpers import wallets as _wallets

from txkit.sandbox import Sandbox, check_balance_model, check_fees, generate_ledger
from txkit.sandbox.ledger import (
    ANOMALY_KINDS,
    FEE_SCHEDULE,
    MERCHANT_NAME,
    Ledger,
    calendar_bounds,
    decimal_money,
    schedule_fee,
    schedule_tax,
)
from txkit.schema import STATUSES

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_BALANCE_KINDS = ("missing_from_export", "bad_balance", "reserve_mismatch")


def _ms(iso: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


# -- determinism --------------------------------------------------------------------------------


@pytest.mark.slow
def test_same_arguments_give_byte_identical_records_and_files(tmp_path: Path) -> None:
    a = generate_ledger(seed=5, records=4_000, anomaly_rate=0.02)
    b = generate_ledger(seed=5, records=4_000, anomaly_rate=0.02)
    assert a.export_bodies() == b.export_bodies()
    assert [a.body(k) for k in range(a.records)] == [b.body(k) for k in range(b.records)]
    a.write_files(tmp_path / "a")
    b.write_files(tmp_path / "b")
    for name in ("orders.csv", "ground_truth.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_different_seed_gives_different_data() -> None:
    a = generate_ledger(seed=5, records=2_000)
    b = generate_ledger(seed=6, records=2_000)
    assert a.export_bodies() != b.export_bodies()
    assert a.orders_csv() != b.orders_csv()


@pytest.mark.slow
def test_served_pages_are_byte_identical_across_sandboxes() -> None:
    pages = []
    for _ in range(2):
        with Sandbox(seed=3, records=3_000) as sb, client_for(sb) as c:
            pages.append(
                [
                    c.get("/transaction", params=p).content
                    for p in (
                        {"limit": 1000},
                        {"skip": 1000, "limit": 1000},
                        {"status": "successful", "currency": "NGN", "limit": 300},
                        {"startDate": "2026-03-01", "endDate": "2026-03-31"},
                    )
                ]
            )
    assert pages[0] == pages[1]


def test_the_calendar_comes_from_the_arguments(ledger: Ledger) -> None:
    start, end = calendar_bounds("2025-11", 12)
    created = ledger.index.get_column("createdAt")
    assert start <= created.min() and created.max() < end  # type: ignore[operator]
    short = generate_ledger(seed=1, records=500, start_month="2024-02", months=1)
    days = {r["createdAt"][:7] for r in short.all_records()}
    assert days == {"2024-02"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"records": -1}, "records must be an integer"),
        ({"records": 1.5}, "records must be an integer"),
        ({"months": 0}, "months must be an integer from 1"),
        ({"start_month": "2025-13"}, "start_month must be YYYY-MM"),
        ({"start_month": "Nov 2025"}, "start_month must be YYYY-MM"),
        ({"anomaly_rate": 0.5}, "anomaly_rate must be a number from 0 to 0.2"),
        ({"seed": "7"}, "seed must be an integer"),
    ],
)
def test_bad_generator_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        generate_ledger(**kwargs)


def test_arrivals_are_newer_deterministic_and_prefix_stable(ledger: Ledger) -> None:
    few = ledger.arrivals(5, fault_seed=1)
    many = ledger.arrivals(150, fault_seed=1)
    assert many[:5] == few and len(many) == 150
    assert ledger.arrivals(5, fault_seed=2) != few
    last = ledger.index.get_column("createdAt").max()
    created = [a.created_ms for a in many]
    assert created[0] > last and created == sorted(set(created))  # type: ignore[operator]
    assert len({a.id for a in many}) == 150
    for arrival in many[:10]:
        record = json.loads(arrival.body)
        assert record["id"] == arrival.id and record["status"] == arrival.status


def test_tiny_ledgers_work() -> None:
    assert generate_ledger(records=0).exported_records() == []
    one = generate_ledger(records=1, anomaly_rate=0.2)
    assert len(one.all_records()) == 1


# -- balance model and fees ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("seed", "records", "rate"),
    [(11, 6_000, 0.03), (2, 8_000, 0.01), (99, 4_000, 0.05)],
)
def test_balance_model_holds_except_where_anomalies_were_planted(
    seed: int, records: int, rate: float, ledger: Ledger
) -> None:
    subject = (
        ledger
        if (seed, records, rate) == (11, 6_000, 0.03)
        else generate_ledger(seed=seed, records=records, anomaly_rate=rate)
    )
    kinds = collections.Counter(e["kind"] for e in subject.ground_truth)
    assert all(kinds[k] > 0 for k in _BALANCE_KINDS), kinds
    every = subject.all_records()  # parsed once for both uses (the checks only read it)
    got = {(v.id, v.field, v.kind) for v in check_balance_model(subject.exported_records())}
    assert got == _expected_violations(subject, every)
    # With the hidden records put back, only the corrupted values remain.
    full = {(v.id, v.field, v.kind) for v in check_balance_model(every)}
    assert full == {k for k in got if k[2] != "jump"}


@pytest.mark.slow
def test_without_anomalies_the_model_and_fee_schedule_hold_exactly() -> None:
    clean = generate_ledger(seed=4, records=5_000, anomaly_rate=0)
    assert clean.ground_truth == []
    records = clean.exported_records()
    assert len(records) == 5_000
    assert check_balance_model(records) == []
    assert check_fees(records) == []


def test_fee_and_tax_violations_are_exactly_the_planted_ones(
    ledger: Ledger, records: list[dict[str, Any]]
) -> None:
    got = {(v.id, v.field, v.expected, v.reported) for v in check_fees(records)}
    planted = {
        (e["id"], e["field"], Decimal(e["expected"]), Decimal(e["reported"]))
        for e in ledger.ground_truth
        if e["kind"] in ("fee_mismatch", "tax_mismatch")
    }
    assert planted and got == planted


def test_fee_schedule_examples() -> None:
    assert schedule_fee("collection", "NGN", 1_000_000) == 14_000  # 1.4 % of 10,000.00
    assert schedule_fee("collection", "NGN", 100_000_000) == 200_000  # capped at 2,000.00
    assert schedule_fee("transfer", "KES", 123_456) == 3_000  # flat 30
    assert schedule_fee("conversion", "USD", 10_001) == 50  # 0.5 %, half up
    assert schedule_tax(5_000) == 375  # 7.5 % of 50.00
    assert schedule_tax(14_000) == 1_050
    assert set(FEE_SCHEDULE) == {"collection", "transfer", "settlement", "conversion"}


@pytest.mark.slow
def test_balances_never_go_negative_and_balance_fields_only_on_successful_records(
    ledger: Ledger,
) -> None:
    fields = (
        "toBalanceAfterLedger",
        "toBalanceAfterAvailable",
        "fromBalanceAfterLedger",
        "fromBalanceAfterAvailable",
    )
    corrupted = {e["id"] for e in ledger.ground_truth if e["kind"] in _BALANCE_KINDS}
    for r in ledger.all_records():
        present = [f for f in fields if f in r]
        if r["status"] != "successful":
            assert present == []
            continue
        sides = {"collection": 2, "transfer": 2, "settlement": 2, "conversion": 4}
        assert len(present) == sides[r["transType"]]
        if r["id"] not in corrupted:
            assert all(r[f] >= 0 for f in present)
            if "toBalanceAfterLedger" in r:
                assert r["toBalanceAfterAvailable"] <= r["toBalanceAfterLedger"]


# -- ground truth and orders --------------------------------------------------------------------


def test_every_anomaly_kind_is_planted_once_per_record(ledger: Ledger) -> None:
    kinds = collections.Counter(e["kind"] for e in ledger.ground_truth)
    assert set(kinds) == set(ANOMALY_KINDS)
    expected_total = round(ledger.records * ledger.anomaly_rate)
    assert sum(kinds.values()) == expected_total
    ids = [e["id"] for e in ledger.ground_truth if e["id"] is not None]
    assert len(ids) == len(set(ids)), "a record carries at most one anomaly"
    for entry in ledger.ground_truth:
        assert {"kind", "id", "reference", "currency", "createdAt"} <= set(entry)


def test_ground_truth_file_matches_the_ledger(ledger: Ledger, tmp_path: Path) -> None:
    _, truth_path = ledger.write_files(tmp_path)
    doc = json.loads(truth_path.read_bytes())
    assert doc["anomalies"] == ledger.ground_truth
    assert doc["generator"]["seed"] == ledger.seed
    assert set(doc["anomaly_kinds"]) == set(ANOMALY_KINDS)


@pytest.mark.slow
def test_balance_anomalies_are_spaced_on_each_wallet(ledger: Ledger) -> None:
    chronological = _chronological(ledger)
    sequences: dict[str, list[str]] = collections.defaultdict(list)
    for r in chronological:
        if r["status"] == "successful":
            for currency, _ in _wallets(r):
                sequences[currency].append(r["id"])
    for currency, ids in sequences.items():
        where = {rid: k for k, rid in enumerate(ids)}
        spots = sorted(
            where[e["id"]]
            for e in ledger.ground_truth
            if e["kind"] in _BALANCE_KINDS and e["id"] in where
        )
        assert all(b - a > 5 for a, b in itertools.pairwise(spots)), currency


@pytest.mark.slow
def test_missing_records_are_hidden_successful_collections_without_reserve(
    ledger: Ledger, records: list[dict[str, Any]]
) -> None:
    served = {r["id"] for r in records}
    everything = {r["id"]: r for r in ledger.all_records()}
    missing = [e for e in ledger.ground_truth if e["kind"] == "missing_from_export"]
    assert missing
    assert len(everything) - len(served) == len(missing)
    for entry in missing:
        record = everything[entry["id"]]
        assert entry["id"] not in served
        assert record["transType"] == "collection" and record["status"] == "successful"
        assert "rollingReserve" not in record
        assert str(record["toAmount"]) == entry["amount"]


@pytest.mark.slow
def test_corrupted_values_are_as_recorded(ledger: Ledger) -> None:
    everything = {r["id"]: r for r in ledger.all_records()}
    for entry in ledger.ground_truth:
        if entry["kind"] in ("bad_balance", "reserve_mismatch", "fee_mismatch", "tax_mismatch"):
            record = everything[entry["id"]]
            assert record[entry["field"]] == Decimal(entry["reported"])
            assert entry["reported"] != entry["expected"]


def test_duplicate_references_point_to_an_earlier_served_record(
    ledger: Ledger, records: list[dict[str, Any]]
) -> None:
    by_id = {r["id"]: r for r in records}
    duplicates = [e for e in ledger.ground_truth if e["kind"] == "duplicate_reference"]
    assert duplicates
    for entry in duplicates:
        later, earlier = by_id[entry["id"]], by_id[entry["original_id"]]
        assert later["transactionReference"] == earlier["transactionReference"]
        assert (earlier["createdAt"], earlier["id"]) < (later["createdAt"], later["id"])
    counts = collections.Counter(r["transactionReference"] for r in records)
    assert {ref for ref, n in counts.items() if n > 1} == {e["reference"] for e in duplicates}


@pytest.mark.parametrize("kind", ["underpayment", "overpayment"])
def test_under_and_overpayments(ledger: Ledger, records: list[dict[str, Any]], kind: str) -> None:
    by_id = {r["id"]: r for r in records}
    by_ref = {r["transactionReference"]: r for r in records}
    entries = [e for e in ledger.ground_truth if e["kind"] == kind]
    assert entries
    for entry in entries:
        record = by_id[entry["id"]]
        meta = record["meta"]
        assert record["status"] == "successful" and record["toCurrency"] == "NGN"
        assert meta["paymentChannel"] == "VA"
        assert meta["paymentCollectionType"] == kind.upper()
        expected = meta["existingTransaction"]["expectedAmount"]
        assert str(expected) == entry["expected_amount"]
        assert str(record["toAmount"]) == entry["paid_amount"]
        assert (
            record["toAmount"] < expected
            if kind == "underpayment"
            else record["toAmount"] > expected
        )
        reference = meta["existingTransaction"]["reference"]
        assert reference == entry["existing_reference"]
        if entry["existing_in_export"]:
            original = by_ref[reference]
            assert original["id"] == entry["existing_id"]
            assert original["toAmount"] == expected
            assert record["id"] in original["childTransactionIds"]
        else:
            assert reference not in by_ref
    flagged = {r["id"] for r in records if r["meta"].get("paymentCollectionType")}
    all_entries = {
        e["id"] for e in ledger.ground_truth if e["kind"] in ("underpayment", "overpayment")
    }
    assert flagged == all_entries


@pytest.mark.slow
def test_orders_are_the_collections_with_planted_discrepancies(
    ledger: Ledger, records: list[dict[str, Any]]
) -> None:
    rows = list(csv.DictReader(io.StringIO(ledger.orders_csv().decode())))
    assert list(rows[0]) == ["reference", "amount", "currency", "status", "date", "customer"]
    assert len(rows) == ledger.orders.height
    truth = collections.defaultdict(dict)
    for e in ledger.ground_truth:
        truth[e["kind"]][e["reference"]] = e
    hidden = {e["id"] for e in ledger.ground_truth if e["kind"] == "missing_from_export"}
    collections_ = [r for r in ledger.all_records() if r["transType"] == "collection"]
    late = {e["reference"]: e for e in ledger.late_payments}
    # Order rows by everything but the date (a duplicated reference can have two rows).
    dates_of = collections.defaultdict(list)
    for r in rows:
        dates_of[(r["reference"], r["amount"], r["currency"], r["status"])].append(r["date"])
    expected = {}
    # Planted groups: an order paid in parts, or one collection paying several orders.
    in_groups = set()
    for group in ledger.order_groups:
        if group["kind"] == "paid_in_parts":
            in_groups |= {part["reference"] for part in group["parts"]}
            orders = [{"reference": group["reference"], "amount": group["amount"]}]
        else:
            in_groups.add(group["reference"])
            orders = group["orders"]
        for order in orders:
            row = {
                "reference": order["reference"],
                "amount": order["amount"],
                "currency": group["currency"],
                "status": "successful",
            }
            candidates = dates_of[tuple(row.values())]
            assert candidates, f"no order row for the planted group {group}"
            row["date"] = candidates.pop(0)
            expected[(order["reference"], group["kind"], order["amount"])] = row
    assert in_groups and {g["kind"] for g in ledger.order_groups} == {"paid_in_parts", "grouped"}
    for r in collections_:
        ref = r["transactionReference"]
        if ref in truth["order_missing"] or ref in in_groups:
            continue
        row = {
            "reference": ref,
            "amount": f"{r['toAmount']:.2f}",
            "currency": r["toCurrency"],
            "status": r["status"],
        }
        for kind, column in (
            ("order_amount", "amount"),
            ("order_status", "status"),
            ("order_currency", "currency"),
        ):
            if ref in truth[kind]:
                assert row[column] == truth[kind][ref]["expected"]
                row[column] = truth[kind][ref]["reported"]
        # An order is placed before it is paid: up to three days before, in the payment's
        # month, except a planted late payment (ordered on the last evening of the month
        # before).
        paid = date.fromisoformat(r["createdAt"][:10])
        candidates = dates_of[tuple(row.values())]
        assert candidates, f"no order row for {row}"
        if ref in late:
            assert late[ref]["id"] == r["id"]
            wanted = paid - timedelta(days=1)
            assert paid.day == 1 and late[ref]["order_date"] == wanted.isoformat()
            assert late[ref]["ordered_at"] < r["createdAt"]
            assert late[ref]["ordered_at"][11:13] in ("20", "21", "22", "23")
        else:
            wanted = next(
                d
                for d in map(date.fromisoformat, candidates)
                if paid - timedelta(days=3) <= d <= paid and d.month == paid.month
            )
        candidates.remove(wanted.isoformat())
        row["date"] = wanted.isoformat()
        expected[(ref, r["id"])] = row
    for ref, e in truth["order_extra"].items():
        expected[(ref, None)] = {
            "reference": ref,
            "amount": e["amount"],
            "currency": "NGN",
            "status": "successful",
            "date": e["date"],
        }
    columns = ["reference", "amount", "currency", "status", "date"]
    assert sorted(tuple(r[c] for c in columns) for r in rows) == sorted(
        tuple(r[c] for c in columns) for r in expected.values()
    )
    served_refs = {r["transactionReference"] for r in records}
    assert all(ref not in served_refs for ref in truth["order_extra"])
    # collections hidden from the export are still in the orders
    hidden_refs = {e["reference"] for e in ledger.ground_truth if e["id"] in hidden}
    assert hidden_refs <= {r["reference"] for r in rows}
    assert [(r["date"], r["reference"]) for r in rows] == sorted(
        (r["date"], r["reference"]) for r in rows
    )
    assert ledger.orders.schema["amount"].is_decimal()


# -- realism ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mix_of_types_statuses_and_currencies(ledger: Ledger) -> None:
    all_records = ledger.all_records()
    n = len(all_records)
    types = collections.Counter(r["transType"] for r in all_records)
    assert 0.75 < types["collection"] / n < 0.85
    assert 0.05 < types["transfer"] / n < 0.11
    assert 0.03 < types["settlement"] / n < 0.07
    assert 0.05 < types["conversion"] / n < 0.09
    statuses = collections.Counter(r["status"] for r in all_records)
    assert set(statuses) == set(STATUSES)
    assert statuses["successful"] / n > 0.8
    currencies = collections.Counter(r["toCurrency"] for r in all_records)
    assert currencies.most_common(1)[0][0] == "NGN"
    assert {"NGN", "USD", "GHS", "KES", "USDT"} <= set(currencies)


@pytest.mark.slow
def test_in_flight_statuses_are_mostly_recent(ledger: Ledger) -> None:
    last_days = ledger.end_ms - 3 * 86_400_000
    flight = ("ongoing", "pending", "processing", "verified", "initiated")
    in_flight = [r for r in ledger.all_records() if r["status"] in flight]
    recent = sum(1 for r in in_flight if _ms(r["createdAt"]) >= last_days)
    assert recent / len(in_flight) > 0.6


@pytest.mark.slow
def test_record_shapes(ledger: Ledger) -> None:
    seen = collections.Counter()
    for r in ledger.all_records():
        assert r["merchantInfo"] == {"name": MERCHANT_NAME}
        assert r["id"] == r["_id"] and re.fullmatch(r"[0-9a-f]{24}", r["id"])
        assert int(r["id"][:8], 16) == _ms(r["createdAt"]) // 1000  # ObjectId time prefix
        assert re.fullmatch(r"TXK-[0-9A-F]{12}", r["transactionReference"])
        for field in ("createdAt", "updatedAt", "paidAt"):
            if field in r:
                assert _ISO.match(r[field]), r[field]
        assert r["updatedAt"] >= r["createdAt"]
        paid = r["status"] in ("successful", "verified", "reversed")
        assert ("paidAt" in r) == paid
        assert r["customerEmail"].endswith("example.test")
        for field in ("isRecurrent", "isManual", "hasRollingReserve"):
            assert isinstance(r[field], bool)
        for field in ("customNotifyEmails", "childTransactionIds", "disputeReferences", "disputes"):
            assert isinstance(r[field], list)
        meta = r["meta"]
        if r["transType"] == "collection":
            activity = meta["customerActivity"]
            assert isinstance(activity["start_time"], int)
            assert activity["start_time"] < _ms(r["createdAt"])
            assert re.fullmatch(r"\d+(\.\d{1,2})?", str(activity["time_spent"]))
            assert activity["history"] and all(
                h["type"] in ("action", "error") and h["time"] is None and h["message"]
                for h in activity["history"]
            )
            if meta["paymentChannel"] == "VA":
                seen["va"] += 1
                if paid:
                    seen["va_paid"] += 1
                    assert meta["accountName"].startswith("TEST CUSTOMER ")
                    assert meta["accountNumber"].startswith("00000")
                    assert len(meta["accountNumber"]) == 10
                    assert re.fullmatch(r"\d{30}", meta["sessionId"])
                    assert meta["bankName"] and meta["narration"]
            else:
                assert meta["paymentChannel"] == "CARD"
                seen["card"] += 1
                assert "bankName" not in meta and "accountNumber" not in meta
                assert r["amount"] == r["toAmount"] and r["currency"] == r["toCurrency"]
        else:
            assert "customerActivity" not in meta
        if r["transType"] == "transfer":
            recipient = r["recipient"]
            assert set(recipient) == {
                "recipientName",
                "currency",
                "institutionType",
                "institutionName",
                "institutionNumber",
                "_id",
            }
            assert recipient["currency"] == r["toCurrency"]
            seen[recipient["institutionType"]] += 1
        if r["transType"] == "conversion":
            assert r["fromCurrency"] != r["toCurrency"]
            assert r["fromAmount"] > 0
        else:
            assert "fromAmount" not in r
        if "rollingReserve" in r:
            seen["reserve"] += 1
            reserve = r["rollingReserve"]
            assert r["hasRollingReserve"] is True and r["status"] == "successful"
            assert _ms(reserve["reserveReleaseDate"]) == _ms(r["createdAt"]) + 30 * 86_400_000
            assert reserve["isInReserve"] == (_ms(reserve["reserveReleaseDate"]) > ledger.end_ms)
            ten_percent = (r["toAmount"] / 10).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
            assert reserve["amount"] == ten_percent
        else:
            assert r["hasRollingReserve"] is False
        if "postProcess" in r:
            seen["v2"] += 1
            assert r["postProcess"] is None and r["source"] is None
        if "merchantId" in r:
            seen["merchantId"] += 1
    assert seen["va_paid"] > 100 and seen["card"] > 100
    assert seen["mobile_money"] > 0 and seen["bank"] > 0
    assert seen["reserve"] > 10
    assert 0 < seen["v2"] < ledger.records and 0 < seen["merchantId"] < ledger.records


def test_kes_whole_fees_are_rendered_as_integers(ledger: Ledger) -> None:
    kes = [b for b in ledger.export_bodies() if b'"toCurrency":"KES"' in b]
    assert any(re.search(rb'"feeAmount":\d+,', b) for b in kes)
    others = [b for b in ledger.export_bodies() if b'"toCurrency":"NGN"' in b]
    assert not any(re.search(rb'"feeAmount":\d+,', b) for b in others)


def test_ties_share_a_millisecond(records: list[dict[str, Any]]) -> None:
    counts = collections.Counter(r["createdAt"] for r in records)
    tied = sum(n for n in counts.values() if n > 1)
    assert 0.01 < tied / len(records) < 0.1


def test_exported_records_use_decimal_money(records: list[dict[str, Any]]) -> None:
    for r in records[:500]:
        assert isinstance(r["toAmount"], Decimal)
        assert isinstance(r["feeAmount"], Decimal) and isinstance(r["taxAmount"], Decimal)


def test_exported_records_equal_what_the_server_sends(
    client: httpx.Client, records: list[dict[str, Any]]
) -> None:
    page = client.get("/transaction", params={"skip": 500, "limit": 1000})
    parsed = json.loads(page.content, parse_float=Decimal)["data"]["transactions"]
    assert [decimal_money(r) for r in parsed] == records[500:1500]
