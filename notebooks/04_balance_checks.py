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
# # 04 · Do the balance-after fields add up?
#
# **Question.** Every successful record reports the wallet's balance after it. Does each
# value follow from the previous one and the record's own amounts, and does the available
# balance equal the ledger minus the rolling reserves still held?
#
# The balance model is not in the interface document, so it is tested, not assumed: how, and
# what counts as a break, is at the end of this page ("How the balances are checked").

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
currency = "NGN"  # the wallet to plot
history_months = 1  # months before `month` loaded to anchor the chains (0: the month alone)
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: exception lists are written there as CSV and Excel

# %%
import polars as pl

import txkit.notebook
from txkit.analysis import (
    balance_model_choice,
    balance_model_fit,
    balance_summary_and_breaks,
    describe_balance_models,
    not_reported_balances,
)

# %%
from txkit.notebook.findings import balance_findings
from txkit.notebook.plots import plot_balance

out = txkit.notebook.outputs(month, "04_balance_checks.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
df = out.load_month()
history = out.load_history(months=history_months)
out.as_run()

# %% [markdown]
# ## Which balance model fits each wallet
# `checked`: pairs of consecutive reported ledger values tested (with the history); `fitting`:
# pairs the candidate explains exactly (one wrong value costs one pair, as a missing record
# does); the chosen model is the best fit if it explains at least 95 % of the pairs.

# %%
fit = balance_model_fit(df, history=history)
choice = balance_model_choice(fit)
out.table(fit)
out.table(choice)
model_line = describe_balance_models(choice)
out.markdown(f"**Assumed from the data.** {model_line}")

# %% [markdown]
# ## Checked, unverifiable, not reported and broken values per wallet
# `unverifiable` includes the `not_reported` values (balance-after fields all 0 or absent).

# %%
# The summary and the breaks (listed below) from one run of the checks.
summary, breaks = balance_summary_and_breaks(df, history=history, model=choice)
out.table(summary)

# %% [markdown]
# ## Every break
# `chain_gap`: the ledger jumps by what a missing record would explain (look for a record the
# export lacks just before); `bad_value`: one value is off and the chain resumes after it;
# `reserve_mismatch`: available ≠ ledger − reserves held. `model` is the wallet's model.

# %%
out.exceptions(
    breaks, "balance_breaks", rows=60,
    population=int(summary["checked"].sum()), population_label="balance-after values checked",
)

# %% tags=["nbval-ignore-output"]
plot_balance(df, breaks, currency=currency);

# %% [markdown]
# ## Balance-after values not reported
# Successful records whose four balance-after fields are all 0 or absent: they state no
# balance, so they are counted as `not_reported` above, never as breaks.

# %%
out.exceptions(
    not_reported_balances(df), "not_reported_balances",
    population=int(summary.filter(pl.col("side") == "ledger")["entries"].sum()),
    population_label="wallet entries of successful records (a conversion has two)",
)

# %% [markdown]
# ## What to look at

# %%
findings = balance_findings(breaks, summary)
out.what_to_look_at([*findings[:1], model_line, *findings[1:]])

# %% [markdown]
# ## How the balances are checked
#
# **The balance model** is not in the interface document, so it is tested, not assumed.
# Common to every candidate:
# * one wallet per currency; records in `createdAt` order, then `id`; only `successful` records
#   move balances;
# * a collection adds to the `toCurrency` wallet (`toBalanceAfterLedger`); a transfer or
#   settlement takes from it (`fromBalanceAfterLedger`); a conversion takes `fromAmount` from
#   the `fromCurrency` wallet and adds to the `toCurrency` wallet;
# * available = ledger − reserves held (a collection's `rollingReserve.amount` from its
#   `createdAt` until `reserveReleaseDate`).
#
# The candidates differ in what fees and tax do: `net` (in: `toAmount − feeAmount −
# taxAmount`, out: `toAmount + feeAmount + taxAmount`), `fee-only` (the tax is included in the
# fee: `toAmount ∓ feeAmount`) and `gross` (fees outside the wallet: `toAmount`). Each wallet
# is checked under the candidate that explains at least 95 % of its consecutive values; where
# none does, the wallet is reported as such and none of its values is called a break.
#
# A record whose balance-after fields are all 0 or absent states no balance (the provider
# documents such a KES transfer): it is counted as **not reported**, never as a break, and the
# chain carries on through it by the record's own amounts.
#
# The month before is loaded as **history** (`history_months`): its records anchor each
# wallet's chain and show which rolling reserves are still held when the month starts, so the
# month's first values are checked too; breaks are reported for the month only. Without
# history (`history_months = 0`, or a store that lacks the month before), each wallet's first
# value anchors its chain and reserves from earlier months are unknown: those values are
# counted as unverifiable, never as breaks. Arithmetic is exact (integer minor units).
