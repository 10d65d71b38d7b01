"""The secret key never reaches a written file, even when a server echoes it inside records:
exports (Parquet, CSV), the store (Delta) and the report's downloads. Over real HTTP."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.factories import invoke_cli, page, record
from tests.hostile import HostileServer, Reply, Seen
from txkit._scrub import REDACTED, scrub_frame
from txkit.notebook._downloads import Destination, ExceptionList, publish_exceptions

KEY = "Zq9-unusual.KEY/with+chars=="
#: The forms a leak would take in a file: as is, URL-encoded, base64 (and its URL-safe twin).
LEAKS = [
    KEY,
    quote(KEY, safe=""),
    quote_plus(KEY, safe=""),
    base64.b64encode(KEY.encode()).decode().rstrip("="),
    base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("="),
]
WARNING = "secret key was found in"


def assert_no_key(data: bytes | str, where: str) -> None:
    text = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
    for leak in LEAKS:
        assert leak not in text, f"{leak!r} in {where}"


def echoing_records() -> list[dict[str, Any]]:
    """Three records of 2026-01-02, the key echoed in a top-level string, a nested meta string,
    a list element, a struct in a list, and an undocumented field (one URL-encoded)."""
    first = record(0, customerEmail=f"{KEY}@example.test")
    first["meta"]["narration"] = f"TRF {KEY} TO MERCHANT"
    second = record(1, customNotifyEmails=["ops@example.test", KEY])
    second["meta"]["customerActivity"]["history"][1]["message"] = f"echo {KEY}"
    third = record(2, echoedBack=f"key={quote(KEY, safe='')}")
    return [first, second, third]


def echoing_server(seen: Seen) -> Reply:
    """Serves the records inside the request's date filter, with skip/limit."""
    rows = [
        r
        for r in echoing_records()
        if seen.query.get("startDate", "0000")
        <= r["createdAt"][:10]
        <= seen.query.get("endDate", "9999")
    ]
    skip, limit = int(seen.query.get("skip", 0)), int(seen.query.get("limit", 50))
    body = page(rows[skip : skip + limit], total=len(rows))
    return Reply(200, body, {"Content-Type": "application/json"})


@pytest.fixture
def server():
    with HostileServer(echoing_server) as running:
        yield running


