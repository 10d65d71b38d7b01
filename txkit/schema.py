"""The transaction record: documented fields, their polars types, and the accepted filter values.

This module is the single source of truth for what a record looks like. The sandbox renders
records with these names, the loader reads them into these types, and the analysis functions
rely on the flattened column names defined here.

Column names are the API's own paths joined with ``.`` (``meta.customerActivity.attempts``),
as ``json_normalize`` does. Sources of each field:

* the interface document (``transaction-export-interface.md``), section 2.2;
* the provider notes (``provider-notes.md``): ``fromAmount``/``fromCurrency`` on conversions and
  the fields seen "in the wild" (``amount``, ``currency``, ``merchantId``, ``recipient`` ...).
  They are declared here too, so that every analyst sees stable columns on every export.

Money is ``Decimal(38, MONEY_SCALE)``: exact, never a binary float.
"""

from __future__ import annotations

from typing import Final

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
#: (never rounded); see :mod:`txkit.frame`.
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

#: Every known column, flattened, with its final polars type. Order is the column order of
#: a loaded frame; unknown fields follow, sorted by name.
COLUMNS: Final[dict[str, pl.DataType]] = {
    "id": pl.String(),
    "_id": pl.String(),
    "createdAt": TIMESTAMP,
    "updatedAt": TIMESTAMP,
    "paidAt": TIMESTAMP,
    "transType": pl.String(),
    "status": pl.String(),
    "transactionReference": pl.String(),
    "toAmount": MONEY,
    "toCurrency": pl.String(),
    "fromAmount": MONEY,
    "fromCurrency": pl.String(),
    "feeAmount": MONEY,
    "taxAmount": MONEY,
    "toBalanceAfterAvailable": MONEY,
    "toBalanceAfterLedger": MONEY,
    "fromBalanceAfterAvailable": MONEY,
    "fromBalanceAfterLedger": MONEY,
    "customerEmail": pl.String(),
    "isRecurrent": pl.Boolean(),
    "isManual": pl.Boolean(),
    "postProcess": pl.String(),
    "source": pl.String(),
    "customNotifyEmails": pl.List(pl.String()),
    "childTransactionIds": pl.List(pl.String()),
    "disputeReferences": pl.List(pl.String()),
    "disputes": pl.List(DISPUTE_ITEM),
    "hasRollingReserve": pl.Boolean(),
    "rollingReserve.isInReserve": pl.Boolean(),
    "rollingReserve.amount": MONEY,
    "rollingReserve.reserveReleaseDate": TIMESTAMP,
    "merchantInfo.name": pl.String(),
    "meta.accountName": pl.String(),
    "meta.accountNumber": pl.String(),
    "meta.bankName": pl.String(),
    "meta.narration": pl.String(),
    "meta.sessionId": pl.String(),
    "meta.paymentCollectionType": pl.String(),
    "meta.paymentChannel": pl.String(),
    "meta.existingTransaction.reference": pl.String(),
    "meta.existingTransaction.expectedAmount": MONEY,
    "meta.customerActivity.start_time": TIMESTAMP,
    "meta.customerActivity.time_spent": pl.Float64(),
    "meta.customerActivity.attempts": pl.Int64(),
    "meta.customerActivity.errors": pl.Int64(),
    "meta.customerActivity.success": pl.Boolean(),
    "meta.customerActivity.mobile": pl.Boolean(),
    "meta.customerActivity.input": pl.List(pl.String()),
    "meta.customerActivity.history": pl.List(HISTORY_ITEM),
    # Seen in the provider's other material (provider-notes.md), not in the interface document.
    "amount": MONEY,
    "currency": pl.String(),
    "merchantId": pl.String(),
    "gatewayReference": pl.String(),
    "authorizationCode": pl.String(),
    "paymentCode": pl.String(),
    "paymentPartnerId": pl.String(),
    "userTransactionReference": pl.String(),
    "narration": pl.String(),
    "recipient._id": pl.String(),
    "recipient.recipientName": pl.String(),
    "recipient.currency": pl.String(),
    "recipient.institutionType": pl.String(),
    "recipient.institutionName": pl.String(),
    "recipient.institutionNumber": pl.String(),
}

#: Money columns (exact decimals).
MONEY_COLUMNS: Final[tuple[str, ...]] = tuple(
    name for name, dtype in COLUMNS.items() if isinstance(dtype, pl.Decimal)
)

#: Columns given as ISO 8601 strings on the wire.
ISO_TIMESTAMP_COLUMNS: Final[tuple[str, ...]] = (
    "createdAt",
    "updatedAt",
    "paidAt",
    "rollingReserve.reserveReleaseDate",
)

#: Columns given as epoch milliseconds on the wire.
EPOCH_MS_COLUMNS: Final[tuple[str, ...]] = ("meta.customerActivity.start_time",)

#: Fields whose type the document leaves unspecified: a non-string value is kept as its
#: JSON text (lossless) instead of failing the load.
JSON_TEXT_COLUMNS: Final[tuple[str, ...]] = ("postProcess", "source")

#: List columns whose element type is unspecified: non-string elements are kept as JSON text.
JSON_TEXT_LIST_COLUMNS: Final[tuple[str, ...]] = (
    "customNotifyEmails",
    "childTransactionIds",
    "disputeReferences",
    "meta.customerActivity.input",
)

#: Lists of objects, kept as lists of structs (members as strings; others JSON text).
OBJECT_LIST_COLUMNS: Final[dict[str, pl.Struct]] = {
    "disputes": DISPUTE_ITEM,
    "meta.customerActivity.history": HISTORY_ITEM,
}


def empty_frame() -> pl.DataFrame:
    """Return an empty frame with every known column and its type.

    Returns:
        A zero-row :class:`polars.DataFrame` with the columns of :data:`COLUMNS`.
    """
    return pl.DataFrame(schema=COLUMNS)
