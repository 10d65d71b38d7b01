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
# # 04 · Do the balance-after fields add up?
#
# **Question.** Every successful record reports the wallet's balance after it. Does each
# value follow from the previous one and the record's own amounts, and does the available
# balance equal the ledger minus the rolling reserves still held?
#
# **The balance model** (the interface document is silent on it; txkit assumes this one, which
# the sandbox implements):
# * one wallet per currency; records in `createdAt` order, then `id`; only `successful` records
#   move balances;
# * a collection adds `toAmount − feeAmount − taxAmount` to the `toCurrency` wallet
#   (`toBalanceAfterLedger`);
# * a transfer or settlement takes `toAmount + feeAmount + taxAmount` from the `toCurrency`
#   wallet (`fromBalanceAfterLedger`);
# * a conversion takes `fromAmount` from the `fromCurrency` wallet and adds
#   `toAmount − feeAmount − taxAmount` to the `toCurrency` wallet;
# * available = ledger − reserves held (a collection's `rollingReserve.amount` from its
#   `createdAt` until `reserveReleaseDate`).
#
# The month before is loaded as **history** (`history_months`): its records anchor each
# wallet's chain and show which rolling reserves are still held when the month starts, so the
# month's first values are checked too; breaks are reported for the month only. Without
# history (`history_months = 0`, or a store that lacks the month before), each wallet's first
# value anchors its chain and reserves from earlier months are unknown: those values are
# counted as unverifiable, never as breaks. Arithmetic is exact (integer minor units).

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = "data/store"  # the local Parquet store, read when source is store
currency = "NGN"  # the wallet to plot
history_months = 1  # months before `month` loaded to anchor the chains (0: the month alone)
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: exception lists are written there as CSV and Excel

# %%
from txkit.analysis import balance_breaks, balance_summary
from txkit.findings import balance_findings
import polars as pl

from txkit.notebook import display_exceptions, display_table, load_history, load_month, what_to_look_at
from txkit.plots import plot_balance

df, info = load_month(month, source=source, store=store)
history, history_note = load_history(month, months=history_months, source=source, store=store)
print(history_note)
info

# %% [markdown]
# ## Checked, unverifiable and broken values per wallet

# %%
summary = balance_summary(df, history=history)
display_table(summary, show_pii=show_pii)

# %% [markdown]
# ## Every break
# `chain_gap`: the ledger jumps by what a missing record would explain (look for a record the
# export lacks just before); `bad_value`: one value is off and the chain resumes after it;
# `reserve_mismatch`: available ≠ ledger − reserves held.

# %%
breaks = balance_breaks(df, history=history)
display_exceptions(
    breaks,
    "balance_breaks",
    title="Balance breaks",
    key=["id", "field", "kind"],
    first=["currency", "difference", "expected", "reported"],
    sort=["kind", pl.col("difference").abs()],
    descending=[False, True],
    month=month,
    downloads=downloads,
    page="04_balance_checks.html",
    show_pii=show_pii,
    rows=60,
    empty="None this month: every checked balance follows the model.",
    population=int(summary["checked"].sum()),
    population_label="balance-after values checked",
)

# %% tags=["nbval-ignore-output"]
plot_balance(df, breaks, currency=currency);

# %% [markdown]
# ## What to look at

# %%
what_to_look_at(balance_findings(breaks, summary), show_pii=show_pii)
