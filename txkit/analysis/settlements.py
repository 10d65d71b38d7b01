"""Settlements against the merchant's bank statement: did every payout reach the bank?

A successful ``settlement`` record moves money from the wallet to the merchant's bank account;
its ``toAmount`` in ``toCurrency`` is what the bank should credit. :func:`match_settlements`
finds each settlement's credit on the statement (:func:`txkit.inputs.read_statements`) by rules,
in order, each recorded in the ``rule`` column:

1. ``reference``: the credit carries the settlement's ``transactionReference`` (as its
   reference, or as a word of its narration), in the same currency, on any date;
2. ``amount+date``: otherwise, a credit of exactly the settlement's amount and currency dated
   from the day before the settlement (banks keep local days) to ``date_tolerance``
   business days after it;
3. ``amount-tolerance+date``: with ``amount_tolerance``, a credit within it of the
   settlement's amount, in the same window (a bank charge taken from the credit).

A candidate is never chosen among several: a credit that fits two settlements, or a
settlement two credits fit by amount, makes the whole set ``ambiguous``, listed for a person.
A credit reversed by a later debit (MT940 ``RC``, camt.053 ``RvslInd``, or a debit of the
same amount carrying the same reference) counts as no credit.

Every row gets one category (:data:`SETTLEMENT_CATEGORIES`):

* ``matched``: credited in full within the month (or a settlement of the days before the
  month credited in it: last month's timing item, cleared);
* ``timing_next_month``: a settlement of the month credited in full after the month's end;
* ``amount_differs``: credited with another amount (``difference`` = bank minus settlement,
  e.g. a bank charge);
* ``missing_in_bank``: no credit found (the ``note`` says when the statements end before the
  settlement's window does, or when its credit was reversed);
* ``unknown_credit``: a credit of the month that matches no settlement;
* ``duplicate_credit``: the settlement's reference on two or more credits (``bank_amount``
  is their total, ``difference`` the extra);
* ``ambiguous``: several candidates fit; ``candidates`` lists them all.

Amounts stay exact decimals and are compared only within one currency.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Final

import polars as pl

from txkit.analysis._common import (
    Frame,
    amount_tolerances,
    check_columns,
    lazy,
    money,
    money_scale,
    tolerance_scales,
)
from txkit.analysis._settlement_rules import (
    TOKEN_SPLIT,
    Pairs,
    bank_tokens,
    candidate_pairs,
    decisions,
    reversals,
)
from txkit.calendar import month_bounds
from txkit.schema import require

__all__ = [
    "DEFAULT_BUSINESS_DAYS",
    "SETTLEMENT_CATEGORIES",
    "SETTLEMENT_EXCEPTIONS",
    "match_settlements",
    "settlement_summary",
]

#: The categories, in the order summaries list them.
SETTLEMENT_CATEGORIES: Final[tuple[str, ...]] = (
    "matched",
    "timing_next_month",
    "amount_differs",
    "missing_in_bank",
    "unknown_credit",
    "duplicate_credit",
    "ambiguous",
)
#: The categories that need a look (all but ``matched`` and ``timing_next_month``, which
#: clears by itself within days and needs no entry).
SETTLEMENT_EXCEPTIONS: Final[tuple[str, ...]] = tuple(
    c for c in SETTLEMENT_CATEGORIES if c not in ("matched", "timing_next_month")
)
#: Business days after a settlement in which its credit is looked for by amount.
DEFAULT_BUSINESS_DAYS: Final = 3
_CATEGORY = pl.Enum(SETTLEMENT_CATEGORIES)
_TX_REQUIRED = require(
    "id", "createdAt", "transType", "status", "transactionReference", "toAmount", "toCurrency"
)
Tolerance = Decimal | int | str


def match_settlements(
    transactions: Frame,
    statement: Any,
    *,
    month: str | None = None,
    date_tolerance: int = DEFAULT_BUSINESS_DAYS,
    amount_tolerance: Tolerance | Mapping[str, Tolerance] | None = None,
    holidays: Iterable[date] = (),
) -> pl.DataFrame:
    """Match each successful settlement to a bank credit; one row per settlement or
    unmatched credit.

    Args:
        transactions: the export (eager or lazy) with the month's settlements and, with
            ``month``, those of the days before it (whose credits may land in the month), e.g.
            the month and its history; needs ``id``, ``createdAt``, ``transType``,
            ``status``, ``transactionReference``, ``toAmount`` and ``toCurrency``.
        statement: a :class:`txkit.inputs.BankStatement` (or its ``entries`` frame), holding
            the month and the days after it where its last settlements arrive.
        month: ``YYYY-MM`` (UTC): rows are the month's settlements, the earlier ones credited
            in it, and the month's unmatched credits; ``timing_next_month`` needs it. None:
            every settlement and credit given, dates not scoped.
        date_tolerance: business days (Monday to Friday, less ``holidays``) after a
            settlement in which a credit of its amount is looked for (default 3).
        amount_tolerance: the largest difference (a ``Decimal``, ``int`` or exact ``str``; or
            one per currency) for the third rule; None (default): amounts must be equal
            unless the reference matches.
        holidays: bank holidays, not business days.

    Returns:
        One row per row-worthy settlement or credit, sorted by category, currency, date,
        reference and settlement id (credits without a settlement in statement line order):
        ``reference``, ``currency``, ``settlement_amount``, ``bank_amount``,
        ``settlement_date``, ``bank_date``, ``category`` (an Enum of
        :data:`SETTLEMENT_CATEGORIES`), ``rule`` (``reference``, ``amount+date``,
        ``amount-tolerance+date``; null without a match), ``candidates`` (the credits that
        were candidates, as ``file line N (date, amount currency)``, ``; ``-separated),
        ``candidate_count``, ``difference`` (bank minus settlement, same currency),
        ``settlement_id``, ``bank_line`` (``file:line``), ``narration`` and ``note``.

    Raises:
        ValueError: a frame lacks a column or has one of the wrong type; bad tolerances.
    """
    tx, schema, entries = _inputs(transactions, statement, date_tolerance)
    holidays = sorted(set(holidays))
    scale = max(
        money_scale(schema, ["toAmount"]),
        money_scale(entries.schema, ["amount"]),
        *tolerance_scales(amount_tolerance),
    )
    tolerance = amount_tolerances(amount_tolerance, scale, "match_settlements")
    bounds = month_bounds(month) if month is not None else None
    settlements = _settlements(tx, scale)
    known_refs = settlements.select(pl.col("reference").str.to_uppercase()).to_series()
    settlements = _with_windows(settlements, bounds, date_tolerance, holidays)
    bank = _booked(entries, scale)
    tokens = bank_tokens(bank)
    reversed_credits = reversals(bank, tokens, known_refs)
    credits = bank.filter(
        (pl.col("direction") == "credit") & ~pl.col("b").is_in(reversed_credits["b"].implode())
    )
    pairs = candidate_pairs(settlements, credits, tokens, known_refs, tolerance, scale)
    return _categorise(settlements, credits, pairs, reversed_credits, bank, bounds, scale)


def _inputs(
    transactions: Frame, statement: Any, date_tolerance: int
) -> tuple[pl.LazyFrame, pl.Schema, pl.DataFrame]:
    tx = lazy(transactions, "transactions", "match_settlements")
    schema = tx.collect_schema()
    check_columns(schema, _TX_REQUIRED, "transactions", "match_settlements")
    entries = getattr(statement, "entries", statement)
    if not isinstance(entries, pl.DataFrame):
        raise ValueError(
            "match_settlements: statement must be a txkit.inputs.BankStatement or its entries "
            f"frame, got {type(statement).__name__}"
        )
    if (
        isinstance(date_tolerance, bool)
        or not isinstance(date_tolerance, int)
        or date_tolerance < 0
    ):
        raise ValueError(
            f"match_settlements: date_tolerance must be a whole number of business days, 0 or "
            f"more, got {date_tolerance!r}"
        )
    return tx, schema, entries


def _settlements(tx: pl.LazyFrame, scale: int) -> pl.DataFrame:
    return (
        tx.filter(
            (pl.col("transType") == "settlement")
            & (pl.col("status") == "successful")
            & pl.col("createdAt").is_not_null()
        )
        .select(
            pl.col("id").cast(pl.String).alias("settlement_id"),
            pl.col("transactionReference").cast(pl.String).alias("reference"),
            pl.col("toCurrency").cast(pl.String).alias("currency"),
            money("toAmount", scale).alias("settlement_amount"),
            pl.col("createdAt").dt.date().alias("settlement_date"),
        )
        .unique("settlement_id", keep="last", maintain_order=True)
        .sort("settlement_id")  # numbered (``s``) in one order, whatever the records' order
        .collect()
    )


def _with_windows(
    settlements: pl.DataFrame,
    bounds: tuple[date, date] | None,
    date_tolerance: int,
    holidays: Sequence[date],
) -> pl.DataFrame:
    if bounds is not None:
        first, last = bounds
        earliest = _business(pl.lit(first), -date_tolerance, holidays) - timedelta(days=1)
        settlements = settlements.filter(
            pl.col("settlement_date").is_between(earliest, last + timedelta(days=1))
        )
    return settlements.with_row_index("s").with_columns(
        (pl.col("settlement_date") - timedelta(days=1)).alias("_from"),
        _business(pl.col("settlement_date"), date_tolerance, holidays).alias("_until"),
    )


def _booked(entries: pl.DataFrame, scale: int) -> pl.DataFrame:
    return (
        entries.filter(pl.col("booked"))
        .select(
            # The file's name, not its folder: the same statement reads the same anywhere.
            pl.concat_str(
                pl.col("file").str.extract(r"([^/\\]+)$", 1),
                pl.lit(":"),
                pl.col("line").cast(pl.String),
            ).alias("bank_line"),
            "file",
            "line",
            "currency",
            "date",
            pl.col("amount").cast(pl.Decimal(38, scale)),
            "direction",
            "reversal",
            "reference",
            "narration",
            "bank_reference",
        )
        .with_row_index("b")
    )


def _business(day: pl.Expr, days: int, holidays: Sequence[date]) -> pl.Expr:
    """Negative ``days`` count back."""
    roll = "forward" if days >= 0 else "backward"
    return day.dt.add_business_days(days, holidays=list(holidays), roll=roll)


#: A statement line as people read it: ``statement.xml line 12``.
_LINE_TEXT: Final = pl.col("bank_line").str.replace(r":([0-9]+)$", " line ${1}")
#: A settlement no rule found a credit for.
_MISSING: Final = pl.col("key").is_null()


def _categorise(
    settlements: pl.DataFrame,
    credits: pl.DataFrame,
    pairs: Pairs,
    reversed_credits: pl.DataFrame,
    bank: pl.DataFrame,
    bounds: tuple[date, date] | None,
    scale: int,
) -> pl.DataFrame:
    decided, members = decisions(pairs.by_reference, pairs.exact, pairs.near)
    rows = (
        settlements.join(decided, on="s", how="left", maintain_order="left")
        .join(_candidate_sets(members, bank, bounds, scale), on="key", **_LEFT)
        .join(_reversal_notes(reversed_credits, settlements, bank, bounds), on="s", **_LEFT)
        .join(_other_currency_notes(pairs.other_currency, bank), on="s", **_LEFT)
        .join(_coverage(bank), on="currency", **_LEFT)
    )
    settled = _settled(_the_months(rows, bounds), bounds, scale)
    unmatched = _unknown_credits(credits, members, pairs.claimed, bounds, scale)
    frame = pl.concat([settled.cast(_result_schema(scale)), unmatched.cast(_result_schema(scale))])
    # Then the settlement's id; unmatched credits (no id) keep the statements' line order.
    return frame.with_columns(pl.col("category").cast(_CATEGORY)).sort(
        [
            "category",
            "currency",
            pl.coalesce("settlement_date", "bank_date"),
            "reference",
            "settlement_id",
        ],
        nulls_last=True,
        maintain_order=True,
    )


_LEFT: Final[dict[str, Any]] = {"how": "left", "maintain_order": "left"}


def _candidate_sets(
    members: pl.DataFrame, bank: pl.DataFrame, bounds: tuple[date, date] | None, scale: int
) -> pl.DataFrame:
    return (
        members.join(bank, on="b")
        .sort("key", "date", "b")
        .group_by("key", maintain_order=True)
        .agg(
            pl.len().cast(pl.UInt32).alias("candidate_count"),
            pl.col("amount").sum().cast(pl.Decimal(38, scale)).alias("total"),
            pl.col("date").first().alias("first_date"),
            pl.col("bank_line").first().alias("first_line"),
            pl.col("narration").first().alias("first_narration"),
            pl.format(
                "{} ({}, {} {})", _LINE_TEXT, pl.col("date"), pl.col("amount"), pl.col("currency")
            )
            .str.join("; ")
            .alias("candidates"),
            *_in_month(pl.col("date"), bounds, "credited_in_month"),
        )
    )


def _reversal_notes(
    reversed_credits: pl.DataFrame,
    settlements: pl.DataFrame,
    bank: pl.DataFrame,
    bounds: tuple[date, date] | None,
) -> pl.DataFrame:
    row_tokens = (
        pl.concat_str(
            [pl.col("reference").fill_null(""), pl.col("narration").fill_null("")], separator=" "
        )
        .str.replace_all(TOKEN_SPLIT, " ")
        .str.split(" ")
    )
    return (
        reversed_credits.join(bank.select("b", "date", "reference", "narration"), on="b")
        .select("note", "order", "date", row_tokens.alias("token"))
        .explode("token")
        .filter(pl.col("token").str.len_chars() > 2)
        .select("note", "order", "date", pl.col("token").str.to_uppercase())
        .unique()
        .join(
            settlements.select("s", pl.col("reference").str.to_uppercase().alias("token")),
            on="token",
        )
        .sort("s", "order")
        .group_by("s", maintain_order=True)
        .agg(
            pl.col("note").str.join("; ").alias("reversal_notes"),
            *_in_month(pl.col("date"), bounds, "reversed_in_month"),
        )
    )


def _other_currency_notes(other_currency: pl.DataFrame, bank: pl.DataFrame) -> pl.DataFrame:
    return (
        other_currency.join(bank.select("b", "bank_line"), on="b")
        .sort("s", "b")
        .group_by("s", maintain_order=True)
        .agg(
            pl.format(
                "its reference is on {}, a credit in {}: not compared across currencies",
                _LINE_TEXT.first(),
                pl.col("bank_currency").first(),
            ).alias("other_note")
        )
    )


def _coverage(bank: pl.DataFrame) -> pl.DataFrame:
    return bank.group_by("currency").agg(pl.col("date").max().alias("covered"))


def _from_the_month(bounds: tuple[date, date] | None) -> pl.Expr:
    return pl.lit(True) if bounds is None else pl.col("settlement_date") >= bounds[0]


def _after_the_month(bounds: tuple[date, date] | None) -> pl.Expr:
    return pl.lit(False) if bounds is None else pl.col("first_date") > bounds[1]


def _the_months(rows: pl.DataFrame, bounds: tuple[date, date] | None) -> pl.DataFrame:
    credited = pl.lit(False)
    if bounds is not None:
        credited = pl.col("credited_in_month").fill_null(False) | pl.col(
            "reversed_in_month"
        ).fill_null(False)
    # An earlier month's settlement, settled (or not) in that month, and the next month's
    # (credited early by a bank's local day) are not this month's.
    rows = rows.filter(_from_the_month(bounds) | credited)
    if bounds is not None:
        rows = rows.filter(pl.col("settlement_date") <= bounds[1])
    category = (
        pl.when(_MISSING)
        .then(pl.lit("missing_in_bank"))
        .when(pl.col("category").is_not_null())
        .then(pl.col("category"))
        .when(pl.col("total") != pl.col("settlement_amount"))
        .then(pl.lit("amount_differs"))
        .when(_after_the_month(bounds))
        .then(pl.lit("timing_next_month"))
        .otherwise(pl.lit("matched"))
    )
    return rows.with_columns(category.alias("category"))


def _notes(bounds: tuple[date, date] | None) -> pl.Expr:
    cat, due = pl.col("category"), pl.col("_until")
    notes = pl.concat_list(
        pl.when(_MISSING).then(pl.col("reversal_notes")),
        pl.when(_MISSING & pl.col("covered").is_null()).then(
            pl.format("no bank statement in {} was given", pl.col("currency"))
        ),
        pl.when(_MISSING & (pl.col("covered") < due)).then(
            pl.format(
                "the statements in {} end on {}, before its credit is due (up to {}): pass "
                "the next statement",
                pl.col("currency"),
                pl.col("covered"),
                due,
            )
        ),
        pl.when((cat == "amount_differs") & _after_the_month(bounds)).then(
            pl.format("credited after the month's end, on {}", pl.col("first_date"))
        ),
        pl.when(~_from_the_month(bounds) & (cat == "matched")).then(
            pl.format(
                "a settlement of {} credited this month: last month's timing item, cleared",
                pl.col("settlement_date"),
            )
        ),
        pl.col("other_note"),
    ).list.drop_nulls()
    return pl.when(notes.list.len() > 0).then(notes.list.join("; "))


def _settled(rows: pl.DataFrame, bounds: tuple[date, date] | None, scale: int) -> pl.DataFrame:
    """An ambiguous set names no credit."""
    cat = pl.col("category")
    ambiguous = cat == "ambiguous"
    single = (pl.col("candidate_count") == 1) & ~ambiguous
    return rows.select(
        "reference",
        "currency",
        "settlement_amount",
        pl.when(~ambiguous).then(pl.col("total")).alias("bank_amount"),
        "settlement_date",
        pl.when(~ambiguous).then(pl.col("first_date")).alias("bank_date"),
        "category",
        pl.when(~_MISSING).then(pl.col("rule")).alias("rule"),
        "candidates",
        pl.col("candidate_count").fill_null(0),
        pl.when(~ambiguous)
        .then(pl.col("total") - pl.col("settlement_amount"))
        .cast(pl.Decimal(38, scale))
        .alias("difference"),
        "settlement_id",
        pl.when(single | (cat == "duplicate_credit")).then(pl.col("first_line")).alias("bank_line"),
        pl.when(~ambiguous).then(pl.col("first_narration")).alias("narration"),
        _notes(bounds).alias("note"),
    )


def _unknown_credits(
    credits: pl.DataFrame,
    members: pl.DataFrame,
    claimed: pl.DataFrame,
    bounds: tuple[date, date] | None,
    scale: int,
) -> pl.DataFrame:
    money_type = pl.Decimal(38, scale)
    unknown = credits.join(members.select("b"), on="b", how="anti", maintain_order="left")
    if bounds is not None:
        unknown = unknown.filter(pl.col("date").is_between(*bounds))  # the month's
    return unknown.select(
        "reference",
        "currency",
        pl.lit(None, dtype=money_type).alias("settlement_amount"),
        pl.col("amount").alias("bank_amount"),
        pl.lit(None, dtype=pl.Date).alias("settlement_date"),
        pl.col("date").alias("bank_date"),
        pl.lit("unknown_credit").alias("category"),
        pl.lit(None, dtype=pl.String).alias("rule"),
        pl.lit(None, dtype=pl.String).alias("candidates"),
        pl.lit(0, dtype=pl.UInt32).alias("candidate_count"),
        pl.lit(None, dtype=money_type).alias("difference"),
        pl.lit(None, dtype=pl.String).alias("settlement_id"),
        "bank_line",
        "narration",
        pl.when(pl.col("b").is_in(claimed["b"].implode()))
        .then(
            pl.lit(
                "it carries the reference of a settlement dated outside the days matched "
                "(more than the date tolerance before the month)"
            )
        )
        .alias("note"),
    )


def _result_schema(scale: int) -> dict[str, pl.DataType]:
    money_type = pl.Decimal(38, scale)
    return {
        "reference": pl.String(),
        "currency": pl.String(),
        "settlement_amount": money_type,
        "bank_amount": money_type,
        "settlement_date": pl.Date(),
        "bank_date": pl.Date(),
        "category": pl.String(),
        "rule": pl.String(),
        "candidates": pl.String(),
        "candidate_count": pl.UInt32(),
        "difference": money_type,
        "settlement_id": pl.String(),
        "bank_line": pl.String(),
        "narration": pl.String(),
        "note": pl.String(),
    }


def _in_month(day: pl.Expr, bounds: tuple[date, date] | None, name: str) -> list[pl.Expr]:
    if bounds is None:
        return [pl.lit(False).alias(name)]
    return [day.is_between(*bounds).any().alias(name)]


def settlement_summary(result: Frame) -> pl.DataFrame:
    """Per category and currency: rows and the exact sums of both sides and the difference.

    Args:
        result: the frame :func:`match_settlements` returned (eager or lazy).

    Returns:
        ``category``, ``currency``, ``rows``, ``settlement_amount``, ``bank_amount``,
        ``difference``, in the order of :data:`SETTLEMENT_CATEGORIES` then currency.
    """
    lf = lazy(result, "result", "settlement_summary")
    schema = lf.collect_schema()
    check_columns(
        schema,
        {
            "category": "string",
            "currency": "string",
            "settlement_amount": "money",
            "bank_amount": "money",
            "difference": "money",
        },
        "result",
        "settlement_summary",
    )
    scale = money_scale(schema, ["settlement_amount", "bank_amount", "difference"])
    return (
        lf.group_by(pl.col("category").cast(pl.String).cast(_CATEGORY), "currency")
        .agg(
            pl.len().cast(pl.UInt32).alias("rows"),
            *(
                pl.when(pl.col(c).is_not_null().any()).then(money(c, scale).sum()).alias(c)
                for c in ("settlement_amount", "bank_amount", "difference")
            ),
        )
        .sort("category", "currency")
        .collect()
    )
