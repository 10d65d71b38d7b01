"""The merchant's orders: read from the file as the merchant has it, with exact amounts.

:func:`read_orders` reads a CSV or Parquet file whose columns are txkit's own (``reference``,
``amount``, ``currency``, optionally ``status``, ``date``, ``customer``) or named through a
column mapping or a shop's preset (:mod:`txkit.inputs.columns`: ``shopify``,
``woocommerce``, ``stripe``), the mapping syntax bank statements share.

What a shop's export needs beyond naming columns:

* statuses: ``status.<shop status>=<service status>`` or ``=ignore`` (the order is left out
  and counted); a status neither mapped nor the service's own is refused, naming its lines;
* timestamps with an offset (``2021-05-13 11:01:12 +0200``, ``2021-05-13T09:01:12Z``) are
  read as the **UTC day** of that instant, the day the service dates its records by; a
  timestamp without an offset is taken as written (its date part), as is a plain date;
* line-item rows (Shopify writes one row per further item of an order, with the order's
  reference and no amount, currency or status) are folded into their order and counted.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Final, NamedTuple

import polars as pl

from txkit.errors import DataFileError
from txkit.inputs._content import content_note, identify_content, refuse_content
from txkit.inputs._kept import Kept, kept_read
from txkit.inputs._limits import check_input
from txkit.inputs._table import LINE, fail_lines
from txkit.inputs._text import check_suffix, show_values
from txkit.inputs.columns import (
    IGNORE,
    ORDERS,
    UNPAID,
    ColumnMapping,
    describe_use,
    find_writing,
    parse_columns,
    plain_amount,
    writing_name,
)
from txkit.inputs.sheets import read_table
from txkit.schema import CURRENCIES, STATUSES, Kind

__all__ = [
    "MAX_ORDER_DECIMALS",
    "ORDERS_FORMATS",
    "ORDERS_OPTIONAL",
    "ORDERS_REQUIRED",
    "OrdersFile",
    "read_orders",
    "read_orders_file",
]

#: The orders' required columns, as :func:`txkit.analysis.reconcile` reads them.
ORDERS_REQUIRED: Final[dict[str, Kind]] = {
    "reference": "string",
    "amount": "money",
    "currency": "string",
}
#: The orders' optional columns.
ORDERS_OPTIONAL: Final[dict[str, Kind]] = {
    "status": "string",
    "date": "date",
    "customer": "string",
}
_ORDERS_REQUIRED = ORDERS_REQUIRED
_ORDERS_OPTIONAL = ORDERS_OPTIONAL
# A plain decimal: optional sign, digits, optional fraction. No exponent, no separators.
_AMOUNT_RE: Final = r"^[+-]?[0-9]+(\.[0-9]+)?$"
_DATE_RE: Final = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
# A timestamp with an offset: read as the UTC day of the instant it names.
_OFFSET_RE: Final = (
    r"^([0-9]{4}-[0-9]{2}-[0-9]{2})[T ]([0-9]{2}:[0-9]{2})(:[0-9]{2})?(\.[0-9]+)?"
    r"\s*(Z|[+-][0-9]{2}:?[0-9]{2})$"
)


@dataclass(frozen=True)
class OrdersFile:
    """The merchant's orders as :func:`read_orders_file` read them, and how.

    Attributes:
        path: the file.
        frame: the orders, as :func:`read_orders` returns them.
        notes: what a reader should know, one sentence each: the mapping used, the encoding
            when not UTF-8, the delimiter when not a comma, lines skipped, line-item rows
            folded, orders left out by the status mapping, values normalised (with counts).
        normalised: per column (``reference``, ``currency``, ``status``), how many values were
            written otherwise in the file (case, surrounding spaces).
        mapping: the column mapping used (empty: txkit's own column names).
        folded: line-item rows folded into their order.
        ignored: orders left out because their status is mapped to ``ignore``, per status.
    """

    path: Path
    frame: pl.DataFrame
    notes: tuple[str, ...] = ()
    normalised: Mapping[str, int] = field(default_factory=dict)
    mapping: ColumnMapping = field(default_factory=ColumnMapping)
    folded: int = 0
    ignored: Mapping[str, int] = field(default_factory=dict)

    @property
    def dates(self) -> tuple[date, date] | None:
        """The first and last order date in the file (None without dated orders)."""
        if "date" not in self.frame.columns:
            return None
        first, last = self.frame["date"].min(), self.frame["date"].max()
        return None if first is None else (first, last)  # type: ignore[return-value]

    def describe(self) -> str:
        """The notes as one sentence (empty when there is nothing to say)."""
        return "; ".join(self.notes)


def read_orders(
    path: str | Path, *, columns: str | Mapping[str, Any] | None = None
) -> pl.DataFrame:
    """Read the merchant's orders from CSV or Parquet, with exact decimal amounts.

    CSV is read as text and each amount is converted from its digits (never through a float);
    an amount must be a plain decimal number (``1500``, ``-12.5``, ``0.10``; no exponent, no
    thousands separator unless the mapping names one) with at most :data:`MAX_ORDER_DECIMALS`
    decimals besides trailing zeros. Currency codes are upper-cased and statuses lower-cased,
    surrounding spaces removed (``' ngn '`` is ``NGN``, ``Successful`` is ``successful``): the
    export writes them so. A ``date`` must start with ``YYYY-MM-DD``: a timestamp with an
    offset (``2021-05-13 11:01:12 +0200``, ``...Z``) is read as the UTC day of that instant,
    anything else as its date part as written (or as ``date_format`` in the mapping says).
    Without a mapping other columns are kept as read; with one only the mapped columns are.
    Column names are matched without regard to case or surrounding spaces; columns may be
    separated by commas, semicolons, tabs or ``|``. Rows that repeat the reference of the row
    before with no amount, currency or status (a shop's further line items) are folded into
    their order.

    Text that is not UTF-8 is read as Windows-1252 only when it is that (a
    :class:`UserWarning` says so; :func:`read_orders_file` returns it as a note), otherwise
    refused. :func:`read_orders_file` also says how many values were normalised.

    Args:
        path: a ``.csv`` file, or a ``.parquet``/``.pq`` file (amounts stored as decimal,
            integer or text; floating-point amounts are refused as inexact).
        columns: the file's columns for txkit's: a preset (``shopify``, ``woocommerce``,
            ``stripe``), ``key=Column Name`` pairs (``reference=Name,amount=Total,...``,
            ``status.paid=successful``), or a mapping of the same keys; see
            :mod:`txkit.inputs.columns`. None: the file uses txkit's own names.

    Returns:
        The orders: ``reference`` (String), ``amount`` (``Decimal(38, s)`` where ``s`` is the
        largest number of decimals in the file, at least 2), ``currency`` (String), and when
        present ``status`` (String) and ``date`` (Date), followed by any other columns.

    Raises:
        DataFileError: (a ``ValueError``) the file does not exist, has an unsupported type, is
            empty, has a header only, is not text, misses required or mapped columns (all
            named), or holds empty references, currencies or amounts, amounts that are not
            plain decimal numbers or have too many decimals, currencies that are not codes,
            statuses the service does not have and the mapping does not map, or unreadable
            dates: each with the file, its lines (the header is line 1) or Parquet rows, the
            values and what to do.
        ValueError: a bad mapping or an unknown preset (the accepted values named).

    Example:
        >>> orders = read_orders("orders_export.csv", columns="shopify")
        >>> reconcile(df, orders)
    """
    orders = read_orders_file(path, columns=columns)
    for note in orders.notes:
        if "Windows-1252" in note or "UTF-16" in note:
            warnings.warn(f"orders file {orders.path}: {note}", UserWarning, stacklevel=2)
    return orders.frame


def read_orders_file(
    path: str | Path, *, columns: str | Mapping[str, Any] | None = None
) -> OrdersFile:
    """:func:`read_orders`, with what was done to read the file (the mapping, encoding,
    normalised values, folded and ignored rows).

    Raises:
        DataFileError: as :func:`read_orders`.
        ValueError: a bad mapping.
    """
    mapping = parse_columns(
        columns, ORDERS, origin="" if columns is None else "the columns argument"
    )
    path = Path(path)
    check_suffix(path, ORDERS_FORMATS, what=_WHAT)
    names = _file_columns(mapping)
    check_input(path, what=_WHAT)

    def read() -> Kept:
        done = _read_orders_file(path, mapping, names)
        said = {"notes": list(done.notes), "normalised": dict(done.normalised),
                "folded": done.folded, "ignored": dict(done.ignored)}  # fmt: skip
        return {"orders": done.frame}, said

    # Read once by a report and taken again by its notebooks (:mod:`._kept`).
    frames, said = kept_read("orders", [path], mapping, read)
    frame = frames["orders"]
    # Said here, not kept: it names where the mapping was set, which differs between readers.
    notes = ([describe_use(mapping)] if mapping else []) + said["notes"]
    return OrdersFile(path, frame, tuple(notes), said["normalised"], mapping, said["folded"],
                      said["ignored"])  # fmt: skip


def _read_orders_file(path: Path, mapping: ColumnMapping, names: dict[str, str]) -> OrdersFile:
    # Read as what its bytes are, whatever its accepted name says (a workbook named .csv).
    kind = identify_content(path, what=_WHAT)
    if kind not in (None, "parquet", "xlsx", "xls", "ods", "html"):
        raise refuse_content(path, kind, ", ".join(ORDERS_FORMATS), what=_WHAT)
    if kind == "parquet":
        said = content_note(path, kind)
        frame = _read_parquet(path, names, mapping)
        notes, where = [said] if said else [], _Where(path, "row", _ROW)
    else:
        frame, notes, where = _read_table(path, names, mapping)
    # Before account_currency fills every row's currency: a continuation row has none.
    frame, folded = _fold_line_items(frame)
    if "account_currency" in mapping:
        frame = frame.with_columns(pl.lit(mapping["account_currency"]).alias("currency"))
    frame, normalised = _normalised(frame)
    frame, ignored = _without_ignored(frame, where, mapping)
    _check_orders(frame, where)
    amount, written = _amount(frame, where, mapping)
    frame = frame.with_columns(amount)
    if "date" in frame.columns:
        frame = frame.with_columns(_read_date(frame, where, mapping.get("date_format")))
    notes += [written] if written else []
    notes += _cleaning_notes(folded, ignored, normalised)
    return OrdersFile(
        path, _in_order(frame), tuple(notes), normalised.counts, mapping, folded, ignored
    )


def _read_table(
    path: Path, names: dict[str, str], mapping: ColumnMapping
) -> tuple[pl.DataFrame, list[str], _Where]:
    # With a mapping every mapped column must be there but the customer (a preset names
    # one an export may leave out); without, txkit's required ones.
    required = (
        [v for k, v in names.items() if k != "customer"] if mapping else list(_ORDERS_REQUIRED)
    )
    try:
        table = read_table(
            path, columns=list(names.values()), required=required, what=_WHAT, rows="orders"
        )
    except DataFileError as exc:
        if mapping or not exc.problem.startswith("no column"):
            raise
        # A shop's export as it comes: say how to name its columns rather than rename them.
        raise DataFileError(
            path,
            exc.problem,
            f"{exc.advice}; or name the file's columns with --orders-columns (the "
            "notebook's orders_columns): a preset (shopify, woocommerce, stripe) or "
            "reference=Order ID,amount=Total,currency=Currency",
            lines=exc.lines,
            what=_WHAT,
        ) from None
    frame = table.frame
    if mapping:
        present = {k: v for k, v in names.items() if v in frame.columns}
        frame = frame.select(LINE, *present.values()).rename({v: k for k, v in present.items()})
    return frame, list(table.notes), _Where(path, table.unit, LINE)


class _Normalised(NamedTuple):
    """Per column, how many values were written otherwise, and examples of them."""

    counts: dict[str, int]
    examples: dict[str, str]


def _normalised(frame: pl.DataFrame) -> tuple[pl.DataFrame, _Normalised]:
    found = _Normalised({}, {})
    for name, case in (("reference", None), ("currency", "upper"), ("status", "lower")):
        if name not in frame.columns:
            continue
        frame, found.counts[name], found.examples[name] = _normalise(frame, name, case)
    if "status" in frame.columns:  # an empty status is not compared
        frame = frame.with_columns(pl.when(pl.col("status") != "").then(pl.col("status")))
    return frame, found


def _without_ignored(
    frame: pl.DataFrame, where: _Where, mapping: ColumnMapping
) -> tuple[pl.DataFrame, dict[str, int]]:
    ignored: dict[str, int] = {}
    if mapping.statuses and "status" in frame.columns:
        frame, ignored = _map_statuses(frame, where, mapping)
    if frame.height == 0:
        raise where.error(
            f"holds no order once the statuses mapped to {IGNORE} are left out "
            f"({_counts(ignored)})",
            "check the status mapping, or pass the file of the month",
        )
    return frame, ignored


def _cleaning_notes(folded: int, ignored: dict[str, int], normalised: _Normalised) -> list[str]:
    notes = []
    if folded:
        notes.append(
            f"{folded:,} line-item row(s) folded into their order (no amount, currency or "
            "status; the order's reference again, or none)"
        )
    if ignored:
        notes.append(f"{sum(ignored.values()):,} order(s) left out by the status mapping "
                     f"({_counts(ignored)})")  # fmt: skip
    changed = [
        f"{normalised.counts[name]:,} {label} ({normalised.examples[name]})"
        for name, label in (
            ("currency", "currency codes"),
            ("status", "statuses"),
            ("reference", "references with spaces around them"),
        )
        if normalised.counts.get(name)
    ]
    if changed:
        notes.append("normalised " + _and(changed))
    return notes


def _in_order(frame: pl.DataFrame) -> pl.DataFrame:
    optional = [c for c in _ORDERS_OPTIONAL if c in frame.columns]
    first = [*_ORDERS_REQUIRED, *optional]
    rest = [c for c in frame.columns if c not in first and c not in (LINE, _ROW)]
    return frame.select([*first, *rest])


def _file_columns(mapping: Mapping[str, str]) -> dict[str, str]:
    known = [*_ORDERS_REQUIRED, *_ORDERS_OPTIONAL]
    if not mapping:
        return {k: k for k in known}
    names = {k: mapping[k] for k in known if k in mapping}
    missing = [k for k in ("reference", "amount") if k not in names]
    if "currency" not in names and "account_currency" not in mapping:
        missing.append("currency (or account_currency)")
    if missing:
        raise ValueError(
            f"{ORDERS.what}: the mapping names no {' and no '.join(missing)} column; e.g. "
            "reference=Order ID,amount=Total,currency=Currency, or a preset (shopify, "
            "stripe, woocommerce)"
        )
    twice = sorted({v for v in names.values() if list(names.values()).count(v) > 1})
    if twice:
        raise ValueError(f"{ORDERS.what}: column {twice[0]!r} is mapped to two keys")
    return names


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n:,} {status}" for status, n in counts.items())


def _fold_line_items(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Further line items: no amount, currency or status, reference that of the row above (Shopify)
    or empty (WooCommerce)."""
    if frame.height < 2:
        return frame, 0

    def empty(name: str) -> pl.Expr:
        if name not in frame.columns:
            return pl.lit(True)
        value = pl.col(name)
        if frame.schema[name] == pl.String:
            return value.is_null() | (value.str.strip_chars() == "")
        return value.is_null()

    # A row with an amount continues nothing: with every amount there, nothing is folded.
    if not frame.select(empty("amount").any().alias("a")).item():
        return frame, 0
    reference = pl.col("reference").cast(pl.String).str.strip_chars()
    # The rows of one order are consecutive, so the row above is the order or another of its
    # items; the first row never continues anything.
    same = empty("reference") | (reference == reference.shift(1))
    first = pl.int_range(pl.len()) == 0
    continues = ~first & same & empty("amount") & empty("currency") & empty("status")
    flags = frame.select(continues.fill_null(False).alias("c"))["c"]
    folded = int(flags.sum())
    return (frame.filter(~flags), folded) if folded else (frame, 0)


def _map_statuses(
    frame: pl.DataFrame, where: _Where, mapping: ColumnMapping
) -> tuple[pl.DataFrame, dict[str, int]]:
    statuses = mapping.statuses
    status = pl.col("status")
    where.fail(
        frame,
        status.is_not_null() & ~status.is_in(list(statuses)) & ~status.is_in([*STATUSES, UNPAID]),
        "status is neither mapped nor one of the service's statuses",
        f"map it in the column mapping, e.g. status.<shop status>=successful (accepted: "
        f"{', '.join(STATUSES)}, or {IGNORE}); mapped now: {', '.join(statuses)}",
        shown="status",
    )
    ignore = [s for s, v in statuses.items() if v == IGNORE]
    dropped = frame.filter(status.is_in(ignore))
    counts = dict(dropped.group_by("status", maintain_order=True).len().iter_rows())
    kept = frame.filter(~status.is_in(ignore) | status.is_null())
    translated = status.replace_strict(
        {k: v for k, v in statuses.items() if v != IGNORE}, default=status
    )
    return kept.with_columns(translated.alias("status")), {
        str(k): int(v) for k, v in counts.items()
    }


_WHAT: Final = "orders file"
_ROW: Final = "_row"
#: Order files txkit reads, by extension.
_PARQUET: Final = (".parquet", ".pq")
ORDERS_FORMATS: Final[dict[str, str]] = {
    ".csv": "CSV text, UTF-8 or Windows-1252",
    ".xlsx": "an Excel workbook (each amount the decimal its cell shows)",
    ".xlsm": "an Excel workbook with macros (read, never run)",
    ".xls": "an old Excel workbook, or a web page saved as .xls",
    ".ods": "an OpenDocument spreadsheet",
    ".parquet": "Parquet",
    ".pq": "Parquet",
}
#: The most decimals an order amount may have, trailing zeros aside. USDT and USDC, the most
#: precise currencies of the interface, have six; an amount with more can equal no amount of
#: the export and is what a spreadsheet's binary floats leave behind (0.30000000000000004), so
#: it is refused with its line rather than kept (or rounded).
MAX_ORDER_DECIMALS: Final = 6
# Sums of 10^8 orders (TXKIT_MAX_TOTAL's default) under 10^20 each stay under 10^28: with
# six decimals that is 34 of Decimal(38)'s digits, so no summary of the orders can overflow.
_MAX_INTEGER_DIGITS: Final = 20
_CURRENCY_RE: Final = r"^[A-Z]{3,4}$"
_AMOUNT_ADVICE: Final = (
    "write amounts as digits, without currency signs or exponents (1500.00, -12.5), and set "
    "decimal= and thousands= in the column mapping to how the file writes them (thousands "
    "in groups of three: 1,234.50 with thousands=comma); amounts are never guessed"
)


@dataclass(frozen=True)
class _Where:
    """How the orders' positions are named: lines of a text file, rows of a Parquet file."""

    path: Path
    unit: str
    column: str

    def fail(
        self,
        frame: pl.DataFrame,
        condition: pl.Expr,
        problem: str,
        advice: str,
        shown: str | pl.Expr | None = None,
    ) -> None:
        fail_lines(
            self.path,
            frame,
            condition,
            problem=problem,
            advice=advice,
            shown=shown,
            what=_WHAT,
            unit=self.unit,
            position=self.column,
        )

    def error(self, problem: str, advice: str) -> DataFileError:
        return DataFileError(self.path, problem, advice, what=_WHAT)


def _read_parquet(
    path: Path, columns: Mapping[str, str], mapping: Mapping[str, str]
) -> pl.DataFrame:
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars raises several types for a file it cannot read
        reason = " ".join(str(exc).split())[:200]
        raise DataFileError(
            path,
            f"cannot be read as Parquet ({type(exc).__name__}: {reason})",
            "export it again, or save it as CSV",
            what=_WHAT,
        ) from None
    known = {name.casefold(): key for key, name in columns.items()}
    names = [known.get(c.strip().casefold(), c) for c in frame.columns]
    if mapping:  # only the mapped columns, as with CSV
        frame = frame.select(c for c, n in zip(frame.columns, names, strict=True) if n in columns)
        names = [n for n in names if n in columns]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataFileError(
            path,
            f"columns {show_values(twice)} appear more than once",
            "rename or remove the extra column",
            what=_WHAT,
        )
    frame = frame.rename(dict(zip(frame.columns, names, strict=True)))
    wanted = [c for c in columns if c != "customer"] if mapping else list(_ORDERS_REQUIRED)
    missing = [columns[c] for c in wanted if c not in frame.columns]
    if missing:
        raise DataFileError(
            path,
            f"no column {', '.join(map(repr, missing))} (found: {show_values(frame.columns)})",
            "required: reference, amount, currency; optional: status, date (case and "
            "surrounding spaces do not matter)",
            what=_WHAT,
        )
    if frame.height == 0:
        raise DataFileError(
            path,
            "holds no orders (0 rows)",
            "export the orders again, or pass the right file",
            what=_WHAT,
        )
    for name in ("reference", "currency", "status"):
        if name in frame.columns and not isinstance(
            frame.schema[name], pl.String | pl.Categorical | pl.Enum | pl.Null
        ):
            raise DataFileError(
                path,
                f"column {name!r} is stored as {frame.schema[name]}",
                f"store {name} as text",
                what=_WHAT,
            )
    return frame.with_columns(
        pl.col(n).cast(pl.String) for n in ("reference", "currency", "status") if n in frame.columns
    ).with_row_index(_ROW, offset=1)


def _normalise(frame: pl.DataFrame, name: str, case: str | None) -> tuple[pl.DataFrame, int, str]:
    raw = pl.col(name)
    new = raw.str.strip_chars()
    if case == "upper":
        new = new.str.to_uppercase()
    elif case == "lower":
        new = new.str.to_lowercase()
    # Each value normalised once: compared with the raw one, then put in its place.
    normal = frame.select(new.alias(name)).to_series()
    changed = pl.DataFrame({"raw": frame[name], "new": normal}).filter(
        pl.col("raw").is_not_null() & (pl.col("raw") != pl.col("new"))
    )
    pairs = changed.unique(maintain_order=True).head(3).iter_rows()
    examples = ", ".join(f"{a!r} read as {b!r}" for a, b in pairs)
    return frame.with_columns(normal), changed.height, examples


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _check_orders(frame: pl.DataFrame, where: _Where) -> None:
    empty = pl.col("reference").is_null() | (pl.col("reference") == "")
    where.fail(
        frame,
        empty,
        "no reference",
        "every order needs the reference its payment carries (the export's "
        "transactionReference): fill it in, or remove the line",
    )
    currency = pl.col("currency")
    where.fail(
        frame,
        currency.is_null() | (currency == ""),
        "no currency",
        f"every order needs its currency code ({', '.join(CURRENCIES)})",
    )
    where.fail(
        frame,
        ~currency.str.contains(_CURRENCY_RE),
        "currency is not a 3- or 4-letter code",
        f"write the code the export uses ({', '.join(CURRENCIES)})",
        shown="currency",
    )
    if "status" in frame.columns:
        status = pl.col("status")
        where.fail(
            frame,
            status.is_not_null() & ~status.is_in([*STATUSES, UNPAID]),
            "status is not one of the service's statuses",
            f"accepted: {', '.join(STATUSES)}; leave it empty where unknown, or remove the "
            "status column to compare amounts and currencies only, or map the file's statuses "
            "in the column mapping (status.<shop status>=successful, or =ignore)",
            shown="status",
        )


def _amount(
    frame: pl.DataFrame, where: _Where, mapping: Mapping[str, str]
) -> tuple[pl.Series, str]:
    """The amounts, and the load line's note on how they are written when the file said it."""
    dtype = frame.schema["amount"]
    if isinstance(dtype, pl.Decimal) or dtype.is_integer():
        return _typed_amount(frame, where, dtype), ""
    if not isinstance(dtype, pl.String | pl.Null):
        raise where.error(
            f"column 'amount' is stored as {dtype}, which does not hold amounts exactly",
            "store amounts as decimal, integer or text",
        )
    writing = find_writing(frame, ["amount"], mapping)
    if writing.unsure is not None:
        where.fail(
            frame,
            writing.unsure,
            f"amount reads two ways ({writing.readings}) and no other amount says which",
            "declare how the file writes amounts in the column mapping (decimal=comma or "
            "decimal=dot, thousands=...)",
            shown="amount",
        )
    if writing.plain is not None:  # read already (an empty amount as "": refused alike below)
        checked = frame.with_columns(writing.plain["amount"].alias("_text"))
    else:
        text = plain_amount(pl.col("amount").cast(pl.String), writing.mapping)
        checked = frame.with_columns(text.alias("_text"))
    where.fail(
        checked,
        ~pl.col("_text").str.contains(_AMOUNT_RE),
        f"amount is empty or not a number written with {writing_name(writing.mapping)}",
        _AMOUNT_ADVICE,
        shown="amount",
    )
    scale = _scale(checked, where)
    # Trailing zeros beyond the scale are dropped before the cast, so no value is rounded.
    exact = (
        pl.when(pl.col("_text").str.contains(r"\."))
        .then(pl.col("_text").str.strip_chars_end("0").str.strip_chars_end("."))
        .otherwise(pl.col("_text"))
    )
    amounts = checked.select(exact.cast(pl.Decimal(38, scale)).alias("amount")).to_series()
    return amounts, writing.note


def _scale(checked: pl.DataFrame, where: _Where) -> int:
    """The amounts' scale (their most decimals, at least 2), once each ``_text`` is a plain
    decimal; refused (with the lines) when some amount has too many decimals or digits."""
    fraction = pl.col("_text").str.extract(r"\.([0-9]+)$", 1).fill_null("")
    significant = fraction.str.strip_chars_end("0").str.len_chars()
    # Each amount a plain decimal now: one pass finds the most decimals and the longest text,
    # and a check below looks for its lines only when some amount can fail it (more digits
    # before the point than the text has characters cannot be).
    most, longest = checked.select(
        significant.max().alias("most"), pl.col("_text").str.len_bytes().max().alias("longest")
    ).row(0)
    if (most or 0) > MAX_ORDER_DECIMALS:
        where.fail(
            checked,
            significant > MAX_ORDER_DECIMALS,
            f"amount has more than {MAX_ORDER_DECIMALS} decimals (trailing zeros aside)",
            "no currency of the service has more, and amounts are never rounded: round them "
            "in the file to their currency's decimals (more is usually a spreadsheet's "
            "floating-point remainder, such as 0.30000000000000004)",
            shown="_text",
        )
    if (longest or 0) > _MAX_INTEGER_DIGITS:
        whole = pl.col("_text").str.extract(r"^[+-]?0*([0-9]*)", 1).str.len_chars()
        where.fail(
            checked,
            whole > _MAX_INTEGER_DIGITS,
            f"amount has more than {_MAX_INTEGER_DIGITS} digits before the decimal point",
            "check the column: it does not hold amounts",
            shown="_text",
        )
    return max(2, int(most or 0))


def _typed_amount(frame: pl.DataFrame, where: _Where, dtype: pl.DataType) -> pl.Series:
    amount = pl.col("amount")
    where.fail(frame, amount.is_null(), "no amount", "every order needs its amount")
    limit = pl.lit(10**_MAX_INTEGER_DIGITS, dtype=pl.Decimal(38, 0))
    where.fail(
        frame,
        amount.cast(pl.Decimal(38, 0 if dtype.is_integer() else dtype.scale)).abs() >= limit,
        f"amount has more than {_MAX_INTEGER_DIGITS} digits before the decimal point",
        "check the column: it does not hold amounts",
        shown="amount",
    )
    if dtype.is_integer():
        return frame["amount"].cast(pl.Decimal(38, 2))
    original = dtype.scale or 0
    for scale in range(2, max(original, 2) + 1):
        if scale > MAX_ORDER_DECIMALS:
            break
        # Proven by casting back, not by trusting the cast: reducing a scale rounds.
        narrowed = frame["amount"].cast(pl.Decimal(38, scale))
        if (narrowed.cast(pl.Decimal(38, max(original, scale))) == frame["amount"]).all():
            return narrowed
    narrowed = frame["amount"].cast(pl.Decimal(38, MAX_ORDER_DECIMALS))
    lost = narrowed.cast(pl.Decimal(38, original)) != frame["amount"]
    where.fail(
        frame.with_columns(lost.alias("_lost")),
        pl.col("_lost"),
        f"amount has more than {MAX_ORDER_DECIMALS} decimals (trailing zeros aside)",
        "no currency of the service has more, and amounts are never rounded: round them to "
        "their currency's decimals",
        shown="amount",
    )
    return narrowed  # unreachable: some value needed more decimals


def _read_date(frame: pl.DataFrame, where: _Where, date_format: str | None = None) -> pl.Series:
    """A timestamp with an offset becomes its UTC day; anything else the date written."""
    dtype = frame.schema["date"]
    if isinstance(dtype, pl.Date):
        return frame["date"]
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone is not None:  # an instant: its UTC day
            return frame["date"].dt.convert_time_zone("UTC").dt.date()
        return frame["date"].dt.date()
    if not isinstance(dtype, pl.String | pl.Null):
        raise where.error(
            f"column 'date' is stored as {dtype}", "store dates as dates or as YYYY-MM-DD text"
        )
    text = pl.col("date").cast(pl.String).str.strip_chars()
    if date_format:
        if "%z" in date_format or "%:z" in date_format:  # an instant: its UTC day
            parsed = text.str.to_datetime(date_format, time_zone="UTC", strict=False).dt.date()
        elif "%H" in date_format or "%I" in date_format:
            parsed = text.str.to_datetime(date_format, strict=False).dt.date()
        else:
            parsed = text.str.to_date(date_format, strict=False)
        unreadable = parsed.is_null()
        advice = (
            f"set date_format in the column mapping to how the file writes dates (now "
            f"{date_format})"
        )
        problem = f"date is not written as {date_format}"
    else:
        parsed = _written_dates(frame, text)
        unreadable = parsed.is_null() | ~text.str.contains(_DATE_RE)
        advice = (
            "write dates as YYYY-MM-DD (or an ISO timestamp such as 2026-10-31T23:10:00Z, "
            "2021-05-13 11:01:12 +0200), or set date_format in the column mapping; leave it "
            "empty where unknown"
        )
        problem = "date is not YYYY-MM-DD"
    # Computed once: the check and the column read the same values.
    frame = frame.with_columns(parsed.alias("_date"), unreadable.alias("_unreadable"))
    where.fail(
        frame,
        text.is_not_null() & (text != "") & pl.col("_unreadable"),
        problem,
        advice,
        shown="date",
    )
    return frame["_date"].alias("date")


def _written_dates(frame: pl.DataFrame, text: pl.Expr) -> pl.Expr:
    """The dates ``text`` writes without a date format: a timestamp with an offset (or Z)
    its instant's UTC day, anything else its first ten characters as ``YYYY-MM-DD``."""
    as_written = text.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False)
    # No text longer than a date: none holds a time, so none an offset, and the instants'
    # four parses (each over every value) are not needed.
    if (frame.select(text.str.len_bytes().max()).item() or 0) <= len("YYYY-MM-DD"):
        return as_written
    # An offset (or Z) after a time: the instant's UTC day; parsed by chrono, which takes
    # +0200, +02:00 and a space before them alike.
    offset = text.str.contains(_OFFSET_RE)
    utc = text.str.replace(r"Z$", "+00:00")
    instant = pl.coalesce(
        utc.str.to_datetime(f, time_zone="UTC", strict=False)
        for f in ("%Y-%m-%d %H:%M:%S %z", "%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%d %H:%M %z",
                  "%Y-%m-%dT%H:%M%z")
    )  # fmt: skip
    return pl.when(offset).then(instant.dt.date()).otherwise(as_written)
