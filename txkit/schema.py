"""The transaction record as one schema: a :class:`Field` per column, and the accepted filters.

This module owns everything txkit knows about a column, in one :class:`Field` object each
(:data:`FIELDS`): its dotted path, its polars type, how it is encoded on the wire, how it is
masked when it holds personal data, where txkit learned of it, and whether a CSV file carries it
as JSON text. Everything else is derived from these objects: the loaded frame's columns and
types (:data:`COLUMNS`), the decoder's wire struct (:mod:`txkit.decode`), the personal-data list
(:data:`txkit.privacy.PII_COLUMNS`), the CSV's JSON-text columns (:mod:`txkit.output`) and the
columns each analysis function requires (:func:`require`). The sandbox renders records with
these names.

Column names are the API's own paths joined with ``.`` (``meta.customerActivity.attempts``),
as ``json_normalize`` does. Sources of each field:

* the interface document (``transaction-export-interface.md``), section 2.2;
* the provider notes (``provider-notes.md``): ``fromAmount``/``fromCurrency`` on conversions and
  the fields seen "in the wild" (``amount``, ``currency``, ``merchantId``, ``recipient`` ...).
  They are declared here too, so that every analyst sees stable columns on every export.

Money is ``Decimal(38, MONEY_SCALE)``: exact, never a binary float.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import polars as pl

#: Status values accepted by the ``status`` filter (interface document, section 3.1).
STATUSES: Final[tuple[str, ...]] = (
    "ongoing",
    "pending",
    "processing",
    "verified",
    "successful",
    "failed",
    "declined",
    "initiated",
    "reversed",
    "expired",
    "abandoned",
)

#: Transaction types accepted by the ``transType`` filter (section 3.1).
TRANS_TYPES: Final[tuple[str, ...]] = ("conversion", "settlement", "collection", "transfer")

#: Currencies accepted by the ``currency`` filter (section 4.1).
CURRENCIES: Final[tuple[str, ...]] = (
    "NGN",
    "USD",
    "GHS",
    "RWF",
    "KES",
    "TZS",
    "UGX",
    "XOF",
    "XAF",
    "ZAR",
    "ZMW",
    "GBP",
    "USDT",
    "USDC",
)

#: Decimal places of money columns. Values with more decimals widen the column's scale
#: (never rounded); see :mod:`txkit.decode`.
MONEY_SCALE: Final[int] = 2
MONEY: Final = pl.Decimal(38, MONEY_SCALE)
TIMESTAMP: Final = pl.Datetime("ms", "UTC")

#: One element of ``meta.customerActivity.history``.
HISTORY_ITEM: Final = pl.Struct({"type": pl.String(), "message": pl.String(), "time": pl.String()})

#: One dispute record. The document leaves its members unspecified; these are the ones seen.
#: Members beyond them are kept as extra struct fields (non-string values as JSON text).
DISPUTE_ITEM: Final = pl.Struct(
    {"reference": pl.String(), "reason": pl.String(), "status": pl.String()}
)

#: How a field is encoded in the service's JSON (what the decoders accept for it):
#:
#: * ``string``: a JSON string (a number or boolean is kept as its text);
#: * ``json_text``: unspecified by the document: a string, or any other value kept as its JSON
#:   text (lossless);
#: * ``money``: a JSON number (or numeric string), read into an exact decimal;
#: * ``integer`` / ``number``: a JSON number, read into ``Int64`` / ``Float64``;
#: * ``boolean``: ``true`` / ``false``;
#: * ``iso_timestamp``: an ISO 8601 string with a timezone, millisecond precision;
#: * ``epoch_ms``: an integer count of milliseconds since 1970-01-01 UTC;
#: * ``json_text_list``: an array whose element type is unspecified: strings, others as JSON text;
#: * ``object_list``: an array of objects (kept as a list of structs).
Wire = Literal[
    "string",
    "json_text",
    "money",
    "integer",
    "number",
    "boolean",
    "iso_timestamp",
    "epoch_ms",
    "json_text_list",
    "object_list",
]

#: The coercion rules: what each wire encoding accepts, identically on the decoder's fast and
#: exact paths. Anything else is a :class:`~txkit.errors.SchemaError` naming the record, the
#: field and the value; a boolean is never a number, a number token is never rounded.
WIRE_ACCEPTS: Final[dict[str, str]] = {
    "string": "a string (a number or boolean is kept as its text)",
    "json_text": "any JSON value (a non-string is kept as its JSON text)",
    "money": "a JSON number or numeric string of at most 38 digits (never true/false)",
    "integer": "a whole JSON number or numeric string below 2**63 (never true/false)",
    "number": "a JSON number or numeric string that float64 holds exactly (never true/false)",
    "boolean": 'true, false, or the strings "true" / "false"',
    "iso_timestamp": "an ISO 8601 string with a timezone, at most millisecond precision",
    "epoch_ms": "whole epoch milliseconds (a number or numeric string, never true/false), "
    "or an ISO 8601 string with a timezone",
    "json_text_list": "an array (non-string elements are kept as JSON text)",
    "object_list": "an array of objects",
}

#: Where txkit learned of a field: the interface document (section 2.2), the provider's own
#: samples (``provider-notes.md``), or records seen in the wild in the provider's other public
#: material (also ``provider-notes.md``).
Origin = Literal["documented", "provider", "seen"]

#: How :func:`txkit.privacy.mask_pii` masks a personal-data field.
Masker = Literal["email", "email_list", "name", "number", "text"]

#: What a column holds, as the analysis functions check it (``txkit.analysis``).
Kind = Literal["money", "string", "datetime", "bool", "int", "number", "date"]


@dataclass(frozen=True, slots=True)
class Field:
    """Everything txkit knows about one column of the loaded frame.

    Attributes:
        name: the flattened column name, the API's path joined with ``.``.
        dtype: the column's polars type in a loaded frame.
        wire: how the service encodes it (see :data:`Wire`).
        origin: where txkit learned of it (see :data:`Origin`).
        pii: how it is masked for display, or None when it holds no personal data.
    """

    name: str
    dtype: pl.DataType
    wire: Wire
    origin: Origin = "documented"
    pii: Masker | None = None

    @property
    def path(self) -> tuple[str, ...]:
        """The JSON path: ``("meta", "customerActivity", "attempts")``."""
        return tuple(self.name.split("."))

    @property
    def csv_json(self) -> bool:
        """True when a CSV file writes the column as JSON text (lists and structs)."""
        return self.dtype.is_nested()

    @property
    def wire_dtype(self) -> pl.DataType:
        """The type polars' JSON reader reads it as on the fast path.

        Numbers are read as ``Float64`` and converted by txkit after a round-trip check
        (polars would round money silently), timestamps as text.
        """
        if self.wire in ("money", "integer", "number", "epoch_ms"):
            return pl.Float64()
        if self.wire in ("iso_timestamp", "json_text"):
            return pl.String()
        return self.dtype

    @property
    def accepts(self) -> str:
        """The JSON values the decoders convert for this field (:data:`WIRE_ACCEPTS`)."""
        return WIRE_ACCEPTS[self.wire]

    @property
    def kind(self) -> Kind:
        """What the column holds, in the terms of the analysis functions' column checks."""
        dtype = self.dtype
        if isinstance(dtype, pl.Decimal):
            return "money"
        if isinstance(dtype, pl.Datetime):
            return "datetime"
        if isinstance(dtype, pl.Boolean):
            return "bool"
        if isinstance(dtype, pl.Int64):
            return "int"
        if isinstance(dtype, pl.Float64):
            return "number"
        return "string"


