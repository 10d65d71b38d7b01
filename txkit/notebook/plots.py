"""matplotlib figures for the notebooks: titled, labelled, with units.

Each function takes the table an analysis function returned and gives back a
:class:`matplotlib.figure.Figure` (the notebooks display it). Amounts are converted to float
only here, for drawing; every number a table prints stays exact. Axes read like people write
(``10M NGN``, never ``1e7``); each of the 11 statuses has its own colour (:data:`STATUS_COLOURS`);
counts use linear scales with the number on each bar; a missing bank is labelled ``unknown``;
money in is drawn above the axis and money out below it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec

import matplotlib
import matplotlib.pyplot as plt
import polars as pl
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from txkit.analysis.not_reported import not_reported_balances
from txkit.analysis.reconcile import NOT_EXCEPTIONS
from txkit.analysis.trends import MONEY_IN
from txkit.notebook._outputs import MIN_POINTS
from txkit.schema import STATUSES

__all__ = [
    "STATUS_COLOURS",
    "human_amount",
    "plot_balance",
    "plot_daily_volume",
    "plot_exception_trends",
    "plot_money_trend",
    "plot_rate_trends",
    "plot_reconciliation",
    "plot_shortfall_by",
    "plot_status_mix",
]

#: One distinct colour per status: greens for success, blues for in flight, warm for failures.
STATUS_COLOURS: dict[str, str] = {
    "successful": "#2ca02c",
    "verified": "#98df8a",
    "ongoing": "#1f77b4",
    "pending": "#6baed6",
    "processing": "#17becf",
    "initiated": "#c6dbef",
    "failed": "#d62728",
    "declined": "#ff9896",
    "reversed": "#9467bd",
    "expired": "#8c564b",
    "abandoned": "#7f7f7f",
}
assert set(STATUS_COLOURS) == set(STATUSES)
_OTHER = "#bcbd22"  # a status the interface document does not list
UNKNOWN = "unknown"
_INLINE_BACKENDS = ("module://matplotlib_inline.backend_inline", "inline")
_P = ParamSpec("_P")


def _drawn_once(plot: Callable[_P, Figure]) -> Callable[_P, Figure]:
    """Under the inline backend only the layout is computed and the figure marked drawn: the
    PNG render is its one draw (same bytes; docs/benchmarks.md). Other backends keep the draw."""

    @functools.wraps(plot)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> Figure:
        fig = plot(*args, **kwargs)
        if matplotlib.get_backend() in _INLINE_BACKENDS:
            engine = fig.get_layout_engine()
            if fig.axes and engine is not None:  # as Figure.draw runs it
                with contextlib.suppress(ValueError):
                    engine.execute(fig)
            fig.stale = False
        return fig

    return wrapper


def human_amount(value: float, unit: str = "") -> str:
    """``12_500_000`` -> ``12.5M``; with a unit ``12.5M NGN``. For axis labels only."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            text = f"{value / size:.1f}".removesuffix(".0") + suffix
            break
    else:
        text = f"{value:.0f}" if value >= 1 or value == 0 else f"{value:.2g}"
    return f"{sign}{text} {unit}".strip()


def _money_axis(axis: object, unit: str) -> None:
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: human_amount(v, unit)))  # type: ignore[attr-defined]


def _labels(values: Sequence[object]) -> list[str]:
    return [UNKNOWN if v is None or str(v).strip() == "" else str(v) for v in values]


def _legend_outside(ax: plt.Axes, **options: Any) -> None:
    """Placed "best" inside, it hid the last months of a line."""
    ax.legend(
        loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small",
        **options,
    )  # fmt: skip


def _figure_legend(fig: Figure, ax: plt.Axes, **options: Any) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize="small", **options)


