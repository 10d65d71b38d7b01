"""Real spreadsheets and bank CSVs as banks' customers published them (tests/data/real/*/
MANIFEST.toml: source, licence, the values the source asserts), each read against them."""

from __future__ import annotations

import tomllib
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement, read_table

REAL = Path(__file__).resolve().parent.parent / "data" / "real"
KINDS = ("xlsx", "xls", "html-xls", "bank-csv")


def _cases() -> list[tuple[str, dict]]:
    out = []
    for kind in KINDS:
        manifest = tomllib.loads((REAL / kind / "MANIFEST.toml").read_text(encoding="utf-8"))
        out += [(kind, entry) for entry in manifest["file"]]
    return out


CASES = _cases()


def test_every_file_in_the_corpus_is_in_its_manifest_with_a_source_and_a_licence() -> None:
    listed = {(kind, e["file"]) for kind, e in CASES}
    found = {(p.parent.name, p.name) for k in KINDS for p in (REAL / k).iterdir()}
    assert found - {(k, "MANIFEST.toml") for k in KINDS} == listed
    # a file built in a bank's layout with our own values says so instead of a source
    assert all(
        e.get("built") or (e["repo"] and e["commit"] and e["licence"] and e["expected_from"])
        for _, e in CASES
    )


@pytest.mark.parametrize(
    ("kind", "entry"),
    [(k, e) for k, e in CASES if "columns" in e and "refused" not in e],
    ids=lambda v: v if isinstance(v, str) else v["file"],
)
def test_a_real_statement_reads_as_its_source_says(kind: str, entry: dict) -> None:
    statement = read_statement(REAL / kind / entry["file"], columns=entry["columns"])
    entries = statement.entries
    assert entries.height == entry["entries"]
    amounts = [str(a) for a in entries["amount"]]
    if "amounts" in entry:
        # exact decimals: the digits the source asserts, never a float's
        assert [Decimal(a) for a in amounts] == [Decimal(a) for a in entry["amounts"]]
    if "dates" in entry:
        assert [str(d) for d in entries["date"]] == entry["dates"]
    if "narrations" in entry:
        assert entries["narration"].to_list() == entry["narrations"]
    if "currencies" in entry:
        assert entries["currency"].to_list() == entry["currencies"]
    if "amount_sum" in entry:
        assert sum(entries["amount"].to_list(), Decimal(0)) == Decimal(entry["amount_sum"])
    if "opening" in entry:
        # the page's opening balance plus every entry is its last running balance
        assert Decimal(entry["opening"]) + Decimal(entry["amount_sum"]) == Decimal(entry["closing"])
    if "credits" in entry:
        assert entries.filter(pl.col("direction") == "credit").height == entry["credits"]
    for end, row in (("first", 0), ("last", -1)):
        if end in entry:
            got = entries.row(row, named=True)
            assert [str(got["date"]), str(got["amount"])] == entry[end][:2]
    notes = " ".join(statement.notes)
    if "title_rows" in entry:
        assert f"{entry['title_rows']} title row" in notes
    if "footer_rows" in entry:
        assert f"{entry['footer_rows']} total or footer row" in notes


def test_the_gtbank_download_names_its_format_and_every_skipped_row() -> None:
    path = REAL / "html-xls" / "gtbank_statement.xls"
    entry = next(e for k, e in CASES if e["file"] == path.name)
    statement = read_statement(path, columns=entry["columns"])
    assert statement.files == {str(path): "html"}
    assert "read as an HTML table" in statement.notes[0]
    titles = next(n for n in statement.notes if "title row" in n)
    assert "HTML table rows 1, 2, 4, 6, 8, 10 and 12" in titles
    assert "Opening Balance" not in " ".join(statement.entries["narration"].to_list())
    footer = next(n for n in statement.notes if "footer row" in n)
    assert "'PLEASE ADDRESS ALL ENQUIRIES TO'" in footer
    # the last entry's balance is the last running balance: nothing after it was read
    assert statement.entries.row(-1, named=True)["line"] == 608


@pytest.mark.parametrize(
    ("kind", "entry"),
    [(k, e) for k, e in CASES if e.get("table_only")],
    ids=lambda v: v if isinstance(v, str) else v["file"],
)
def test_a_real_workbook_read_as_a_table_gives_its_rows_as_shown(kind: str, entry: dict) -> None:
    """Workbooks a statement cannot be made of as they stand (signed debits, a balance broken
    by the publisher's edits): the table's rows, titles and footers as the file has them."""
    table = read_table(
        REAL / kind / entry["file"],
        columns=entry["table_columns"],
        required=entry["required"],
        date=entry["date"],
        rows="statement lines",
    )
    sheet = entry["sheet"]
    assert table.kind == "xlsx"
    assert table.unit == (f"sheet {sheet!r} row" if " " in sheet else f"{sheet} row")
    assert table.frame.height == entry["rows"]
    for end, row in (("first", 0), ("last", -1)):
        if end in entry:
            got = table.frame.row(row, named=True)
            assert {k: got[k] for k in entry[end]} == entry[end]
    notes = " ".join(table.notes)
    assert f"{entry['title_rows']} title rows skipped" in notes
    if "footer_rows" in entry:
        assert f"{entry['footer_rows']} total or footer row" in notes
    if "Kto" in sheet:  # Targobank's transactions are on its workbook's second sheet
        assert f"read its sheet {sheet!r}" in notes


@pytest.mark.parametrize(
    ("kind", "entry"),
    # the presets' files are read in tests/bank/test_african_presets.py
    [(k, e) for k, e in CASES if "refused" in e and "preset" not in e],
    ids=lambda v: v if isinstance(v, str) else v["file"],
)
def test_a_real_file_damaged_by_its_publisher_is_refused_naming_the_line(
    kind: str, entry: dict
) -> None:
    with pytest.raises(DataFileError) as caught:
        read_statement(REAL / kind / entry["file"], columns=entry["columns"])
    message = str(caught.value)
    assert entry["refused"] in message and "\n" not in message
    assert "6 field(s) where the header has 7" in message
