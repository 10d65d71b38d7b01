"""What a bank preset knows of its file beyond the columns (private): the text marking the
bank's export, and the footer lines its pages end with.

* ``mark``: a preset whose header is common words (FNB's ``Date, Amount, Balance,
  Description``) is found from a file's content only when the file also holds its mark (FNB's
  title line ``ACCOUNT TRANSACTION HISTORY``); named with ``--bank-columns fnb`` it needs none.
* ``footer``: the lines the bank writes at the foot of each page, as a statement converted
  from its PDF keeps them before the header repeated on the next page. Under the preset, a
  line there is skipped only when its text is one of these; any other line there is refused
  with its line, never guessed to be a footer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["LAYOUTS", "Layout", "layout_of"]


@dataclass(frozen=True)
class Layout:
    """A bank export's marks beyond its columns.

    Attributes:
        mark: matched (multi-line) against the file's text for the preset to be found from
            the content; None: the header alone identifies it.
        footer: a page footer line's text (its cells joined by spaces) in full; None: the
            general rule of :mod:`txkit.inputs._layout` applies.
        mark_text: how the mark is written, for the load line.
        footer_text: how the footer is written, for messages.
    """

    mark: re.Pattern[str] | None = None
    mark_text: str = ""
    footer: re.Pattern[str] | None = None
    footer_text: str = ""


LAYOUTS: Final[Mapping[str, Layout]] = {
    "fnb": Layout(
        mark=re.compile(r"^\s*ACCOUNT TRANSACTION HISTORY\s*,*\s*$", re.M),
        mark_text="ACCOUNT TRANSACTION HISTORY",
    ),
    # Stanbic Zambia ends its download with the totals of its debits and credits.
    "stanbiczm": Layout(
        footer=re.compile(r"(Debits|Credits) -?[0-9][0-9 ]*(,[0-9]+)?"),
        footer_text="the totals rows 'Debits N' and 'Credits N'",
    ),
    # Safaricom prints "Page 2 of 7" under each page's table.
    "mpesa": Layout(footer=re.compile(r"Page \d+ of \d+", re.I), footer_text="'Page N of M'"),
}


def layout_of(mapping: Mapping[str, str]) -> tuple[str, Layout]:
    """The preset a mapping was built from and its layout (an empty one for none)."""
    name = mapping.get("preset", "")
    return name, LAYOUTS.get(name, Layout())
