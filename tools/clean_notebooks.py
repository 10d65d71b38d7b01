"""Drop per-run execution timestamps from executed notebooks, so that their diffs show only
what changed in code and outputs (used by `make notebooks`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def clean(path: Path) -> None:
    """Remove ``metadata.execution`` from every cell of ``path``, in place."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        cell.get("metadata", {}).pop("execution", None)
    text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        clean(Path(name))