def _figure(title: str, size: tuple[float, float] = (9, 4)) -> tuple[Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return fig, ax


@_drawn_once
def plot_daily_volume(daily: pl.DataFrame, *, currency: str) -> Figure:
    """Daily successful amount per type (from ``daily_volume``): money in above the axis
    (collections, conversions into the currency), money out below it (transfers,
    settlements, conversions out of the currency): :data:`txkit.analysis.trends.MONEY_IN`
    and ``MONEY_OUT``, the one definition page 05 and the close summary use."""
    fig, ax = _figure(f"Successful volume per day, {currency}: money in above, out below")
    data = daily.filter(pl.col("currency") == currency)
    if data.height == 0:
        ax.text(0.5, 0.5, f"No successful {currency} record this month", ha="center",
                transform=ax.transAxes)  # fmt: skip
        return fig
    pivot = (
        data.pivot(on="transType", index="day", values="amount", aggregate_function="sum")
        .sort("day")
        .fill_null(0)
    )
    days = pivot["day"].to_list()
    up = down = None
    colours = {"collection": "#2ca02c", "conversion": "#98df8a", "transfer": "#d62728",
               "settlement": "#ff7f0e", "conversion_out": "#ff9896"}  # fmt: skip
    for name in sorted(c for c in pivot.columns if c != "day"):
        values = pivot[name].cast(pl.Float64).to_numpy()
        incoming = name in MONEY_IN
        if not incoming:
            values = -values
        base = up if incoming else down
        label = f"{'in' if incoming else 'out'}: {name}"
        ax.bar(days, values, bottom=base, label=label, width=0.8, color=colours.get(name))
        if incoming:
            up = values if up is None else up + values
        else:
            down = values if down is None else down + values
    ax.axhline(0, color="black", lw=0.8)
    _money_axis(ax.yaxis, currency)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: human_amount(abs(v), currency)))
    ax.set_xlabel("day (UTC)")
    ax.set_ylabel(f"amount per day ({currency})")
    _legend_outside(ax, title="direction: type")
    fig.autofmt_xdate()
    return fig


@_drawn_once
def plot_status_mix(mix: pl.DataFrame) -> Figure:
    """Horizontal stacked shares of statuses per transaction type (from ``status_mix``), one
    colour per status."""
    fig, ax = _figure("Status mix per transaction type")
    pivot = mix.pivot(on="status", index="transType", values="share").fill_null(0)
    present = [c for c in pivot.columns if c != "transType"]
    order = [s for s in STATUS_COLOURS if s in present] + sorted(
        s for s in present if s not in STATUS_COLOURS
    )
    left = None
    for status in order:
        values = (pivot[status] * 100).to_numpy()
        colour = STATUS_COLOURS.get(status, _OTHER)
        ax.barh(pivot["transType"].to_list(), values, left=left, label=status, color=colour)
        left = values if left is None else left + values
    ax.set_xlabel("share of the type's records (%)")
    ax.set_ylabel("transaction type")
    _legend_outside(ax, title="status")
    return fig


@_drawn_once
def plot_reconciliation(summary: pl.DataFrame) -> Figure:
    """References per reconciliation category (from ``reconcile_summary``): the ones that agree
    (matched, across a month's end, within tolerance) beside the others on their own linear
    scale, each bar with its count."""
    counts = summary.group_by("category").agg(pl.col("references").sum()).sort("category")
    # Matched across a month's end or within the amount tolerance counts as matched; an
    # attempt never paid nor ordered is no mismatch either (its own bar, on the left).
    agreed = pl.col("category").cast(pl.String).is_in(NOT_EXCEPTIONS)
    matched = counts.filter(agreed)
    others = counts.filter(~agreed)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(9, 4), layout="constrained", width_ratios=[1, 3]
    )
    fig.suptitle("Reconciliation: references per category")
    for ax, part, colour in ((left, matched, "#2ca02c"), (right, others, "#d62728")):
        labels = [str(c) for c in part["category"].to_list()]
        values = part["references"].to_list()
        bars = ax.barh(labels, values, color=colour)
        ax.bar_label(bars, labels=[f"{v:,}" for v in values], padding=3)
        ax.set_xlabel("references (count)")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: human_amount(v)))
        ax.margins(x=0.2)
        ax.invert_yaxis()
        ax.grid(True, axis="x", alpha=0.3)
    left.set_ylabel("category")
    if others.height == 0:
        right.text(0.5, 0.5, "No mismatch this month", ha="center", transform=right.transAxes)
    return fig