_STR = pl.String()
_BOOL = pl.Boolean()
_TEXTS = pl.List(pl.String())

#: Every known column, in the column order of a loaded frame (unknown fields follow, sorted by
#: name).
FIELDS: Final[tuple[Field, ...]] = (
    Field("id", _STR, "string"),
    Field("_id", _STR, "string"),
    Field("createdAt", TIMESTAMP, "iso_timestamp"),
    Field("updatedAt", TIMESTAMP, "iso_timestamp"),
    Field("paidAt", TIMESTAMP, "iso_timestamp"),
    Field("transType", _STR, "string"),
    Field("status", _STR, "string"),
    Field("transactionReference", _STR, "string"),
    Field("toAmount", MONEY, "money"),
    Field("toCurrency", _STR, "string"),
    Field("fromAmount", MONEY, "money", origin="provider"),
    Field("fromCurrency", _STR, "string", origin="provider"),
    Field("feeAmount", MONEY, "money"),
    Field("taxAmount", MONEY, "money"),
    Field("toBalanceAfterAvailable", MONEY, "money"),
    Field("toBalanceAfterLedger", MONEY, "money"),
    Field("fromBalanceAfterAvailable", MONEY, "money"),
    Field("fromBalanceAfterLedger", MONEY, "money"),
    Field("customerEmail", _STR, "string", pii="email"),
    Field("isRecurrent", _BOOL, "boolean"),
    Field("isManual", _BOOL, "boolean"),
    Field("postProcess", _STR, "json_text"),
    Field("source", _STR, "json_text"),
    Field("customNotifyEmails", _TEXTS, "json_text_list", pii="email_list"),
    Field("childTransactionIds", _TEXTS, "json_text_list"),
    Field("disputeReferences", _TEXTS, "json_text_list"),
    Field("disputes", pl.List(DISPUTE_ITEM), "object_list"),
    Field("hasRollingReserve", _BOOL, "boolean"),
    Field("rollingReserve.isInReserve", _BOOL, "boolean"),
    Field("rollingReserve.amount", MONEY, "money"),
    Field("rollingReserve.reserveReleaseDate", TIMESTAMP, "iso_timestamp"),
    Field("merchantInfo.name", _STR, "string"),
    Field("meta.accountName", _STR, "string", pii="name"),
    Field("meta.accountNumber", _STR, "string", pii="number"),
    Field("meta.bankName", _STR, "string"),
    Field("meta.narration", _STR, "string", pii="text"),
    Field("meta.sessionId", _STR, "string"),
    Field("meta.paymentCollectionType", _STR, "string"),
    Field("meta.paymentChannel", _STR, "string"),
    Field("meta.existingTransaction.reference", _STR, "string"),
    Field("meta.existingTransaction.expectedAmount", MONEY, "money"),
    Field("meta.customerActivity.start_time", TIMESTAMP, "epoch_ms"),
    Field("meta.customerActivity.time_spent", pl.Float64(), "number"),
    Field("meta.customerActivity.attempts", pl.Int64(), "integer"),
    Field("meta.customerActivity.errors", pl.Int64(), "integer"),
    Field("meta.customerActivity.success", _BOOL, "boolean"),
    Field("meta.customerActivity.mobile", _BOOL, "boolean"),
    Field("meta.customerActivity.input", _TEXTS, "json_text_list"),
    Field("meta.customerActivity.history", pl.List(HISTORY_ITEM), "object_list"),
    # Seen in the provider's other material (provider-notes.md), not in the interface document.
    Field("amount", MONEY, "money", origin="seen"),
    Field("currency", _STR, "string", origin="seen"),
    Field("merchantId", _STR, "string", origin="seen"),
    Field("gatewayReference", _STR, "string", origin="seen"),
    Field("authorizationCode", _STR, "string", origin="seen"),
    Field("paymentCode", _STR, "string", origin="seen"),
    Field("paymentPartnerId", _STR, "string", origin="seen"),
    Field("userTransactionReference", _STR, "string", origin="seen"),
    Field("narration", _STR, "string", origin="seen", pii="text"),
    Field("recipient._id", _STR, "string", origin="seen"),
    Field("recipient.recipientName", _STR, "string", origin="seen", pii="name"),
    Field("recipient.currency", _STR, "string", origin="seen"),
    Field("recipient.institutionType", _STR, "string", origin="seen"),
    Field("recipient.institutionName", _STR, "string", origin="seen"),
    Field("recipient.institutionNumber", _STR, "string", origin="seen", pii="number"),
)

