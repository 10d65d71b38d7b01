"""What a report saves in CPU changes nothing it shows: jsonschema's IRI checks answer as before
with their grammars built late, and a figure drawn once under the inline backend renders to the
same PNG bytes as one drawn twice. Each runs in a fresh interpreter (a module imported once a
process, a matplotlib backend chosen once)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

_IMPORTS = Path(__file__).resolve().parent.parent / "txkit" / "report" / "_imports.py"
_IRI_VALUES = ("http://example.com/ä", "not an iri", "//x/y", "a b")
_IRI_FORMATS = ("iri", "iri-reference")


def _python(code: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_jsonschema_builds_the_iri_grammars_only_when_an_iri_is_checked() -> None:
    if importlib.util.find_spec("rfc3987_syntax") is None:
        pytest.skip("rfc3987_syntax is not installed: jsonschema has no grammars to build")
    late = _python(
        f"""
        import importlib.util, sys
        # By its path: txkit's package imports would cost more than the check.
        spec = importlib.util.spec_from_file_location("_imports", {str(_IMPORTS)!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.import_jsonschema()
        import jsonschema
        print("rfc3987_syntax" in sys.modules)
        checker = jsonschema.FormatChecker()
        print([checker.conforms(v, f) for v in {_IRI_VALUES!r} for f in {_IRI_FORMATS!r}])
        print("rfc3987_syntax" in sys.modules)
        """
    ).splitlines()
    # The real grammars answer here (pytest's plugins imported jsonschema as it comes).
    checker = jsonschema.FormatChecker()
    answers = [checker.conforms(v, f) for v in _IRI_VALUES for f in _IRI_FORMATS]
    assert True in answers and False in answers
    assert late == ["False", str(answers), "True"]  # built at the first check, same answers


def test_a_figure_drawn_once_for_the_inline_backend_renders_the_same_png() -> None:
    out = _python(
        """
        import io
        import polars as pl
        from txkit.notebook.plots import plot_reconciliation, plot_status_mix

        def png(fig):
            buffer = io.BytesIO()
            fig.canvas.print_figure(buffer, format="png", bbox_inches="tight")  # as inline does
            return buffer.getvalue()

        mix = pl.DataFrame({"transType": ["collection", "collection", "transfer"],
                            "status": ["successful", "failed", "successful"],
                            "share": [0.9, 0.1, 1.0]})
        summary = pl.DataFrame({"category": ["matched", "missing_in_export", "status_mismatch"],
                                "currency": ["NGN"] * 3, "references": [5235, 13, 6]})
        for plot, data in ((plot_status_mix, mix), (plot_reconciliation, summary)):
            before = plot.__wrapped__(data)
            before.canvas.draw_idle()  # what pyplot did after the cell
            after = plot(data)
            print(plot.__name__, after.stale, png(after) == png(before))
        """,
        MPLBACKEND="module://matplotlib_inline.backend_inline",
    )
    assert out.splitlines() == [
        "plot_status_mix False True",
        "plot_reconciliation False True",
    ]
