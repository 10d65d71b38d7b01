"""OFX/QFX statements (1.x SGML and 2.x XML)."""

from txkit.inputs.ofx._read import looks_like, read

__all__ = ["looks_like", "read"]
