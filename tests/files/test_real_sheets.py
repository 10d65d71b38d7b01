"""Real spreadsheets and bank CSVs as banks' customers published them (tests/data/real/*/
MANIFEST.toml: source, licence, the values the source asserts), each read against them."""

from __future__ import annotations

import tomllib
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from txkit.bank import read_statement
from txkit.datafile import read_table
from txkit.errors import DataFileError

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
    assert all(e["repo"] and e["commit"] and e["licence"] and e["expected_from"] for _, e in CASES)


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


def test_targobank_transactions_are_found_on_the_workbooks_second_sheet() -> None:
    entry = next(e for _, e in CASES if e["file"] == "targobank_duesseldorf.xlsx")
    names = ["Datum", "Wert", "Label", "Soll", "Haben", "Saldo", "Währung"]
    table = read_table(
        REAL / "xlsx" / entry["file"],
        columns=names,
        required=["Datum", "Soll", "Haben"],
        date="Datum",
        rows="statement lines",
    )
    assert table.kind == "xlsx" and table.unit == f"sheet {entry['sheet']!r} row"
    assert table.frame.height == entry["rows"]
    first = table.frame.row(0, named=True)
    assert [first[n] for n in ["Datum", "Wert", "Soll", "Haben", "Saldo", "Währung"]] == entry[
        "first"
    ]
    notes = " ".join(table.notes)
    assert f"read its sheet {entry['sheet']!r}" in notes
    assert "4 title rows skipped" in notes and "1 total or footer row skipped" in notes


@pytest.mark.parametrize(
    ("kind", "entry"),
    [(k, e) for k, e in CASES if "refused" in e],
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
