"""SWIFT MT940 customer statements."""

from txkit.inputs.mt940._read import looks_like, read

__all__ = ["looks_like", "read"]
