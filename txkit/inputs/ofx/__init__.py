"""OFX/QFX statements (1.x SGML and 2.x XML; Money/Quicken downloads), each proven by its
ledger balance where it has one (ofxtools' parser, imported when an OFX file is read)."""

from __future__ import annotations

from txkit.inputs._format import of_bytes
from txkit.inputs.ofx._read import looks_like, read

__all__ = ["FORMAT", "looks_like", "read"]


FORMAT = of_bytes(
    "ofx",
    {"ofx": "OFX/QFX statement (1.x SGML or 2.x XML; Money/Quicken downloads)"},
    looks_like,
    read,
)
