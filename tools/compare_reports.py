"""Compare two folders written by ``txkit report`` (e.g. before and after a refactoring).

    .venv/bin/python tools/compare_reports.py DIR_A DIR_B

Every file of either folder is compared, by what it holds rather than how it was written:

* CSV (and any file of an unknown kind): byte for byte, but for the moment of the run (the
  register's ``changed_at``);
* XLSX: every sheet's cell values (openpyxl), cell by cell, a date-time of the run masked;
* Parquet: the frame's schema and rows (polars);
* ``report.json``: its stable fields (``rendered_at``, ``table_id`` and timings left out);
* HTML, ipynb and the other JSON files: as text, with what differs between two runs of the
  same code masked: run times and durations, the moments of the run, absolute paths of the
  project (a folder holding ``data/``, ``reports/`` or ``notebooks/``), temporary folders,
  UUIDs (table, kernel and session ids) and nonces. A notebook's papermill and execution
  metadata and the random id papermill gives its cell of injected parameters are left out.

Prints one line per differing file with its first differing line (or cell) on each side and
exits 1; prints the number of files compared and exits 0 when none differs; exits 2 on a
missing folder.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

#: Fields of report.json that change between two runs of the same code.
VOLATILE_REPORT_FIELDS = frozenset({"rendered_at", "table_id", "seconds"})
#: Metadata of a notebook and its cells written by papermill and Jupyter at each run.
VOLATILE_NOTEBOOK_METADATA = frozenset({"papermill", "execution", "widgets"})

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
#: txkit report's staging folder (reports/.2026-10.k3j2h1g0) and tempfile's names.
_TEMP_NAME = re.compile(r"\.(\d{4}-\d{2})\.[A-Za-z0-9_]{8}\b|\btmp[A-Za-z0-9_]{8}\b")
#: An absolute path to the project, whichever folder the report was written or copied to.
_PROJECT_PATH = re.compile(r"(?:/[^\s\"'<>/\\]+)+(?=/(?:data|reports|notebooks)/)")
_TEMP_PATH = re.compile(r"/tmp/[^\s\"'<>()\\]*")
_NONCE = re.compile(r"""(nonce[=-]\\?["']?)[A-Za-z0-9+/=_-]{8,}""")
#: A duration printed by txkit or Jupyter: 14.5 s, 0.020156 s, 350 ms, 1 min 12 s.
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|min)\b")


#: papermill's cell of injected parameters has a random id (id="cell-id=077db2fb" in HTML).
_INJECTED_CELL = re.compile(r'(celltag_injected-parameters" id="cell-id=)[0-9a-f]{8}')


def _run_days(folder: Path) -> set[str]:
    """The day(s) the files of ``folder`` were written: the run's clock, never the data's (a
    month's report is rendered after the month)."""
    return {
        datetime.fromtimestamp(p.stat().st_mtime, UTC).date().isoformat()
        for p in folder.rglob("*")
        if p.is_file()
    }


def _run_moments(days: set[str]) -> re.Pattern[str] | None:
    """ISO date-times on one of ``days``."""
    if not days:
        return None
    alternatives = "|".join(sorted(days))
    return re.compile(
        rf"\b(?:{alternatives})[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
        r"(?:\s?UTC)?"
    )


