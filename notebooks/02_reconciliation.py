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
# # 02 · Does the export match what we expected to be paid?
#
# **Question.** For every payment the merchant expected this month (its own record of orders),
# is there exactly one collection in the export with the same reference, currency, amount and
# status, and is every collection in the export expected?
#
# **Assumptions** (the interface document is silent on each):
# * orders and collections are matched on `transactionReference`; inside the month the order
#   date is shown but not compared (a payment can arrive on another day than the order);
# * at the month's ends, a payment is looked for a few days beyond the month (`date_tolerance`)
#   and so is an order: an order of the 31st paid after midnight is `paid_next_month` here and
#   `ordered_previous_month` in the next month's report, missing in neither;
# * amounts are compared exactly, as decimals, in the record's own currency, unless
#   `amount_tolerance` is set (then smaller differences are `amount_within_tolerance`);
# * a reference that occurs twice on either side is reported as `duplicate_reference`, before
#   any other difference;
# * only `collection` records are expected payments; transfers, settlements and conversions are
#   the merchant's own movements.
#
# The values used, and what they changed, are stated below the loading cell.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
orders = "auto"  # auto, sandbox, or a CSV or Parquet file of expected payments
orders_columns = None  # the file's columns: a preset (shopify, woocommerce, stripe) or a mapping
date_tolerance = 3  # days beyond the month in which a payment (or an order) is looked for
amount_tolerance = None  # None: exact; or e.g. "0.05" (or {"NGN": "1", "USD": "0.01"})
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: exception lists are written there as CSV and Excel

# %%
import polars as pl

import txkit.notebook
from txkit.analysis import describe_matching, reconcile, reconcile_summary
from txkit.analysis.reconcile import UNPAID_CATEGORIES
from txkit.notebook import count_by_currency
from txkit.notebook.findings import reconcile_findings
from txkit.notebook.plots import plot_reconciliation

# %%
out = txkit.notebook.outputs(month, "02_reconciliation.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
df = out.load_month()
around = out.load_margin(days=date_tolerance)
expected = out.load_orders(orders, margin_days=date_tolerance, columns=orders_columns)
out.as_run()  # with a warning when no order is dated in the month

# %%
records = df if around is None else pl.concat([df, around], how="diagonal_relaxed")
tolerances = {"date_tolerance": date_tolerance, "amount_tolerance": amount_tolerance}
result = reconcile(records, expected, month=month, **tolerances)
settings = describe_matching(result, month=month, **tolerances)
out.bullets("**Matching rules.**", settings)

# %% [markdown]
# ## Summary by category and currency
# Counts of references, and exact sums of both sides' amounts.

# %%
summary = reconcile_summary(result)
out.table(summary, key=["category", "currency"])

# %% tags=["nbval-ignore-output"]
plot_reconciliation(summary);

# %% [markdown]
# ## Every reference that does not agree
# Matched exactly, across the month's end or within the amount tolerance counts as agreeing;
# a payment attempt never paid that no order expects (`unpaid_attempt`: failed, declined,
# abandoned, expired) is counted in the summary above, not listed and outside the rate;
# every other reference is listed (and in the downloads).

# %%
reconciled = result.filter(~pl.col("category").cast(pl.String).is_in(UNPAID_CATEGORIES))
out.exceptions(result, "reconciliation_mismatches", rows=60,
               population=count_by_currency(reconciled), population_label="references")

# %% [markdown]
# ## What to look at

# %%
out.what_to_look_at(
    [*(f"Warning: {w}" for w in out.warnings), *reconcile_findings(result, summary), settings[0]]
)
