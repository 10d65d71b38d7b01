"""One format of statement file: how it is told from the others and read (private).

Each format subpackage (:mod:`txkit.inputs.csv`, :mod:`txkit.inputs.sheets`,
:mod:`txkit.inputs.mt940`, :mod:`txkit.inputs.camt`, :mod:`txkit.inputs.ofx`,
:mod:`txkit.inputs.pdf`) gives one :class:`Format`, as beangulp's importers do: ``identify``
says from the file whether it is this format, ``extract`` reads its entries. The registry
(:data:`txkit.inputs.statements.REGISTRY`) asks them in turn; nothing outside a subpackage
knows how its format looks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from txkit.inputs._limits import read_input
from txkit.inputs._model import WHAT, Read
from txkit.inputs._text import TextFile, read_text


class Source:
    """A file being identified and read: its bytes and its text, each read once and only when
    a format asks (a spreadsheet is never read as text; a PDF never decoded)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: bytes | None = None
        self._text: TextFile | None = None

    @property
    def data(self) -> bytes:
        """The file's bytes, within ``TXKIT_MAX_INPUT_MB``."""
        if self._data is None:
            self._data = read_input(self.path, what=WHAT)
        return self._data

    @property
    def text(self) -> TextFile:
        """The file as text, its encoding found and stated (:func:`read_text`)."""
        if self._text is None:
            self._text = read_text(self.path, what=WHAT)
        return self._text

    @property
    def text_notes(self) -> tuple[str, ...]:
        """What reading it as text found (its encoding), if it was read as text."""
        return tuple(self._text.notes) if self._text is not None else ()


@dataclass(frozen=True)
class Format:
    """A statement format.

    Attributes:
        name: the package's name for it (``mt940``).
        kinds: the names a read file's format may have, with what each is (a spreadsheet is
            ``xlsx``, ``xls``, ``ods`` or ``html``); the load line names the file's.
        identify: whether the file is of this format, from its content whatever its name
            (:func:`~txkit.inputs._content.identify_content` for the binary ones); may raise
            a :class:`~txkit.errors.DataFileError` for a file of this format that cannot be
            read (``.numbers``, a ZIP holding no workbook).
        extract: the file's entries and balances; the column mapping is for the formats that
            are tables (CSV, spreadsheets), the others ignore it.
    """

    name: str
    kinds: Mapping[str, str]
    identify: Callable[[Source], bool]
    extract: Callable[[Source, Mapping[str, str]], Read]


def of_bytes(
    name: str,
    kinds: Mapping[str, str],
    looks_like: Callable[[bytes], bool],
    read: Callable[[Path, bytes], Read],
) -> Format:
    """A format read from the file's bytes whole (camt.053, OFX, PDF): ``looks_like`` tells it
    from them, ``read`` reads them; a column mapping is not theirs."""
    return Format(
        name,
        kinds,
        identify=lambda source: looks_like(source.data),
        extract=lambda source, _columns: read(source.path, source.data),
    )
