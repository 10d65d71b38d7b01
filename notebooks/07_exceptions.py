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
#     after_others: true
# ---

# %% [markdown]
# # 07 · Which exceptions are open, how old are they, and who owns them?
#
# **Question.** Across every month reported so far, which exceptions (reconciliation
# mismatches, flagged payments, balance breaks, balances not reported, settlement and wallet
# items) are still open, how old is each, which of them are material, who owns them, and what
# did this month resolve?
#
# **Assumptions** (docs/register.md):
# * the exception register keeps every item a report ever listed, by a stable key; an item
#   stays open until a later report finds it gone (a record arrived, a status changed: each
#   report recomputes the earlier months whose records or orders changed) or an analyst
#   resolves or writes it off;
# * an item's age counts from its own date (the record's or the order's) to the month's end,
#   in the buckets 0-30, 31-60, 61-90 and 90+ days;
# * an item is material when its amount reaches the greater of a fixed amount per currency and
#   a share of its section's listed volume that month (`materiality.toml`); amounts are exact
#   and never added across currencies.
#
# In a report this page shows the register with the month's own lists; elsewhere it reads the
# store's register (`source = "store"`) or, by default, builds one from the months up to
# `month` in a temporary store, so that the page shows the same on every machine.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC: the register as of this month's report
source = "auto"  # store: the store's register; auto: build one from the sandbox or service
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
orders = "auto"  # the orders the reconciliation reads (auto, sandbox, or a CSV/Parquet file)
orders_columns = None  # their columns: a preset (shopify, woocommerce, stripe) or a mapping
months = 3  # months up to `month` a built register records
older_than = 60  # days after which a material item without an explanation is flagged
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: this month's lists are read from it

# %%
import txkit.notebook
from txkit.notebook import (
    display_table,
    load_register,
    owner_counts,
    register_findings,
    what_to_look_at,
)
from txkit.register import bucket_counts, explain, filter_items

# %%
register = load_register(month, source=source, store=store, version=version, orders=orders,
                         downloads=downloads, months=months,
                         orders_columns=orders_columns)  # fmt: skip
view = register.view
out = txkit.notebook.outputs(month, "07_exceptions.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
built = "a temporary one, built for this page" if register.demo else None
out.as_run(register.info, store_label=built)

# %% [markdown]
# ## How old are the open items?
# Open or explained items per section, by age bucket; `material` counts those at or above
# the threshold.

# %%
display_table(bucket_counts(view), show_pii=show_pii, key=["section"])

# %% [markdown]
# ## Material items past the age limit
# Older than `older_than` days (a parameter), the oldest first; `explanation` is what an
# analyst wrote (carried over every month).

# %%
stale = filter_items(view, still_open=True, material=True, older_than=older_than)
display_table(
    stale.select("key", "section", "amount", "currency", "first_month", "age_days", "status",
                 "category", "owner", "explanation"),
    show_pii=show_pii, rows=15, key=["key"], sort=["age_days"], descending=True,
    empty=f"None: no material item is older than {older_than} days.",
)  # fmt: skip

# %% [markdown]
# ## Who owns them?
# Open items per owner; `(none)`: nobody is assigned yet.

# %%
display_table(owner_counts(view), show_pii=show_pii, key=["owner"])

# %% [markdown]
# ## Explaining an item
# `explain` (as `txkit exceptions explain KEY --category --owner --note`) sets an item's
# category, owner and explanation; the register keeps who changed what when. Shown here on
# the temporary register built for this page only (written by "notebook 07", not a person):
# a register you keep is annotated by its analysts.

# %%
if register.demo:
    oldest = stale.sort("age_days", "key", descending=[True, False])["key"][0]
    done = explain(register.store, oldest, category="investigate", owner="example",
                   actor="notebook 07 (example)", note="example: ask the provider")  # fmt: skip
    display_table(done.select("key", "status", "category", "owner", "explanation", "changed_by"),
                  show_pii=show_pii, key=["key"])  # fmt: skip
    view = register.reload()

# %% [markdown]
# ## Resolved in the month, and by what

# %%
resolved = view.filter(view["resolved_month"] == month)
display_table(
    resolved.select("key", "section", "first_month", "status", "resolved_by"),
    show_pii=show_pii, rows=15, key=["key"],
    empty=f"None: no item of an earlier month cleared in {month}.",
)  # fmt: skip

# %% [markdown]
# ## What to look at

# %%
what_to_look_at(register_findings(view, month, older_than=older_than), show_pii=show_pii)
