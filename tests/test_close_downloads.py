"""The close's Excel downloads (``wallet_statement``, ``settlements``) read back with openpyxl,
as a spreadsheet program opens them: money as numbers in a money format (not text), the
exact amounts, dates as dates, and columns wide enough to read but not a screen wide."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import openpyxl
import polars as pl
import pytest

from tests.analysis.analysis_cases import load_case
from txkit.analysis.settlements import match_settlements
from txkit.analysis.wallet import wallet_statement
from txkit.inputs import read_statements
from txkit.notebook._close import publish_table
from txkit.output import MAX_WIDTH as MAX_COLUMN_CHARS
from txkit.output import PRINT_WIDTH

MONTH, BEFORE, AFTER = "2026-06", "2026-05", "2026-07"


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, pl.DataFrame]]:
    case = load_case(1, 0.01)
    folder = tmp_path_factory.mktemp("close") / MONTH
    folder.mkdir()
    paths = []
    for month in (MONTH, AFTER):
        paths.append(folder.parent / f"statement_{month}.xml")
        paths[-1].write_bytes(case.ledger.bank_statement(month, "camt053"))
    months = pl.col("createdAt").dt.strftime("%Y-%m")
    records, history = case.frame.filter(months == MONTH), case.frame.filter(months == BEFORE)
    frames = {
        "wallet_statement": wallet_statement(records, month=MONTH, history=history),
        "settlements": match_settlements(
            pl.concat([history, records]), read_statements(paths), month=MONTH
        ),
    }
    for name, frame in frames.items():
        publish_table(frame, name, title=name, month=MONTH, folder=folder, show_pii=True)
    return folder, frames


@pytest.mark.parametrize("name", ["wallet_statement", "settlements"])
def test_money_is_numbers_in_a_money_format_and_exact(
    downloads: tuple[Path, dict[str, pl.DataFrame]], name: str
) -> None:
    folder, frames = downloads
    frame = frames[name]
    sheet = openpyxl.load_workbook(folder / f"{name}.xlsx").active
    header = [c.value for c in sheet[1]]
    assert header == frame.columns and sheet.max_row == frame.height + 1
    money = [c for c, t in frame.schema.items() if isinstance(t, pl.Decimal)]
    assert len(money) >= (16 if name == "wallet_statement" else 3)
    for column in money:
        j = header.index(column) + 1
        for i, expected in enumerate(frame[column], start=2):
            cell = sheet.cell(i, j)
            if expected is None:
                assert cell.value is None
                continue
            assert cell.data_type == "n" and isinstance(cell.value, int | float), (column, i)
            assert Decimal(str(cell.value)) == expected, (column, i)
            assert cell.number_format == "#,##0.00", column
    for column in ("settlement_date", "bank_date"):
        if column in header:
            cells = [sheet.cell(i, header.index(column) + 1) for i in range(2, sheet.max_row + 1)]
            assert {c.data_type for c in cells if c.value is not None} == {"d"}
    assert sheet.freeze_panes == "A2"


@pytest.mark.parametrize("name", ["wallet_statement", "settlements"])
def test_columns_fit_their_header_and_values_within_a_limit(
    downloads: tuple[Path, dict[str, pl.DataFrame]], name: str
) -> None:
    folder, frames = downloads
    frame = frames[name]
    sheet = openpyxl.load_workbook(folder / f"{name}.xlsx").active
    widths = {}  # openpyxl merges equal neighbours into one <col min max> range
    for dim in sheet.column_dimensions.values():
        for j in range(dim.min, dim.max + 1):
            widths[j] = dim.width
    for j, column in enumerate(frame.columns, start=1):
        width = widths[j]
        assert len(column) <= width <= MAX_COLUMN_CHARS + 2, (column, width)
        if frame.schema[column] == pl.String:
            longest = frame[column].str.len_chars().max() or 0
            # A long text wraps within PRINT_WIDTH (issue 33: printed one page wide, readable).
            assert width >= min(longest, PRINT_WIDTH), (column, width, longest)
            if longest > PRINT_WIDTH:
                assert sheet.cell(2, j).alignment.wrap_text, column
        if isinstance(frame.schema[column], pl.Decimal) and frame[column].drop_nulls().len():
            shown = f"{frame[column].abs().max():,}"  # as the money format shows it
            assert width >= len(shown) + 1, (column, width, shown)
    if name == "settlements":  # the list of candidates runs past the limit: capped
        assert (frame["candidates"].str.len_chars().max() or 0) > MAX_COLUMN_CHARS
