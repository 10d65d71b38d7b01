"""txkit.decode against hostile pages: strict types on both paths, bounds, odd number tokens,
envelope tolerance. Pages are crafted as raw bytes (so a token is exactly what the server sent)
and, where the loader matters, served over real HTTP by tests/hostile.py."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import polars as pl
import pytest

import txkit
import txkit.decode
from tests.factories import page, record
from tests.hostile import HostileServer, Reply, Seen
from txkit.decode import build_frames, decode_page, read_page
from txkit.decode._exact import decode_exact
from txkit.errors import LimitExceededError, ResponseFormatError, SchemaError

ACTIVITY = "meta.customerActivity."


def _put(rec: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    *parents, leaf = name.split(".")
    node = rec
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return rec


def _with_token(name: str, token: str, index: int = 1) -> bytes:
    """A page of two records whose ``name`` in the second is the raw JSON ``token``."""
    marker = "__TOKEN__"
    body = page([record(0), _put(record(index), name, marker)])
    return body.replace(f'"{marker}"'.encode(), token.encode())


def _json(body: bytes) -> Reply:
    return Reply(200, body, {"Content-Type": "application/json"})


def _fast(body: bytes) -> tuple[bool, pl.DataFrame]:
    raw = read_page(body)
    frames = build_frames([raw])
    return raw.exact, pl.concat(frames, how="diagonal_relaxed")


def _outcome(decode: Any, body: bytes) -> tuple[str, Any]:
    try:
        frame = decode(body)
    except SchemaError as exc:
        return "SchemaError", (exc.record_id, exc.field)
    return "ok", frame


# --------------------------------------------------------------------------- a. strict types

NUMBER_FIELDS = [
    "toAmount",
    f"{ACTIVITY}attempts",
    f"{ACTIVITY}time_spent",
    f"{ACTIVITY}start_time",
]
HOSTILE_VALUES = [
    "true",
    "false",
    '"abc"',
    '"true"',
    '""',
    '{"a":1}',
    "[1]",
    '"12"',
    "1",
    "0",
    "-100000000000000",  # epoch ms of the year -1200: outside what both paths accept
    "253402300800000",  # 10000-01-01
]


@pytest.mark.slow
@pytest.mark.parametrize("token", HOSTILE_VALUES)
@pytest.mark.parametrize(
    "name", [*NUMBER_FIELDS, "isManual", "status", "createdAt", "customNotifyEmails", "disputes"]
)
def test_the_same_hostile_page_has_the_same_outcome_on_both_paths(name: str, token: str) -> None:
    body = _with_token(name, token)
    fast = _outcome(lambda b: _fast(b)[1], body)
    exact = _outcome(lambda b: decode_exact(b).frame, body)
    assert fast[0] == exact[0], (fast, exact)
    if fast[0] == "ok":
        assert fast[1].select(exact[1].columns).to_dicts() == exact[1].to_dicts()
    else:
        assert fast[1] == exact[1] == (record(1)["id"], name)


@pytest.mark.parametrize("name", NUMBER_FIELDS)
@pytest.mark.parametrize("token", ["true", "false"])
def test_a_boolean_is_never_a_number(name: str, token: str) -> None:
    body = _with_token(name, token)
    with pytest.raises(SchemaError, match="never true/false") as info:
        decode_page(body)
    assert info.value.record_id == record(1)["id"] and info.value.field == name
    assert info.value.value is (token == "true")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("token", ["null", "1", '"x"', "[]", "true", "{}", '{"id":null}'])
def test_a_record_that_is_not_an_object_has_the_same_outcome_on_both_paths(token: str) -> None:
    # polars reads the records array alone, a row per record: a record that is not an
    # object must not become a row of nulls.
    marker = "__RECORD__"
    body = page([record(0), marker, record(2)]).replace(f'"{marker}"'.encode(), token.encode())  # type: ignore[list-item]

    def run(decode: Any) -> tuple[str, Any]:
        try:
            return "ok", decode()
        except (SchemaError, ResponseFormatError) as exc:
            return type(exc).__name__, str(exc)

    fast = run(lambda: _fast(body))
    exact = run(lambda: decode_exact(body).frame)
    assert fast[0] == exact[0], (fast, exact)
    if fast[0] == "ok":
        frame = fast[1][1]
        assert frame.select(exact[1].columns).to_dicts() == exact[1].to_dicts()
    else:
        assert fast[1] == exact[1]


def test_a_bare_string_is_not_wrapped_into_a_list() -> None:
    # polars' reader would read "customNotifyEmails": "x" as ["x"].
    with pytest.raises(SchemaError, match="a list") as info:
        decode_page(_with_token("customNotifyEmails", '"ops@example.test"'))
    assert info.value.field == "customNotifyEmails"


@pytest.mark.slow
def test_to_amount_true_fails_over_http(hostile_server) -> None:
    body = _with_token("toAmount", "true")
    server: HostileServer = hostile_server(lambda r: _json(body))
    with server.client() as client, pytest.raises(SchemaError) as info:
        txkit.load_transactions(client, progress=False)
    assert info.value.record_id == record(1)["id"] and info.value.field == "toAmount"
    assert "value True" in str(info.value)


# --------------------------------------------------------------------------- b. bounds


def test_deep_nesting_is_a_one_line_error_on_every_path() -> None:
    deep = "[" * 100 + "]" * 100
    with pytest.raises(SchemaError, match="deeper than 32 levels") as info:
        decode_page(_with_token("riskModel", deep))
    assert info.value.field == "riskModel" and "\n" not in str(info.value)
    deeper = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ResponseFormatError, match="nests JSON deeper") as err:
        decode_page(_with_token("riskModel", deeper))
    assert "\n" not in str(err.value) and len(str(err.value)) < 400
    nested_objects = '{"a":' * 40 + "1" + "}" * 40
    with pytest.raises(SchemaError, match="deeper than 32 levels"):
        decode_page(_with_token("riskModel", nested_objects))


@pytest.mark.slow
def test_an_implausible_total_fails_before_anything_is_sized_from_it(
    hostile_server,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    huge = page([record(0)], total=10**13)
    with pytest.raises(LimitExceededError, match=r"10,000,000,000,000.*TXKIT_MAX_TOTAL") as info:
        read_page(huge)
    assert "100,000,000" in str(info.value) and info.value.bound == "max_total"
    server: HostileServer = hostile_server(lambda r: _json(huge))
    with server.client() as client, pytest.raises(LimitExceededError, match="TXKIT_MAX_TOTAL"):
        txkit.load_transactions(client, progress=False)
    assert len(server.seen) == 1  # refused on the first page, no further request
    # The bound is configurable; both paths apply it.
    monkeypatch.setenv("TXKIT_MAX_TOTAL", "1")
    two = page([record(0), record(1)])
    with pytest.raises(LimitExceededError, match="maximum of 1 records"):
        read_page(two)
    with pytest.raises(LimitExceededError, match="maximum of 1 records"):
        decode_exact(two)
    monkeypatch.setenv("TXKIT_MAX_TOTAL", "2")
    assert read_page(two).total == 2
    monkeypatch.setenv("TXKIT_MAX_TOTAL", "lots")
    with pytest.raises(txkit.ConfigError, match="TXKIT_MAX_TOTAL must be a positive"):
        read_page(two)


@pytest.mark.parametrize("total", ["1e400", '"\u00b2"', "1e13", "-1", "true", "1.5"])
def test_odd_totals_are_one_line_errors(total: str) -> None:
    body = page([record(0)]).replace(b'"total":1', b'"total":' + total.encode())
    with pytest.raises((ResponseFormatError, LimitExceededError)) as info:
        decode_page(body)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


@pytest.mark.parametrize("name", ["toAmount", "fromAmount", f"{ACTIVITY}attempts", "riskScore"])
@pytest.mark.parametrize("token", ["1e400", "1" * 39, "-" + "9" * 45, "1" * 5000])
def test_numbers_too_large_are_one_line_schema_errors(name: str, token: str) -> None:
    body = _with_token(name, token)
    if name == "riskScore":
        # Undocumented: kept losslessly as text rather than failing.
        frame = decode_page(body).frame
        assert frame["riskScore"][1] in (token, str(Decimal(token)))
        return
    with pytest.raises(SchemaError) as info:
        decode_page(body)
    assert info.value.record_id == record(1)["id"] and info.value.field == name
    assert "\n" not in str(info.value) and len(str(info.value)) < 600


# --------------------------------------------------------------------------- c. odd tokens

ODD_TOKENS = [
    "1.1000000000000001",
    "99999999999.9999999",
    "1234567890123456.78",
    "0.30000000000000004",
    "1E2",
    "1e2",
]


def _serve_pages(bodies: list[bytes]) -> Any:
    """A responder serving ``bodies`` as consecutive pages of ``limit`` records each."""

    def respond(seen: Seen) -> Reply:
        skip = int(seen.query.get("skip", 0))
        limit = int(seen.query.get("limit", 1000))
        index = skip // limit if limit else 0
        return _json(bodies[index] if index < len(bodies) else page([], total=0))

    return respond


@pytest.mark.slow
@pytest.mark.parametrize("token", ODD_TOKENS)
def test_odd_money_tokens_are_kept_exactly_over_http(hostile_server, token: str) -> None:
    body = _with_token("toAmount", token)
    assert _fast(body)[0], "a token float64 may not carry must go to the exact path"
    server: HostileServer = hostile_server(_serve_pages([body]))
    stats = txkit.ExportStats()
    with server.client() as client:
        df = txkit.load_transactions(client, stats=stats, progress=False)
    assert stats.exact_pages == 1
    value = df.filter(pl.col("id") == record(1)["id"])["toAmount"].item()
    assert value == Decimal(token)
    assert df.filter(pl.col("id") == record(0)["id"])["toAmount"].item() == Decimal("125000.5")


@pytest.mark.slow
@pytest.mark.parametrize("token", ODD_TOKENS)
def test_odd_tokens_where_the_column_cannot_hold_them_name_the_token(
    hostile_server,
    token: str,
) -> None:
    body = _with_token(f"{ACTIVITY}attempts", token)
    holds = Decimal(token) == Decimal(token).to_integral_value() and abs(Decimal(token)) < 2**63
    server: HostileServer = hostile_server(_serve_pages([body]))
    with server.client() as client:
        if holds:  # 1E2: a whole number, kept exactly as 100
            df = txkit.load_transactions(client, progress=False)
            assert df[f"{ACTIVITY}attempts"].to_list()[1] == 100
            return
        with pytest.raises(SchemaError) as info:
            txkit.load_transactions(client, progress=False)
    assert info.value.record_id == record(1)["id"]
    assert info.value.field == f"{ACTIVITY}attempts"
    assert str(Decimal(token)) in str(info.value)


@pytest.mark.parametrize("token", ODD_TOKENS)
def test_float_column_keeps_a_token_only_if_float64_holds_it(token: str) -> None:
    body = _with_token(f"{ACTIVITY}time_spent", token)
    as_float = float(token)
    if Decimal(repr(as_float)) == Decimal(token):  # 0.30000000000000004, 1E2 round-trip
        assert decode_page(body).frame[f"{ACTIVITY}time_spent"][1] == as_float
    else:
        with pytest.raises(SchemaError, match="float64 holds exactly") as info:
            decode_page(body)
        assert info.value.field == f"{ACTIVITY}time_spent"


def test_ordinary_numbers_stay_on_the_fast_path() -> None:
    recs = [record(i, toAmount=v) for i, v in enumerate([0, 1, 12.5, 999999999999.99, -3.25])]
    exact, frame = _fast(page(recs))
    assert not exact
    assert frame["toAmount"].to_list()[3] == Decimal("999999999999.99")


# --------------------------------------------------------------------------- d. envelope


def _extra_envelope(body: bytes) -> bytes:
    doc = json.loads(body)
    doc = {"requestId": "req-true-[:null]-1e5", "success": True, "cached": False, **doc}
    doc["data"] = {"page": 2, "limit": 1000, **doc["data"], "pages": [1, 2], "next": None}
    doc["meta"] = {"elapsedMs": "__MS__", "server": {"region": "eu"}}
    return json.dumps(doc, separators=(",", ":")).encode().replace(b'"__MS__"', b"1.5e3")


def test_extra_envelope_keys_keep_the_fast_path() -> None:
    body = _extra_envelope(page([record(0), record(1)]))
    raw = read_page(body)
    frames = build_frames([raw])
    assert not raw.exact and raw.total == 2 and raw.count == 2
    exact = decode_exact(body).frame
    assert frames[0].to_dicts() == exact.to_dicts()


def test_extra_envelope_keys_do_not_hide_an_unknown_record_key() -> None:
    body = _extra_envelope(page([record(0), record(1, riskScore=3)]))
    raw = read_page(body)
    (frame,) = build_frames([raw])
    assert raw.exact and frame["riskScore"].to_list() == [None, 3]


@pytest.mark.slow
def test_extra_envelope_keys_over_http_take_no_exact_page(hostile_server) -> None:
    bodies = [
        _extra_envelope(page([record(i * 3 + k) for k in range(3)], total=9)) for i in range(3)
    ]
    server: HostileServer = hostile_server(_serve_pages(bodies))
    stats = txkit.ExportStats()
    with server.client() as client:
        df = txkit.load_transactions(client, stats=stats, page_size=3, progress=False)
    assert df.height == 9 and stats.pages == 3 and stats.exact_pages == 0


def test_a_wider_scale_on_one_page_leaves_room_for_the_others_or_fails_naming_the_record() -> None:
    odd = _with_token("toAmount", "1.1000000000000001")
    big = _with_token("toAmount", "1" + "0" * 22, index=2)  # 23 digits: fits at scale 2 or 0
    with pytest.raises(SchemaError, match="does not fit in 38 digits") as info:
        txkit.decode.decode_pages([odd, big], threads=1)
    assert info.value.record_id == record(2)["id"] and info.value.field == "toAmount"
    fine = _with_token("toAmount", "1" + "0" * 20, index=2)
    df = txkit.decode.decode_pages([odd, fine], threads=1)
    assert sorted(df["toAmount"].to_list())[-1] == Decimal("1" + "0" * 20)


@pytest.mark.slow
def test_sandbox_envelope_extras_keep_every_page_on_the_fast_path() -> None:
    from txkit.sandbox import Sandbox, generate_ledger

    with Sandbox(ledger=generate_ledger(seed=7, records=3_000)) as box:
        counted = {}
        for faults in (None, "envelope_extras"):
            box.faults = faults
            stats = txkit.ExportStats()
            with txkit.Client(box.base_url, box.secret_key, env_file=None) as client:
                df = txkit.load_transactions(client, stats=stats, page_size=500, progress=False)
            counted[faults] = (df.height, stats.pages, stats.exact_pages)
    assert counted["envelope_extras"] == counted[None]
    height, pages, exact = counted["envelope_extras"]
    assert height > 2_900 and pages >= 6 and exact == 0


@pytest.mark.parametrize("spacing", [b'"toAmount": ', b'"toAmount" :', b'"toAmount" :\n  '])
@pytest.mark.parametrize("token", [b"1.1000000000000001", b"1E2"])
def test_odd_tokens_are_found_whatever_the_whitespace(spacing: bytes, token: bytes) -> None:
    body = _with_token("toAmount", "7").replace(b'"toAmount":7', spacing + token)
    exact, frame = _fast(body)
    assert exact and frame["toAmount"][1] == Decimal(token.decode())
