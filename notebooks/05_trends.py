# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: txkit,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   txkit:
#     after:
#     - 02_reconciliation
#     - 04_balance_checks
# ---

# %% [markdown]
# # 05 · How do the months compare?
#
# **Question.** Over the last twelve months (or every month in the store, if fewer): how did
# the volume in each currency, the success rate, the fee rate, the underpayment rate and
# shortfall, the reconciliation's match rate and the balance breaks develop?
#
# **Assumptions:**
# * a month is the UTC calendar month of `createdAt` (the store's `month` partition);
# * volume is the successful records' `toAmount`: money in = collections and conversions into
#   the currency, money out = transfers, settlements and conversions out of the currency (their
#   `fromAmount`), as on the index and the close summary; the fee rate divides the fees of
#   successful records by that volume;
# * the underpayment rate divides successful underpayments by successful collections, the
#   shortfall is expected − paid over them (exact decimals);
# * the match rate and the breaks are what each month's report found (its downloads): a month
#   without a report has none, rather than a number computed another way.
#
# From the store, the records are read lazily with only the columns these figures need.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC: the last month shown
months = 12  # how many months up to `month`
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: the reports beside it give the match rates and breaks

# %%
import txkit.notebook
from txkit.analysis import monthly_metrics, trend_table
from txkit.notebook.plots import plot_exception_trends, plot_money_trend, plot_rate_trends

out = txkit.notebook.outputs(month, "05_trends.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
records = out.trend_records(months)
metrics = monthly_metrics(records)
table = trend_table(metrics, out.report_history())
out.as_run_trends(metrics, months)

# %% [markdown]
# ## Money in and out per month, by currency

# %% tags=["nbval-ignore-output"]
plot_money_trend(metrics);

# %% [markdown]
# ## Success, fee, underpayment and match rates

# %% tags=["nbval-ignore-output"]
plot_rate_trends(table);

# %% [markdown]
# ## Underpayment shortfall and balance breaks

# %% tags=["nbval-ignore-output"]
plot_exception_trends(table);

# %% [markdown]
# ## Every month and currency
# Match rate and balance breaks come from each month's report (empty without one).

# %% tags=["nbval-ignore-output", "txkit-reads-reports"]
out.table(
    table, key=["month", "currency"], sort=["month", "currency"], rows=12 * 8,
    empty="None: the store holds no month yet (run `txkit sync`).",
)

# %% [markdown]
# ## What to look at

# %% tags=["nbval-ignore-output", "txkit-reads-reports"]
from txkit.notebook.findings import trend_findings

out.what_to_look_at(trend_findings(table))
