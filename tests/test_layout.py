"""The package's shape: one configuration module, no import cycles, a pinned public API."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import txkit
from txkit import config

PACKAGE = Path(txkit.__file__).resolve().parent
_TXKIT_NAME = re.compile(r"TXKIT_[A-Z]")


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings (documentation may name a variable)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_every_txkit_variable_is_named_only_in_the_config_module() -> None:
    # A name written twice drifts (issue 21 found TXKIT_* names in seven modules): messages,
    # help texts and readers take it from txkit.config. Docstrings may mention it.
    offenders = []
    for name, path in _modules().items():
        if name == "txkit.config":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and _TXKIT_NAME.search(node.value)
            ):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, f"TXKIT_* names outside txkit/config.py: {offenders}"


def test_the_config_module_names_every_variable_once() -> None:
    source = (PACKAGE / "config.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    assigned = [
        node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and node.value.value.startswith("TXKIT_")
    ]
    assert sorted(assigned) == sorted(set(assigned)) == sorted(config.VARIABLES)
    assert {
        "TXKIT_BASE_URL",
        "TXKIT_SECRET_KEY",
        "TXKIT_DATA_DIR",
        "TXKIT_MAX_BODY_MB",
        "TXKIT_MAX_RETRIES",
        "TXKIT_MAX_TOTAL",
        "TXKIT_PROGRESS",
        "TXKIT_RESPONSE_DEADLINE",
    } == set(config.VARIABLES)


#: Old module paths kept as deprecated shims: the module that now holds their names, and the
#: home the warning names (issue 21 moved them).
MOVED = {
    "txkit.client": ("txkit.fetch.client", "txkit.fetch (or txkit)"),
    "txkit.load": ("txkit.fetch.load", "txkit.fetch (or txkit)"),
    "txkit.pages": ("txkit.fetch.pages", "txkit.fetch"),
    "txkit.tables": ("txkit.notebook.tables", "txkit.notebook.tables"),
    "txkit.plots": ("txkit.notebook.plots", "txkit.notebook.plots"),
    "txkit.findings": ("txkit.notebook.findings", "txkit.notebook.findings"),
    "txkit.trends": (
        "txkit.analysis.trends",
        "txkit.analysis (trend_records, report_history: txkit.notebook)",
    ),
    "txkit.frame": ("txkit.decode", "txkit.decode (activity_history: txkit)"),
    "txkit.source": (
        "txkit.fetch.source",
        "txkit.fetch.source (the store location and key_configured: txkit.config)",
    ),
}


def test_old_module_paths_warn_naming_the_new_home(tmp_path: Path) -> None:
    # In a fresh interpreter (an imported module warns once): each import line of the user's
    # own file gets one DeprecationWarning with the new home and the version.
    script = tmp_path / "user_code.py"
    lines = ["import json, warnings", "found = {}"]
    for old in MOVED:
        lines += [
            "with warnings.catch_warnings(record=True) as caught:",
            "    warnings.simplefilter('always')",
            f"    import {old}",
            f"found[{old!r}] = [(str(w.message), w.category.__name__, w.filename, w.lineno)"
            " for w in caught]",
        ]
    lines.append("print(json.dumps(found))")
    script.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ | {"PYTHONPATH": str(PACKAGE.parent)},
    )
    found = json.loads(done.stdout)
    for old, (_, home) in MOVED.items():
        [(message, category, filename, lineno)] = found[old]
        assert category == "DeprecationWarning"
        assert message == f"{old} is deprecated since 0.2.0: import from {home}"
        assert filename == str(script)
        assert script.read_text().splitlines()[lineno - 1].strip() == f"import {old}"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_old_module_paths_give_the_same_objects() -> None:
    for old, (new, _) in MOVED.items():
        shim, module = importlib.import_module(old), importlib.import_module(new)
        assert set(module.__all__) <= set(shim.__all__)
        for name in module.__all__:
            assert getattr(shim, name) is getattr(module, name), f"{old}.{name}"
