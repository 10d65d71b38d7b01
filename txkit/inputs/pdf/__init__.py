"""Text PDF statements of known banks' layouts (pdfplumber), every row proven by the running
balance and the statement's opening and closing."""

from __future__ import annotations

from txkit.inputs._format import of_bytes
from txkit.inputs.pdf._read import looks_like, read

__all__ = ["FORMAT", "looks_like", "read"]


FORMAT = of_bytes(
    "pdf",
    {
        "pdf": "a text PDF statement of a known layout (Access, First Bank, UBA, Heritage Bank, "
        "M-Pesa full statement)"
    },
    looks_like,
    read,
)
