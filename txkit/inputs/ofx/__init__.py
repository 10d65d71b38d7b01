"""OFX/QFX statements (1.x SGML and 2.x XML; Money/Quicken downloads), each proven by its
ledger balance where it has one (ofxtools' parser, imported when an OFX file is read)."""

from __future__ import annotations

from collections.abc import Mapping

from txkit.inputs._format import Format, Source
from txkit.inputs._model import Read
from txkit.inputs.ofx._read import looks_like, read

__all__ = ["FORMAT", "looks_like", "read"]


def _identify(source: Source) -> bool:
    return looks_like(source.data)


def _extract(source: Source, columns: Mapping[str, str]) -> Read:
    return read(source.path, source.data)


FORMAT = Format(
    "ofx",
    {"ofx": "OFX/QFX statement (1.x SGML or 2.x XML; Money/Quicken downloads)"},
    identify=_identify,
    extract=_extract,
)
