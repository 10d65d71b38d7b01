"""ISO 20022 camt.053 bank-to-customer statements (XML)."""

from txkit.inputs.camt._read import read

__all__ = ["read"]
