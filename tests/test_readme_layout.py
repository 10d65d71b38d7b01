"""The README and the docs name only paths that exist, and the layout table names every package.

A newcomer finds their way by the README's layout table and docs/architecture.md: a path that
was renamed or removed sends them nowhere, and a new package left out of the table is invisible.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

#: Where a repository path starts: a backticked text is checked as a path when it begins with
#: one of these folders or is one of the top-level files. Paths of a merchant's close project
#: (`inputs/`, `reports/2026-10/`, `txkit.toml`) and of a run (`data/store/...`) are not the
#: repository's, so they are not checked here.
_TOP_FOLDERS = ("txkit", "tests", "docs", "notebooks", "tools", "benchmarks", ".ci")
_TOP_FILES = frozenset({"conftest.py", "Makefile", "pyproject.toml", "materiality.toml"})
_PATH = re.compile(rf"^(?:{'|'.join(re.escape(f) for f in _TOP_FOLDERS)})/[\w./-]*$")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#+\s+(.*?)\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)

#: Modules the issue that asked for the table (45) found missing from it.
NOTABLE = (
    "txkit/analysis/exception_lists.py",
    "txkit/store/_retention.py",
    "txkit/fetch/profile.py",
)


def _prose(path: Path) -> str:
    """The page without its fenced code blocks (commands and file contents, not paths)."""
    return _FENCE.sub("", path.read_text(encoding="utf-8"))


def repo_paths(text: str) -> list[str]:
    """Every backticked text in ``text`` that reads as a path in this repository."""
    found = []
    for quoted in _BACKTICKED.findall(text):
        for part in (p.strip() for p in quoted.split(",")):
            if part in _TOP_FILES or _PATH.match(part):
                found.append(part)
    return found


def layout_table(text: str) -> str:
    """The README's layout table: the lines from its ``### Layout`` heading to the next heading."""
    match = re.search(r"^### Layout\n(.*?)(?=^#|\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, "README.md has no '### Layout' section"
    return match.group(1)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_repo_paths_are_recognised() -> None:
    text = (
        "`txkit/store/_retention.py`, `Makefile`, `inputs/orders.csv`, `txkit report`, "
        "`a, tools/x.py`"
    )
    assert repo_paths(text) == ["txkit/store/_retention.py", "Makefile", "tools/x.py"]


@pytest.mark.parametrize("page", [README, DOCS / "architecture.md"], ids=lambda p: p.name)
def test_every_path_named_exists(page: Path) -> None:
    paths = repo_paths(_prose(page))
    assert len(paths) > 10, f"{page.name} names almost no paths: is the pattern still right?"
    missing = sorted({p for p in paths if not (ROOT / p).exists()})
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_layout_table_names_every_package() -> None:
    table = layout_table(README.read_text(encoding="utf-8"))
    packages = sorted(
        path.parent.relative_to(ROOT).as_posix() + "/"
        for path in (ROOT / "txkit").glob("*/__init__.py")
    )
    assert packages, "no packages found under txkit/"
    missing = [p for p in packages if f"`{p}" not in table]
    assert not missing, f"README.md's layout table leaves out the packages {missing}"
    left_out = [m for m in NOTABLE if f"`{m}`" not in table]
    assert not left_out, f"README.md's layout table leaves out {left_out}"


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link of the page names a file that exists, and a heading of it when it
    carries an anchor."""
    broken = []
    for target in _LINK.findall(_prose(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, file:
            continue
        file_part, _, fragment = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(target)
        elif fragment and linked.suffix == ".md":
            anchors = {anchor(h) for h in _HEADING.findall(_prose(linked))}
            if fragment not in anchors:
                broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_docs_index_lists_every_page() -> None:
    """docs/README.md is where a reader finds a page: a page it leaves out is not found."""
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    listed = set(_LINK.findall(index))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    missing = sorted(p for p in pages if p not in listed)
    assert not missing, f"docs/README.md does not list {missing}"
