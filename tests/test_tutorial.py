"""docs/tutorial.md's commands, run in order in a new folder as a reader would type them.

Each ``$ `` line of the tutorial's ```console blocks is a command (with its ``\\``
continuation lines and its heredoc's lines); the other lines of a block are the output the
reader sees, not checked word for word. Every command must exit 0, with ``txkit`` and
``python`` from the built wheel installed in a fresh environment outside the checkout, and no
key (the sandbox); the files a step makes and the lines it prints are checked after it.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import Installed

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
_BLOCK = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)
_HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")


@dataclass(frozen=True)
class Command:
    """One command of the tutorial: its text as bash runs it, and its line in the page."""

    text: str
    line: int


def commands(markdown: str) -> list[Command]:
    """The tutorial's commands in order, with continuation lines and heredocs joined."""
    found: list[Command] = []
    for block in _BLOCK.finditer(markdown):
        first_line = markdown.count("\n", 0, block.start(1)) + 1
        lines = block.group(1).splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1  # output shown to the reader
                continue
            start, text = i, [lines[i][2:]]
            while text[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                text.append(lines[i])
            heredoc = _HEREDOC.search(text[0])
            if heredoc:
                while i + 1 < len(lines):
                    i += 1
                    text.append(lines[i])
                    if lines[i] == heredoc.group(1):
                        break
                else:
                    raise AssertionError(f"tutorial line {first_line + start}: heredoc not ended")
            found.append(Command("\n".join(text), first_line + start))
            i += 1
    return found


def test_the_commands_are_read_as_a_reader_types_them() -> None:
    page = (
        "text\n```console\n$ one --a \\\n    --b\nshown output\n$ cat > f <<'EOF'\n"
        "x = 1\n$ not a command\nEOF\n$ two\n```\n```sh\n$ not console\n```\n"
    )
    assert commands(page) == [
        Command("one --a \\\n    --b", 3),
        Command("cat > f <<'EOF'\nx = 1\n$ not a command\nEOF", 6),
        Command("two", 10),
    ]


#: What a step leaves behind, checked after the command that contains the key.
EXPECTED_FILES = {
    "txkit init acme-close": ["acme-close/txkit.toml", "acme-close/notebooks/01_explore.ipynb"],
    "txkit report --month 2026-10": [
        "acme-close/reports/2026-10/index.html",
        "acme-close/reports/2026-10/00_close_summary.html",
    ],
    'write_csv("inputs/orders_export.csv")': ["acme-close/inputs/orders_export.csv"],
    "--role reviewer --key": [
        "acme-close/reports/2026-10/signatures/preparer.sig",
        "acme-close/reports/2026-10/signatures/reviewer.sig",
    ],
}
#: What a step prints: (the command contains this, and not that) -> lines of its output.
EXPECTED_OUTPUT: dict[tuple[str, str], str | tuple[str, ...]] = {
    # The first report, on the sandbox: where its index is and where the sandbox's files are.
    ("txkit report --month 2026-10", "--orders"): (
        "index: ",
        "orders: the embedded sandbox's merchant orders (data/sandbox/",
        "bank statements: the embedded sandbox's in data/sandbox/cache/",
    ),
    ("--orders-columns shopify", "\0"): "columns: the shopify preset (from --orders-columns)",
    ("--orders inputs/orders_export.csv", "--orders-columns"): (
        "columns: the shopify preset (from txkit.toml [orders])"
    ),
    ("--role reviewer", "\0"): "as reviewer: Eve Ito",
    ("--role preparer", "\0"): "as preparer: Ada Obi",
    ("ssh-keygen -Y verify", "\0"): 'Good "txkit" signature for Eve Ito',
}


@pytest.mark.slow
@pytest.mark.report
def test_the_tutorial_runs_from_start_to_end(installed: Installed, tmp_path: Path) -> None:
    """The tutorial as a reader runs it: ``txkit`` and ``python`` from the built wheel installed
    in a fresh environment outside the checkout (the installed product's first report)."""
    env = installed.env
    steps = commands(TUTORIAL.read_text(encoding="utf-8"))
    assert any("txkit report sign" in step.text for step in steps), "no sign-off in the tutorial"
    # Signatures prove who signed by a key: a typed name or LOGNAME proves nothing (issue 47).
    signing = [step.text for step in steps if "txkit report sign" in step.text]
    assert all("--key" in s and "--name" not in s and "LOGNAME" not in s for s in signing)
    cwd = tmp_path
    for step in steps:
        words = shlex.split(step.text) if "\n" not in step.text else []
        if len(words) == 2 and words[0] == "cd":
            cwd = cwd / words[1]
            assert cwd.is_dir(), f"tutorial line {step.line}: no folder {cwd}"
            continue
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + step.text], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, (
            f"tutorial line {step.line}: `{step.text}` exited {done.returncode}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
        for key, paths in EXPECTED_FILES.items():
            if key in step.text:
                missing = [p for p in paths if not (tmp_path / p).is_file()]
                assert not missing, f"tutorial line {step.line}: {missing} not written"
        for (key, unless), texts in EXPECTED_OUTPUT.items():
            if key in step.text and unless not in step.text:
                for text in (texts,) if isinstance(texts, str) else texts:
                    assert text in done.stdout + done.stderr, f"tutorial line {step.line}: {done}"
        if step.text == "txkit report --month 2026-10":
            _pages_ran_after_what_they_read(tmp_path / "acme-close/reports/2026-10")


def _pages_ran_after_what_they_read(folder: Path) -> None:
    """In a project ``txkit init`` made: the exceptions page (07) began once every other page
    had run, the trends (05) once 02 and 04 had (their copies keep what they wait for)."""
    times = {}
    for executed in folder.glob("0*.ipynb"):
        ran = json.loads(executed.read_text(encoding="utf-8"))["metadata"]["papermill"]
        times[executed.stem[:2]] = [
            datetime.fromisoformat(ran[k]) for k in ("start_time", "end_time")
        ]
    assert times["07"][0] >= max(end for page, (_, end) in times.items() if page != "07")
    assert times["05"][0] >= max(times["02"][1], times["04"][1])