class Masker:
    """The text masks of one side: its own project folder and run day."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        project = next(
            (p.parent for p in [self.folder, *self.folder.parents] if p.name == "reports"), None
        )
        self.roots = [str(r) for r in (self.folder, project) if r is not None]
        self.days = _run_days(self.folder)
        self.moments = _run_moments(self.days)

    def moment(self, text: str) -> str:
        """``text`` with the moments of the run masked (and nothing else)."""
        return text if self.moments is None else self.moments.sub("<NOW>", text)

    def __call__(self, text: str) -> str:
        for root, label in zip(self.roots, ("<REPORT>", "<PROJECT>"), strict=False):
            text = text.replace(root, label)
        text = _PROJECT_PATH.sub("<PROJECT>", text)
        text = self.moment(text)
        text = _INJECTED_CELL.sub(r"\1<ID>", text)
        text = _TEMP_NAME.sub(lambda m: f".{m.group(1)}.<TMP>" if m.group(1) else "<TMP>", text)
        text = _TEMP_PATH.sub("<TMPPATH>", text)
        text = _UUID.sub("<UUID>", text)
        text = _NONCE.sub(r"\1<NONCE>", text)
        return _DURATION.sub("<DURATION>", text)


def _without(value: object, keys: frozenset[str]) -> object:
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value


def _notebook_lines(path: Path, mask: Masker) -> list[str]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    notebook["metadata"] = _without(notebook.get("metadata", {}), VOLATILE_NOTEBOOK_METADATA)
    for cell in notebook.get("cells", []):
        cell["metadata"] = _without(cell.get("metadata", {}), VOLATILE_NOTEBOOK_METADATA)
        if "injected-parameters" in cell["metadata"].get("tags", []):
            cell.pop("id", None)
    return mask(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False)).splitlines()


def _report_json_lines(path: Path, mask: Masker) -> list[str]:
    stable = _without(json.loads(path.read_text(encoding="utf-8")), VOLATILE_REPORT_FIELDS)
    return mask(json.dumps(stable, indent=1, sort_keys=True, ensure_ascii=False)).splitlines()


def _text_lines(path: Path, mask: Masker) -> list[str]:
    return mask(path.read_text(encoding="utf-8")).splitlines()


def _xlsx_lines(path: Path, mask: Masker) -> list[str]:
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    lines = []
    for sheet in book.worksheets:
        lines.append(f"sheet {sheet.title}")
        for row in sheet.iter_rows():
            for cell in row:
                value = cell.value
                if isinstance(value, datetime) and value.date().isoformat() in mask.days:
                    value = "<NOW>"
                if value is not None:
                    lines.append(f"{sheet.title}!{cell.coordinate}: {value!r}")
    book.close()
    return lines


def _parquet_lines(path: Path, mask: Masker) -> list[str]:
    import polars as pl

    frame = pl.read_parquet(path)
    return [repr(frame.schema), *frame.write_csv().splitlines()]


def _byte_lines(path: Path, mask: Masker) -> list[str]:
    data = path.read_bytes()
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return [data.hex()[i : i + 64] for i in range(0, len(data) * 2, 64)]


def _csv_lines(path: Path, mask: Masker) -> list[str]:
    return [mask.moment(line) for line in _byte_lines(path, mask)]


def _reader(path: Path) -> Callable[[Path, Masker], list[str]]:
    if path.name == "report.json":
        return _report_json_lines
    return {
        ".csv": _csv_lines,
        ".xlsx": _xlsx_lines,
        ".parquet": _parquet_lines,
        ".ipynb": _notebook_lines,
        ".html": _text_lines,
        ".htm": _text_lines,
        ".json": _text_lines,
        ".svg": _text_lines,
        ".txt": _text_lines,
        ".md": _text_lines,
    }.get(path.suffix.lower(), _byte_lines)


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _first_difference(a: list[str], b: list[str]) -> tuple[int, str, str]:
    for number, (left, right) in enumerate(zip(a, b, strict=False), start=1):
        if left != right:
            return number, left, right
    number = min(len(a), len(b)) + 1
    return (
        number,
        a[number - 1] if len(a) >= number else "<end>",
        b[number - 1] if len(b) >= number else "<end>",
    )


def _clip(left: str, right: str, width: int = 160) -> tuple[str, str]:
    """The two lines, cut to a window around their first differing character."""
    left, right = left.rstrip("\n"), right.rstrip("\n")
    at = next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b), 0)
    start = max(0, min(at - width // 2, max(len(left), len(right)) - width))

    def cut(line: str) -> str:
        text = line[start : start + width]
        return ("..." if start else "") + text + ("..." if start + width < len(line) else "")

    return cut(left), cut(right)


def compare(dir_a: Path, dir_b: Path) -> Iterator[str]:
    """One message per file that differs (or is on one side only)."""
    mask_a, mask_b = Masker(dir_a), Masker(dir_b)
    names_a, names_b = _files(dir_a), _files(dir_b)
    for name in sorted(names_a | names_b):
        if name not in names_b:
            yield f"{name}: only in {dir_a}"
            continue
        if name not in names_a:
            yield f"{name}: only in {dir_b}"
            continue
        path_a, path_b = dir_a / name, dir_b / name
        if path_a.read_bytes() == path_b.read_bytes():
            continue
        read = _reader(path_a)
        lines_a, lines_b = read(path_a, mask_a), read(path_b, mask_b)
        if lines_a != lines_b:
            number, left, right = _first_difference(lines_a, lines_b)
            left, right = _clip(left, right)
            yield f"{name}: differs at line {number}\n  A: {left}\n  B: {right}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir_a", type=Path)
    parser.add_argument("dir_b", type=Path)
    args = parser.parse_args(argv)
    for folder in (args.dir_a, args.dir_b):
        if not folder.is_dir():
            print(f"compare_reports: {folder} is not a folder", file=sys.stderr)
            return 2
    differences = list(compare(args.dir_a, args.dir_b))
    count = len(_files(args.dir_a) | _files(args.dir_b))
    for message in differences:
        print(message)
    print(f"{count} files compared, {len(differences)} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
