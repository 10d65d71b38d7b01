# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Who paid less (or more) than expected, and why?
#
# **Question.** Which payments were recorded as underpayments or overpayments this month, how
# much is short, where do they happen (currency, bank, channel), which customers underpay
# repeatedly, and does their checkout behaviour differ from exact payers?
#
# **Assumptions:**
# * the provider records an under- or overpayment (NGN bank transfers to virtual accounts) as
#   a new `successful` transaction marked `meta.paymentCollectionType` = `UNDERPAYMENT` or
#   `OVERPAYMENT`, with the expected amount and the original reference in
#   `meta.existingTransaction` (provider notes; the interface document only names the fields);
# * shortfall = expected − paid, exact; negative for an overpayment;
# * rates divide by the month's successful collections of the same group;
# * the unit of `customerActivity.time_spent` is not stated anywhere: it is shown as given.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = "data/store"  # the local Parquet store, read when source is store
currency = "NGN"  # the currency of the per-bank plot
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: exception lists are written there as CSV and Excel

# %%
from txkit.analysis import activity_comparison, repeat_shortfalls, underpayment_summary, underpayments
from txkit.findings import underpayment_findings
import polars as pl

from txkit.notebook import display_exceptions, display_table, load_month, what_to_look_at
from txkit.plots import plot_shortfall_by

df, info = load_month(month, source=source, store=store)
info

# %% [markdown]
# ## Every flagged payment

# %%
flagged = underpayments(df)
display_exceptions(
    flagged,
    "flagged_payments",
    title="Flagged under- and overpayments",
    key=["id", "type"],
    first=["transactionReference", "currency", "shortfall", "expected", "paid"],
    sort=["type", pl.col("shortfall").abs()],
    descending=[False, True],
    month=month,
    downloads=downloads,
    page="03_underpayments.html",
    show_pii=show_pii,
    rows=20,
    empty="None this month: no under- or overpayment was recorded.",
    population=int(underpayment_summary(df, by="currency")["successful_collections"].sum()),
    population_label="successful collections",
)

# %% [markdown]
# ## Totals and rates by currency, bank and payment channel

# %%
by_currency = underpayment_summary(df, by="currency")
display_table(by_currency, show_pii=show_pii)

# %%
by_bank = underpayment_summary(df, by=["bank", "channel"])
display_table(by_bank, show_pii=show_pii, sort=["currency", "bank", "channel"])

# %% tags=["nbval-ignore-output"]
plot_shortfall_by(underpayment_summary(df, by="bank"), dimension="bank", currency=currency);

# %% [markdown]
# ## Customers who underpay repeatedly

# %%
repeats = repeat_shortfalls(df, min_count=2, top=10)
display_table(repeats, show_pii=show_pii, empty="None this month: no customer underpaid more than once.")

# %% [markdown]
# ## Checkout behaviour: underpaid vs overpaid vs exact (virtual-account payments)

# %%
display_table(activity_comparison(df, channel="VA"), show_pii=show_pii)

# %% [markdown]
# ## What to look at

# %%
what_to_look_at(underpayment_findings(flagged, by_currency, repeats), show_pii=show_pii)
