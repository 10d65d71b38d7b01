"""CSV text (``,``, ``;``, tab or ``|``): a table of strings with each record's line
(:func:`read_csv_table`); as a bank statement, read through a column mapping. CSV is the
format of any text file that no other format claims, so the registry asks it last."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from txkit.inputs._format import Format, Source
from txkit.inputs._mapped import read as read_mapped
from txkit.inputs._model import Read
from txkit.inputs.csv._read import read_csv_table

__all__ = ["FORMAT", "read_csv_table"]


def _identify(source: Source) -> bool:
    return True


def _extract(source: Source, columns: Mapping[str, str]) -> Read:
    text = source.text
    return read_mapped(source.path, partial(read_csv_table, source=text), columns, text=text.text)


FORMAT = Format(
    "csv",
    {"csv": "CSV with a column mapping (every bank its own columns)"},
    identify=_identify,
    extract=_extract,
)
