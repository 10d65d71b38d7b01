"""What the register holds: sections, statuses, categories, age buckets, and the items of a list.

Each report's exception list (a download, :mod:`txkit.notebook._downloads`) belongs to one
*section*; each row has a stable ``key`` (its reference or id plus its kind), a *kind* (the
list's category, type or kind column), a currency, an amount and its own date (the record's or
the order's), from which it is aged.
"""

from __future__ import annotations

from datetime import date
from typing import Final

import polars as pl

from txkit.analysis.exception_lists import AT_STAKE, LISTS, exception_list

__all__ = [
    "BUCKETS",
    "CATEGORIES",
    "FLUX_SECTION",
    "FORMAT",
    "SECTIONS",
    "STATUSES",
    "age_bucket",
    "default_category",
    "register_items",
    "wallet_items",
]

#: The register's format; a register written with a higher one is refused (a newer txkit).
FORMAT: Final = 2

STATUSES: Final[tuple[str, ...]] = ("open", "explained", "resolved", "written_off")
#: Statuses of an item still to be looked at (listed by ``--open``, aged, counted by bucket).
OPEN_STATUSES: Final[tuple[str, ...]] = ("open", "explained")
CATEGORIES: Final[tuple[str, ...]] = ("timing", "adjustment", "investigate")
BUCKETS: Final[tuple[str, ...]] = ("0-30", "31-60", "61-90", "90+")

#: Each exception list (its download's name) -> the register's section (from the lists'
#: one definition, :data:`txkit.analysis.exception_lists.LISTS`).
SECTIONS: Final[dict[str, str]] = {name: x.section for name, x in LISTS.items()}
#: The section of the flux review's breaches (``txkit.report._flux``): changes, not exceptions.
FLUX_SECTION: Final = "flux"

#: Default category per section, then per kind (the list's category / type / kind value).
_SECTION_DEFAULT: Final[dict[str, str]] = {
    "reconciliation": "investigate",
    "underpayments": "adjustment",
    "balance_breaks": "investigate",
    "not_reported": "timing",
    "settlements": "investigate",
    "wallet_statement": "investigate",
    "fees": "adjustment",
}
_KIND_DEFAULT: Final[dict[str, str]] = {
    # clears by itself: the other side arrives within days
    "missing_in_export": "timing",
    "timing_next_month": "timing",
    # not ``missing_in_bank``: a settlement the bank did not credit within its window (or
    # credited, then reversed) is not in transit; one credited after the month's end is
    # ``timing_next_month`` (issue 47, Why 8.10). It takes its section's "investigate".
    # needs an entry
    "amount_mismatch": "adjustment",
    "currency_mismatch": "adjustment",
    "amount_differs": "adjustment",
    "UNDERPAYMENT": "adjustment",
    "OVERPAYMENT": "adjustment",
    "reserve_mismatch": "adjustment",
    "fee_mismatch": "adjustment",
    "tax_mismatch": "adjustment",
}


def default_category(section: str, kind: str | None) -> str:
    """The category an item gets until an analyst changes it."""
    if kind in _KIND_DEFAULT:
        return _KIND_DEFAULT[kind]
    return _SECTION_DEFAULT.get(section, "investigate")


def age_bucket(days: int) -> str:
    """``0-30``, ``31-60``, ``61-90`` or ``90+`` (a negative age counts as 0)."""
    if days <= 30:
        return "0-30"
    if days <= 60:
        return "31-60"
    if days <= 90:
        return "61-90"
    return "90+"


def _as_date(name: str, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.Datetime):
        return (
            pl.col(name).dt.convert_time_zone("UTC").dt.date()
            if dtype.time_zone
            else (pl.col(name).dt.date())
        )
    if dtype == pl.Date:
        return pl.col(name)
    return pl.col(name).cast(pl.String).str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False)


def register_items(keyed: pl.DataFrame, name: str, month: str) -> pl.DataFrame:
    """The register's view of one exception list: ``key``, ``section``, ``kind``, ``currency``,
    ``amount`` (Decimal, exact: the amount at stake its page shows, with its sign), ``item_date``
    (the item's own date; the month's first day when the list has none).

    Everything but the key comes from the list's one definition
    (:mod:`txkit.analysis.exception_lists`), so the register cannot carry another amount, sign
    or currency than the page and the download.

    Args:
        keyed: the list with its ``key`` column.
        name: the list's name (its download), e.g. ``reconciliation_mismatches``.
        month: the report's month (``YYYY-MM``).

    Raises:
        ValueError: no exception list has that name.
    """
    spec = exception_list(name)
    keyed = spec.with_at_stake(keyed)
    schema = keyed.schema
    dates = [_as_date(c, schema[c]) for c in spec.dates if c in schema]
    first_day = date.fromisoformat(f"{month}-01")
    kind = pl.col(spec.kind).cast(pl.String) if spec.kind in schema else pl.lit(None, pl.String)
    return keyed.select(
        pl.col("key").cast(pl.String),
        pl.lit(spec.section).alias("section"),
        kind.alias("kind"),
        spec.currency_of(schema).alias("currency"),
        pl.col(AT_STAKE).cast(pl.Decimal(38, 6)).alias("amount"),
        pl.coalesce([*dates, pl.lit(first_day)]).alias("item_date"),
    )


def wallet_items(statement: pl.DataFrame, month: str) -> pl.DataFrame:
    """The register's items of a wallet statement: one per wallet whose closing balance does
    not tie out (the list ``wallet_statement``), keyed ``wallet:CURRENCY:YYYY-MM`` and dated
    the month's last day (a statement's difference is the month's, not a record's)."""
    import calendar

    year, mon = int(month[:4]), int(month[5:7])
    last = date(year, mon, calendar.monthrange(year, mon)[1])
    spec = exception_list("wallet_statement")
    differs = spec.listed(statement)
    return differs.select(
        pl.concat_str(
            [pl.lit("wallet:"), pl.col("currency").cast(pl.String), pl.lit(f":{month}")]
        ).alias("key"),
        pl.lit(spec.section).alias("section"),
        pl.lit("statement_difference").alias("kind"),
        pl.col("currency").cast(pl.String),
        pl.col(AT_STAKE).cast(pl.Decimal(38, 6)).alias("amount"),
        pl.lit(last).alias("item_date"),
    )
