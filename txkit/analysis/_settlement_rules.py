"""The rules that pair settlements with bank credits (:func:`txkit.analysis.match_settlements`):
by reference, then by amount in the date window, exact and within the tolerance; the credits
a later debit reverses; and what each set of candidates decides.

``s`` numbers a settlement, ``b`` a statement entry, as :mod:`txkit.analysis.settlements`
numbers them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final, NamedTuple

import polars as pl

__all__ = ["TOKEN_SPLIT", "Pairs", "bank_tokens", "candidate_pairs", "decisions", "reversals"]

#: What separates the words of a narration (a reference is one word).
TOKEN_SPLIT: Final = r"[^A-Za-z0-9_\-]+"


class Pairs(NamedTuple):
    """The candidate ``(s, b)`` pairs of each rule, and what keeps credits from a rule."""

    by_reference: pl.DataFrame  # rule 1: the reference, same currency, any date
    exact: pl.DataFrame  # rule 2: the amount, in the date window
    near: pl.DataFrame  # rule 3: within the amount tolerance, in the date window
    other_currency: pl.DataFrame  # the reference on a credit in another currency
    claimed: pl.DataFrame  # ``b`` of credits carrying a known settlement's reference


def candidate_pairs(
    settlements: pl.DataFrame,
    credits: pl.DataFrame,
    tokens: pl.DataFrame,
    known_refs: pl.Series,
    tolerance: dict[str, Decimal] | Decimal | None,
    scale: int,
) -> Pairs:
    """The rules' candidate pairs: by reference first, then by amount and date among the
    settlements and credits the reference left."""
    by_reference, other_currency = _by_reference(settlements, credits, tokens)
    # A credit carrying any known settlement's reference is that settlement's, whatever its
    # date: it is not offered to another settlement by amount.
    claimed = tokens.filter(pl.col("token").is_in(known_refs.implode())).select("b").unique()
    credits_free = credits.join(claimed, on="b", how="anti")
    open_s = settlements.join(by_reference.select("s").unique(), on="s", how="anti")
    exact, near = _by_amount(open_s, credits_free, tolerance, scale)
    return Pairs(by_reference, exact, near, other_currency, claimed)


def _by_reference(
    settlements: pl.DataFrame, credits: pl.DataFrame, tokens: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rule 1's ``(s, b)`` pairs (the reference, same currency, any date), and the credits in
    another currency that carry a settlement's reference."""
    carrying = settlements.select(
        "s", pl.col("reference").str.to_uppercase().alias("token"), "currency"
    ).join(tokens, on="token")
    same = (
        carrying.join(credits.select("b", "currency"), on=["b", "currency"])
        .select("s", "b")
        .unique()
    )
    other = carrying.join(
        credits.select("b", pl.col("currency").alias("bank_currency")), on="b"
    ).filter(pl.col("bank_currency") != pl.col("currency"))
    return same, other


