"""txkit.schema: one Field per column, and what is derived from it."""

from __future__ import annotations

import sys

import polars as pl
import pytest

from txkit import privacy, schema
from txkit.decode._wire import LEAF_NAMES, RECORD
from txkit.output import _csv_ready


def test_every_column_is_one_field_and_the_derived_lists_agree() -> None:
    assert list(schema.COLUMNS) == [f.name for f in schema.FIELDS]
    assert len(schema.FIELD_BY_NAME) == len(schema.FIELDS)  # no name twice
    assert set(schema.MONEY_COLUMNS) == {
        n for n, d in schema.COLUMNS.items() if isinstance(d, pl.Decimal)
    }
    assert schema.EPOCH_MS_COLUMNS == ("meta.customerActivity.start_time",)
    assert {f.name: f.pii for f in schema.FIELDS if f.pii} == privacy.PII_COLUMNS
    assert privacy.PII_COLUMNS["recipient.institutionNumber"] == "number"
    assert {f.origin for f in schema.FIELDS} == {"documented", "provider", "seen"}
    assert schema.FIELD_BY_NAME["fromAmount"].origin == "provider"
    assert schema.FIELD_BY_NAME["recipient.currency"].origin == "seen"


def test_the_wire_struct_follows_the_fields() -> None:
    assert list(schema.COLUMNS) == LEAF_NAMES
    meta = dict(RECORD.to_schema())["meta"]
    activity = dict(meta.to_schema())["customerActivity"]
    wire = dict(activity.to_schema())
    # Numbers are read as float64 and converted by txkit; timestamps as text.
    assert wire["attempts"] == pl.Float64 and wire["start_time"] == pl.Float64
    assert dict(RECORD.to_schema())["createdAt"] == pl.String


def test_require_gives_the_analysis_kinds_and_refuses_unknown_names() -> None:
    assert schema.require("id", "createdAt", "toAmount", "isManual") == {
        "id": "string",
        "createdAt": "datetime",
        "toAmount": "money",
        "isManual": "bool",
    }
    assert schema.require("meta.customerActivity.time_spent") == {
        "meta.customerActivity.time_spent": "number"
    }
    module = sys.modules["txkit.analysis.reconcile"]  # txkit.analysis.reconcile is the function
    assert module._TX_REQUIRED["toAmount"] == "money"
    with pytest.raises(KeyError, match="'toAmont'"):
        schema.require("id", "toAmont")


def test_csv_writes_known_and_undocumented_nested_columns_as_json_text() -> None:
    assert "disputes" in schema.CSV_JSON_COLUMNS and "toAmount" not in schema.CSV_JSON_COLUMNS
    df = pl.DataFrame(
        {"childTransactionIds": [["a", "b"]], "extra": [[1, 2]], "status": ["ok"]},
    )
    out = _csv_ready(df)
    assert out.row(0) == ('["a", "b"]', "[1, 2]", "ok")
