"""``txkit.notebook.outputs``: one run's month, page, downloads folder and masking, set once
and used by every table, exception list and download it writes."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import txkit.notebook
from txkit.notebook import Outputs

MONTH = "2026-10"


def _exceptions() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ["t1", "t2"],
            "field": ["toBalanceAfterLedger", "toBalanceAfterLedger"],
            "kind": ["bad_value", "chain_gap"],
            "currency": ["NGN", "NGN"],
            "customerEmail": ["ada.obi@example.com", "tunde@example.org"],
        }
    )


def _out(folder: Path | str, *, show_pii: bool = False) -> Outputs:
    return txkit.notebook.outputs(
        MONTH, "04_balance_checks.html", downloads=str(folder), show_pii=show_pii
    )


def test_an_exception_list_is_written_for_the_runs_month_and_page_and_masked(
    tmp_path: Path,
) -> None:
    _out(tmp_path).exceptions(_exceptions(), "balance_breaks")

    entry = json.loads((tmp_path / "balance_breaks.download.json").read_text())
    assert (entry["page"], entry["rows"]) == ("04_balance_checks.html", 2)
    assert entry["open"] == {
        "t1:toBalanceAfterLedger:bad_value": MONTH,
        "t2:toBalanceAfterLedger:chain_gap": MONTH,
    }
    text = (tmp_path / "balance_breaks.csv").read_text()
    assert "ada.obi@example.com" not in text and "t1" in text


def test_show_pii_writes_customer_data_unmasked(tmp_path: Path) -> None:
    _out(tmp_path, show_pii=True).exceptions(_exceptions(), "balance_breaks")
    assert "ada.obi@example.com" in (tmp_path / "balance_breaks.csv").read_text()


def test_a_table_download_names_the_page_and_its_headlines(tmp_path: Path) -> None:
    _out(tmp_path).download(_exceptions(), "daily", title="Daily", headlines=[{"label": "x"}])

    entry = json.loads((tmp_path / "daily.download.json").read_text())
    assert (entry["kind"], entry["page"], entry["month"]) == (
        "table",
        "04_balance_checks.html",
        MONTH,
    )
    assert entry["headlines"] == [{"label": "x"}]
    assert (tmp_path / "daily.xlsx").is_file()


def test_outside_a_report_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _out("")
    out.exceptions(_exceptions(), "balance_breaks")
    out.download(_exceptions(), "daily", title="Daily")
    assert list(tmp_path.iterdir()) == []


def test_loaded_names_what_was_loaded_when_a_kind_is_missing() -> None:
    with pytest.raises(KeyError, match="nothing of kind 'bank' was loaded; loaded: nothing"):
        _out("").loaded("bank")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"month": "2026-13"}, "2026-13"),
        ({"source": "s3"}, "source must be one of auto, sandbox, service, store, got 's3'"),
        ({"page": "02_reconciliation"}, "page must be the notebook's page"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(arguments: dict[str, str], message: str) -> None:
    given = {"month": MONTH, "page": "02_reconciliation.html", **arguments}
    month, page = given.pop("month"), given.pop("page")
    with pytest.raises(ValueError, match=message) as caught:
        txkit.notebook.outputs(month, page, **given)
    assert "\n" not in str(caught.value)