def _by_amount(
    open_s: pl.DataFrame,
    credits_free: pl.DataFrame,
    tolerance: dict[str, Decimal] | Decimal | None,
    scale: int,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rules 2 and 3: the amount (exact, then within the tolerance among what the exact rule left)
    and the date window."""
    exact = _window_pairs(open_s, credits_free, None, scale)
    if tolerance is None:
        return exact, pl.DataFrame(schema={"s": pl.UInt32, "b": pl.UInt32})
    near = _window_pairs(
        open_s.join(exact.select("s").unique(), on="s", how="anti"),
        credits_free.join(exact.select("b").unique(), on="b", how="anti"),
        tolerance,
        scale,
    )
    return exact, near


def bank_tokens(bank: pl.DataFrame) -> pl.DataFrame:
    """``(b, token)``: each entry's reference and the words of its narration, upper case."""
    text = pl.concat_str(
        [pl.col("reference").fill_null(""), pl.col("narration").fill_null("")], separator=" "
    )
    words = bank.select(
        "b", text.str.replace_all(TOKEN_SPLIT, " ").str.split(" ").alias("token")
    ).explode("token")
    whole = bank.select("b", pl.col("reference").str.strip_chars().alias("token"))
    return (
        pl.concat([words, whole])
        .filter(pl.col("token").is_not_null() & (pl.col("token").str.len_chars() > 2))
        .select("b", pl.col("token").str.to_uppercase())
        .unique()
    )


def reversals(bank: pl.DataFrame, tokens: pl.DataFrame, known_refs: pl.Series) -> pl.DataFrame:
    """Credits cancelled by a later reversing debit: ``(b, note, order)``, ``order`` the
    sequence in which they were found.

    A reversing debit is one marked as a reversal, or a debit of a credit's amount and
    currency, dated no earlier, carrying the same reference (its ``reference``, or a
    settlement's reference in both narrations). Each takes the latest such credit not taken.
    """
    found: list[tuple[int, str]] = []
    schema = {"b": pl.UInt32, "note": pl.String, "order": pl.UInt32}
    pairs = _reversing_pairs(bank, tokens, known_refs)
    if pairs is None:
        return pl.DataFrame(schema=schema)
    # Greedy, in order (a debit takes one credit, a credit is taken once): sequential by
    # nature, and over the debits alone (a few per statement).
    taken: set[int] = set()
    cancelled: set[int] = set()
    for d, b, d_line, d_date in pairs.select("d", "b", "d_line", "d_date").iter_rows():
        if d in taken or b in cancelled:
            continue
        taken.add(d)
        cancelled.add(b)
        found.append((b, f"credited, then reversed by {line_text(d_line)} on {d_date}"))
    return pl.DataFrame(
        [(b, note, i) for i, (b, note) in enumerate(found)], schema=schema, orient="row"
    )


def _reversing_pairs(
    bank: pl.DataFrame, tokens: pl.DataFrame, known_refs: pl.Series
) -> pl.DataFrame | None:
    """Each debit with the credits it may reverse, the likeliest first (None: no pair)."""
    debits = bank.filter(pl.col("direction") == "debit")
    if debits.height == 0:
        return None
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
        return None
    known = tokens.filter(pl.col("token").is_in(known_refs.implode()))
    shared = (
        known.rename({"b": "d"})
        .join(known, on="token")
        .select("d", "b")
        .unique()
        .with_columns(pl.lit(True).alias("shared"))
    )
    return (
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


def line_text(bank_line: str) -> str:
    file, _, line = bank_line.rpartition(":")
    name = file.rsplit("/", 1)[-1]
    return f"{name} line {line}"


def _window_pairs(
    settlements: pl.DataFrame,
    credits: pl.DataFrame,
    tolerance: dict[str, Decimal] | Decimal | None,
    scale: int,
) -> pl.DataFrame:
    """``tolerance`` None: amounts equal; otherwise within the tolerance and not equal."""
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


def _components(pairs: pl.DataFrame) -> pl.DataFrame:
    """``set`` is the smallest settlement of each connected set (the sets found are small: a few
    rounds do)."""
    comp = pairs.select("s", "b").unique().with_columns(pl.col("s").alias("set"))
    while True:
        step = comp.with_columns(pl.col("set").min().over("b")).with_columns(
            pl.col("set").min().over("s")
        )
        if step["set"].equals(comp["set"]):
            return step
        comp = step


def decisions(
    by_reference: pl.DataFrame, exact: pl.DataFrame, near: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What the rules decided: ``(s, key, category, rule)`` per settlement with candidates,
    and ``(key, b)``, the credits of each candidate set (``key``: the rule and the set).

    A set of one settlement and one credit is a match by its rule (a set of rule 1 with
    several credits: ``duplicate_credit``); any other set is ``ambiguous``, rule 1's keeping
    its rule. ``category`` is null where the amounts and dates decide it.
    """
    decided = []
    members = []
    for number, (rule, pairs) in enumerate(
        (("reference", by_reference), ("amount+date", exact), ("amount-tolerance+date", near))
    ):
        comp = _components(pairs).with_columns(
            (pl.lit(number << 32, dtype=pl.UInt64) + pl.col("set").cast(pl.UInt64)).alias("key")
        )
        sizes = comp.group_by("key").agg(
            pl.col("s").n_unique().alias("n_s"), pl.col("b").n_unique().alias("n_b")
        )
        if rule == "reference":
            category = (
                pl.when(pl.col("n_s") > 1)
                .then(pl.lit("ambiguous"))
                .when(pl.col("n_b") > 1)
                .then(pl.lit("duplicate_credit"))
            )
            how = pl.lit(rule)
        else:
            single = (pl.col("n_s") == 1) & (pl.col("n_b") == 1)
            category = pl.when(~single).then(pl.lit("ambiguous"))
            how = pl.when(single).then(pl.lit(rule))
        decided.append(
            comp.select("s", "key")
            .unique()
            .join(sizes, on="key")
            .select(
                "s",
                "key",
                category.cast(pl.String).alias("category"),
                how.cast(pl.String).alias("rule"),
            )
        )
        members.append(comp.select("key", "b").unique())
    return pl.concat(decided), pl.concat(members)
