"""Text PDF statements of known banks' layouts."""

from txkit.inputs.pdf._read import looks_like, read

__all__ = ["looks_like", "read"]
