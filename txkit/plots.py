"""matplotlib figures for the notebooks: titled, labelled, with units.

Each function takes the table an analysis function returned and gives back a
:class:`matplotlib.figure.Figure` (the notebooks display it). Amounts are converted to float
only here, for drawing; every number a table prints stays exact.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.figure import Figure

__all__ = [
    "plot_balance",
    "plot_daily_volume",
    "plot_reconciliation",
    "plot_shortfall_by",
    "plot_status_mix",
]


def _figure(title: str, size: tuple[float, float] = (9, 4)) -> tuple[Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return fig, ax


def plot_daily_volume(daily: pl.DataFrame, *, currency: str) -> Figure:
    """Stacked daily successful amount per transaction type (from ``daily_volume``)."""
    fig, ax = _figure(f"Successful volume per day, {currency}")
    data = daily.filter(pl.col("toCurrency") == currency)
    pivot = (
        data.pivot(on="transType", index="day", values="amount", aggregate_function="sum")
        .sort("day")
        .fill_null(0)
    )
    bottom = None
    for name in [c for c in pivot.columns if c != "day"]:
        values = pivot[name].cast(pl.Float64).to_numpy()
        ax.bar(pivot["day"].to_list(), values, bottom=bottom, label=name, width=0.8)
        bottom = values if bottom is None else bottom + values
    ax.set_xlabel("day (UTC)")
    ax.set_ylabel(f"amount ({currency})")
    ax.legend(title="type")
    fig.autofmt_xdate()
    return fig


def plot_status_mix(mix: pl.DataFrame) -> Figure:
    """Horizontal stacked shares of statuses per transaction type (from ``status_mix``)."""
    fig, ax = _figure("Status mix per transaction type")
    pivot = mix.pivot(on="status", index="transType", values="share").fill_null(0)
    left = None
    for status in [c for c in pivot.columns if c != "transType"]:
        values = (pivot[status] * 100).to_numpy()
        ax.barh(pivot["transType"].to_list(), values, left=left, label=status)
        left = values if left is None else left + values
    ax.set_xlabel("share of the type's records (%)")
    ax.set_ylabel("transaction type")
    ax.legend(title="status", bbox_to_anchor=(1.01, 1), loc="upper left", fontsize="small")
    return fig


def plot_reconciliation(summary: pl.DataFrame) -> Figure:
    """References per reconciliation category (from ``reconcile_summary``), log scale."""
    fig, ax = _figure("Reconciliation: references per category")
    counts = summary.group_by("category").agg(pl.col("references").sum()).sort("category")
    labels = [str(c) for c in counts["category"].to_list()]
    ax.barh(labels, counts["references"].to_list(), color="tab:blue")
    ax.set_xscale("log")
    ax.set_xlabel("references (count, log scale)")
    ax.set_ylabel("category")
    ax.invert_yaxis()
    return fig


def plot_shortfall_by(summary: pl.DataFrame, *, dimension: str, currency: str) -> Figure:
    """Under- and overpayment counts per ``dimension`` (from ``underpayment_summary``)."""
    fig, ax = _figure(f"Under- and overpayments by {dimension}, {currency}")
    data = summary.filter(pl.col("currency") == currency).sort(dimension, nulls_last=True)
    labels = [str(v) for v in data[dimension].to_list()]
    positions = list(range(len(labels)))
    ax.bar([p - 0.2 for p in positions], data["underpayments"].to_list(), 0.4, label="under")
    ax.bar([p + 0.2 for p in positions], data["overpayments"].to_list(), 0.4, label="over")
    ax.set_xticks(positions, labels, rotation=30, ha="right")
    ax.set_xlabel(dimension)
    ax.set_ylabel("payments (count)")
    ax.legend()
    return fig


def plot_balance(df: pl.DataFrame, breaks: pl.DataFrame, *, currency: str) -> Figure:
    """A wallet's reported ledger balance over time, breaks marked in red."""
    fig, ax = _figure(f"Ledger balance after each successful record, {currency} wallet")
    ok = df.filter(pl.col("status") == "successful")
    to_side = ok.filter(
        (pl.col("toCurrency") == currency) & pl.col("transType").is_in(["collection", "conversion"])
    ).select("createdAt", pl.col("toBalanceAfterLedger").alias("balance"))
    from_side = ok.filter(
        ((pl.col("toCurrency") == currency) & pl.col("transType").is_in(["transfer", "settlement"]))
        | ((pl.col("fromCurrency") == currency) & (pl.col("transType") == "conversion"))
    ).select("createdAt", pl.col("fromBalanceAfterLedger").alias("balance"))
    series = pl.concat([to_side, from_side]).drop_nulls().sort("createdAt")
    ax.plot(series["createdAt"].to_list(), series["balance"].cast(pl.Float64).to_list(), lw=0.8)
    marks = breaks.filter((pl.col("currency") == currency) & (pl.col("side") == "ledger"))
    if marks.height:
        ax.scatter(
            marks["createdAt"].to_list(),
            marks["reported"].cast(pl.Float64).to_list(),
            color="red",
            zorder=3,
            label="break",
        )
        ax.legend()
    ax.set_xlabel("createdAt (UTC)")
    ax.set_ylabel(f"ledger balance ({currency})")
    fig.autofmt_xdate()
    return fig
