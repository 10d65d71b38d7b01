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
