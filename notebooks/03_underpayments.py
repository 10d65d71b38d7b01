# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
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
# * every table below counts the same records: flagged collections of the statuses stated
#   below the loading cell; the rates divide by the successful collections of the same group;
# * shortfall = expected − paid, exact; negative for an overpayment; summed over
#   underpayments it is the **gross shortfall of underpayments** (`shortfall` in the tables);
#   `excess` sums paid − expected over overpayments, and the **net shortfall** is the gross
#   shortfall less that excess (`txkit.analysis.underpayments.SHORTFALL_NAMES`);
# * an original reference is looked up in this month and in the months before it
#   (`history_months`) before it is reported as not found;
# * the unit of `customerActivity.time_spent` is not stated anywhere: it is shown as given.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
currency = "NGN"  # the currency of the per-bank plot
history_months = 3  # earlier months in which original references are looked up (0: none)
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: exception lists are written there as CSV and Excel

# %%

import txkit.notebook
from txkit.analysis import (
    activity_comparison,
    repeat_shortfalls,
    underpayment_summary,
    underpayments,
)
from txkit.notebook.findings import underpayment_findings, underpayment_scope
from txkit.notebook.plots import plot_shortfall_by

# %%
out = txkit.notebook.outputs(month, "03_underpayments.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
df = out.load_month()
history = out.load_history(months=history_months)
out.as_run(underpayment_scope(month))

# %% [markdown]
# ## Every flagged payment

# %%
flagged = underpayments(df, history=history)
by_currency = underpayment_summary(df, by="currency")
out.exceptions(
    flagged, "flagged_payments", rows=20,
    population=dict(by_currency.select("currency", "successful_collections").iter_rows()),
    population_label="successful collections",
)

# %% [markdown]
# ## Totals and rates by currency, bank and payment channel

# %%
out.table(by_currency)

# %%
by_bank = underpayment_summary(df, by=["bank", "channel"])
out.table(by_bank, sort=["currency", "bank", "channel"])

# %% tags=["nbval-ignore-output"]
plot_shortfall_by(underpayment_summary(df, by="bank"), dimension="bank", currency=currency);

# %% [markdown]
# ## Customers who underpay repeatedly

# %%
repeats = repeat_shortfalls(df, min_count=2, top=None)  # every one: a cut table says so
out.table(repeats, rows=10, empty="None this month: no customer underpaid more than once.")

# %% [markdown]
# ## Checkout behaviour: underpaid vs overpaid vs exact (virtual-account payments)

# %%
out.table(activity_comparison(df, channel="VA"))

# %% [markdown]
# ## What to look at

# %%
out.what_to_look_at(underpayment_findings(flagged, by_currency, repeats))
