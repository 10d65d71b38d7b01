"""The merchant's files read once and taken again by content (``txkit/inputs/_kept.py``): the
orders file and the bank statements. The same files and mapping give the same frames and notes
without a second read (every real statement of the regression harness, each format); other
bytes, another path, another mapping or a damaged kept copy read the files afresh; a bad file
is never kept."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from polars.testing import assert_frame_equal

from txkit.errors import DataFileError
from txkit.inputs import orders as orders_module
from txkit.inputs import read_orders_file, read_statement, read_statements
from txkit.inputs import statements as statements_module
from txkit.inputs._kept import kept_folder
from txkit.inputs.columns import ORDERS, column_setting

REAL = Path(__file__).resolve().parent.parent / "data/real"
SHOPS = REAL / "shops"


@pytest.fixture
def reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """A data folder of the test's own, and the files read afresh (not taken as kept)."""
    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))
    done: list[Path] = []
    real = orders_module._read_orders_file

    def counted(path: Path, *args: object) -> object:
        done.append(path)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(orders_module, "_read_orders_file", counted)
    return done


def test_the_same_file_is_read_once_and_taken_again_whole(
    tmp_path: Path, reads: list[Path]
) -> None:
    path = tmp_path / "shop.csv"
    shutil.copy(SHOPS / "shopify_orders_export.csv", path)
    first = read_orders_file(path, columns="shopify")
    again = read_orders_file(path, columns="shopify")
    assert reads == [path]
    assert_frame_equal(again.frame, first.frame)  # the decimals and dates as read
    assert again.frame.schema == first.frame.schema
    assert (again.notes, dict(again.normalised), again.folded, dict(again.ignored)) == (
        first.notes,
        dict(first.normalised),
        first.folded,
        dict(first.ignored),
    )
    assert again.folded == 51 and dict(again.ignored) == {"voided": 2}
    assert again.mapping == first.mapping and again.path == path


def test_the_mapping_is_said_as_each_reader_set_it(tmp_path: Path, reads: list[Path]) -> None:
    # The report checks the file with --orders-columns; notebook 02 reads it with its
    # orders_columns parameter: one read, each saying where its mapping came from.
    path = tmp_path / "shop.csv"
    shutil.copy(SHOPS / "shopify_orders_export.csv", path)
    flag = read_orders_file(
        path, columns=column_setting(ORDERS, "shopify", given_origin="--orders-columns")
    )
    parameter = read_orders_file(
        path, columns=column_setting(ORDERS, "shopify", given_origin="the orders_columns parameter")
    )
    assert reads == [path]
    assert flag.notes[0] == "columns: the shopify preset (from --orders-columns)"
    assert parameter.notes[0] == "columns: the shopify preset (from the orders_columns parameter)"
    assert flag.notes[1:] == parameter.notes[1:]


def test_other_bytes_or_another_mapping_read_afresh(tmp_path: Path, reads: list[Path]) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("reference,amount,currency,status\nA-1,10.00,NGN,successful\n")
    assert str(read_orders_file(path).frame["amount"][0]) == "10.00"
    path.write_text("reference,amount,currency,status\nA-1,10.01,NGN,successful\n")
    assert str(read_orders_file(path).frame["amount"][0]) == "10.01"
    read_orders_file(
        path, columns="reference=reference,amount=amount,currency=currency,status=status"
    )
    assert len(reads) == 3


def test_a_damaged_kept_copy_is_read_afresh(tmp_path: Path, reads: list[Path]) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("reference,amount,currency,status\nA-1,10.00,NGN,successful\n")
    first = read_orders_file(path)
    for kept in kept_folder("orders").glob("*.parquet"):
        kept.write_bytes(kept.read_bytes()[:20])
    again = read_orders_file(path)
    assert len(reads) == 2
    assert_frame_equal(again.frame, first.frame)
    for kept in kept_folder("orders").glob("*.json"):
        kept.write_text("[]")
    assert_frame_equal(read_orders_file(path).frame, first.frame)
    assert len(reads) == 3


def test_a_bad_file_is_refused_each_time_and_never_kept(tmp_path: Path, reads: list[Path]) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("reference,amount,currency,status\nA-1,ten,NGN,successful\n")
    for _ in range(2):
        with pytest.raises(DataFileError, match="line 2"):
            read_orders_file(path)
    assert len(reads) == 2
    assert not kept_folder("orders").exists() or not any(kept_folder("orders").iterdir())


# -- bank statements ---------------------------------------------------------------------------


