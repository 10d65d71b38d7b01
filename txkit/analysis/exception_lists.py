"""The exception lists of a month: one definition each, from which everything else derives.

An exception list is defined once here (:data:`LISTS`): its name (the download's file stem),
the register's section, the page that shows it, the key that identifies an item across
months, its title, which rows of an analysis' result it lists and **the amount at stake**
with its sign and currency. The notebook's table, the download (CSV and Excel), the
register's item (:func:`txkit.register.register_items`), the index's line and the trends all
read it from here, so none of them can give an item another amount than its page shows.

The amount at stake (``at_stake``) is always in the row's one currency and signed from the
merchant's side: **what arrived (or was reported) minus what was expected**. Negative is
money short (an order the export lacks, an underpayment, a settlement the bank never
credited), positive is money more than expected (a payment nobody ordered, an unknown bank
credit, an overpayment). A row whose two sides are in different currencies has no amount at
stake (null): two currencies are never subtracted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import polars as pl

from txkit.analysis.reconcile import NOT_EXCEPTIONS, at_stake
from txkit.analysis.settlements import SETTLEMENT_EXCEPTIONS
from txkit.money import in_minor_units

__all__ = [
    "AT_STAKE",
    "LISTS",
    "SUM_RULE_CATEGORIES",
    "ExceptionList",
    "exception_list",
    "listed",
    "rate_text",
    "rated_apart",
    "with_at_stake",
]

#: The column every list carries: the amount at stake, signed, in the row's currency.
AT_STAKE: Final = "at_stake"
#: The reconciliation's categories of references the sum rules matched (docs/closing.md, 3):
#: listed for a person to confirm, not counted in the mismatch rate.
SUM_RULE_CATEGORIES: Final = ("paid_in_parts", "grouped")


def _category_not_in(values: tuple[str, ...]) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def rows(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(~pl.col("category").cast(pl.String).is_in(values))

    return rows


def _category_in(values: tuple[str, ...]) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def rows(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(pl.col("category").cast(pl.String).is_in(values))

    return rows


def _every_row(frame: pl.DataFrame) -> pl.DataFrame:
    return frame


def _differs(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("difference").is_not_null() & (pl.col("difference") != 0))


def _settlement_at_stake() -> pl.Expr:
    category = pl.col("category").cast(pl.String)
    return (
        # A credit nobody expected: the whole credit, more than expected.
        pl.when(category == "unknown_credit")
        .then(pl.col("bank_amount"))
        # Not (provably) credited: the whole settlement, short at the bank.
        .when(category.is_in(["missing_in_bank", "ambiguous"]))
        .then(-pl.col("settlement_amount"))
        # amount_differs, duplicate_credit: bank minus settlement.
        .otherwise(pl.col("difference"))
    )


@dataclass(frozen=True)
class ExceptionList:
    """One exception list's definition (see the module docstring)."""

    name: str  #: the download's file stem, the manifest's and the trends' name
    section: str  #: the register's section
    title: str
    page: str  #: the notebook page (HTML) that shows it
    key: tuple[str, ...]  #: the columns that identify an item across months
    kind: str  #: the column holding an item's kind (its category, type or kind)
    currency: tuple[str, ...]  #: the columns of ``at_stake``'s currency, first set
    amount: Callable[[], pl.Expr]  #: the amount at stake (see the module docstring)
    rows: Callable[[pl.DataFrame], pl.DataFrame]  #: the rows of a result that are listed
    how: str  #: how the list and its amount are computed, in words (docs, index)
    dates: tuple[str, ...]  #: the item's own date, first found
    first: tuple[str, ...] = ()  #: the columns a reader needs first (after the key)
    empty: str = "None this month."
    #: The rows the list's rate counts (default: every row listed). A reference the sum
    #: rules matched (paid in parts, grouped) is listed to confirm, not a mismatch.
    rated: Callable[[pl.DataFrame], pl.DataFrame] | None = None

    def rated_rows(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The listed rows ``frame`` the list's rate counts."""
        if self.rated is None or "category" not in frame.columns:
            return frame
        return self.rated(frame)

    def listed(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The rows of ``frame`` (the analysis' result) this list holds, with ``at_stake``,
        sorted by the amount at stake (largest first; no amount last), then the key."""
        return self.with_at_stake(self.rows(frame)).sort(
            [pl.col(AT_STAKE).abs(), *self.key],
            descending=[True, *[False] * len(self.key)],
            nulls_last=True,
            maintain_order=True,
        )

    def with_at_stake(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` with its ``at_stake`` column (computed from the row; kept where present)."""
        if AT_STAKE in frame.columns:
            return frame
        amount = self.amount()
        # A side the frame lacks (a list written by hand) has no amount.
        absent = [c for c in amount.meta.root_names() if c not in frame.columns]
        filled = frame.with_columns(pl.lit(None, dtype=pl.Decimal(38, 6)).alias(c) for c in absent)
        return filled.with_columns(amount.alias(AT_STAKE)).drop(absent)

    def currency_of(self, schema: pl.Schema) -> pl.Expr:
        """The currency of ``at_stake`` on each row (null when the list has none)."""
        found = [pl.col(c).cast(pl.String) for c in self.currency if c in schema]
        return pl.coalesce(found) if found else pl.lit(None, dtype=pl.String)

    @property
    def first_columns(self) -> list[str]:
        """``at_stake`` and its currency, then the list's own first columns."""
        out = [AT_STAKE, *self.currency, *self.first]
        return [c for i, c in enumerate(out) if c not in out[:i] and c not in self.key]


#: Every exception list, by name, in the order of the pages.
LISTS: Final[dict[str, ExceptionList]] = {
    x.name: x
    for x in (
        ExceptionList(
            name="reconciliation_mismatches",
            section="reconciliation",
            title="Reconciliation mismatches",
            page="02_reconciliation.html",
            key=("reference", "category"),
            kind="category",
            currency=("export_currency", "order_currency", "currency"),
            amount=at_stake,
            rows=_category_not_in(NOT_EXCEPTIONS),
            rated=_category_not_in(SUM_RULE_CATEGORIES),
            how=(
                "every reference of the month whose export and orders do not agree (not matched "
                "exactly, across the month's end or within the amount tolerance; a payment attempt "
                "never paid that no order expects is none); at stake: where "
                "the orders or the export lack the reference or the statuses differ, what was "
                "paid (the export's amount if successful) minus what an order claims paid (its "
                "amount if successful), so nothing for an expired or abandoned collection nobody "
                "ordered; else the difference (export - order); none for a currency mismatch"
            ),
            dates=("export_date", "order_date"),
            first=(
                "export_date",
                "order_date",
                "difference",
                "export_amount",
                "order_amount",
                "export_status",
                "order_status",
            ),
            empty="None this month: every reference matches.",
        ),
        ExceptionList(
            name="flagged_payments",
            section="underpayments",
            title="Flagged under- and overpayments",
            page="03_underpayments.html",
            key=("id", "type"),
            kind="type",
            currency=("currency",),
            amount=lambda: -pl.col("shortfall"),
            rows=_every_row,
            how=(
                "every successful collection flagged UNDERPAYMENT or OVERPAYMENT; at stake: paid - "
                "expected (negative: the shortfall of an underpayment)"
            ),
            dates=("createdAt",),
            first=("transactionReference", "shortfall", "createdAt", "expected", "paid"),
            empty="None this month: no under- or overpayment was recorded.",
        ),
        ExceptionList(
            name="balance_breaks",
            section="balance_breaks",
            title="Balance breaks",
            page="04_balance_checks.html",
            key=("id", "field", "kind"),
            kind="kind",
            currency=("currency",),
            amount=lambda: pl.col("difference"),
            rows=_every_row,
            how=(
                "every balance-after value that does not follow the balance model; at stake: "
                "reported - expected"
            ),
            dates=("createdAt",),
            first=("difference", "expected", "reported"),
            empty="None this month: every checked balance follows the model.",
        ),
        ExceptionList(
            name="not_reported_balances",
            section="not_reported",
            title="Balances not reported",
            page="04_balance_checks.html",
            key=("id",),
            kind="transType",
            currency=("currency",),
            amount=lambda: pl.col("toAmount"),
            rows=_every_row,
            how=(
                "every successful record whose balance-after fields are all 0 or absent; at "
                "stake: the record's amount, whose effect on the balance is not reported"
            ),
            dates=("createdAt",),
            first=("transType", "toAmount"),
            empty="None this month: every successful record reports its balances.",
        ),
        ExceptionList(
            name="settlement_exceptions",
            section="settlements",
            title="Settlement exceptions",
            page="06_settlements.html",
            key=("reference", "bank_line", "category"),
            kind="category",
            currency=("currency",),
            amount=_settlement_at_stake,
            rows=_category_in(SETTLEMENT_EXCEPTIONS),
            how=(
                "every settlement not credited in full once within the month, and every bank "
                "credit that matches no settlement; at stake: bank - settlement (a settlement "
                "missing at the bank or ambiguous: minus its amount; an unknown credit: its "
                "amount)"
            ),
            dates=("settlement_date", "bank_date"),
            first=(
                "category",
                "difference",
                "settlement_amount",
                "bank_amount",
                "settlement_date",
                "bank_date",
                "rule",
                "note",
            ),
            empty="None this month: every settlement reached the bank in full, once.",
        ),
        ExceptionList(
            name="wallet_statement",
            section="wallet_statement",
            title="Wallet statement",
            page="06_settlements.html",
            key=("currency",),
            kind="currency",
            currency=("currency",),
            amount=lambda: pl.col("difference"),
            rows=_differs,
            how=(
                "every wallet whose closing balance reported by the month's last record differs "
                "from the one its month's activity gives; at stake: reported - computed"
            ),
            dates=(),
        ),
        ExceptionList(
            name="fee_tax_mismatches",
            section="fees",
            title="Fee and tax mismatches",
            page="08_fees.html",
            key=("id", "kind"),
            kind="kind",
            currency=("currency",),
            # A rule's expected fee has fractions of a cent; what is owed is in minor units.
            amount=lambda: in_minor_units(pl.col("difference"), pl.col("currency")),
            rows=_every_row,
            how=(
                "every successful record whose fee or tax breaks the rule the month's records "
                "follow; at stake: reported - expected, in the currency's minor units (to the "
                "cent, half up)"
            ),
            dates=("createdAt",),
            first=("transactionReference", "difference", "expected", "reported"),
            empty="None this month: every fee and tax follows its rule.",
        ),
    )
}


def exception_list(name: str) -> ExceptionList:
    """The definition of the list ``name``.

    Raises:
        ValueError: no list has that name (names the lists).
    """
    try:
        return LISTS[name]
    except KeyError:
        raise ValueError(
            f"no exception list is named {name!r}: the lists are {', '.join(LISTS)}"
        ) from None


def listed(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``frame`` that the list ``name`` holds, with ``at_stake``
    (:meth:`ExceptionList.listed`)."""
    return exception_list(name).listed(frame)


def with_at_stake(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (rows of the list ``name``) with its ``at_stake`` column."""
    return exception_list(name).with_at_stake(frame)


def rated_apart(count: int) -> str:
    """What a list's rate leaves out, said after it (the index's and the page's alike):
    ``; 10 more listed that the sum rules matched (paid in parts, grouped), to confirm, not
    counted``; empty for none."""
    if not count:
        return ""
    return (
        f"; {count:,} more listed that the sum rules matched (paid in parts, grouped), to "
        "confirm, not counted"
    )


def rate_text(
    rows: int,
    population: int | Mapping[str, int],
    label: str,
    rows_by_currency: Mapping[str, int] | None = None,
) -> str:
    """A list's rate, with its numerator and denominator named, as every page states it.

    One rule for the index's line and the page's: with a population per currency (what the
    list was drawn from, e.g. the successful collections of each currency), the rate of every
    currency comes first, then the rate of each currency with rows, over that currency's own
    population: ``15 of 4,490 successful collections, every currency (0.33%); NGN: 15 of 3,320
    successful collections, NGN (0.45%)``. With one number, ``41 of 5,279 references
    (0.78%)``.
    """
    by = dict(population) if isinstance(population, Mapping) else {}
    by.pop("", None)
    total = sum(population.values()) if isinstance(population, Mapping) else population
    if not total:
        return f"{rows:,} of 0 {label}".rstrip()
    if len(by) < 2:
        only = f", {next(iter(by))}" if by else ""
        return f"{rows:,} of {total:,} {label}{only} ({rows / total:.2%})"
    text = f"{rows:,} of {total:,} {label}, every currency ({rows / total:.2%})"
    for currency, n in sorted((rows_by_currency or {}).items()):
        if n and by.get(currency):
            text += f"; {currency}: {n:,} of {by[currency]:,} {label}, {currency} "
            text += f"({n / by[currency]:.2%})"
    return text
