"""Plots drawn from sandbox data say what the data says (checked on the drawn values)."""

from __future__ import annotations

import polars as pl
import pytest

import txkit
from txkit.analysis import balance_breaks, not_reported_balances
from txkit.notebook.plots import plot_balance
from txkit.sandbox import Sandbox


@pytest.mark.slow
def test_balance_plot_leaves_out_records_that_report_no_balance() -> None:
    with (
        Sandbox(seed=2, records=20_000, zero_balance_rate=0.3) as sb,
        txkit.Client(base_url=sb.base_url, secret_key=sb.secret_key) as client,
    ):
        df = txkit.load_transactions(client, start="2026-09-01", end="2026-10-31", progress=False)
    silent = not_reported_balances(df)
    currency = silent["currency"].mode().sort()[0]
    assert silent.filter(pl.col("currency") == currency).height > 0  # the case is present
    fig = plot_balance(df, balance_breaks(df), currency=currency)
    drawn = fig.axes[0].lines[0].get_ydata()
    assert len(drawn) > 0 and min(drawn) > 0  # a zero would be a record that states nothing


def _hidden(fig: object) -> list[tuple[str, float, float]]:
    """Every drawn data point (a line's or marker's point, a bar's top) that a legend of the
    figure covers, in display coordinates after the figure is drawn."""
    import numpy as np

    fig.canvas.draw()  # type: ignore[attr-defined]
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)  # type: ignore[attr-defined]
    assert legends, "no legend drawn"
    boxes = [legend.get_window_extent() for legend in legends]
    covered = []
    for ax in fig.axes:  # type: ignore[attr-defined]
        points = [np.asarray(line.get_xydata(), dtype=float) for line in ax.lines]
        points += [np.asarray(c.get_offsets(), dtype=float) for c in ax.collections]
        for patch in ax.patches:
            box = patch.get_window_extent()
            top = box.y1 if patch.get_height() >= 0 else box.y0  # type: ignore[attr-defined]
            xy = ax.transData.inverted().transform([((box.x0 + box.x1) / 2, top)])
            points.append(xy)
        for data in points:
            data = data[~np.isnan(data).any(axis=1)] if len(data) else data
            for x, y in ax.transData.transform(data) if len(data) else []:
                if any(b.x0 <= x <= b.x1 and b.y0 <= y <= b.y1 for b in boxes):
                    covered.append((ax.get_title(), float(x), float(y)))
    return covered


def _months(n: int = 12) -> list[str]:
    return [f"{2025 + (10 + i) // 12}-{(10 + i) % 12 + 1:02d}" for i in range(n)]


def test_no_legend_hides_a_point_of_the_lines_it_names() -> None:
    """Issue 33, Why 12: a legend placed inside the panel ("best") hid the last months of a
    line. Lines that fill their panel, the last months at its top right, as the sandbox's
    growth draws them: no point may be under a legend."""
    import matplotlib

    matplotlib.use("Agg")
    from txkit.notebook.plots import plot_exception_trends, plot_money_trend, plot_rate_trends

    months = _months()
    rows = []
    for c, currency in enumerate(["GHS", "KES", "NGN", "USD", "USDT"]):
        for i, month in enumerate(months):
            wave = (i % 2) * 0.5 + i / len(months)  # zigzag up to the last month
            rows.append(
                {
                    "month": month,
                    "currency": currency,
                    "incoming": 1000.0 * (1 + wave),
                    "outgoing": 1000.0 * (1.5 - wave / 2 + (c % 2) * 0.3),
                    "success_rate": 0.8 + 0.1 * wave + 0.01 * c,
                    "fee_rate": 0.01 + 0.005 * wave,
                    "underpayment_rate": 0.002 + 0.002 * wave,
                    "match_rate": 0.95 + 0.03 * wave,
                    "underpayments": 3 + i,
                    "shortfall": 100.0 * (1 + wave),
                    "breaks": 2 + i + c,
                }
            )
    table = pl.DataFrame(rows)
    for plot in (plot_money_trend, plot_rate_trends, plot_exception_trends):
        fig = plot(table)
        assert _hidden(fig) == [], plot.__name__


@pytest.mark.slow
def test_page_01s_money_out_is_page_05s_conversions_out_included() -> None:
    """Why 8.12: page 01's NGN chart of money out left out the conversions out of NGN (36.0M
    NGN on the sandbox's October) while page 05 counts them. One definition
    (``trends.MONEY_IN``/``MONEY_OUT``): per currency and month, the daily volumes' money out
    and in are page 05's ``outgoing`` and ``incoming`` to the unit, and the chart draws the
    conversions out below the axis."""
    import matplotlib

    matplotlib.use("Agg")
    from decimal import Decimal

    from txkit.analysis.overview import daily_volume
    from txkit.analysis.trends import MONEY_IN, MONEY_OUT, monthly_metrics
    from txkit.notebook.plots import plot_daily_volume

    with (
        Sandbox(seed=7, records=20_000) as sb,
        txkit.Client(base_url=sb.base_url, secret_key=sb.secret_key) as client,
    ):
        df = txkit.load_transactions(client, start="2026-10-01", end="2026-10-31", progress=False)
    daily = daily_volume(df)
    out = daily.filter(pl.col("transType") == "conversion_out")
    assert out.height and "NGN" in out["currency"].to_list()  # the case is present
    metrics = monthly_metrics(df).filter(pl.col("month") == "2026-10")
    for currency, incoming, outgoing in metrics.select("currency", "incoming", "outgoing").rows():
        mine = daily.filter(pl.col("currency") == currency)

        def total(types: tuple[str, ...], frame: pl.DataFrame = mine) -> Decimal:
            return sum(frame.filter(pl.col("transType").is_in(types))["amount"], Decimal(0))

        assert total(MONEY_OUT) == (outgoing or 0), currency
        assert total(MONEY_IN) == (incoming or 0), currency
    fig = plot_daily_volume(daily, currency="NGN")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "out: conversion_out" in labels
