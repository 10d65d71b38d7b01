"""The amount-sum rules of :func:`txkit.analysis.reconcile`: ``paid_in_parts`` (several
collections paying one order) and ``grouped`` (one collection paying several orders)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from itertools import combinations
from typing import Any, Final, NamedTuple

import polars as pl

from txkit.analysis._reconcile_base import CATEGORY_DTYPE, Sides

__all__ = ["amount_sum_rules"]

# The most candidates searched for one order or collection: 2^14 subsets at most.
_MAX_CANDIDATES: Final = 14


class _Fit(NamedTuple):
    """One set that fits: a ``kind`` of amount-sum match anchored on a reference."""

    kind: str  # paid_in_parts or grouped
    anchor: str  # the order paid in parts, or the collection grouping orders
    members: list[str]
    how: set[str]  # how the members were linked: reference, date window
    others: int  # candidates linked the same way but not in the set


def amount_sum_rules(result: pl.DataFrame, sides: Sides) -> pl.DataFrame:
    """``paid_in_parts`` and ``grouped`` among the references left unmatched."""
    open_collections = _open_collections(result, sides)
    if open_collections.height == 0:
        return result
    open_orders = _open_orders(result, open_collections, sides)
    if open_orders.height == 0:
        return result
    pays = _items(_linked_to(open_collections, open_orders), "export")
    dues = _items(open_orders, "order")
    taken, undecided = _unshared(*_fits(pays, dues, sides))
    if not taken and not undecided:
        return result
    return _apply(result, _changes(taken, undecided, [*pays, *dues], sides.scale), sides.scale)


def _open_collections(result: pl.DataFrame, sides: Sides) -> pl.DataFrame:
    open_collections = result.filter(
        pl.col("category").is_in(["missing_in_orders", "amount_mismatch"])
        & (pl.col("export_count") == 1)
    )
    if open_collections.height == 0:
        return open_collections
    tx_info = (
        sides.collections.filter(
            pl.col("transactionReference")
            .cast(pl.String)
            .is_in(open_collections["reference"].implode())
        )
        .select(
            pl.col("transactionReference").cast(pl.String).alias("reference"),
            _customer(sides.tx_schema, "customerEmail").alias("customer"),
            _optional(sides.tx_schema, "meta.existingTransaction.reference").alias("existing"),
        )
        .unique("reference", keep="first")
        .collect()
    )
    return open_collections.join(tx_info, on="reference", how="left")


def _open_orders(
    result: pl.DataFrame, open_collections: pl.DataFrame, sides: Sides
) -> pl.DataFrame:
    # Only the orders that can be linked at all (an open collection's reference or customer)
    # are read: the open orders can be a million, none of them linked.
    linkable_refs = pl.concat(
        [open_collections["reference"], open_collections["existing"].drop_nulls()]
    ).implode()
    customers = open_collections["customer"].drop_nulls().implode()
    od_info = (
        sides.orders.select(
            pl.col("reference").cast(pl.String),
            _customer(sides.od_schema, "customer").alias("customer"),
        )
        .filter(pl.col("reference").is_in(linkable_refs) | pl.col("customer").is_in(customers))
        .unique("reference", keep="first")
        .collect()
    )
    return result.filter(
        pl.col("category").is_in(["missing_in_export", "amount_mismatch"])
        & (pl.col("order_count") == 1)
        & pl.col("reference").is_in(od_info["reference"].implode())
    ).join(od_info, on="reference", how="left")


def _linked_to(open_collections: pl.DataFrame, open_orders: pl.DataFrame) -> pl.DataFrame:
    order_customers = open_orders["customer"].drop_nulls().implode()
    order_links = open_orders["reference"].implode()
    return open_collections.filter(
        pl.col("reference").is_in(order_links)
        | pl.col("existing").is_in(order_links)
        | pl.col("customer").is_in(order_customers)
    )


def _items(frame: pl.DataFrame, side: str) -> list[dict[str, Any]]:
    return [
        {**r, "amount": r[f"{side}_amount"], "currency": r[f"{side}_currency"],
         "day": r[f"{side}_date"]}
        for r in frame.iter_rows(named=True)
    ]  # fmt: skip


def _fits(
    pays: list[dict[str, Any]], dues: list[dict[str, Any]], sides: Sides
) -> tuple[list[_Fit], dict[str, int]]:
    fits: list[_Fit] = []
    undecided: dict[str, int] = {}
    for kind, targets, pool in (("paid_in_parts", dues, pays), ("grouped", pays, dues)):
        by_key = _index(pool)
        for target in targets:
            if target["amount"] is None or target["currency"] is None:
                continue
            candidates = _candidates(target, pool, by_key, sides.days)
            if len(candidates) < 2 or len(candidates) > _MAX_CANDIDATES:
                continue
            amounts = [item["amount"] for item, _ in candidates]
            limit = _tolerance_for(sides.tolerance, target["currency"])
            found = _subsets(amounts, target["amount"], limit)
            if len(found) == 1:
                members = [candidates[i] for i in found[0]]
                fits.append(_fit(kind, target, members, len(candidates)))
            elif len(found) > 1:
                undecided[target["reference"]] = len(found)
    return fits, undecided


def _fit(
    kind: str, target: dict[str, Any], members: list[tuple[dict[str, Any], set[str]]], seen: int
) -> _Fit:
    how = set().union(*(h for _, h in members))
    refs = [m["reference"] for m, _ in members]
    return _Fit(kind, target["reference"], refs, how, seen - len(members))


def _tolerance_for(tolerance: dict[str, Decimal] | Decimal | None, currency: str | None) -> Decimal:
    if tolerance is None:
        return Decimal(0)
    if isinstance(tolerance, Decimal):
        return tolerance
    return tolerance.get(currency or "", Decimal(0))


def _index(pool: list[dict[str, Any]]) -> dict[tuple[str, Any], list[int]]:
    found: dict[tuple[str, Any], list[int]] = {}
    for i, item in enumerate(pool):
        found.setdefault(("ref", item["reference"]), []).append(i)
        if item.get("existing"):
            found.setdefault(("ref", item["existing"]), []).append(i)
        if item.get("customer"):
            found.setdefault(("customer", item["customer"]), []).append(i)
    return found


def _candidates(
    target: dict[str, Any],
    pool: list[dict[str, Any]],
    by_key: dict[tuple[str, Any], list[int]],
    days: timedelta,
) -> list[tuple[dict[str, Any], set[str]]]:
    near_ids = {
        *by_key.get(("ref", target["reference"]), []),
        *by_key.get(("ref", target.get("existing")), []),
        *by_key.get(("customer", target.get("customer")), []),
    }
    candidates = []
    for i in sorted(near_ids):
        item = pool[i]
        if item["currency"] != target["currency"] or item["amount"] is None:
            continue
        how = _links(target, item, days)
        if how:
            candidates.append((item, how))
    return candidates


def _links(item: dict[str, Any], other: dict[str, Any], days: timedelta) -> set[str]:
    how = set()
    if other["reference"] == item["reference"]:
        how.add("reference")
    if other.get("existing") and other["existing"] == item["reference"]:
        how.add("reference")
    if item.get("existing") and item["existing"] == other["reference"]:
        how.add("reference")
    if (
        item.get("customer")
        and item["customer"] == other.get("customer")
        and _near(item["day"], other["day"], days)
    ):
        how.add("date window")
    return how


def _near(a: Any, b: Any, days: timedelta) -> bool:
    return a is not None and b is not None and abs(a - b) <= days


def _unshared(fits: list[_Fit], undecided: dict[str, int]) -> tuple[list[_Fit], dict[str, int]]:
    """A reference in two fits would be a guess: neither is taken (its targets stay undecided)."""
    seen: dict[str, int] = {}
    for fit in fits:
        for ref in {fit.anchor, *fit.members}:
            seen[ref] = seen.get(ref, 0) + 1
    taken = [f for f in fits if all(seen[r] == 1 for r in {f.anchor, *f.members})]
    undecided = dict(undecided)
    for f in fits:
        if f not in taken:
            undecided[f.anchor] = undecided.get(f.anchor, 1) + 1
    return taken, undecided


def _changes(
    taken: list[_Fit], undecided: dict[str, int], items: list[dict[str, Any]], scale: int
) -> pl.DataFrame:
    updates: dict[str, tuple[str, str, str, int]] = {}
    by_reference = {r["reference"]: r for r in items}
    diffs: dict[str, tuple[Any]] = {}
    for fit in taken:
        rule = "amount-sum" + "".join(f" + {h}" for h in sorted(fit.how))
        refs = {fit.anchor, *fit.members}
        for ref in refs:
            updates[ref] = (fit.kind, rule, fit.anchor, fit.others)
        rows = [by_reference[ref] for ref in refs]
        paid = sum((r["export_amount"] for r in rows if r["export_amount"] is not None), Decimal(0))
        due = sum((r["order_amount"] for r in rows if r["order_amount"] is not None), Decimal(0))
        diffs[fit.anchor] = (paid - due,)
    return pl.DataFrame(
        [
            (ref, *updates.get(ref, (None,) * 4), *diffs.get(ref, (None,)), undecided.get(ref))
            for ref in {*updates, *diffs, *undecided}
        ],
        schema={
            "reference": pl.String,
            "_cat": pl.String,
            "_rule": pl.String,
            "_group": pl.String,
            "_others": pl.UInt32,
            "_diff": pl.Decimal(38, scale),
            "_sets": pl.UInt32,
        },
        orient="row",
    )


def _apply(result: pl.DataFrame, changes: pl.DataFrame, scale: int) -> pl.DataFrame:
    grouped = pl.col("_cat").is_not_null()
    # Only the few rows of the sets change: updated apart and put back at their rows rather
    # than a join and a rewrite of every row.
    rows = (
        result.with_row_index("_row")
        .filter(pl.col("reference").is_in(changes["reference"].implode()))
        .join(changes, on="reference")
        .select(
            "_row",
            pl.when(grouped)
            .then(pl.col("_cat"))
            .otherwise(pl.col("category").cast(pl.String))
            .cast(CATEGORY_DTYPE)
            .alias("category"),
            pl.when(grouped).then(pl.col("_rule")).otherwise("rule").alias("rule"),
            pl.when(grouped).then(pl.col("_group")).otherwise("group").alias("group"),
            pl.when(grouped)
            .then(pl.col("_others"))
            .otherwise(pl.col("_sets"))
            .alias("other_candidates"),
            pl.when(grouped)
            .then(pl.col("_diff"))
            .otherwise("difference")
            .cast(pl.Decimal(38, scale))
            .alias("difference"),
        )
    )
    return result.with_columns(
        result[name].cast(rows.schema[name]).scatter(rows["_row"], rows[name])
        for name in rows.columns[1:]
    )


def _subsets(amounts: list[Decimal], target: Decimal, tolerance: Decimal) -> list[tuple[int, ...]]:
    """At most two sets are returned: enough to tell one fit from several."""
    found: list[tuple[int, ...]] = []
    indices = range(len(amounts))
    for size in range(2, len(amounts) + 1):
        for combo in combinations(indices, size):
            if abs(sum((amounts[i] for i in combo), Decimal(0)) - target) <= tolerance:
                found.append(combo)
                if len(found) > 1:
                    return found
    return found


def _optional(schema: pl.Schema, name: str) -> pl.Expr:
    return pl.col(name).cast(pl.String) if name in schema else pl.lit(None, dtype=pl.String)


def _customer(schema: pl.Schema, name: str) -> pl.Expr:
    return _optional(schema, name).str.strip_chars().str.to_lowercase()
