"""Files txkit writes: CSV cells a spreadsheet would run as formulas are neutralised."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from tests.factories import page, record
from txkit.output import csv_safe, write_frame

HOSTILE = ['=HYPERLINK("http://x.test","y")', "@SUM(A1:A2)", "+1+1", "-2+3", "\tx", "\rx"]


@pytest.fixture(scope="module")
def hostile_service() -> Iterator[str]:
    """A real HTTP server on loopback whose records carry formula-shaped text."""
    records = [
        record(i, customerEmail=f"{text}@example.test" if i % 2 else "ok@example.test",
               transactionReference=text, narration=text)
        for i, text in enumerate(HOSTILE)
    ]  # fmt: skip
    body = page(records)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_export_csv_neutralises_formulas_and_parquet_keeps_values(
    hostile_service: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    env |= {"TXKIT_BASE_URL": hostile_service, "TXKIT_SECRET_KEY": "sk_test_csv_0123456789"}
    for name in ("x.csv", "x.parquet"):
        done = subprocess.run(
            [sys.executable, "-m", "txkit.cli", "export", "--no-progress", "-o", name],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    csv = pl.read_csv(tmp_path / "x.csv", infer_schema=False)
    parquet = pl.read_parquet(tmp_path / "x.parquet")
    assert sorted(parquet["transactionReference"].to_list()) == sorted(HOSTILE)
    assert sorted(csv["transactionReference"].to_list()) == sorted("'" + t for t in HOSTILE)
    for column in ("transactionReference", "narration"):
        for cell in csv[column].drop_nulls().to_list():
            assert cell[0] not in "=+-@\t\r", (column, cell)
    # Text that does not start like a formula is written as it is.
    assert "ok@example.test" in csv["customerEmail"].to_list()
    assert parquet["toAmount"].cast(pl.String).to_list() == csv["toAmount"].to_list()


def test_csv_safe_touches_only_text_that_starts_like_a_formula(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "text": ["=1+1", "a=b", "-", None, "\r\n", "plain"],
            "number": [-1, 2, 3, 4, 5, 6],
            "kind": pl.Series(["@x", "y", "y", "y", "y", "y"], dtype=pl.Categorical),
            "tags": [["=x"], [], [], [], [], []],
        }
    )
    safe = csv_safe(df)
    assert safe["text"].to_list() == ["'=1+1", "a=b", "'-", None, "'\r\n", "plain"]
    assert safe["number"].to_list() == [-1, 2, 3, 4, 5, 6]
    assert safe["kind"].to_list()[0] == "'@x"
    assert df["text"][0] == "=1+1"  # the input is not modified
    out = write_frame(df, tmp_path / "f.csv")
    back = pl.read_csv(out, infer_schema=False)
    assert back["text"][0] == "'=1+1" and back["number"][0] == "-1"
    # Nested values are written as JSON text, which cannot start like a formula.
    assert back["tags"][0] == '["=x"]'


def test_atomic_path_gives_the_mode_a_plain_write_gives(tmp_path: Path) -> None:
    import os

    from txkit.output import atomic_path

    old = os.umask(0o027)
    try:
        with atomic_path(tmp_path / "new.csv") as tmp:
            tmp.write_text("a\n")
        assert (tmp_path / "new.csv").stat().st_mode & 0o777 == 0o640
        kept = tmp_path / "kept.csv"
        kept.write_text("old\n")
        kept.chmod(0o604)
        with atomic_path(kept) as tmp:
            tmp.write_text("new\n")
        assert kept.stat().st_mode & 0o777 == 0o604 and kept.read_text() == "new\n"
    finally:
        os.umask(old)


def test_a_wide_workbook_prints_split_at_a_readable_scale_not_shrunk_to_one_page(
    tmp_path: Path,
) -> None:
    """Issue 33: fitted to one A4 page wide, a 21-column list printed at 40 % (4-point text in
    LibreOffice). Split over as few pages wide as keep 65 %, its first column on each."""
    from openpyxl import load_workbook

    from tests.factories import column_widths
    from txkit.output import MIN_PRINT_SCALE, pages_wide, write_xlsx

    narrow = pl.DataFrame({"reference": ["TXK-1"], "amount": ["1.00"]})
    wide = pl.DataFrame(
        {"reference": ["TXK-1"]} | {f"column_{i:02d}": ["x" * 20] for i in range(20)}
    )
    for frame, name in ((narrow, "narrow"), (wide, "wide")):
        write_xlsx(frame, tmp_path / f"{name}.xlsx", sheet=name)
    narrow_setup = load_workbook(tmp_path / "narrow.xlsx").active
    assert (narrow_setup.page_setup.fitToWidth or 1) == 1 and narrow_setup.print_title_cols is None
    sheet = load_workbook(tmp_path / "wide.xlsx").active
    widths = column_widths(sheet)
    assert len(widths) == 21 and sheet.page_setup.fitToWidth == pages_wide(widths) == 3
    assert sheet.print_title_cols == "$A:$A" and sheet.print_title_rows == "$1:$1"
    assert (sum(widths) - widths[0]) / 3 + widths[0] <= 140 / MIN_PRINT_SCALE
