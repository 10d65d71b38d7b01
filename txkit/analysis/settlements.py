"""Settlements against the merchant's bank statement: did every payout reach the bank?

A successful ``settlement`` record moves money from the wallet to the merchant's bank account;
its ``toAmount`` in ``toCurrency`` is what the bank should credit. :func:`match_settlements`
finds each settlement's credit on the statement (:func:`txkit.bank.read_statements`) by rules,
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

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Final

import polars as pl

from txkit.analysis._common import Frame, check_columns, decimals_of, lazy, money, money_scale
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
_TOKEN_SPLIT: Final = r"[^A-Za-z0-9_\-]+"
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
        statement: a :class:`txkit.bank.BankStatement` (or its ``entries`` frame), holding
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
        One row per row-worthy settlement or credit, sorted by category, currency and date:
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
    tx = lazy(transactions, "transactions", "match_settlements")
    schema = tx.collect_schema()
    check_columns(schema, _TX_REQUIRED, "transactions", "match_settlements")
    entries = getattr(statement, "entries", statement)
    if not isinstance(entries, pl.DataFrame):
        raise ValueError(
            "match_settlements: statement must be a txkit.bank.BankStatement or its entries "
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
    holidays = sorted(set(holidays))
    scale = max(
        money_scale(schema, ["toAmount"]),
        money_scale(entries.schema, ["amount"]),
        *_tolerance_scales(amount_tolerance),
    )
    tolerance = _tolerances(amount_tolerance, scale)
    bounds = month_bounds(month) if month is not None else None

    settlements = (
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
        .collect()
    )
    known_refs = settlements.select(pl.col("reference").str.to_uppercase()).to_series()
    if bounds is not None:
        first, last = bounds
        earliest = _business(pl.lit(first), -date_tolerance, holidays) - timedelta(days=1)
        settlements = settlements.filter(
            pl.col("settlement_date").is_between(earliest, last + timedelta(days=1))
        )
    settlements = settlements.with_row_index("s").with_columns(
        (pl.col("settlement_date") - timedelta(days=1)).alias("_from"),
        _business(pl.col("settlement_date"), date_tolerance, holidays).alias("_until"),
    )

    bank = (
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
    tokens = _tokens(bank)
    cancelled, reversal_notes = _reversals(bank, tokens, known_refs)
    credits = bank.filter((pl.col("direction") == "credit") & ~pl.col("b").is_in(cancelled))

    # Rule 1: the reference, in the same currency, on any date.
    by_reference = (
        settlements.select("s", pl.col("reference").str.to_uppercase().alias("token"), "currency")
        .join(tokens, on="token")
        .join(credits.select("b", "currency"), on=["b", "currency"])
        .select("s", "b")
        .unique()
    )
    other_currency = (
        settlements.select("s", pl.col("reference").str.to_uppercase().alias("token"), "currency")
        .join(tokens, on="token")
        .join(credits.select("b", pl.col("currency").alias("bank_currency")), on="b")
        .filter(pl.col("bank_currency") != pl.col("currency"))
    )
    # A credit carrying any known settlement's reference is that settlement's, whatever its
    # date: it is not offered to another settlement by amount.
    claimed = tokens.filter(pl.col("token").is_in(known_refs.implode())).select("b").unique()
    credits_free = credits.join(claimed, on="b", how="anti")
    # Rules 2 and 3: amount (exact, then within the tolerance) and date window.
    matched_s = by_reference.select("s").unique()
    open_s = settlements.join(matched_s, on="s", how="anti")
    exact = _window_pairs(open_s, credits_free, None, scale)
    near = pl.DataFrame(schema={"s": pl.UInt32, "b": pl.UInt32})
    if tolerance is not None:
        used_s = exact.select("s").unique()
        used_b = exact.select("b").unique()
        near = _window_pairs(
            open_s.join(used_s, on="s", how="anti"),
            credits_free.join(used_b, on="b", how="anti"),
            tolerance,
            scale,
        )
    rows = _categorise(
        settlements,
        credits,
        by_reference,
        exact,
        near,
        other_currency,
        reversal_notes,
        claimed,
        bank,
        bounds,
        scale,
    )
    return rows


def _business(day: pl.Expr, days: int, holidays: Sequence[date]) -> pl.Expr:
    """``days`` business days after (or before, when negative) ``day``."""
    roll = "forward" if days >= 0 else "backward"
    return day.dt.add_business_days(days, holidays=list(holidays), roll=roll)


def _tokens(bank: pl.DataFrame) -> pl.DataFrame:
    """``(b, token)``: each entry's reference and the words of its narration, upper case."""
    text = pl.concat_str(
        [pl.col("reference").fill_null(""), pl.col("narration").fill_null("")], separator=" "
    )
    words = bank.select(
        "b", text.str.replace_all(_TOKEN_SPLIT, " ").str.split(" ").alias("token")
    ).explode("token")
    whole = bank.select("b", pl.col("reference").str.strip_chars().alias("token"))
    return (
        pl.concat([words, whole])
        .filter(pl.col("token").is_not_null() & (pl.col("token").str.len_chars() > 2))
        .select("b", pl.col("token").str.to_uppercase())
        .unique()
    )


