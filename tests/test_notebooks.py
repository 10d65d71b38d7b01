"""The curated notebooks stay reviewable, parameterised, executed and free of customer data.

nbval (``pytest --nbval notebooks``) re-executes them and compares every output; these tests
check what nbval does not: the paired text files, the parameters cell, and the outputs' content.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest

from txkit.privacy import looks_unmasked

NOTEBOOKS = sorted(
    Path(__file__).resolve().parent.parent.joinpath("notebooks").glob("[0-9]*.ipynb")
)


def test_there_are_curated_notebooks() -> None:
    assert [nb.stem for nb in NOTEBOOKS][:1] == ["01_explore"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_paired_text_file_is_in_sync(path: Path) -> None:
    paired = path.with_suffix(".py")
    assert paired.exists(), f"{paired.name} is missing: run `make notebooks`"
    text = jupytext.writes(jupytext.read(path), fmt="py:percent")
    assert text == paired.read_text(), f"{path.name} and {paired.name} differ: run `make notebooks`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_pair_does_not_depend_on_the_jupytext_release(path: Path) -> None:
    # A save with another jupytext release must leave the pair unchanged (issue 45): the
    # notebook's own metadata filter keeps jupytext's version out of the .py header.
    text = jupytext.writes(jupytext.read(path), fmt="py:percent")
    assert not re.search(r"^#\s+jupytext_version:", text, flags=re.MULTILINE)
    filtered = jupytext.read(path).metadata["jupytext"]["notebook_metadata_filter"]
    assert "-jupytext.text_representation.jupytext_version" in filtered.split(",")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_code_cell_is_parameters_and_all_cells_ran(path: Path) -> None:
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert "parameters" in cells[0].get("metadata", {}).get("tags", [])
    assert "show_pii = False" in "".join(cells[0]["source"])
    for cell in cells:
        assert cell.get("execution_count") is not None, "commit the executed notebook"
        assert not [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_hold_no_customer_data_or_keys(path: Path) -> None:
    outputs = json.dumps([c.get("outputs", []) for c in json.loads(path.read_text())["cells"]])
    assert not looks_unmasked(outputs)
    assert not re.search(r"sk_(live|test|sandbox)_[A-Za-z0-9]{8,}", outputs)
    assert "TXKIT_SECRET_KEY=" not in outputs


#: A notebook is an example of how to use txkit: a cell longer than this holds loading,
#: bookkeeping or display code that belongs in the package (issue 21: the longest was 30).
MAX_CELL_LINES = 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_code_cell_is_longer_than_ten_lines(path: Path) -> None:
    cells = json.loads(path.read_text())["cells"]
    long = {
        index: size
        for index, cell in enumerate(cells)
        if cell["cell_type"] == "code"
        for size in [sum(1 for line in "".join(cell["source"]).splitlines() if line.strip())]
        if size > MAX_CELL_LINES
    }
    assert long == {}, (
        f"{path.name}: code cells over {MAX_CELL_LINES} non-blank lines (index: lines): {long}; "
        "move loading and display code into txkit.notebook (see txkit.notebook.outputs)"
    )
