"""The orders file read once and taken again by content (``txkit/inputs/_orders_kept.py``):
the same bytes and mapping give the same frame and notes without a second read; other bytes,
another mapping or a damaged kept copy read the file afresh; a bad file is never kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from txkit.errors import DataFileError
from txkit.inputs import orders as orders_module
from txkit.inputs import read_orders_file
from txkit.inputs._orders_kept import orders_folder
from txkit.inputs.columns import ORDERS, column_setting

SHOPS = Path(__file__).resolve().parent.parent / "data/real/shops"


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
    for kept in orders_folder().glob("*.parquet"):
        kept.write_bytes(kept.read_bytes()[:20])
    again = read_orders_file(path)
    assert len(reads) == 2
    assert_frame_equal(again.frame, first.frame)
    for kept in orders_folder().glob("*.json"):
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
    assert not orders_folder().exists() or not any(orders_folder().iterdir())