@_drawn_once
def plot_shortfall_by(summary: pl.DataFrame, *, dimension: str, currency: str) -> Figure:
    """Under- and overpayments per ``dimension`` (from ``underpayment_summary``): counts on
    the left, amounts (shortfall and excess) on the right; a missing value is ``unknown``."""
    data = summary.filter(pl.col("currency") == currency).sort(dimension, nulls_last=True)
    fig, (counts, amounts) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    fig.suptitle(f"Under- and overpayments by {dimension}, {currency}")
    labels = _labels(data[dimension].to_list())
    positions = list(range(len(labels)))
    pairs = (
        (counts, "underpayments", "overpayments", "payments (count)", None),
        (amounts, "shortfall", "excess", f"amount ({currency})", currency),
    )
    for ax, under, over, ylabel, unit in pairs:
        for offset, column, colour, label in (
            (-0.2, under, "#d62728", "under"),
            (0.2, over, "#1f77b4", "over"),
        ):
            values = data[column].cast(pl.Float64).fill_null(0).to_list()
            bars = ax.bar([p + offset for p in positions], values, 0.4, label=label, color=colour)
            ax.bar_label(bars, labels=[human_amount(v) for v in values], fontsize="x-small")
        ax.set_xticks(positions, labels, rotation=30, ha="right")
        ax.set_xlabel(dimension)
        ax.set_ylabel(ylabel)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p, u=unit: human_amount(v, u or "")))
        ax.grid(True, axis="y", alpha=0.3)
        _legend_outside(ax)
    if data.height == 0:
        counts.text(0.5, 0.5, "None this month", ha="center", transform=counts.transAxes)
    return fig


@_drawn_once
def plot_balance(df: pl.DataFrame, breaks: pl.DataFrame, *, currency: str) -> Figure:
    """A wallet's reported ledger balance over time, breaks marked in red.

    Records that report no balance (every balance-after field 0 or absent, see
    :func:`txkit.analysis.not_reported_balances`) are left out: they state nothing, and drawn
    as 0 they would look like the wallet emptying.
    """
    fig, ax = _figure(f"Ledger balance after each successful record, {currency} wallet")
    silent = not_reported_balances(df).select("id")
    ok = df.filter(pl.col("status") == "successful").join(silent, on="id", how="anti")
    to_side = ok.filter(
        (pl.col("toCurrency") == currency) & pl.col("transType").is_in(["collection", "conversion"])
    ).select("createdAt", "id", pl.col("toBalanceAfterLedger").alias("balance"))
    from_side = ok.filter(
        ((pl.col("toCurrency") == currency) & pl.col("transType").is_in(["transfer", "settlement"]))
        | ((pl.col("fromCurrency") == currency) & (pl.col("transType") == "conversion"))
    ).select("createdAt", "id", pl.col("fromBalanceAfterLedger").alias("balance"))
    # Records of one createdAt in the balance checks' order (then id): one line every run.
    series = pl.concat([to_side, from_side]).drop_nulls().sort("createdAt", "id")
    # numpy's datetime64 (UTC) converts at once; a list of datetimes, one by one.
    ax.plot(series["createdAt"].to_numpy(), series["balance"].cast(pl.Float64).to_numpy(), lw=0.8)
    marks = breaks.filter((pl.col("currency") == currency) & (pl.col("side") == "ledger"))
    if marks.height:
        ax.scatter(
            marks["createdAt"].to_list(),
            marks["reported"].cast(pl.Float64).to_list(),
            color="red",
            zorder=3,
            label="break",
        )
        _legend_outside(ax)
    ax.set_xlabel("createdAt (UTC)")
    ax.set_ylabel(f"ledger balance ({currency})")
    _money_axis(ax.yaxis, currency)
    fig.autofmt_xdate()
    return fig


def _month_axis(ax: plt.Axes, months: list[str]) -> None:
    ax.set_xticks(range(len(months)), months, rotation=45, ha="right", fontsize="small")
    ax.set_xlim(-0.5, len(months) - 0.5)
    ax.grid(True, alpha=0.3)


def _lines(ax: plt.Axes, data: pl.DataFrame, column: str, months: list[str], percent: bool) -> int:
    drawn = 0
    for currency in sorted(data["currency"].drop_nulls().unique().to_list()):
        part = data.filter(pl.col("currency") == currency).sort("month")
        if part.height < MIN_POINTS:
            continue
        values = part[column].cast(pl.Float64).to_list()
        if percent:
            values = [None if v is None else v * 100 for v in values]
        where = [months.index(m) for m in part["month"].to_list()]
        ax.plot(where, values, marker="o", ms=3, label=currency)
        drawn += 1
    if not drawn:
        ax.set_yticks([])
        ax.text(
            0.5, 0.5, "Fewer than two months: see the table", ha="center", transform=ax.transAxes
        )
    return drawn


