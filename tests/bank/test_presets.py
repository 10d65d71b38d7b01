"""Issue 46, item 7: bank presets, each verified on a real export of the corpus
(``tests/data/real/*/MANIFEST.toml``: source, commit, licence): ``--bank-columns gtbank``,
``[bank] preset = "gtbank"``, and found from the file's header when only one preset fits it
(said in the load line). A preset never says the currency: it is given beside it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from txkit.errors import DataFileError
from txkit.inputs import read_statement
from txkit.inputs.columns import BANK, BANK_PRESETS, column_setting, parse_columns

REAL = Path(__file__).resolve().parent.parent / "data" / "real"
# preset -> (the corpus file it was verified on, the mapping its manifest reads it with)
VERIFIED = {
    "gtbank": ("html-xls/gtbank_statement.xls", "NGN"),
    "fineco": ("xlsx/fineco_movements.xlsx", "EUR"),
    "nordea": ("xls/nordea_personkonto.xls", "SEK"),
    "handelsbanken": ("xlsx/handelsbanken_transactions.xlsx", "SEK"),
    "banknorwegian": ("xlsx/banknorwegian_statement_aug.xlsx", "SEK"),
    "capitec": ("bank-csv/built_capitec_transaction_history.csv", "ZAR"),
    "bankzero": ("bank-csv/countary_bankzero_account.csv", "ZAR"),
    "fnb": ("bank-csv/built_fnb_account_transaction_history.csv", "ZAR"),
    "mpesa": ("bank-csv/built_mpesa_full_statement.csv", "KES"),
    "stanbiczm": ("bank-csv/bizafrica_stanbiczm_sample.csv", "ZMW"),
}


def _manifest_columns(relative: str) -> str:
    kind, name = relative.split("/")
    files = tomllib.loads((REAL / kind / "MANIFEST.toml").read_text(encoding="utf-8"))["file"]
    return next(f["columns"] for f in files if f["file"] == name)


def test_every_preset_is_verified_on_a_real_file() -> None:
    assert set(VERIFIED) == set(BANK_PRESETS)


@pytest.mark.parametrize("preset", sorted(VERIFIED))
def test_a_preset_reads_its_real_file_as_the_manifests_mapping_does(preset: str) -> None:
    relative, currency = VERIFIED[preset]
    path = REAL / relative
    by_preset = read_statement(path, columns=f"{preset},account_currency={currency}")
    by_manifest = read_statement(path, columns=_manifest_columns(relative))
    assert by_preset.entries.drop("currency").equals(by_manifest.entries.drop("currency"))
    assert by_preset.entries.height > 0


@pytest.mark.parametrize("preset", sorted(VERIFIED))
def test_a_preset_is_found_from_the_header_and_said(preset: str) -> None:
    relative, currency = VERIFIED[preset]
    statement = read_statement(REAL / relative, columns=f"account_currency={currency}")
    said = f"columns: the {preset} preset, found from the file's header"
    assert said in statement.describe()


def test_a_preset_gives_no_currency(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="currency is not a 3- or 4-letter code"):
        read_statement(REAL / VERIFIED["gtbank"][0], columns="gtbank")


def test_a_header_no_preset_fits_names_the_presets(tmp_path: Path) -> None:
    path = tmp_path / "statement.csv"
    path.write_text("Posted,Memo,Value\n2026-10-01,a,1.00\n", encoding="utf-8")
    with pytest.raises(DataFileError) as caught:
        read_statement(path)
    message = str(caught.value)
    assert "no column" in message and "gtbank" in message and "\n" not in message


def test_the_settings_files_bank_preset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TXKIT_BANK_COLUMNS", raising=False)
    (tmp_path / "txkit.toml").write_text(
        '[bank]\npreset = "gtbank"\naccount_currency = "NGN"\n', encoding="utf-8"
    )
    mapping = column_setting(BANK, folder=tmp_path)
    assert mapping.preset == "gtbank" and mapping["narration"] == "Remarks"
    statement = read_statement(REAL / VERIFIED["gtbank"][0], columns=mapping)
    assert statement.entries.height == 595


def test_an_unknown_bank_preset_names_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match="unknown preset 'zenith'; accepted: banknorwegian"):
        parse_columns("zenith", BANK)