def cli(*args: str, cwd: Path, server: HostileServer) -> subprocess.CompletedProcess[str]:
    env = {"TXKIT_BASE_URL": server.base_url, "TXKIT_SECRET_KEY": KEY}
    done = invoke_cli(*args, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    assert_no_key(done.stdout + done.stderr, "the command's output")
    warnings = [line for line in done.stderr.splitlines() if WARNING in line]
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith("txkit: WARNING: ") and REDACTED in warnings[0]
    return done


def every_file(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def assert_parquet_clean(path: Path) -> pl.DataFrame:
    """The file's raw bytes (footer: schema, statistics) and every decoded value."""
    assert_no_key(path.read_bytes(), str(path))
    df = pl.read_parquet(path)
    assert_no_key(json.dumps(df.to_dicts(), default=str) + " ".join(df.columns), str(path))
    return df


def assert_scrubbed_values(df: pl.DataFrame) -> None:
    """The echoed values are there, with ``***`` where the key was (nothing else changed)."""
    rows = {r["transactionReference"]: r for r in df.to_dicts()}
    first, second, third = (rows[f"TXK-REF-{i:08d}"] for i in range(3))
    assert first["customerEmail"] == "***@example.test"
    assert first["meta.narration"] == "TRF *** TO MERCHANT"
    assert second["customNotifyEmails"] == ["ops@example.test", "***"]
    history = second["meta.customerActivity.history"]
    assert [h["message"] for h in history] == ["Opened checkout", "echo ***"]
    assert third["echoedBack"] == "key=***"
    assert third["meta.narration"] == "TRF FROM ADA TO SANDBOX MERCHANT"


@pytest.mark.slow
def test_export_to_parquet_and_csv_holds_no_key(server: HostileServer, tmp_path: Path) -> None:
    for name in ("x.parquet", "x.csv"):
        cli("export", "--start", "2026-01-01", "--end", "2026-01-31", "-o", name,
            cwd=tmp_path, server=server)  # fmt: skip
    assert_scrubbed_values(assert_parquet_clean(tmp_path / "x.parquet"))
    text = (tmp_path / "x.csv").read_text(encoding="utf-8")
    assert "***@example.test" in text and "echo ***" in text
    for path in every_file(tmp_path):
        assert_no_key(path.read_bytes(), str(path))


def test_sync_into_a_store_holds_no_key(server: HostileServer, tmp_path: Path) -> None:
    store = tmp_path / "store"
    cli("sync", "--start", "2026-01-01", "--end", "2026-01-31", "--store", str(store),
        "--no-progress", cwd=tmp_path, server=server)  # fmt: skip
    files = every_file(store)
    parquet = [p for p in files if p.suffix == ".parquet"]
    assert parquet and any("_delta_log" in str(p) for p in files)
    for path in files:
        assert_no_key(path.read_bytes(), str(path))
    for path in parquet:
        assert_parquet_clean(path)
    assert_scrubbed_values(pl.read_delta(str(store)))


def test_report_downloads_hold_no_key(tmp_path: Path, caplog, monkeypatch) -> None:
    monkeypatch.setenv("TXKIT_SECRET_KEY", KEY)  # as a report run has it configured
    df = pl.DataFrame(
        {
            "transactionReference": ["TXK-1", f"TXK-{KEY}"],
            "category": ["missing", "missing"],
            "note": [f"server said {KEY}", "fine"],
            "tags": [["a", quote_plus(KEY, safe="")], []],
        }
    )
    folder = tmp_path / "2026-01"
    # A list of the one registry (issue 33): an unknown name is refused before anything is written.
    listing = ExceptionList(
        "reconciliation_mismatches", "Mismatches", ["transactionReference", "category"]
    )
    publish_exceptions(df, listing, Destination("2026-01", folder, show_pii=True))
    files = every_file(folder)
    assert {p.suffix for p in files} >= {".csv", ".xlsx", ".json"}
    for path in files:
        assert_no_key(path.read_bytes(), str(path))
        if path.suffix == ".xlsx":
            with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as book:
                for member in book.namelist():
                    assert_no_key(book.read(member), f"{path}:{member}")
    text = (folder / "reconciliation_mismatches.csv").read_text(encoding="utf-8")
    assert "server said ***" in text
    warnings = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert len(warnings) == 1 and "mismatches" in warnings[0]


NESTED = pl.DataFrame(
    {
        "text": [f"a {KEY} b", "plain", None],
        "items": [["x", KEY, None], None, []],
        "meta": [
            {"note": f"<{KEY}>", "history": [{"message": KEY, "n": 1}, {"message": "ok", "n": 2}]},
            None,
            {"note": "clean", "history": None},
        ],
        "deep": [[[f"b64 {base64.b64encode(KEY.encode()).decode()}"]], [["y"]], None],
        f"extra_{KEY}": [1, 2, 3],
        "amount": [1, 2, 3],
    }
)


def test_nested_list_and_struct_values_are_scrubbed(caplog) -> None:
    out, count = scrub_frame(NESTED, KEY, where="the unit test")
    assert count == 6  # 5 values + 1 column name
    assert out["text"].to_list() == ["a *** b", "plain", None]
    assert out["items"].to_list() == [["x", "***", None], None, []]
    assert out["meta"].to_list() == [
        {"note": "<***>", "history": [{"message": "***", "n": 1}, {"message": "ok", "n": 2}]},
        None,
        {"note": "clean", "history": None},
    ]
    assert out["deep"].to_list()[0][0][0].startswith("b64 ***")
    assert out.columns == ["text", "items", "meta", "deep", "extra_***", "amount"]
    assert out.schema["meta"] == NESTED.schema["meta"]
    assert_no_key(json.dumps(out.to_dicts()) + " ".join(out.columns), "the frame")
    warnings = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert len(warnings) == 1 and "6 value(s)" in warnings[0] and "the unit test" in warnings[0]
    assert_no_key(warnings[0], "the warning")


def test_values_without_the_key_are_unchanged(caplog) -> None:
    # Key-shaped values that are not the configured key are data, not secrets: kept.
    clean = NESTED.drop(f"extra_{KEY}").with_columns(
        pl.Series("text", ["sk_live_abcdefgh12345", "Bearer abc.def", None]),
        pl.Series("items", [["x"], None, []]),
        pl.lit(None, pl.String).alias("meta"),
        pl.Series("deep", [[["y"]], None, [["z"]]]),
    )
    out, count = scrub_frame(clean, KEY)
    assert count == 0 and out is clean
    assert_frame_equal(out, clean)
    assert_frame_equal(scrub_frame(clean.head(0), KEY)[0], clean.head(0))
    assert not [r for r in caplog.records if WARNING in r.getMessage()]


def test_a_list_the_registry_does_not_define_is_refused_before_any_file(tmp_path: Path) -> None:
    folder = tmp_path / "2026-01"
    listing = ExceptionList("mismatches", "Mismatches", ["transactionReference"])
    frame = pl.DataFrame({"transactionReference": ["TXK-1"]})
    with pytest.raises(ValueError, match="no exception list is named 'mismatches': the lists"):
        publish_exceptions(frame, listing, Destination("2026-01", folder, show_pii=True))
    assert not folder.exists() or not any(folder.iterdir())
