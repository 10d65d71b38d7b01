"""What a report saves in CPU changes nothing it shows: a figure drawn once under the inline
backend renders to the same PNG bytes as one drawn twice. It runs in a fresh interpreter (a
matplotlib backend is chosen once a process)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


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
