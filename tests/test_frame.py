"""Decoding pages (txkit.decode): the fast path equals the exact path, nothing is lost, drift is
explained."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.factories import BASE_RECORD, page, record
from txkit import decode as F
from txkit.analysis.activity import activity_history
from txkit.decode._exact import decode_exact
from txkit.errors import ApiError, ResponseFormatError, SchemaError
from txkit.schema import COLUMNS


def _variety() -> list[dict]:
    no_meta = record(1)
    no_meta.pop("meta")
    no_meta.pop("rollingReserve")
    no_meta["paidAt"] = None
    transfer = record(
        2,
        transType="transfer",
        toBalanceAfterAvailable=None,
        fromBalanceAfterLedger=99.99,
        recipient={"recipientName": "TEST RECIPIENT", "institutionType": "mobile_money"},
    )
    nulls_inside = record(3, customNotifyEmails=[None, "a@example.test"])
    nulls_inside["meta"]["narration"] = "null and void"
    return [record(0), no_meta, transfer, nulls_inside, record(4, meta={})]


def test_fast_path_equals_exact_path() -> None:
    body = page(_variety() * 40)
    raw = F.read_page(body)
    frames = F.build_frames([raw])
    assert not raw.exact, "a clean page must take the fast path"
    assert_frame_equal(frames[0], decode_exact(body).frame)


def test_every_documented_column_is_present_with_its_type() -> None:
    for body in (page([]), page([record(0)])):
        decoded = F.decode_page(body)
        assert dict(decoded.frame.schema) == COLUMNS


def test_flattened_names_and_values() -> None:
    df = F.decode_page(page([record(0)])).frame
    row = df.row(0, named=True)
    assert row["meta.customerActivity.attempts"] == 1
    assert row["rollingReserve.amount"] == Decimal("6250.03")
    assert row["feeAmount"] == Decimal("1750.00")
    assert row["merchantInfo.name"] == "Sandbox Merchant Ltd"
    assert str(row["meta.customerActivity.start_time"]) == "2026-01-02 03:04:05.678000+00:00"
    assert row["createdAt"].microsecond == 678000


def test_money_roundtrips_exactly_through_the_fast_path() -> None:
    rng = random.Random(1)
    values = [Decimal(rng.randrange(-(10**15), 10**15)) / 100 for _ in range(3000)]
    values += [Decimal("0.29"), Decimal("2.67"), Decimal("9999999999999.99"), Decimal("0.01")]
    records = [record(i, toAmount=float(v)) for i, v in enumerate(values)]
    # json renders floats with repr(): the shortest text that round-trips, i.e. the decimal.
    raw = F.read_page(page(records))
    (df,) = F.build_frames([raw])
    assert not raw.exact
    assert df["toAmount"].to_list() == values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9007199254740993.01", Decimal("9007199254740993.01")),  # beyond float64
        ("12.345", Decimal("12.345")),  # more decimals than the column: widened, not rounded
        ('"1500.10"', Decimal("1500.10")),  # numeric string
        ("1e3", Decimal("1000")),  # float64 holds it: the fast path may keep it
    ],
)
def test_money_that_float64_cannot_hold_is_read_exactly(text: str, expected: Decimal) -> None:
    body = page([record(0)]).replace(b'"toAmount":125000.5', b'"toAmount":' + text.encode())
    decoded = F.decode_page(body)
    assert decoded.exact or text == "1e3"
    assert decoded.frame["toAmount"][0] == expected


def test_undocumented_fields_are_kept_and_typed() -> None:
    rec = record(0, riskScore=12.5, retries=3, device={"os": "android", "build": 7})
    rec["meta"]["channelRef"] = "abc"
    df = F.decode_page(page([rec, record(1)])).frame
    assert df.columns[: len(COLUMNS)] == list(COLUMNS)
    assert df.schema["riskScore"] == pl.Decimal(38, 1)
    assert df.schema["retries"] == pl.Int64
    assert df["device.os"].to_list() == ["android", None]
    assert df["device.build"].to_list() == [7, None]
    assert df["meta.channelRef"].to_list() == ["abc", None]


def test_number_and_numeric_string_mix_becomes_decimal() -> None:
    df = F.decode_page(page([record(0, score=5), record(1, score="7.25")])).frame
    assert df["score"].to_list() == [Decimal("5.00"), Decimal("7.25")]


def test_text_that_is_not_a_number_keeps_numbers_as_text() -> None:
    df = F.decode_page(page([record(0, code=7), record(1, code="007")])).frame
    assert df["code"].to_list() == ["7", "007"]


def test_object_vs_string_fails_naming_record_field_value() -> None:
    body = page([record(0, device={"os": "ios"}), record(1, device="ios")])
    with pytest.raises(SchemaError, match=r"record '.*a01', field 'device', value 'ios'"):
        F.decode_page(body)


def test_documented_object_given_as_scalar_fails() -> None:
    with pytest.raises(SchemaError, match=r"field 'meta', value 'oops'"):
        F.decode_page(page([record(0, meta="oops")]))


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("feeAmount", "ten", "money amount"),
        ("isManual", "maybe", "boolean"),
        ("createdAt", "02/01/2026", "ISO 8601"),
        ("customerEmail", {"a": 1}, "string"),
    ],
)
def test_lossy_values_fail_with_context(field: str, value: object, what: str) -> None:
    with pytest.raises(SchemaError, match=what) as info:
        F.decode_page(page([record(0), record(7, **{field: value})]))
    assert info.value.record_id == record(7)["id"]
    assert info.value.field == field


def test_fractional_integer_fails() -> None:
    rec = record(0)
    rec["meta"]["customerActivity"]["attempts"] = 1.5
    with pytest.raises(SchemaError, match="meta.customerActivity.attempts"):
        F.decode_page(page([rec]))


def test_unspecified_arrays_keep_objects_as_json_text() -> None:
    rec = record(0)
    rec["meta"]["customerActivity"]["input"] = [{"field": "amount", "value": 10.50}, "x"]
    df = F.decode_page(page([rec])).frame
    first, second = df["meta.customerActivity.input"][0]
    assert first == '{"field":"amount","value":10.5}' and second == "x"


def test_dispute_records_keep_every_member() -> None:
    fast = {"reference": "DSP-1", "reason": "fraudulent", "status": "won"}
    odd = {"reference": "DSP-2", "amount": 10.50, "status": "open"}
    a = F.decode_page(page([record(0, disputes=[fast])]))
    b = F.decode_page(page([record(1, disputes=[odd])]))
    assert not a.exact and b.exact
    df = F.combine([a.frame, b.frame])
    assert df["disputes"].to_list() == [
        [{"reference": "DSP-1", "reason": "fraudulent", "status": "won", "amount": None}],
        [{"reference": "DSP-2", "reason": None, "status": "open", "amount": "10.5"}],
    ]


def test_escaped_quotes_are_read_exactly() -> None:
    rec = record(0)
    rec["meta"]["narration"] = 'he said "paid":null'
    df = F.decode_page(page([rec])).frame
    assert df["meta.narration"][0] == 'he said "paid":null'


def test_pretty_printed_page_is_read() -> None:
    body = json.dumps(json.loads(page(_variety())), indent=2).encode()
    assert_frame_equal(F.decode_page(body).frame, F.decode_page(page(_variety())).frame)


def test_not_json_is_reported_with_an_excerpt() -> None:
    with pytest.raises(ResponseFormatError, match="did not return JSON.*<html>"):
        F.decode_page(b"<html><body>Bad gateway</body></html>")


def test_success_false_is_an_error() -> None:
    body = json.dumps({"success": False, "message": "User has insufficient balance.", "data": {}})
    with pytest.raises(ApiError, match="insufficient balance"):
        F.decode_page(body.encode())


def test_missing_total_is_a_format_error() -> None:
    body = json.dumps({"success": True, "message": "ok", "data": {"transactions": []}})
    with pytest.raises(ResponseFormatError, match="data.total"):
        F.decode_page(body.encode())


def test_combine_widens_scales_and_aligns_columns() -> None:
    a = F.decode_page(page([record(0, toAmount=1.5)])).frame
    b = F.decode_page(page([record(1, toAmount=1.125, extra=1)])).frame
    df = F.combine([a, b])
    assert df.schema["toAmount"] == pl.Decimal(38, 3)
    assert df["toAmount"].to_list() == [Decimal("1.500"), Decimal("1.125")]
    assert df["extra"].to_list() == [None, 1]


@pytest.mark.parametrize("lazy", [False, True])
def test_activity_history_long_table(lazy: bool) -> None:
    df = F.decode_page(page([record(0), record(1, meta={})])).frame
    hist = activity_history(df.lazy() if lazy else df)
    expected = pl.DataFrame(
        {
            "id": [record(0)["id"]] * 2,
            "position": [0, 1],
            "type": ["action", "error"],
            "message": ["Opened checkout", "Transfer pending"],
            "time": [None, None],
        },
        schema={
            "id": pl.String,
            "position": pl.Int64,
            "type": pl.String,
            "message": pl.String,
            "time": pl.String,
        },
    )
    assert_frame_equal(hist, expected)


def test_base_record_is_documented_shape() -> None:
    assert set(BASE_RECORD) <= {c.split(".")[0] for c in COLUMNS}


def _pages_for_decode() -> list[bytes]:
    records = [record(i, createdAt=f"2026-01-02T03:04:{i % 60:02d}.000Z") for i in range(300)]
    bodies = [page(records[i : i + 7], total=300) for i in range(0, 300, 7)]
    # The same record on two pages (an overlap between passes) and an exact-path page.
    bodies.append(page([record(5, createdAt="2026-01-02T03:04:05.000Z")], total=300))
    big = page([record(400)], total=300)
    bodies.append(big.replace(b'"toAmount":125000.5', b'"toAmount":9007199254740993.01'))
    return bodies


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2, 5])
def test_decode_pages_equals_page_by_page(threads: int) -> None:
    bodies = _pages_for_decode()
    expected = F.assemble([F.decode_page(b).frame for b in bodies])
    df = F.decode_pages(iter(bodies), threads=threads)
    assert_frame_equal(df, expected)
    assert df.height == 301 and df["id"].is_unique().all()
    assert df.filter(pl.col("id") == record(400)["id"])["toAmount"][0] == Decimal(
        "9007199254740993.01"
    )


def test_decode_pages_of_nothing_has_every_column() -> None:
    df = F.decode_pages([])
    assert df.height == 0 and df.schema == pl.Schema(COLUMNS)


def test_decode_pages_reports_the_bad_page() -> None:
    bodies = _pages_for_decode()
    bodies[40] = b"<html>Bad gateway</html>"
    with pytest.raises(ResponseFormatError, match="did not return JSON.*Bad gateway"):
        F.decode_pages(bodies, threads=2)


def test_decode_pages_rejects_zero_threads() -> None:
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        F.decode_pages([], threads=0)


@pytest.mark.slow
@pytest.mark.parametrize("builders", [2, 3])
def test_parallel_builders_keep_the_pages_order_and_raise_the_bad_batch(builders: int) -> None:
    bodies = _pages_for_decode()

    def sink_of(bodies: list[bytes], builders: int) -> F.PageSink:
        sink = F.PageSink(batch_pages=3, builders=builders)
        for body in bodies:
            sink.add(F.read_page(body))
        sink.flush()
        return sink

    serial, parallel = sink_of(bodies, 1), sink_of(bodies, builders)
    assert len(parallel.frames) == len(serial.frames) > builders
    for ours, theirs in zip(parallel.frames, serial.frames, strict=True):
        assert_frame_equal(ours, theirs)
    assert parallel.ids == serial.ids and parallel.exact_pages == serial.exact_pages == 1
    # A lossy value in a batch converted while others are in flight: that batch's error.
    bad = record(77, toAmount=1)
    lossy = page([bad], total=300).replace(b'"toAmount":1', b'"toAmount":"abc"')
    with pytest.raises(SchemaError) as info:
        sink_of([*bodies[:10], lossy, *bodies[10:20]], builders)
    assert info.value.record_id == bad["id"]
