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
# # 02 · Does the export match what we expected to be paid?
#
# **Question.** For every payment the merchant expected this month (its own record of orders),
# is there exactly one collection in the export with the same reference, currency, amount and
# status, and is every collection in the export expected?
#
# **Assumptions** (the interface document is silent on each):
# * orders and collections are matched on `transactionReference`; the order date is shown but
#   not compared (a payment can arrive on another day than the order);
# * amounts are compared exactly, as decimals, in the record's own currency;
# * a reference that occurs twice on either side is reported as `duplicate_reference`, before
#   any other difference;
# * only `collection` records are expected payments; transfers, settlements and conversions are
#   the merchant's own movements.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = "data/store"  # the local Parquet store, read when source is store
orders = "auto"  # auto, sandbox, or a CSV or Parquet file of expected payments
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: exception lists are written there as CSV and Excel

# %%
from txkit.analysis import reconcile, reconcile_summary
from txkit.findings import reconcile_findings
import polars as pl

from txkit.notebook import display_exceptions, display_table, load_month, load_orders, what_to_look_at
from txkit.plots import plot_reconciliation

df, info = load_month(month, source=source, store=store)
expected, origin = load_orders(orders, month)
print(origin)
info

# %% [markdown]
# ## Summary by category and currency
# Counts of references, and exact sums of both sides' amounts.

# %%
result = reconcile(df, expected)
summary = reconcile_summary(result)
display_table(summary, show_pii=show_pii, key=["category", "currency"])

# %% tags=["nbval-ignore-output"]
plot_reconciliation(summary);

# %% [markdown]
# ## Every reference that does not match

# %%
display_exceptions(
    result.filter(result["category"] != "matched"),
    "reconciliation_mismatches",
    title="Reconciliation mismatches",
    key=["reference", "category"],
    first=["difference", "export_amount", "order_amount", "export_currency", "order_currency",
           "export_status", "order_status"],
    sort=["category", pl.col("difference").abs()],
    descending=[False, True],
    month=month,
    downloads=downloads,
    page="02_reconciliation.html",
    show_pii=show_pii,
    rows=60,
    empty="None this month: every reference matches.",
    population=result.height,
    population_label="references",
)

# %% [markdown]
# ## What to look at

# %%
what_to_look_at(reconcile_findings(result, summary), show_pii=show_pii)
