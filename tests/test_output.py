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


def _every_kind_of_cell(rows: int) -> pl.DataFrame:
    """Each column type a report's workbook holds, with nulls, long wrapped text, text that
    needs escaping, large and small numbers."""
    import datetime as dt
    from decimal import Decimal

    texts = ["", " lead", "trail ", 'a & b <c> "q"', "tab\there", "ctl\x01x", "_x0041_",
             "ünïcødé ✓ 💳", "'=1+1", "line\nbreak"]  # fmt: skip
    day, moment = dt.date(2026, 9, 1), dt.datetime(2026, 9, 1, 12, 0, 0, 123456)
    return pl.DataFrame(
        {
            "reference": [f"TXK-{i}" if i % 7 else None for i in range(rows)],
            "amount": pl.Series(
                [Decimal(i * 1234567) / 100 if i % 5 else None for i in range(rows)],
                dtype=pl.Decimal(38, 2),
            ),
            "usdt": pl.Series(
                [Decimal(i) / 1000000 + Decimal("12345678901.1") for i in range(rows)],
                dtype=pl.Decimal(38, 6),
            ),
            "count": pl.Series([i * 1000 for i in range(rows)], dtype=pl.UInt32),
            "signed": pl.Series([-i * 10**15 if i % 3 else None for i in range(rows)]),
            "ratio": [i / 3 for i in range(rows)],
            "flag": [bool(i % 2) if i % 4 else None for i in range(rows)],
            "day": [day + dt.timedelta(days=i) if i % 6 else None for i in range(rows)],
            "at": pl.Series([moment + dt.timedelta(seconds=i * 3777.77) for i in range(rows)]).cast(
                pl.Datetime("ms")
            ),
            "clock": [dt.time(i % 24, 30, 15) for i in range(rows)],
            "text": [texts[i % len(texts)] for i in range(rows)],
            "narration": ["word " * (i % 15) for i in range(rows)],
            "nothing": pl.Series([None] * rows, dtype=pl.Null),
            "key": [f"k{i}" for i in range(rows)],
        }
    )


@pytest.mark.parametrize(
    "frame",
    [
        _every_kind_of_cell(40),
        _every_kind_of_cell(0),
        # cells write() makes a link or a formula of: the workbook is written cell by cell
        _every_kind_of_cell(3).with_columns(text=pl.lit("https://x.example/a")),
        _every_kind_of_cell(3).with_columns(text=pl.lit("{=1+1}")),
        _every_kind_of_cell(3).with_columns(text=pl.lit("=1+1")),
        _every_kind_of_cell(3).with_columns(text=pl.lit("mailto:a@example.test")),
        _every_kind_of_cell(3).with_columns(narration=pl.lit("x" * 20_000)),
    ],
    ids=["every-kind", "empty", "link", "array-formula", "formula", "mailto", "long-text"],
)
def test_a_workbook_is_byte_for_byte_the_one_polars_write_excel_wrote(
    tmp_path: Path, frame: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 49: the workbooks' cells are laid out column by column, not written one by one
    through polars' ``write_excel``, for a third of the CPU; every part of the file (cells,
    shared strings, styles, the table, widths, print setup) stays the same."""
    import zipfile

    import txkit.output

    def before(book: object, frame: pl.DataFrame, name: str, formats: dict, pixels: dict):
        frame.write_excel(
            book,  # type: ignore[arg-type]
            worksheet=name,
            column_formats=formats,
            dtype_formats={pl.Datetime: "yyyy-mm-dd hh:mm:ss", pl.Date: "yyyy-mm-dd"},
            column_widths=pixels,
            freeze_panes=(1, 0),
            autofilter=True,
            table_style=None,
        )

    def parts(path: Path) -> dict[str, bytes]:
        with zipfile.ZipFile(path) as book:  # core.xml holds the time it was written
            return {n: book.read(n) for n in book.namelist() if n != "docProps/core.xml"}

    txkit.output.write_xlsx(frame, tmp_path / "now.xlsx", sheet="list")
    with monkeypatch.context() as patch:
        patch.setattr(txkit.output, "write_table", before)
        txkit.output.write_xlsx(frame, tmp_path / "before.xlsx", sheet="list")
    now, then = parts(tmp_path / "now.xlsx"), parts(tmp_path / "before.xlsx")
    assert list(now) == list(then)
    for name in now:
        assert now[name] == then[name], name


def test_a_money_columns_decimals_are_those_its_amounts_use() -> None:
    """The decimals of a money column's number format, read from polars' digits: the same as
    each amount's own exponent (``Decimal.normalize``), the rule they were counted by before."""
    import random
    from decimal import Decimal

    from txkit.output import _decimals

    draw = random.Random(49)
    for scale in (0, 2, 3, 6, 9):
        for _ in range(40):
            amounts = [
                Decimal(draw.randrange(-(10**15), 10**15)).scaleb(-draw.randrange(scale + 1))
                if draw.random() > 0.1
                else None
                for _ in range(draw.randrange(0, 8))
            ]
            column = pl.Series(amounts, dtype=pl.Decimal(38, scale))
            used = [-min(0, a.normalize().as_tuple().exponent) for a in amounts if a is not None]
            assert _decimals(column) == max([2, *used]), amounts


def test_a_frame_no_worksheet_holds_is_refused_not_cut(tmp_path: Path) -> None:
    """Too many columns, or two names alike but for their case: xlsxwriter would warn and write
    no table at all; the writer says so instead of leaving a sheet without its cells."""
    from xlsxwriter import Workbook

    from txkit._xlsx_table import write_table

    wide = pl.DataFrame({f"c{i}": [1] for i in range(16_385)})
    twins = pl.DataFrame({"amount": [1], "Amount": [2]})
    for frame, says in (
        (wide, "16,384 columns"),
        (twins, "'amount' and 'Amount' differ only in case"),
    ):
        with Workbook(tmp_path / "refused.xlsx") as book, pytest.raises(ValueError, match=says):
            write_table(book, frame, "list", {}, {})
