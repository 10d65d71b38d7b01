"""Text PDF statements of known banks' layouts (pdfplumber), every row proven by the running
balance and the statement's opening and closing."""

from __future__ import annotations

from collections.abc import Mapping

from txkit.inputs._format import Format, Source
from txkit.inputs._model import Read
from txkit.inputs.pdf._read import looks_like, read

__all__ = ["FORMAT", "looks_like", "read"]


def _identify(source: Source) -> bool:
    return looks_like(source.data)


def _extract(source: Source, columns: Mapping[str, str]) -> Read:
    return read(source.path, source.data)


FORMAT = Format(
    "pdf",
    {"pdf": "a text PDF statement of a known layout (Access, First Bank, UBA, Heritage Bank)"},
    identify=_identify,
    extract=_extract,
)
