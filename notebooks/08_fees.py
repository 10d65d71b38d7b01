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
# # 08 · Were fees and tax charged by one rule?
#
# **Question.** For every successful record of the month, is the `feeAmount` what its
# transaction type and currency charge everywhere else, and is the `taxAmount` the currency's
# rate of that fee? Which records break the rule, by how much?
#
# **Assumptions** (neither the interface document nor the provider's notes state a fee
# schedule or a tax rate, so both are read from the month's records, as the balance model is):
# * a group (transaction type and currency) charges either one flat fee or a percentage of
#   `toAmount`, possibly capped; a currency's tax is a percentage of the fee;
# * the rule is the one that explains the most records of the group within half a cent (any
#   rounding of the exact value); it is used only when it explains at least 90 % of them, and a
#   group no rule explains is named below, not checked;
# * a record with a wrong fee carries the tax of that fee: it is a fee mismatch only;
# * amounts are exact decimals, never added across currencies.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: exception lists are written there as CSV and Excel

# %%
from IPython.display import Markdown, display

import txkit.notebook
from txkit.analysis import fee_rules, fee_tax_mismatches
from txkit.notebook import what_to_look_at
from txkit.notebook.findings_fees import fee_findings

out = txkit.notebook.outputs(month, "08_fees.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
df = out.load_month()
out.as_run()

# %% [markdown]
# ## The rules the records follow
# Per transaction type and currency, and the tax per currency: how many successful records
# each rule explains.

# %%
rules = fee_rules(df)
display(Markdown("\n".join(f"* {r if isinstance(r, str) else r.describe()}" for r in rules)))

# %% [markdown]
# ## Every fee or tax that breaks its rule
# `expected` is the rule's exact value, `difference` = reported − expected.

# %%
mismatches = fee_tax_mismatches(df, rules)
out.exceptions(
    mismatches, "fee_tax_mismatches", rows=30,
    population=sum(r.records for r in rules if not isinstance(r, str) and r.kind == "fee"),
    population_label="successful records with a fee",
)

# %% [markdown]
# ## What to look at

# %%
what_to_look_at(fee_findings(mismatches, rules), show_pii=show_pii)