@pytest.fixture
def statement_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[Path]]:
    """A data folder of the test's own, and the statement reads done afresh."""
    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))
    done: list[list[Path]] = []
    real = statements_module._read_statements

    def counted(paths: list[Path], *args: object) -> object:
        done.append(list(paths))
        return real(paths, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(statements_module, "_read_statements", counted)
    return done


def _readable(fmt: str) -> list[Any]:
    records = tomllib.loads((REAL / fmt / "MANIFEST.toml").read_text(encoding="utf-8"))["file"]
    return [
        pytest.param(REAL / fmt / r["file"], id=f"{fmt}/{r['file']}")
        for r in records
        if "refused" not in r and "password" not in r
    ]


@pytest.mark.parametrize(
    "path", _readable("mt940") + _readable("camt053") + _readable("ofx") + _readable("pdf")
)
def test_a_real_statement_is_taken_again_as_it_was_read(
    path: Path, statement_reads: list[list[Path]]
) -> None:
    first = read_statement(path)
    again = read_statement(path)
    assert statement_reads == [[path]]
    assert_frame_equal(again.entries, first.entries)
    assert_frame_equal(again.balances, first.balances)
    assert again.entries.schema == first.entries.schema
    assert (again.files, again.notes, again.describe()) == (
        first.files,
        first.notes,
        first.describe(),
    )


def test_statements_read_together_are_kept_together(
    tmp_path: Path, statement_reads: list[list[Path]]
) -> None:
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    shutil.copy(REAL / "camt053/subite_BE68793230773034-202411.xml", a)
    shutil.copy(REAL / "camt053/subite_BE68793230773034-202412.xml", b)
    both = read_statements([a, b])
    assert_frame_equal(read_statements([a, b]).entries, both.entries)
    read_statements([a])  # another set of files: read afresh
    read_statements([b, a])  # another order: entries come in file order
    assert statement_reads == [[a, b], [a], [b, a]]


def test_a_statement_elsewhere_or_changed_is_read_afresh(
    tmp_path: Path, statement_reads: list[list[Path]]
) -> None:
    # The entries name their file: the same bytes under another name are read again.
    path, copy = tmp_path / "statement.sta", tmp_path / "copy.sta"
    shutil.copy(REAL / "mt940/mt940rs_full_cmxl_mt940_2.sta", path)
    shutil.copy(path, copy)
    first = read_statement(path)
    moved = read_statement(copy)
    assert set(moved.entries["file"].to_list()) == {str(copy)}
    assert set(first.entries["file"].to_list()) == {str(path)}
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("?00Wyplata", "?00Wpłata-", 1), encoding="utf-8")
    edited = read_statement(path)
    assert edited.entries["narration"].to_list() != first.entries["narration"].to_list()
    assert statement_reads == [[path], [copy], [path]]


def test_a_damaged_kept_statement_is_read_afresh(
    tmp_path: Path, statement_reads: list[list[Path]]
) -> None:
    path = tmp_path / "statement.xml"
    shutil.copy(REAL / "camt053/genkgo_camt053.v2.multi.statement.xml", path)
    first = read_statement(path)
    for kept in kept_folder("statements").glob("*.balances.parquet"):
        kept.write_bytes(kept.read_bytes()[:20])
    assert_frame_equal(read_statement(path).balances, first.balances)
    for kept in kept_folder("statements").glob("*.entries.parquet"):
        kept.unlink()
    assert_frame_equal(read_statement(path).entries, first.entries)
    assert len(statement_reads) == 3


def test_a_bad_statement_is_refused_each_time_and_never_kept(
    tmp_path: Path, statement_reads: list[list[Path]]
) -> None:
    path = tmp_path / "statement.xml"
    shutil.copy(REAL / "camt053/genkgo_camt053.v2.wrong.xml", path)
    for _ in range(2):
        with pytest.raises(DataFileError):
            read_statement(path)
    assert len(statement_reads) == 2
    assert not kept_folder("statements").exists() or not any(kept_folder("statements").iterdir())


def test_a_statement_a_password_opened_is_never_kept(
    tmp_path: Path, statement_reads: list[list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its entries stay behind its password: each read needs it, and nothing is written.
    path = tmp_path / "statement.pdf"
    shutil.copy(REAL / "pdf/ngbankparser_firstbank-pdf-valid.pdf", path)
    monkeypatch.setenv("TXKIT_PDF_PASSWORD", "19856")
    first = read_statement(path)
    assert_frame_equal(read_statement(path).entries, first.entries)
    assert first.entries.height == 31 and len(statement_reads) == 2
    assert not kept_folder("statements").exists() or not any(kept_folder("statements").iterdir())
    monkeypatch.delenv("TXKIT_PDF_PASSWORD")
    with pytest.raises(DataFileError, match="is password-protected"):
        read_statement(path)


def test_a_statement_named_relative_and_absolute_is_read_once_and_named_as_given(
    tmp_path: Path, statement_reads: list[list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The report names the sandbox's statements relative to the project; its kernels, which
    # run in notebooks/, absolute.
    (tmp_path / "bank").mkdir()
    shutil.copy(REAL / "camt053/genkgo_camt053.v2.multi.statement.xml", tmp_path / "bank/a.xml")
    monkeypatch.chdir(tmp_path)
    relative = read_statements(["bank/a.xml"])
    absolute = read_statements([tmp_path / "bank/a.xml"])
    assert len(statement_reads) == 1
    assert set(relative.entries["file"]) == set(relative.balances["file"]) == {"bank/a.xml"}
    assert set(absolute.entries["file"]) == {str(tmp_path / "bank/a.xml")}
    assert set(absolute.balances["file"]) == {str(tmp_path / "bank/a.xml")}
    assert list(relative.files) == ["bank/a.xml"]
    assert list(absolute.files) == [str(tmp_path / "bank/a.xml")]
    assert_frame_equal(absolute.entries.drop("file"), relative.entries.drop("file"))


def test_a_statement_reached_through_a_link_is_one_kept_read_named_as_given(
    tmp_path: Path, statement_reads: list[list[Path]]
) -> None:
    real = tmp_path / "a.xml"
    shutil.copy(REAL / "camt053/genkgo_camt053.v2.multi.statement.xml", real)
    link = tmp_path / "link.xml"
    link.symlink_to(real)
    first = read_statements([real])
    linked = read_statements([link])
    assert len(statement_reads) == 1
    assert set(linked.entries["file"]) == {str(link)} and list(linked.files) == [str(link)]
    assert_frame_equal(linked.entries.drop("file"), first.entries.drop("file"))