#: The fields by name.
FIELD_BY_NAME: Final[dict[str, Field]] = {f.name: f for f in FIELDS}

#: Every known column, flattened, with its final polars type, in frame order.
COLUMNS: Final[dict[str, pl.DataType]] = {f.name: f.dtype for f in FIELDS}


def _named(wire: Wire) -> tuple[str, ...]:
    return tuple(f.name for f in FIELDS if f.wire == wire)


#: Money columns (exact decimals).
MONEY_COLUMNS: Final[tuple[str, ...]] = _named("money")

#: Columns given as ISO 8601 strings on the wire.
ISO_TIMESTAMP_COLUMNS: Final[tuple[str, ...]] = _named("iso_timestamp")

#: Columns given as epoch milliseconds on the wire.
EPOCH_MS_COLUMNS: Final[tuple[str, ...]] = _named("epoch_ms")

#: Fields whose type the document leaves unspecified: a non-string value is kept as its
#: JSON text (lossless) instead of failing the load.
JSON_TEXT_COLUMNS: Final[tuple[str, ...]] = _named("json_text")

#: List columns whose element type is unspecified: non-string elements are kept as JSON text.
JSON_TEXT_LIST_COLUMNS: Final[tuple[str, ...]] = _named("json_text_list")

#: Lists of objects, kept as lists of structs (members as strings; others JSON text).
OBJECT_LIST_COLUMNS: Final[dict[str, pl.Struct]] = {
    f.name: f.dtype.inner  # type: ignore[attr-defined]
    for f in FIELDS
    if f.wire == "object_list"
}

#: Personal-data columns and how each is masked (see :mod:`txkit.privacy`).
PII_FIELDS: Final[dict[str, Masker]] = {f.name: f.pii for f in FIELDS if f.pii is not None}

#: Known columns a CSV file writes as JSON text (undocumented nested columns are too).
CSV_JSON_COLUMNS: Final[tuple[str, ...]] = tuple(f.name for f in FIELDS if f.csv_json)


def require(*names: str) -> dict[str, Kind]:
    """The columns an analysis function needs, with what each must hold, from the schema.

    Args:
        names: known column names (:data:`COLUMNS`).

    Returns:
        ``{name: kind}`` in the given order, as ``txkit.analysis`` column checks take it.

    Raises:
        KeyError: a name that is not a known column (a typo in txkit itself).

    Example:
        >>> require("id", "toAmount")
        {'id': 'string', 'toAmount': 'money'}
    """
    unknown = [n for n in names if n not in FIELD_BY_NAME]
    if unknown:
        raise KeyError(f"not columns of txkit.schema: {', '.join(map(repr, unknown))}")
    return {n: FIELD_BY_NAME[n].kind for n in names}