def _reversals(
    bank: pl.DataFrame, tokens: pl.DataFrame, known_refs: pl.Series
) -> tuple[list[int], dict[int, str]]:
    """Credits cancelled by a later reversing debit, and a note per cancelled credit.

    A reversing debit is one marked as a reversal, or a debit of a credit's amount and
    currency, dated no earlier, carrying the same reference (its ``reference``, or a
    settlement's reference in both narrations). Each takes the latest such credit not taken.
    """
    debits = bank.filter(pl.col("direction") == "debit")
    if debits.height == 0:
        return [], {}
    amount_type = bank.schema["amount"]
    credit_rows = bank.filter(pl.col("direction") == "credit")
    pairs = (
        debits.select(
            pl.col("b").alias("d"),
            "currency",
            pl.col("amount").abs().cast(amount_type),
            pl.col("date").alias("d_date"),
            "reversal",
            pl.col("bank_line").alias("d_line"),
            pl.col("reference").str.to_uppercase().alias("d_ref"),
        )
        .join(
            credit_rows.select(
                "b",
                "currency",
                "amount",
                "date",
                pl.col("reference").str.to_uppercase().alias("c_ref"),
            ),
            on=["currency", "amount"],
        )
        .filter(pl.col("date") <= pl.col("d_date"))
    )
    if pairs.height == 0:
        return [], {}
    known = tokens.filter(pl.col("token").is_in(known_refs.implode()))
    shared = (
        known.rename({"b": "d"})
        .join(known, on="token")
        .select("d", "b")
        .unique()
        .with_columns(pl.lit(True).alias("shared"))
    )
    pairs = (
        pairs.join(shared, on=["d", "b"], how="left")
        .with_columns(
            (
                pl.col("shared").fill_null(False)
                | (pl.col("d_ref") == pl.col("c_ref")).fill_null(False)
            ).alias("shared")
        )
        .filter(pl.col("reversal") | pl.col("shared"))
        .sort(["d", "shared", "date", "b"], descending=[False, True, True, True])
    )
    cancelled: list[int] = []
    notes: dict[int, str] = {}
    taken: set[int] = set()
    for d, b, d_line, d_date in pairs.select("d", "b", "d_line", "d_date").iter_rows():
        if d in taken or b in notes:
            continue
        taken.add(d)
        cancelled.append(b)
        notes[b] = f"credited, then reversed by {_line_text(d_line)} on {d_date}"
    return cancelled, notes


def _line_text(bank_line: str) -> str:
    file, _, line = bank_line.rpartition(":")
    name = file.rsplit("/", 1)[-1]
    return f"{name} line {line}"


def _window_pairs(
    settlements: pl.DataFrame,
    credits: pl.DataFrame,
    tolerance: dict[str, Decimal] | Decimal | None,
    scale: int,
) -> pl.DataFrame:
    """``(s, b)`` pairs: same currency, the credit in the settlement's window, amounts equal
    (``tolerance`` None) or within the tolerance (and not equal)."""
    left = settlements.select("s", "currency", "settlement_amount", "_from", "_until")
    right = credits.select("b", "currency", pl.col("amount").alias("bank_amount"), "date")
    if tolerance is None:
        pairs = left.join(
            right, left_on=["currency", "settlement_amount"], right_on=["currency", "bank_amount"]
        )
    else:
        pairs = left.join(right, on="currency").filter(
            (pl.col("bank_amount") - pl.col("settlement_amount")).abs() <= _limit(tolerance, scale)
        )
    return (
        pairs.filter(pl.col("date").is_between(pl.col("_from"), pl.col("_until")))
        .select("s", "b")
        .unique()
    )


def _limit(tolerance: dict[str, Decimal] | Decimal, scale: int) -> pl.Expr:
    if isinstance(tolerance, Decimal):
        return pl.lit(tolerance, dtype=pl.Decimal(38, scale))
    return pl.col("currency").replace_strict(
        tolerance, default=None, return_dtype=pl.Decimal(38, scale)
    )


