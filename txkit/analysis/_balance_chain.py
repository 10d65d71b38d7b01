"""The ledger chain of the balance checks (:func:`txkit.analysis.balance_breaks`): each
wallet's reported ledger values against its opening balance and the records' deltas, and
which value breaks the chain (``chain_gap``, ``bad_value``, ``other``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

__all__ = ["ledger_chain"]

_W = "currency"


def _runs_alternate(candidate: pl.Expr, group: list[str]) -> pl.Expr:
    """In a run of consecutive candidates (x, -x, x ...), only every other one is a break."""
    run = (candidate != candidate.shift(1)).fill_null(True).cum_sum().over(group)
    position = pl.int_range(pl.len()).over([*group, run])
    return candidate & (position % 2 == 0)


def ledger_chain(entries: pl.DataFrame, opening: Mapping[str, int]) -> pl.DataFrame:
    """Add ``expected_ledger`` (the model's ledger), ``ledger_kind`` and ``ledger_basis``.

    Columns added on the way: ``chain_id`` (per wallet, the number of entries of unknown delta
    so far: a new chain starts after each), ``delta_sum`` (running sum of the deltas within the
    chain), ``implied_opening`` (reported ledger minus ``delta_sum``: the wallet's opening
    balance as this entry implies it), ``prev_opening`` (the previous entry's) and
    ``residual`` (the difference of the two; zero on a clean chain).
    """
    chains = _with_offsets(_chains(entries, opening), opening)
    return _expected_ledger(chains, _ledger_kinds(chains, opening), opening)


_CHAIN: Final = [_W, "chain_id"]
_IMPLIED: Final = pl.col("implied_opening")


def _opened(opening: Mapping[str, int]) -> pl.Expr:
    return pl.col(_W).is_in(list(opening)) & (pl.col("chain_id") == 0)


def _opening_balance(opening: Mapping[str, int]) -> pl.Expr:
    return pl.col(_W).replace_strict(opening, default=None, return_dtype=pl.Int128)


def _chains(entries: pl.DataFrame, opening: Mapping[str, int]) -> pl.DataFrame:
    previous_implied = _IMPLIED.shift(1).forward_fill().over(_CHAIN)
    return (
        entries.with_columns(pl.col("delta").is_null().cum_sum().over(_W).alias("chain_id"))
        .with_columns(pl.col("delta").fill_null(0).cum_sum().over(_CHAIN).alias("delta_sum"))
        .with_columns((pl.col("reported_ledger") - pl.col("delta_sum")).alias("implied_opening"))
        .with_columns(
            pl.when(_opened(opening))
            .then(previous_implied.fill_null(_opening_balance(opening)))
            .otherwise(previous_implied)
            .alias("prev_opening")
        )
        .with_columns((_IMPLIED - pl.col("prev_opening")).alias("residual"))
    )


def _with_offsets(chains: pl.DataFrame, opening: Mapping[str, int]) -> pl.DataFrame:
    # Where no later entry tells a wrong value from a jump, the available value can: it keeps
    # its offset ``available - ledger + held`` through a jump, and stays with the chain past
    # a wrong ledger.
    offset = pl.when(pl.col("unknown_held") == 0).then(
        pl.col("reported_available") - pl.col("reported_ledger") + pl.col("held")
    )
    previous_offset = offset.shift(1).forward_fill().over(_W)
    return chains.with_columns(
        offset.alias("reported_offset"),
        pl.when(pl.col(_W).is_in(list(opening)))
        .then(previous_offset.fill_null(0))
        .otherwise(previous_offset)
        .alias("prev_reported_offset"),
        _IMPLIED.is_not_null().cum_sum().over(_CHAIN).alias("chain_position"),
    )


def _ledger_kinds(chains: pl.DataFrame, opening: Mapping[str, int]) -> pl.DataFrame:
    """``ledger_kind`` is ``ok``, ``bad_value``, ``chain_gap`` or ``other``; ``anchor_wrong`` where
    the chain's first value is the wrong one."""
    residual = pl.col("residual")
    next_residual = pl.col("next_residual")
    offset_now, offset_before = pl.col("reported_offset"), pl.col("prev_reported_offset")
    # A chain's anchor (its first value, unchecked without an opening balance) was the wrong
    # one when its successor jumps by r while the available offset moves by -r.
    jumps_back = (
        (residual != 0)
        & (offset_now - offset_before + residual == 0)
        & (next_residual + residual).ne_missing(0)
    )
    anchor_wrong = ((pl.col("chain_position") == 2) & ~_opened(opening) & jumps_back).fill_null(
        False
    )
    reverted = ((residual != 0) & (next_residual + residual == 0)).fill_null(False)
    return (
        chains.filter(residual.is_not_null())
        .select(
            "row",
            _W,
            "chain_id",
            "chain_position",
            "residual",
            "reported_offset",
            "prev_reported_offset",
        )
        .with_columns(residual.shift(-1).over(_CHAIN).alias("next_residual"))
        .with_columns(anchor_wrong.alias("anchor_wrong"))
        .with_columns(_runs_alternate(reverted, _CHAIN).alias("bad"))
        .with_columns(pl.col("bad").shift(1).over(_CHAIN).fill_null(False).alias("resumes"))
        .select(
            "row",
            pl.when((residual == 0) | pl.col("resumes") | pl.col("anchor_wrong"))
            .then(pl.lit("ok"))
            .when(pl.col("bad"))
            .then(pl.lit("bad_value"))
            .when(next_residual == 0)
            .then(pl.lit("chain_gap"))
            .when(
                next_residual.is_null()
                & (offset_now + residual == offset_before)
                & (offset_now != offset_before)
            )
            .then(pl.lit("bad_value"))
            .when(next_residual.is_null() & (offset_now == offset_before))
            .then(pl.lit("chain_gap"))
            .otherwise(pl.lit("other"))
            .alias("ledger_kind"),
            "anchor_wrong",
        )
    )


def _expected_ledger(
    chains: pl.DataFrame, kinds: pl.DataFrame, opening: Mapping[str, int]
) -> pl.DataFrame:
    opened = _opened(opening)
    # The chain's value skips bad values: the entry after one is measured from before it.
    good_implied = pl.when(pl.col("ledger_kind").ne_missing("bad_value")).then(_IMPLIED)
    last_good_implied = good_implied.shift(1).forward_fill().over(_CHAIN)
    is_anchor = (pl.col("chain_position") == 1) & _IMPLIED.is_not_null()
    next_implied = _IMPLIED.shift(-1).backward_fill().over(_CHAIN)
    return (
        # The windows below read the chain in row order: a join keeps none unless asked.
        chains.join(kinds, on="row", how="left", maintain_order="left")
        .with_columns(
            pl.col("anchor_wrong").fill_null(False).any().over(_CHAIN).alias("anchor_wrong")
        )
        .with_columns(
            pl.when(is_anchor & pl.col("anchor_wrong"))
            .then(pl.lit("bad_value"))
            .otherwise(pl.col("ledger_kind").fill_null("unverifiable"))
            .alias("ledger_kind"),
        )
        .with_columns(
            # The opening balance the model's ledger is measured from at this entry.
            pl.when(opened)
            .then(last_good_implied.fill_null(_opening_balance(opening)))
            .when(is_anchor & pl.col("anchor_wrong"))
            .then(next_implied)
            .otherwise(last_good_implied)
            .alias("chain_opening"),
        )
        .with_columns((pl.col("delta_sum") + pl.col("chain_opening")).alias("expected_ledger"))
        .with_columns(
            # The ledger value the available check starts from: the reported one unless it
            # is the wrong one (or missing).
            pl.when((pl.col("ledger_kind") == "bad_value") | pl.col("reported_ledger").is_null())
            .then(pl.col("expected_ledger"))
            .otherwise(pl.col("reported_ledger"))
            .alias("ledger_basis")
        )
        .drop(
            "chain_opening",
            "reported_offset",
            "prev_reported_offset",
            "chain_position",
            "anchor_wrong",
        )
    )
