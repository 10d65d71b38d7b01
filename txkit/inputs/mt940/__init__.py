"""SWIFT MT940 customer statements: text whose tags (``:20:``, ``:60F:``, ``:61:``...) start
lines; every statement proven by its opening and closing balances."""

from __future__ import annotations

from collections.abc import Mapping

from txkit.inputs._format import Format, Source
from txkit.inputs._model import Read
from txkit.inputs.mt940._read import looks_like, read

__all__ = ["FORMAT", "looks_like", "read"]


def _identify(source: Source) -> bool:
    return looks_like(source.text.text)


def _extract(source: Source, columns: Mapping[str, str]) -> Read:
    return read(source.path, source.text.text)


FORMAT = Format(
    "mt940", {"mt940": "SWIFT MT940 customer statement"}, identify=_identify, extract=_extract
)
