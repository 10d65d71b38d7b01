"""Column mappings: how a merchant's file names what txkit reads, for orders and bank CSVs.

One syntax for both (``--orders-columns``, ``--bank-columns``, the notebooks' parameters,
``TXKIT_ORDERS_COLUMNS``, ``TXKIT_BANK_COLUMNS`` and the ``[orders]``/``[bank]`` sections of
``txkit.toml``): ``key=Column Name`` pairs separated by commas, e.g.
``reference=Name,amount=Total,currency=Currency``. Keys are case-insensitive, column names
are matched in the file's header without regard to case or surrounding spaces.

Orders also take:

* a preset name as the first item (``shopify``, or ``shopify,status.pending=ignore`` to
  change one thing): the columns and statuses of a shop's export (:data:`ORDERS_PRESETS`);
* a status mapping, ``status.<shop status>=<service status>``, ``=unpaid`` (never paid: no
  mismatch against a failed, declined, abandoned or expired attempt, or none) or ``=ignore``
  (the order is left out and counted), e.g. ``status.paid=successful``.

Precedence, whole mapping against whole mapping (never merged): an explicit value (the CLI
flag, the notebook parameter, the ``columns=`` argument) over the environment variable
(then ``.env``) over ``txkit.toml`` in the project folder over none (txkit's own column
names).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NamedTuple

import polars as pl

from txkit.config import (
    BANK_COLUMNS_VAR,
    ORDERS_COLUMNS_VAR,
    PROJECT_MARK,
    bank_columns_setting,
    data_dir,
    orders_columns_setting,
    read_settings_toml,
)
from txkit.schema import STATUSES

__all__ = [
    "BANK",
    "BANK_PRESETS",
    "ORDERS",
    "ORDERS_PRESETS",
    "SETTINGS_FILE",
    "ColumnMapping",
    "MappingKind",
    "Writing",
    "column_setting",
    "describe_columns",
    "describe_use",
    "find_writing",
    "parse_columns",
    "plain_amount",
    "project_folder",
    "separator",
    "writing_name",
]

#: The project's settings file (in the folder txkit runs in, beside ``materiality.toml``).
SETTINGS_FILE: Final = PROJECT_MARK
#: What a status mapped to ``ignore`` means: the order is left out (and counted).
IGNORE: Final = "ignore"
#: What a status mapped to ``unpaid`` means: the shop never got the money (an expired
#: checkout, a failed or blocked charge), whatever the service calls its attempt: against a
#: failed, declined, abandoned or expired collection, or none, nothing is at stake.
UNPAID: Final = "unpaid"

# Separators by name (a comma cannot be written inside the comma-separated mapping).
_SEPARATORS: Final = {"comma": ",", ",": ",", "dot": ".", "period": ".", ".": ".",
                      "space": " ", " ": " ", "apostrophe": "'", "'": "'", "none": ""}  # fmt: skip
_VALUE_COMMON: Final = {
    "date_format": "how dates are written, e.g. %d/%m/%Y (default %Y-%m-%d)",
    "decimal": "the decimal separator: dot (default) or comma",
    "thousands": "the thousands separator: comma, dot, space, apostrophe or none (default)",
}


class ColumnMapping(dict[str, str]):
    """A checked mapping (key to column name or value), with where it came from.

    Attributes:
        origin: where it was set (``--orders-columns``, ``TXKIT_ORDERS_COLUMNS``,
            ``txkit.toml [orders]``, ``the columns argument``).
    """

    origin: str = ""

    @property
    def preset(self) -> str | None:
        """The preset the mapping starts from, if any."""
        return self.get("preset")

    @property
    def statuses(self) -> dict[str, str]:
        """The status mapping: shop status (lower case) to a service status or ``ignore``."""
        return {k.removeprefix("status."): v for k, v in self.items() if k.startswith("status.")}


@dataclass(frozen=True)
class MappingKind:
    """The keys one kind of file takes (orders, bank statement CSV)."""

    what: str
    flag: str
    keys: Mapping[str, str]
    value_keys: frozenset[str]
    presets: Mapping[str, Mapping[str, str]]
    status_map: bool = False
    section: str = ""


#: The presets: each shop's export as it comes, and what its statuses mean for the service.
#: A shop's "refunded" order was paid (its collection exists, the refund is a movement of its
#: own), so it expects a successful collection; a voided or cancelled order never expected one.
ORDERS_PRESETS: Final[dict[str, dict[str, str]]] = {
    # Shopify Admin > Orders > Export: one row per line item, the order's fields on the first.
    "shopify": {
        "reference": "Name",
        "amount": "Total",
        "currency": "Currency",
        "status": "Financial Status",
        "date": "Created at",
        "customer": "Email",
        "status.paid": "successful",
        "status.partially_paid": "successful",
        "status.refunded": "successful",
        "status.partially_refunded": "successful",
        "status.pending": "pending",
        "status.authorized": "pending",
        "status.voided": IGNORE,
        "status.expired": UNPAID,
    },
    # WooCommerce > Export Orders (Advanced Order Export For WooCommerce, the common free
    # exporter): its default labels; the status as WooCommerce names it.
    "woocommerce": {
        "reference": "Order Number",
        "amount": "Order Total Amount",
        "currency": "Currency",
        "status": "Order Status",
        "date": "Order Date",
        "customer": "Email (Billing)",
        "status.completed": "successful",
        "status.processing": "successful",
        "status.refunded": "successful",
        "status.pending payment": "pending",
        "status.pending": "pending",
        "status.on hold": "pending",
        "status.on-hold": "pending",
        "status.failed": UNPAID,
        "status.cancelled": IGNORE,
        "status.draft": IGNORE,
        "status.checkout-draft": IGNORE,
    },
    # Stripe Dashboard > Payments > Export: one row per charge (id ch_/py_). Rows without an
    # id are payment intents that never became a charge (lower-case intent statuses).
    "stripe": {
        "reference": "id",
        "amount": "Amount",
        "currency": "Currency",
        "status": "Status",
        "date": "Created date (UTC)",
        "customer": "Customer Email",
        "status.paid": "successful",
        "status.refunded": "successful",
        "status.partially refunded": "successful",
        "status.disputed": "successful",
        "status.pending": "pending",
        "status.uncaptured": "pending",
        "status.failed": UNPAID,
        "status.blocked": UNPAID,
        "status.canceled": IGNORE,
        "status.requires_payment_method": IGNORE,
        "status.requires_confirmation": IGNORE,
        "status.requires_action": IGNORE,
        "status.requires_capture": IGNORE,
        "status.succeeded": IGNORE,
    },
}

#: Bank statement layouts, each verified on a real export in ``tests/data/real`` (its
#: MANIFEST.toml names the source): the columns and how values are written. None says the
#: currency: a bank's accounts come in several (GTBank's domiciliary accounts are USD), so it is
#: given beside the preset (``gtbank,account_currency=NGN``) or refused as missing.
BANK_PRESETS: Final[dict[str, dict[str, str]]] = {
    # Guaranty Trust Bank (Nigeria): internet banking's statement download (an HTML .xls).
    "gtbank": {
        "date": "Trans Date",
        "value_date": "Value Date",
        "reference": "Reference",
        "debit": "Debit",
        "credit": "Credit",
        "balance": "Balance",
        "narration": "Remarks",
        "date_format": "%d-%b-%Y",
        "thousands": "comma",
    },
    # FinecoBank (Italy): current account movements (.xlsx), debits written negative.
    "fineco": {
        "date": "Data",
        "credit": "Entrate",
        "debit": "Uscite",
        "narration": "Descrizione",
        "date_format": "%d/%m/%Y",
    },
    # Nordea (Sweden): Internetbanken Privat's export.
    "nordea": {
        "date": "Datum",
        "narration": "Transaktion",
        "amount": "Belopp",
        "balance": "Saldo",
        "decimal": "comma",
        "thousands": "dot",
    },
    # Handelsbanken (Sweden): account transactions export.
    "handelsbanken": {
        "date": "Transaktionsdatum",
        "value_date": "Reskontradatum",
        "narration": "Text",
        "amount": "Belopp",
        "balance": "Saldo",
    },
    # Bank Norwegian (Sweden, Finland): card and savings exports.
    "banknorwegian": {
        "date": "TransactionDate",
        "value_date": "ValueDate",
        "narration": "Text",
        "amount": "Amount",
    },
    # Capitec Bank (South Africa): transaction history CSV (a "sep=," line above the header;
    # Transaction Date is when the card was used, Posting Date when the account was booked).
    "capitec": {
        "date": "Posting Date",
        "narration": "Statement Description",
        "bank_reference": "Sequence Number",
        "account": "Account",
        "debit": "Debit Amount",
        "credit": "Credit Amount",
        "balance": "Balance",
        "date_format": "%d/%m/%Y",
    },
    # Bank Zero (South Africa): the monthly and the history CSV (the latter with a
    # Transaction Id column first); Fee is written beside a signed Amount.
    "bankzero": {
        "date": "Date",
        "narration": "Description 1",
        "amount": "Amount",
        "balance": "Balance",
        "thousands": "comma",
    },
    # FNB and RMB Private Bank (South Africa): online banking's "ACCOUNT TRANSACTION HISTORY"
    # CSV, newest first (its header is found only under that title: see txkit.inputs._layouts).
    "fnb": {
        "date": "Date",
        "narration": "Description",
        "amount": "Amount",
        "balance": "Balance",
        "date_format": "%Y/%m/%d",
    },
    # Stanbic Bank Zambia: the statement download (a title row, its header over three rows,
    # the opening and closing balance as rows, the Debits and Credits totals at the end).
    "stanbiczm": {
        "date": "Value date",
        "narration": "Transaction description",
        "debit": "Debits",
        "credit": "Credits",
        "balance": "Balance",
        "date_format": "%d/%m/%Y",
        "decimal": "comma",
        "thousands": "space",
    },
    # M-Pesa (Safaricom, Kenya): the full statement converted from its PDF to CSV, newest
    # first, Withdrawn written negative, each page's footer and the header repeated.
    "mpesa": {
        "date": "Completion Time",
        "reference": "Receipt No.",
        "narration": "Details",
        "state": "Transaction Status",
        "credit": "Paid In",
        "debit": "Withdrawn",
        "balance": "Balance",
        "date_format": "%Y-%m-%d %H:%M:%S",
    },
}

#: Orders: the columns read, and how values are written.
ORDERS: Final = MappingKind(
    what="orders columns",
    flag="--orders-columns",
    keys={
        "reference": "the reference the payment carries (the export's transactionReference)",
        "amount": "the amount expected",
        "currency": "the currency code's column, or:",
        "account_currency": "the one currency of the whole file (e.g. NGN)",
        "status": "the order's status (optional; see status.<shop status>)",
        "date": "the order's date or timestamp (optional)",
        "customer": "the customer (optional; masked on pages)",
        **_VALUE_COMMON,
    },
    value_keys=frozenset({"account_currency", *_VALUE_COMMON}),
    presets=ORDERS_PRESETS,
    status_map=True,
    section="orders",
)
#: Bank statement CSV: the columns read, and how values are written.
BANK: Final = MappingKind(
    what="bank statement columns",
    flag="--bank-columns",
    keys={
        "date": "the booking date's column",
        "value_date": "the value date's column (optional)",
        "amount": "a signed amount column (credits positive), or:",
        "direction": "with amount: the column saying credit or debit (C/D, CR/DR, "
        "Credit/Debit, Kredit/Debet, any case)",
        "credit": "the credited amount's column (with debit)",
        "debit": "the debited amount's column (with credit; unsigned or written negative)",
        "currency": "the currency code's column, or:",
        "account_currency": "the one currency of the whole file (e.g. NGN)",
        "reference": "the reference's column",
        "narration": "the narration's (description's) column",
        "bank_reference": "the bank's own reference (optional)",
        "balance": "the running balance after each line (optional; proves no line is missing)",
        "account": "the account's column (optional)",
        "state": "the line's state (optional): COMPLETED read; PENDING, DECLINED, REVERTED... "
        "left out and counted",
        **_VALUE_COMMON,
    },
    value_keys=frozenset({"account_currency", *_VALUE_COMMON}),
    presets=BANK_PRESETS,
    section="bank",
)


def _accepted(kind: MappingKind) -> str:
    keys = list(kind.keys)
    if kind.status_map:
        keys.append("status.<shop status>")
    if kind.presets:
        keys.append(f"or a preset first ({', '.join(sorted(kind.presets))})")
    return ", ".join(keys)


def _pairs(text: str, kind: MappingKind) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for position, part in enumerate(str(text).split(",")):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            if kind.presets and position == 0:
                pairs.append(("preset", part.strip()))
                continue
            raise ValueError(
                f"{kind.what}: {part.strip()!r} is not key=Column Name; "
                f"accepted keys: {_accepted(kind)}"
            )
        pairs.append((key.strip().lower(), value.strip()))
    return pairs


def _table_pairs(table: Mapping[str, Any], kind: MappingKind) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for raw_key, value in table.items():
        key = str(raw_key).strip().lower()
        if key == "status" and isinstance(value, Mapping) and kind.status_map:
            pairs += [(f"status.{str(k).strip()}", v) for k, v in value.items()]
            continue
        pairs.append((key, value))
    for key, value in pairs:
        if not isinstance(value, str):
            raise ValueError(
                f"{kind.what}: {key!r} must be text (a column name or a value), got {value!r}"
            )
    return [(k.lower() if k.startswith("status.") else k, v.strip()) for k, v in pairs]


def parse_columns(
    text: str | Mapping[str, Any] | None, kind: MappingKind, *, origin: str = ""
) -> ColumnMapping:
    """A checked column mapping from ``key=Column Name`` pairs (or a mapping, e.g. a TOML
    table) for ``kind`` (:data:`ORDERS` or :data:`BANK`); empty when ``text`` is.

    Raises:
        ValueError: an unknown key or preset, a pair without ``=``, a key given twice, a value
            missing, a status mapped to something that is not a service status or ``ignore``,
            or values that do not go together (one line naming the accepted values).
    """
    if isinstance(text, ColumnMapping) and (text.origin or not origin):
        return text
    out = ColumnMapping()
    out.origin = origin
    if text is None or text == "":
        return out
    pairs = _table_pairs(text, kind) if isinstance(text, Mapping) else _pairs(text, kind)
    given: dict[str, str] = {}
    for key, value in pairs:
        is_status = kind.status_map and key.startswith("status.") and len(key) > 7
        if key == "preset" and kind.presets:
            if value.lower() not in kind.presets:
                raise ValueError(
                    f"{kind.what}: unknown preset {value!r}; accepted: "
                    f"{', '.join(sorted(kind.presets))}"
                )
            value = value.lower()
        elif not is_status and key not in kind.keys:
            raise ValueError(f"{kind.what}: unknown key {key!r}; accepted: {_accepted(kind)}")
        if key in given:
            raise ValueError(f"{kind.what}: {key!r} is given twice")
        if not value:
            raise ValueError(f"{kind.what}: {key!r} has no column name")
        if is_status:
            value = value.lower()
            if value not in (*STATUSES, IGNORE, UNPAID):
                raise ValueError(
                    f"{kind.what}: {key}={value} is not a status of the service; accepted: "
                    f"{', '.join(STATUSES)}, {UNPAID} (never paid, whatever the service's "
                    f"attempt says), or {IGNORE} (the order is left out)"
                )
        given[key] = value
    if "preset" in given:
        out["preset"] = given["preset"]
        preset = dict(kind.presets[given["preset"]])
        # A key given replaces what the preset says about the same thing.
        if "account_currency" in given:
            preset.pop("currency", None)
        out.update(preset)
    out.update({k: v for k, v in given.items() if k != "preset"})
    _check_values(out, kind)
    return out


def _check_values(out: Mapping[str, str], kind: MappingKind) -> None:
    what = kind.what
    if "amount" in out and ({"credit", "debit"} & out.keys()):
        raise ValueError(f"{what}: give either amount (signed) or credit and debit, not both")
    if "direction" in out and "amount" not in out:
        raise ValueError(f"{what}: direction goes with amount (not with credit and debit)")
    if ("credit" in out) != ("debit" in out):
        raise ValueError(f"{what}: credit and debit go together")
    if "currency" in out and "account_currency" in out:
        raise ValueError(
            f"{what}: give either currency (a column) or account_currency (one code for the "
            "file), not both"
        )
    if _SEPARATORS.get(out.get("decimal", "dot")) not in (".", ","):
        raise ValueError(f"{what}: decimal must be dot or comma")
    if out.get("thousands", "none") not in _SEPARATORS:
        raise ValueError(f"{what}: thousands must be comma, dot, space, apostrophe or none")
    if _SEPARATORS[out.get("thousands", "none")] == _SEPARATORS[out.get("decimal", "dot")]:
        raise ValueError(f"{what}: thousands and decimal separators must differ")


def describe_columns(mapping: Mapping[str, str]) -> str:
    """The mapping as it would be written: ``shopify,status.pending=ignore`` for a preset with
    changes, ``date=Value Date,amount=Amount`` otherwise (a string the parser reads back)."""
    preset = mapping.get("preset")
    if not preset:
        return ",".join(f"{k}={v}" for k, v in mapping.items())
    base = ORDERS_PRESETS.get(preset) or BANK_PRESETS.get(preset, {})
    changed = [f"{k}={v}" for k, v in mapping.items() if k != "preset" and base.get(k) != v]
    if "account_currency" in mapping and "currency" in base:
        changed = [c for c in changed if not c.startswith("currency=")]
    return ",".join([preset, *changed])


def describe_use(mapping: ColumnMapping) -> str:
    """How the mapping reads a file, for the load line: ``columns: the shopify preset (from
    txkit.toml [orders])``; empty for no mapping (txkit's own column names)."""
    if not mapping:
        return ""
    text = describe_columns(mapping)
    if mapping.preset:
        _, _, rest = text.partition(",")
        text = f"the {mapping.preset} preset" + (f" with {rest}" if rest else "")
    return f"columns: {text}" + (f" (from {mapping.origin})" if mapping.origin else "")


def separator(mapping: Mapping[str, str], key: str) -> str:
    """The decimal (``.`` by default) or thousands (none by default) separator named."""
    default = "dot" if key == "decimal" else "none"
    return _SEPARATORS[mapping.get(key, default)]


# How each thousands separator may be written: a space also as the no-break spaces that
# spreadsheets and PayPal write (U+00A0, U+202F), an apostrophe also as U+2019 (Swiss).
_THOUSANDS_CHARS: Final = {",": ",", ".": ".", " ": " \u00a0\u202f", "'": "'\u2019", "": ""}
_NAMES: Final = {",": "comma", ".": "dot", " ": "space", "'": "apostrophe", "": "none"}
# The writings a file may use when the mapping does not say, in the order preferred when
# several read every value the same (no separator seen is none).
_WRITINGS: Final = [(d, t) for t in ("", ",", ".", " ", "'") for d in (".", ",") if d != t]


#: The rows a writing is first tried on (:func:`find_writing`).
_PROBE_ROWS: Final = 1000


def _class(chars: str) -> str:
    return "[" + "".join("\\" + c if c in ".^-[]\\" else c for c in chars) + "]"


def _body(decimal: str, thousands: str) -> str:
    """The regular expression of an unsigned number in one writing: groups of three after the
    first where a thousands separator is used (``1,234``, never ``1,2``), digits after the
    decimal separator."""
    digits = "[0-9]+"
    if thousands:
        digits = f"(?:[0-9]{{1,3}}(?:{_class(_THOUSANDS_CHARS[thousands])}[0-9]{{3}})+|[0-9]+)"
    return f"{digits}(?:{_class(decimal)}[0-9]+)?"


def writing_name(mapping: Mapping[str, str]) -> str:
    """How amounts are written, in words: ``decimal comma, thousands dot``."""
    decimal, thousands = separator(mapping, "decimal"), separator(mapping, "thousands")
    return f"decimal {_NAMES[decimal]}, thousands {_NAMES[thousands]}"


def plain_amount(expr: pl.Expr, mapping: Mapping[str, str], *, codes: bool = False) -> pl.Expr:
    """Amount text as a plain decimal: separators removed, ``(12.50)`` as ``-12.50``, a
    leading ``+`` dropped. Digits only move; nothing is rounded. With ``codes`` a currency
    code written beside the number (``0.01USD``, ``USD 0.01``) is dropped too: only for a
    caller that checks that code apart (bank statements do).

    A value that does not fit the mapping's writing (``decimal``, ``thousands``: ``1,2`` or
    ``1.234,56`` with thousands comma) is returned as ``?`` and the text, which no plain
    decimal matches: the caller refuses it with its line, it is never read as another number.
    An empty value stays empty."""
    out = expr
    if codes:
        out = out.str.replace(r"^\s*[A-Za-z]{3}\s*([-+(0-9.])", "$1").str.replace(
            r"([0-9.)])\s*[A-Za-z]{3}\s*$", "$1"
        )
    out = out.str.strip_chars()
    decimal, thousands = separator(mapping, "decimal"), separator(mapping, "thousands")
    body = _body(decimal, thousands)
    fits = out.str.contains(f"^(?:[+-]?{body}|\\({body}\\))$")
    plain = out
    if thousands:
        plain = plain.str.replace_all(_class(_THOUSANDS_CHARS[thousands]), "")
    if decimal == ",":
        plain = plain.str.replace_all(",", ".", literal=True)
    negative = plain.str.starts_with("(") & plain.str.ends_with(")")
    plain = (
        pl.when(negative)
        .then("-" + plain.str.slice(1, plain.str.len_chars() - 2))
        .otherwise(plain)
        .str.strip_prefix("+")
    )
    return pl.when((out == "") | fits).then(plain).otherwise("?" + out)


class Writing(NamedTuple):
    """How a file writes its amounts, as found by :func:`find_writing`.

    Attributes:
        mapping: the mapping with ``decimal`` and ``thousands`` set (what :func:`plain_amount`
            reads with).
        note: for the load line when the file, not the mapping, said it (else empty).
        unsure: where the writings that fit every value read some value otherwise (true on
            those records), with ``readings``; ``None`` when every value reads one way.
        readings: the two writings that disagree, in words.
        plain: each column's values as :func:`plain_amount` reads them in the writing taken
            (nulls as empty), one column a name, when the values were read to find it (None
            otherwise): a caller reuses them rather than read every value again.
    """

    mapping: dict[str, str]
    note: str
    unsure: pl.Expr | None
    readings: str
    plain: pl.DataFrame | None = None


def _found_note(frame: pl.DataFrame, texts: list[pl.Expr], decimal: str, thousands: str) -> str:
    """What the load line says of a writing found from the file: the separators seen (the
    default, decimal dot without thousands, needs no word)."""
    joined = pl.concat_str(texts, separator=" ")
    used_decimal = bool(
        frame.select(joined.str.contains(f"[0-9]{_class(decimal)}[0-9]").any()).item()
    )
    used_thousands = bool(thousands) and bool(
        frame.select(
            joined.str.contains(f"[0-9]{_class(_THOUSANDS_CHARS[thousands])}[0-9]{{3}}").any()
        ).item()
    )
    if not (used_thousands or (used_decimal and decimal != ".")):
        return ""
    said = [f"decimal {_NAMES[decimal]}"] if used_decimal else []
    said += [f"thousands {_NAMES[thousands]}"] if used_thousands else []
    return f"amounts read with {', '.join(said)} (found from the file, not declared)"


def find_writing(
    frame: pl.DataFrame, columns: Sequence[str], mapping: Mapping[str, str], *, codes: bool = False
) -> Writing:
    """The decimal and thousands separators of ``columns`` (amount text): as the mapping
    declares them, else found from the values themselves.

    Every writing the mapping allows (both declared: one) is tried on every value; of those
    that fit every value, the first (no thousands separator before one, decimal dot before
    comma) is taken, and it is proven unique: where the others read a value otherwise (``1,234``
    with no other value saying whether the comma is decimal) :attr:`Writing.unsure` names the
    records, which the caller refuses. Where none fits every value, the one that fits most is
    taken, so that the caller refuses the others with their lines."""
    declared = {k: mapping[k] for k in ("decimal", "thousands") if k in mapping}
    candidates = [
        (d, t)
        for d, t in _WRITINGS
        if _SEPARATORS[declared.get("decimal", _NAMES[d])] == d
        and _SEPARATORS[declared.get("thousands", _NAMES[t])] == t
    ]
    present = [c for c in columns if c in frame.columns]
    if not candidates or not present or frame.height == 0:
        return Writing(dict(mapping), "", None, "")

    texts = [pl.col(c).cast(pl.String).fill_null("") for c in present]
    # A separator no value holds cannot tell writings apart: only the writings whose
    # separators appear are tried (and decimal dot, no thousands, the default).
    seen = frame.select(
        pl.any_horizontal([t.str.contains(_class(chars)) for t in texts]).any().alias(sep)
        for sep, chars in _THOUSANDS_CHARS.items()
        if sep
    ).row(0, named=True)
    tried = [
        (d, t)
        for d, t in candidates
        if (not t or seen[t]) and (seen[d] or bool(t) or (d, t) == (".", ""))
    ] or candidates
    names = {(d, t): [f"_{i}_{j}" for j in range(len(present))] for i, (d, t) in enumerate(tried)}

    read, bad = _read_writings(frame, texts, tried, names, codes)
    fewest = min(bad.values())
    ok = [w for w in tried if bad.get(w) == fewest]
    decimal, thousands = ok[0]
    resolved = {**mapping, "decimal": _NAMES[decimal], "thousands": _NAMES[thousands]}
    unsure, readings = None, ""
    for other in ok[1:]:
        differ = read.select(
            pl.any_horizontal(
                [pl.col(a) != pl.col(b) for a, b in zip(names[ok[0]], names[other], strict=True)]
            ).alias("differ")
        ).to_series()
        if differ.any():
            unsure = pl.lit(differ)
            readings = (
                f"as {writing_name(resolved)}, or as "
                f"{writing_name({'decimal': _NAMES[other[0]], 'thousands': _NAMES[other[1]]})}"
            )
            break
    note = _found_note(frame, texts, decimal, thousands) if len(declared) < 2 else ""
    plain = read.select(pl.col(n).alias(c) for n, c in zip(names[ok[0]], present, strict=True))
    return Writing(resolved, note, unsure, readings, plain)


def _read_writings(
    frame: pl.DataFrame,
    texts: list[pl.Expr],
    tried: list[tuple[str, str]],
    names: dict[tuple[str, str], list[str]],
    codes: bool,
) -> tuple[pl.DataFrame, dict[tuple[str, str], int]]:
    """The values as each writing tried reads them (columns ``names``) and, per writing, how
    many it cannot read. When the first reads every value only the others that do too
    matter (the fewest failures are none): one that fails a value among the first rows
    cannot, and is neither read whole nor counted."""

    def reading(of: pl.DataFrame, writings: list[tuple[str, str]]) -> pl.DataFrame:
        return of.select(
            plain_amount(text, {"decimal": _NAMES[d], "thousands": _NAMES[t]}, codes=codes).alias(n)
            for d, t in writings
            for text, n in zip(texts, names[(d, t)], strict=True)
        )

    def failures(read: pl.DataFrame, writings: list[tuple[str, str]]) -> list[int]:
        return list(
            read.select(
                pl.sum_horizontal([pl.col(n).str.starts_with("?") for n in names[w]])
                .sum()
                .alias(str(i))
                for i, w in enumerate(writings)
            ).row(0)
        )

    first, rest = tried[0], tried[1:]
    read = reading(frame, [first])
    bad = dict(zip([first], failures(read, [first]), strict=True))
    if bad[first] == 0 and rest:
        probe = failures(reading(frame.head(_PROBE_ROWS), rest), rest)
        rest = [w for w, b in zip(rest, probe, strict=True) if b == 0]
    if rest:
        more = reading(frame, rest)
        bad |= dict(zip(rest, failures(more, rest), strict=True))
        read = pl.concat([read, more], how="horizontal")
    return read, bad


def project_folder() -> Path:
    """The project folder, where ``txkit.toml`` and ``materiality.toml`` are: the data
    folder's parent (the working folder by default; a report's kernel gets it through its
    absolute ``TXKIT_DATA_DIR``, and a notebook opened in ``notebooks/`` finds it too)."""
    return data_dir().resolve().parent


def _settings_table(kind: MappingKind, folder: str | os.PathLike[str] | None) -> Any:
    path = Path(folder or project_folder()) / SETTINGS_FILE
    if not path.is_file():
        return None
    doc = read_settings_toml(path, '[orders] and [bank] tables of key = "value" lines')
    unknown = sorted(set(doc) - {ORDERS.section, BANK.section})
    if unknown:
        raise ValueError(
            f"{path}: unknown section(s) {', '.join(unknown)}; accepted: [orders], [bank]"
        )
    table = doc.get(kind.section)
    if table is not None and not isinstance(table, dict):
        raise ValueError(f'{path}: [{kind.section}] must be a table of key = "value" lines')
    return table


def column_setting(
    kind: MappingKind,
    given: str | Mapping[str, Any] | None = None,
    *,
    given_origin: str = "",
    folder: str | os.PathLike[str] | None = None,
) -> ColumnMapping:
    """The mapping in effect for ``kind``: ``given`` (the flag or parameter) if set, else the
    environment variable (then ``.env``), else ``txkit.toml`` in ``folder`` (default: the
    project folder, :func:`project_folder`), else none.

    Raises:
        ConfigError: the settings file cannot be read, is not TOML or is out of bounds
            (:func:`~txkit.config.read_settings_toml`).
        ValueError: the settings file has an unknown section or key (one line naming the
            file and the key).
            A bad mapping given or in the environment too.
    """
    if given:
        return parse_columns(given, kind, origin=given_origin or kind.flag)
    variable = ORDERS_COLUMNS_VAR if kind is ORDERS else BANK_COLUMNS_VAR
    value = orders_columns_setting() if kind is ORDERS else bank_columns_setting()
    if value:
        try:
            return parse_columns(value, kind, origin=variable)
        except ValueError as exc:  # say where the mapping came from: it is not on the line
            raise ValueError(f"{variable}: {exc}") from None
    table = _settings_table(kind, folder)
    if not table:
        return parse_columns(None, kind)
    where = f"{SETTINGS_FILE} [{kind.section}]"
    try:
        return parse_columns(table, kind, origin=where)
    except ValueError as exc:
        path = Path(folder or project_folder()) / SETTINGS_FILE
        raise ValueError(f"{path} [{kind.section}]: {exc}") from None