@_drawn_once
def plot_money_trend(metrics: pl.DataFrame) -> Figure:
    """Money in (collections, conversions in) and out (transfers, settlements) per month, one
    panel per currency with its own unit (from :func:`txkit.analysis.trends.monthly_metrics`)."""
    months = sorted(metrics["month"].unique().to_list())
    currencies = sorted(metrics["currency"].drop_nulls().unique().to_list()) or ["none"]
    columns = min(3, len(currencies))
    rows = -(-len(currencies) // columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(10, 3 * rows), layout="constrained", squeeze=False
    )
    fig.suptitle("Successful money in and out per month, by currency")
    for ax in axes.flat[len(currencies) :]:
        ax.set_visible(False)
    for ax, currency in zip(axes.flat, currencies, strict=False):
        part = metrics.filter(pl.col("currency") == currency).sort("month")
        where = [months.index(m) for m in part["month"].to_list()]
        for column, label, colour in (
            ("incoming", "in", "#2ca02c"),
            ("outgoing", "out", "#d62728"),
        ):
            if column in part.columns:
                values = part[column].cast(pl.Float64).to_list()
                ax.plot(where, values, marker="o", ms=3, label=label, color=colour)
        ax.set_title(currency)
        ax.set_ylabel(f"amount ({currency})")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p, u=currency: human_amount(v, u)))
        _month_axis(ax, months)
    _figure_legend(fig, axes.flat[0])
    return fig


@_drawn_once
def plot_rate_trends(table: pl.DataFrame) -> Figure:
    """Success, fee, underpayment and match rates per month, in percent (from
    :func:`txkit.analysis.trend_table`); one line per currency."""
    months = sorted(table["month"].unique().to_list())
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), layout="constrained")
    fig.suptitle("Rates per month")
    panels = (
        ("success_rate", "Success rate", "successful records (%)"),
        ("fee_rate", "Fee rate", "fees / volume (%)"),
        ("underpayment_rate", "Underpayment rate", "of successful collections (%)"),
    )
    for ax, (column, title, label) in zip(axes.flat, panels, strict=False):
        _lines(ax, table.filter(pl.col(column).is_not_null()), column, months, percent=True)
        ax.set_title(title)
        ax.set_ylabel(label)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.2f}%"))
        _month_axis(ax, months)
    _figure_legend(fig, axes.flat[0], title="currency")
    ax = axes.flat[3]
    known = table.filter(pl.col("match_rate").is_not_null())
    ax.set_title("Match rate (each month's report)")
    ax.set_ylabel("references matched (%)")
    _month_axis(ax, months)
    if known.height:
        if _lines(ax, known, "match_rate", months, percent=True):
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.2f}%"))
    else:
        ax.text(0.5, 0.5, "No monthly report yet", ha="center", transform=ax.transAxes)
    return fig


@_drawn_once
def plot_exception_trends(table: pl.DataFrame) -> Figure:
    """Underpayment shortfall per currency and balance breaks per month (from
    :func:`txkit.analysis.trends.trend_table`); counts on a linear scale."""
    months = sorted(table["month"].unique().to_list())
    fig, (short, breaks) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    flagged = table.filter(pl.col("underpayments") > 0)
    short.set_title("Gross shortfall of underpayments per month")
    if flagged.height:
        for currency in sorted(flagged["currency"].unique().to_list()):
            part = flagged.filter(pl.col("currency") == currency).sort("month")
            where = [months.index(m) for m in part["month"].to_list()]
            short.bar(where, part["shortfall"].cast(pl.Float64).to_list(), label=currency)
        _legend_outside(short, title="currency")
    else:
        short.text(0.5, 0.5, "No underpayment", ha="center", transform=short.transAxes)
    short.set_ylabel("expected − paid (its currency)")
    short.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: human_amount(v)))
    _month_axis(short, months)
    known = table.filter(pl.col("breaks").is_not_null())
    breaks.set_title("Balance breaks per currency (each month's report)")
    breaks.set_ylabel("breaks (count)")
    _month_axis(breaks, months)
    if known["month"].n_unique() == 1:
        breaks.set_yticks([])
        breaks.text(
            0.5, 0.5, "One month of reports: see the table", ha="center", transform=breaks.transAxes
        )
    elif known.height:
        currencies = sorted(known["currency"].drop_nulls().unique().to_list())
        width = 0.8 / max(1, len(currencies))
        for i, currency in enumerate(currencies):
            part = known.filter(pl.col("currency") == currency).sort("month")
            where = [months.index(m) - 0.4 + width * (i + 0.5) for m in part["month"].to_list()]
            breaks.bar(where, part["breaks"].to_list(), width=width, label=currency)
        _legend_outside(breaks, title="currency")
    else:
        breaks.text(0.5, 0.5, "No monthly report yet", ha="center", transform=breaks.transAxes)
    return fig
