"""One store location rule: the Python API, the CLI, the notebooks and the report use one store.

Issue 21: after ``make report``, ``txkit.scan_store()`` found no table (the API defaulted to
``data/store``, the report to ``data/store/<source>``) and ``txkit.sync()`` would have started
a second one. These tests never pass ``store=``.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import polars as pl
import pytest

import txkit
from txkit import config
from txkit.report import run_report
from txkit.store import default_store, read_manifests, read_months, read_state


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An analyst's project folder: the working directory, no key, no TXKIT_DATA_DIR."""
    for name in (config.BASE_URL_VAR, config.SECRET_KEY_VAR, config.DATA_DIR_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _one_notebook(folder: Path) -> Path:
    """A curated-notebook folder with one small notebook that reads the month from the store
    it is given, as the real ones do."""
    folder.mkdir()
    book = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell(
        'month = "2026-10"\nsource = "auto"\nstore = None\nversion = None'
    )
    parameters.metadata["tags"] = ["parameters"]
    book.cells = [
        nbformat.v4.new_markdown_cell("# Rows"),
        parameters,
        nbformat.v4.new_code_cell(
            "from txkit.notebook import load_month\n"
            "df, info = load_month(month, source=source, store=store, version=version)\n"
            "print(df.height)"
        ),
    ]
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    book.metadata["language_info"] = {"name": "python"}
    nbformat.write(book, folder / "01_rows.ipynb")
    return folder


@pytest.mark.slow
def test_the_api_reads_and_adds_to_the_store_the_report_used(
    project: Path, monkeypatch: pytest.MonkeyPatch, ledgers
) -> None:
    # The embedded sandbox's ledger (for its server and its files) from the run's cache: 2.4 s
    # of CPU each time it is generated.
    import txkit.sandbox
    import txkit.sandbox.server

    monkeypatch.setattr(txkit.sandbox.server, "generate_ledger", ledgers)
    monkeypatch.setattr(txkit.sandbox, "generate_ledger", ledgers)
    # 2025-12: the report syncs its trends' months up to it (from 2025-11, the sandbox's
    # first) and 3 days after it, so 2026-05 is not in the store until the sync below.
    result = run_report(
        "2025-12", out=Path("reports"), notebooks=_one_notebook(project / "nb"), progress=False
    )
    assert result.sync is not None  # the report synced the store itself
    used = json.loads((project / "reports/2025-12/report.json").read_text())
    assert Path(used["store"]) == (project / "data/store/sandbox").resolve()
    assert Path(default_store()).resolve() == Path(used["store"])

    # Read without store=: the very table (and version) the report read.
    december = txkit.scan_store().filter(pl.col("month") == "2025-12").collect()
    assert december.height == used["rows"] > 0
    assert read_state().version == used["table_version"]
    assert read_months(["2025-12"]).height == used["rows"]
    assert read_manifests()["2025-12"].rows == used["rows"]
    assert "2026-05" not in read_manifests()

    # Sync without a client or a store: the source and the store `txkit sync` would use.
    synced = txkit.sync(start="2026-05-01", end="2026-05-31")
    assert Path(synced.store).resolve() == Path(used["store"])
    assert synced.fetched == {"2026-05": "full"}
    assert synced.version == used["table_version"] + 1
    assert synced.notes[0].startswith("source: the embedded sandbox")
    months = txkit.scan_store().select("month").unique().collect()["month"].to_list()
    assert "2026-05" in months and "2025-12" in months
    assert sorted(p.name for p in (project / "data/store").iterdir()) == ["sandbox"]

    # Nothing left to fetch: no source is opened, nothing written.
    again = txkit.sync(start="2026-05-01", end="2026-05-31")
    assert again.fetched == {} and again.version == synced.version and not again.notes


def test_the_default_store_follows_the_data_folder_and_the_source(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_store() == Path("data/store/sandbox")
    monkeypatch.setenv(config.DATA_DIR_VAR, str(project / "elsewhere"))  # read at each call
    assert default_store() == project / "elsewhere/store/sandbox"
    assert txkit.scan_store().collect().height == 0  # that store is empty, not another one
    monkeypatch.setenv(config.SECRET_KEY_VAR, "sk_test_location_0123456789")
    monkeypatch.setenv(config.BASE_URL_VAR, "https://api.example.test:8443")
    assert default_store() == project / "elsewhere/store/api.example.test_8443"
    monkeypatch.delenv(config.SECRET_KEY_VAR)
    with pytest.raises(txkit.ConfigError, match="TXKIT_SECRET_KEY is not"):
        txkit.scan_store()  # the real service was meant: no silent fallback to the sandbox
