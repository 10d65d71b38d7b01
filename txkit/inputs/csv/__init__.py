"""CSV text (``,``, ``;``, tab or ``|``) as a table of strings with each record's line."""

from txkit.inputs.csv._read import read_csv_table

__all__ = ["read_csv_table"]
