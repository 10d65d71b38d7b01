"""Read the first sheet of a workbook as text: the edited ``exceptions.xlsx`` of a report,
for ``txkit exceptions import``.

Through :func:`txkit.inputs.read_grid`, the bounded reader every data file goes through: only a
regular file within ``TXKIT_MAX_INPUT_MB``, its parts' declared sizes and its cell addresses
checked before they are believed, its XML streamed (a hostile workbook ends in one line,
within seconds and a bounded memory). ``.xls`` and ``.ods`` (a sheet saved again by another
program) are read as well.
"""

from __future__ import annotations

from pathlib import Path

from txkit.inputs import read_grid

__all__ = ["read_xlsx_text"]


def read_xlsx_text(path: str | Path, *, what: str = "exceptions file") -> list[list[str | None]]:
    """The first worksheet's rows as lists of text (None for an empty cell), header first;
    rows that hold nothing left out.

    Raises:
        DataFileError: not a regular file, too large, not a workbook, damaged or hostile
            (one line naming the file and what to do).
    """
    sheet = read_grid(path, what=what).sheet
    return [[cell or None for cell in cells] for _, cells in sheet.rows]
