"""Candidate balance models: how each one moves a wallet, how well each fits, which one to use.

The interface document does not say whether the provider deducts tax on top of the fee, or
includes it in the fee, or charges fees outside the wallet. Each candidate is one answer:

* ``net``: a collection adds ``toAmount - feeAmount - taxAmount``; a transfer or settlement
  takes ``toAmount + feeAmount + taxAmount`` (the sandbox's default);
* ``fee-only``: the tax is included in the fee: ``toAmount - feeAmount`` in, ``toAmount +
  feeAmount`` out;
* ``gross``: fees and tax are charged outside the wallet: ``toAmount`` in and out.

A conversion takes ``fromAmount`` from its ``fromCurrency`` wallet under every model and adds
the model's credit of ``toAmount`` to its ``toCurrency`` wallet.

A model *fits* a pair of consecutive reported ledger values of a wallet when the later one
equals the earlier one plus the model's deltas of the entries between them (entries whose
value is not reported carry the chain by their own amounts), or equals the value before the
earlier one plus the deltas since (so one wrong value costs one pair, as a missing record
does, and a wallet's fit is not halved by its anomalies). This module computes the share
of fitting pairs per wallet and model from the entries :mod:`txkit.analysis.balances` builds,
and chooses a model per wallet from it (private helpers, plus the public
:func:`balance_model_choice`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

from txkit.analysis._common import Frame, check_columns, lazy

__all__ = [
    "BALANCE_MODELS",
    "DEFAULT_MODEL",
    "MIN_FIT_RATE",
    "MIN_PAIRS",
    "NO_MODEL_FITS",
    "balance_model_choice",
    "describe_balance_models",
]

#: The candidate models, in order of preference when two fit equally well.
BALANCE_MODELS: Final[tuple[str, ...]] = ("net", "fee-only", "gross")
#: The model used where the data is too small to choose (the sandbox's default).
DEFAULT_MODEL: Final = "net"
#: The least share of pairs a model must fit to be chosen (95 %), as a fraction of integers.
MIN_FIT_RATE: Final = (95, 100)
#: Below this many tested pairs a wallet's rates say too little: the default model is used.
MIN_PAIRS: Final = 20
#: What a wallet without a fitting model is told.
NO_MODEL_FITS: Final = "no balance model fits this wallet"

_W = "currency"
_ZERO = pl.lit(0, dtype=pl.Int128)  # Int128 has no unary minus in polars 2.1


def delta_column(model: str) -> str:
    """The entries' column holding a model's delta."""
    return f"delta:{model}"


def credits_and_debits() -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """Per model: the credit of a collection (or a conversion's to-side) and the debit of a
    transfer or settlement, in integer minor units, from the records' amounts."""
    to, fee, tax = pl.col("toAmount"), pl.col("feeAmount"), pl.col("taxAmount")
    return {
        "net": (to - fee - tax, _ZERO - (to + fee + tax)),
        "fee-only": (to - fee, _ZERO - (to + fee)),
        "gross": (to, _ZERO - to),
    }


def fit_table(entries: pl.DataFrame, opening: Mapping[str, int]) -> pl.DataFrame:
    """Per wallet and model: ``checked`` pairs and ``fitting`` pairs.

    A pair is a reported value and the one before it; it fits when the later value follows
    from the earlier one, or from the one before that (so that one wrong value between two
    right ones costs one pair, not two, as a missing record does).

    ``entries`` are in chain order with ``reported_ledger`` (null where not reported) and one
    delta column per model; an entry of unknown delta under a model restarts that model's
    chain. With ``opening``, a wallet's first value is paired with its opening balance.
    """
    wallets = entries.select(pl.col(_W).unique().sort())
    stats = _pair_counts(_chained(entries).with_columns(_earlier_openings(opening)))
    return _by_model(wallets.join(stats, on=_W, how="left"))


_MODEL_IDS: Final = range(len(BALANCE_MODELS))


def _chained(entries: pl.DataFrame) -> pl.DataFrame:
    """Per model ``i``: chain number ``_c{i}`` and implied opening ``_k{i}``; only entries with a
    reported value."""
    return (
        entries.select(
            _W,
            "reported_ledger",
            *(pl.col(delta_column(m)).alias(f"_d{i}") for i, m in enumerate(BALANCE_MODELS)),
        )
        .with_columns(
            pl.col(f"_d{i}").is_null().cum_sum().over(_W).alias(f"_c{i}") for i in _MODEL_IDS
        )
        .with_columns(
            (
                pl.col("reported_ledger")
                - pl.col(f"_d{i}").fill_null(0).cum_sum().over(_W, f"_c{i}")
            ).alias(f"_k{i}")
            for i in _MODEL_IDS
        )
        .filter(pl.col("reported_ledger").is_not_null())
    )


def _earlier_openings(opening: Mapping[str, int]) -> list[pl.Expr]:
    opened_wallet = pl.col(_W).is_in(list(opening))
    opening_balance = pl.col(_W).replace_strict(opening, default=None, return_dtype=pl.Int128)
    shifted = []
    for i in _MODEL_IDS:
        opened = opened_wallet & (pl.col(f"_c{i}") == 0)
        for lag in (1, 2):
            earlier = pl.col(f"_k{i}").shift(lag).over(_W, f"_c{i}")
            shifted.append(
                pl.when(opened)
                .then(earlier.fill_null(opening_balance))
                .otherwise(earlier)
                .alias(f"_k{i}_{lag}")
            )
    return shifted


def _pair_counts(paired: pl.DataFrame) -> pl.DataFrame:
    return paired.group_by(_W).agg(
        agg
        for i in _MODEL_IDS
        for agg in (
            pl.col(f"_k{i}_1").is_not_null().sum().cast(pl.UInt32).alias(f"checked{i}"),
            (
                pl.col(f"_k{i}_1").is_not_null()
                & (
                    (pl.col(f"_k{i}") == pl.col(f"_k{i}_1"))
                    | (pl.col(f"_k{i}") == pl.col(f"_k{i}_2"))
                ).fill_null(False)
            )
            .sum()
            .cast(pl.UInt32)
            .alias(f"fitting{i}"),
        )
    )


def _by_model(by_wallet: pl.DataFrame) -> pl.DataFrame:
    frames = [
        by_wallet.select(
            _W,
            pl.lit(model).alias("model"),
            pl.col(f"checked{i}").fill_null(0).alias("checked"),
            pl.col(f"fitting{i}").fill_null(0).alias("fitting"),
        )
        for i, model in enumerate(BALANCE_MODELS)
    ]
    order = pl.col("model").replace_strict(
        {m: i for i, m in enumerate(BALANCE_MODELS)}, return_dtype=pl.Int8
    )
    return (
        pl.concat(frames)
        .with_columns(
            pl.when(pl.col("checked") > 0)
            .then(pl.col("fitting") / pl.col("checked"))
            .alias("fit_rate")
        )
        .sort(pl.col(_W), order)
        .select(_W, "model", "checked", "fitting", "fit_rate")
    )


def balance_model_choice(fit: Frame) -> pl.DataFrame:
    """Choose one balance model per wallet from a :func:`~txkit.analysis.balance_model_fit`
    table.

    The rule: the candidate fitting the largest share of pairs, the earlier of
    :data:`BALANCE_MODELS` on a tie, provided it fits at least 95 % of them; a wallet where
    none does gets no model (``model`` null, ``note`` "no balance model fits this wallet"),
    and its values are then neither checked nor reported as breaks. A wallet with fewer than
    :data:`MIN_PAIRS` (20) tested pairs cannot tell the models apart by its own rates: it
    takes the model chosen, by the same rule, for all wallets' pairs together, or the default
    model (``net``) when that is unclear too; the note says which.

    Args:
        fit: the fit table (eager or lazy): ``currency``, ``model``, ``checked`` and
            ``fitting``.

    Returns:
        One row per wallet, by currency: ``currency``, ``model`` (null when none fits),
        ``checked`` and ``fit_rate`` of that model (of the best candidate when none fits),
        and ``note`` (null when a model was chosen by its fit).

    Raises:
        ValueError: ``fit`` lacks a column or names an unknown model.

    Example:
        >>> balance_model_choice(balance_model_fit(df))
    """
    lf = lazy(fit, "fit", "balance_model_choice")
    check_columns(
        lf.collect_schema(),
        {"currency": "string", "model": "string", "checked": "int", "fitting": "int"},
        "fit",
        "balance_model_choice",
    )
    table = lf.select(
        pl.col(_W).cast(pl.String), pl.col("model").cast(pl.String), "checked", "fitting"
    ).collect()
    unknown = sorted(set(table["model"].drop_nulls()) - set(BALANCE_MODELS))
    if unknown:
        raise ValueError(
            f"balance_model_choice: unknown model(s) {', '.join(map(repr, unknown))}; "
            f"accepted: {', '.join(BALANCE_MODELS)}"
        )
    per_wallet: dict[str, dict[str, tuple[int, int]]] = {}
    for r in table.filter(pl.col(_W).is_not_null()).iter_rows(named=True):
        per_wallet.setdefault(r[_W], {})[r["model"]] = (int(r["checked"]), int(r["fitting"]))
    # The model is most likely the provider's, not a wallet's: a wallet too small to choose
    # takes the one that fits all wallets together, when that one is clear.
    pooled: dict[str, tuple[int, int]] = {}
    for candidates in per_wallet.values():
        for model, (checked, fitting) in candidates.items():
            total = pooled.get(model, (0, 0))
            pooled[model] = (total[0] + checked, total[1] + fitting)
    _, overall, _, _, overall_note = _choose("", pooled, None)
    fallback = overall if overall_note is None else None
    rows = [_choose(c, per_wallet[c], fallback) for c in sorted(per_wallet)]
    return pl.DataFrame(
        rows,
        schema={
            _W: pl.String,
            "model": pl.String,
            "checked": pl.UInt32,
            "fit_rate": pl.Float64,
            "note": pl.String,
        },
        orient="row",
    )


def _choose(
    currency: str, candidates: Mapping[str, tuple[int, int]], fallback: str | None
) -> tuple[str, str | None, int, float | None, str | None]:
    """``fallback``: all wallets' model (None when unclear), for a wallet with too few pairs;
    without one, the default model."""
    ordered = [(m, *candidates[m]) for m in BALANCE_MODELS if m in candidates]
    most_pairs = max((checked for _, checked, _ in ordered), default=0)
    if most_pairs < MIN_PAIRS:
        model = fallback or DEFAULT_MODEL
        checked, fitting = candidates.get(model, (0, 0))
        rate = fitting / checked if checked else None
        source = "the model that fits the wallets together" if fallback else "the default model"
        note = f"only {most_pairs} pair(s), too few to choose: {source}"
        return currency, model, checked, rate, note
    best, best_checked, best_fitting = ordered[0]
    for model, checked, fitting in ordered[1:]:
        # fitting / checked > best_fitting / best_checked, exactly
        if fitting * max(best_checked, 1) > best_fitting * max(checked, 1) or best_checked == 0:
            best, best_checked, best_fitting = model, checked, fitting
    rate = best_fitting / best_checked if best_checked else None
    numerator, denominator = MIN_FIT_RATE
    if best_checked and best_fitting * denominator >= numerator * best_checked:
        return currency, best, best_checked, rate, None
    return currency, None, best_checked, rate, NO_MODEL_FITS


def resolve_models(model: object, caller: str) -> str | dict[str, str | None] | None:
    """``model`` as given to the checks: None for ``auto``, a model's name for every wallet,
    or a currency -> model (or None) map; wallets the map lacks are chosen as by ``auto``."""
    if isinstance(model, str):
        if model == "auto":
            return None
        if model in BALANCE_MODELS:
            return model
        raise ValueError(
            f"{caller}: model must be 'auto', one of {', '.join(BALANCE_MODELS)}, a mapping of "
            f"currency to model, or a balance_model_choice table; got {model!r}"
        )
    if isinstance(model, pl.DataFrame | pl.LazyFrame):
        frame = lazy(model, "model", caller).collect()
        if not {"currency", "model"} <= set(frame.columns):
            raise ValueError(
                f"{caller}: a model table needs the columns 'currency' and 'model' "
                "(the frame balance_model_choice returns)"
            )
        model = dict(frame.select("currency", "model").iter_rows())
    if isinstance(model, Mapping):
        bad = {c: m for c, m in model.items() if m is not None and m not in BALANCE_MODELS}
        if bad:
            raise ValueError(
                f"{caller}: unknown model(s) {bad!r}; accepted per currency: "
                f"{', '.join(BALANCE_MODELS)} or None (no model: nothing checked)"
            )
        return dict(model)
    raise ValueError(
        f"{caller}: model must be 'auto', one of {', '.join(BALANCE_MODELS)}, a mapping of "
        f"currency to model, or a balance_model_choice table; got {type(model).__name__}"
    )


def describe_balance_models(choice: pl.DataFrame) -> str:
    """One sentence naming each wallet's balance model, from a
    :func:`balance_model_choice` table (for a notebook's assumptions and its index line).

    Example:
        >>> describe_balance_models(balance_model_choice(balance_model_fit(df)))
        'Balance model, chosen from the data: net for KES, NGN (99.79% to 99.89% of pairs fit).'
    """
    if choice.height == 0:
        return "Balance model: no wallet has balance-after values to choose one from."
    parts = []
    # Models in the order of their first wallet by code, whatever the table's row order.
    chosen = choice.filter(pl.col("model").is_not_null() & pl.col("note").is_null()).sort(_W)
    for (model,), group in chosen.group_by("model", maintain_order=True):
        rates = group["fit_rate"]
        low, high = f"{rates.min():.2%}", f"{rates.max():.2%}"
        span = low if low == high else f"{low} to {high}"
        parts.append(f"{model} for {', '.join(sorted(group[_W]))} ({span} of pairs fit)")
    for row in choice.filter(pl.col("note").is_not_null()).sort(_W).iter_rows(named=True):
        if row["model"] is None:
            best = "no pairs" if row["fit_rate"] is None else f"best fit {row['fit_rate']:.2%}"
            parts.append(
                f"{NO_MODEL_FITS}: {row[_W]} ({best} of {row['checked']:,} pairs; "
                "none of its values is checked)"
            )
        else:
            parts.append(f"{row['model']} for {row[_W]} ({row['note']})")
    return "Balance model, chosen from the data: " + "; ".join(parts) + "."
