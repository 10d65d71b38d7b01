"""ISO 20022 camt.053 bank-to-customer statements (XML): any XML file that is not OFX is read
as camt.053, and the reader says which message it is when it is another."""

from __future__ import annotations

import codecs

from txkit.inputs._format import of_bytes
from txkit.inputs.camt._read import read

__all__ = ["FORMAT", "looks_like", "read"]


def looks_like(data: bytes) -> bool:
    """XML, with or without a byte-order mark (lxml reads the mark itself)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace").lstrip("\ufeff").lstrip()[:1] == "<"
    return data.removeprefix(codecs.BOM_UTF8).lstrip()[:1] == b"<"


FORMAT = of_bytes(
    "camt.053",
    {"camt.053": "ISO 20022 camt.053 bank-to-customer statement (XML)"},
    looks_like,
    read,
)