def _components(pairs: pl.DataFrame) -> list[tuple[set[int], set[int]]]:
    """Connected sets of settlements and credits joined by candidate pairs."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(x: tuple[str, int]) -> tuple[str, int]:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for s, b in pairs.iter_rows():
        parent[find(("s", s))] = find(("b", b))
    groups: dict[tuple[str, int], tuple[set[int], set[int]]] = {}
    for node in list(parent):
        root = find(node)
        group = groups.setdefault(root, (set(), set()))
        (group[0] if node[0] == "s" else group[1]).add(node[1])
    return list(groups.values())


def _categorise(
    settlements: pl.DataFrame,
    credits: pl.DataFrame,
    by_reference: pl.DataFrame,
    exact: pl.DataFrame,
    near: pl.DataFrame,
    other_currency: pl.DataFrame,
    reversal_notes: dict[int, str],
    claimed: pl.DataFrame,
    bank: pl.DataFrame,
    bounds: tuple[date, date] | None,
    scale: int,
) -> pl.DataFrame:
    """One row per settlement in scope and per unmatched credit of the month."""
    s_rows = {r["s"]: r for r in settlements.iter_rows(named=True)}
    b_rows = {r["b"]: r for r in bank.iter_rows(named=True)}
    decided: dict[int, dict[str, Any]] = {}
    used_b: set[int] = set()

    def describe(bs: Iterable[int]) -> str:
        parts = []
        for b in sorted(bs, key=lambda x: (b_rows[x]["date"], x)):
            r = b_rows[b]
            parts.append(
                f"{_line_text(r['bank_line'])} ({r['date']}, {r['amount']} {r['currency']})"
            )
        return "; ".join(parts)

    # Rule 1 (reference). A credit carrying two settlements' references cannot be given to
    # one of them: the set is ambiguous.
    for s_set, b_set in _components(by_reference):
        if len(s_set) > 1:
            for s in s_set:
                decided[s] = {"category": "ambiguous", "rule": "reference", "bs": b_set}
            used_b |= b_set
            continue
        (s,) = s_set
        decided[s] = {
            "category": "duplicate_credit" if len(b_set) > 1 else None,
            "rule": "reference",
            "bs": b_set,
        }
        used_b |= b_set
    for rule, pairs in (("amount+date", exact), ("amount-tolerance+date", near)):
        for s_set, b_set in _components(pairs):
            if len(s_set) == 1 and len(b_set) == 1:
                (s,) = s_set
                decided[s] = {"category": None, "rule": rule, "bs": b_set}
            else:
                for s in s_set:
                    decided[s] = {"category": "ambiguous", "rule": None, "bs": b_set}
            used_b |= b_set
    other_notes: dict[int, str] = {}
    for s, b in other_currency.select("s", "b").iter_rows():
        r = b_rows[b]
        other_notes[s] = (
            f"its reference is on {_line_text(r['bank_line'])}, a credit in {r['currency']}: "
            "not compared across currencies"
        )
    reversed_of: dict[str, list[int]] = {}
    for b in reversal_notes:
        for token in _row_tokens(b_rows[b]):
            reversed_of.setdefault(token, []).append(b)
    coverage = _coverage(bank)
    first, last = bounds if bounds is not None else (None, None)
    out: list[dict[str, Any]] = []
    for s, row in s_rows.items():
        got = decided.get(s)
        bs = got["bs"] if got else set()
        total = sum((b_rows[b]["amount"] for b in bs), Decimal(0)) if bs else None
        in_month = first is None or row["settlement_date"] >= first
        bank_dates = sorted(b_rows[b]["date"] for b in bs)
        reversed_bs = reversed_of.get(row["reference"].upper(), [])
        credited_in_month = first is not None and any(
            first <= d <= last for d in [*bank_dates, *(b_rows[b]["date"] for b in reversed_bs)]
        )
        if not in_month and not credited_in_month:
            continue  # an earlier month's settlement, settled (or not) in that month
        if row["settlement_date"] > (last or date.max):
            continue  # the next month's, credited early by a bank's local day
        note: list[str] = []
        if got is None or (got["category"] is None and not bs):
            category = "missing_in_bank"
            rule = None
            for b in reversed_bs:
                note.append(reversal_notes[b])
            until = row["_until"]
            covered = coverage.get(row["currency"])
            if covered is None:
                note.append(f"no bank statement in {row['currency']} was given")
            elif covered < until:
                note.append(
                    f"the statements in {row['currency']} end on {covered}, before its credit "
                    f"is due (up to {until}): pass the next statement"
                )
        else:
            rule = got["rule"]
            category = got["category"]
            if category is None:
                if total != row["settlement_amount"]:
                    category = "amount_differs"
                elif last is not None and bank_dates[0] > last:
                    category = "timing_next_month"
                else:
                    category = "matched"
            if category in ("amount_differs",) and last is not None and bank_dates[0] > last:
                note.append(f"credited after the month's end, on {bank_dates[0]}")
            if not in_month and category == "matched":
                note.append(
                    f"a settlement of {row['settlement_date']} credited this month: last month's "
                    "timing item, cleared"
                )
        if s in other_notes:
            note.append(other_notes[s])
        single = len(bs) == 1 and category != "ambiguous"
        b0 = b_rows[min(bs, key=lambda b: (b_rows[b]["date"], b))] if bs else None
        out.append(
            {
                "reference": row["reference"],
                "currency": row["currency"],
                "settlement_amount": row["settlement_amount"],
                "bank_amount": None if category == "ambiguous" else total,
                "settlement_date": row["settlement_date"],
                "bank_date": None if category == "ambiguous" or b0 is None else b0["date"],
                "category": category,
                "rule": rule,
                "candidates": describe(bs) if bs else None,
                "candidate_count": len(bs),
                "difference": None
                if category == "ambiguous" or total is None
                else total - row["settlement_amount"],
                "settlement_id": row["settlement_id"],
                "bank_line": b0["bank_line"] if single or category == "duplicate_credit" else None,
                "narration": b0["narration"]
                if b0 is not None and category != "ambiguous"
                else None,
                "note": "; ".join(note) or None,
            }
        )
    claimed_b = set(claimed["b"].to_list())
    for r in credits.iter_rows(named=True):
        b = r["b"]
        if b in used_b:
            continue
        if first is not None and not first <= r["date"] <= last:
            continue  # another month's credit
        note = []
        if b in claimed_b:
            note.append(
                "it carries the reference of a settlement dated outside the days matched "
                "(more than the date tolerance before the month)"
            )
        out.append(
            {
                "reference": r["reference"],
                "currency": r["currency"],
                "settlement_amount": None,
                "bank_amount": r["amount"],
                "settlement_date": None,
                "bank_date": r["date"],
                "category": "unknown_credit",
                "rule": None,
                "candidates": None,
                "candidate_count": 0,
                "difference": None,
                "settlement_id": None,
                "bank_line": r["bank_line"],
                "narration": r["narration"],
                "note": "; ".join(note) or None,
            }
        )
    money_type = pl.Decimal(38, scale)
    schema = {
        "reference": pl.String,
        "currency": pl.String,
        "settlement_amount": money_type,
        "bank_amount": money_type,
        "settlement_date": pl.Date,
        "bank_date": pl.Date,
        "category": pl.String,
        "rule": pl.String,
        "candidates": pl.String,
        "candidate_count": pl.UInt32,
        "difference": money_type,
        "settlement_id": pl.String,
        "bank_line": pl.String,
        "narration": pl.String,
        "note": pl.String,
    }
    frame = pl.DataFrame(out, schema=schema, orient="row")
    return frame.with_columns(pl.col("category").cast(_CATEGORY)).sort(
        ["category", "currency", pl.coalesce("settlement_date", "bank_date"), "reference"],
        nulls_last=True,
    )


def _row_tokens(row: Mapping[str, Any]) -> set[str]:
    text = f"{row.get('reference') or ''} {row.get('narration') or ''}"
    return {t.upper() for t in re.split(_TOKEN_SPLIT, text) if len(t) > 2}


def _coverage(bank: pl.DataFrame) -> dict[str, date]:
    """The last date the statements cover, per currency."""
    if bank.height == 0:
        return {}
    return dict(bank.group_by("currency").agg(pl.col("date").max()).iter_rows())


def _tolerance_scales(tolerance: object) -> list[int]:
    values = tolerance.values() if isinstance(tolerance, Mapping) else [tolerance]
    return [decimals_of(v) for v in values]


def _tolerances(tolerance: object, scale: int) -> dict[str, Decimal] | Decimal | None:
    if tolerance is None:
        return None
    if isinstance(tolerance, Mapping):
        return {str(c): _one(v, scale, f"amount_tolerance[{c!r}]") for c, v in tolerance.items()}
    return _one(tolerance, scale, "amount_tolerance")


def _one(value: object, scale: int, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise ValueError(
            f"match_settlements: {what} must be a Decimal, int or exact str amount (or a "
            f"mapping of currency to one), got {value!r}"
        )
    try:
        amount = Decimal(value)
    except ArithmeticError:
        raise ValueError(f"match_settlements: {what} is not a number: {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"match_settlements: {what} must be 0 or more, got {value!r}")
    return amount.quantize(Decimal(1).scaleb(-scale))


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
