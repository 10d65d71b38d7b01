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
    "plot_daily_volume",
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
