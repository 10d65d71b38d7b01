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
# # 01 · What is in this month's export?
#
# **Question.** Before any reconciliation: how many transactions of each type, status and
# currency does the month hold, how is the volume spread over the days, and what did fees and
# taxes cost?
#
# **Assumptions** (the interface document is silent on each):
# * a "month" is the UTC calendar month of `createdAt`; txkit asks the service for a day more
#   on each side and filters locally, so inclusive, exclusive or timezone-shifted date bounds on
#   the server do not change the result;
# * amounts are in major units of `toCurrency`, as given (never rounded, never floats);
# * only `successful` records count as volume; other statuses are shown in the mix.
#
# The export is verified against the service's own `total` before anything below runs.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
currency = "NGN"  # the currency of the volume plot
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: cut tables are written there whole (CSV, Excel)

# %%
import txkit.notebook
from txkit.analysis import overview
from txkit.notebook import display_table, publish_table, what_to_look_at
from txkit.notebook.plots import plot_daily_volume, plot_status_mix

out = txkit.notebook.outputs(month, "01_explore.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
df = out.load_month()
out.as_run()

# %% [markdown]
# ## Volumes by type and currency, then the status mix
# Counts and amounts are exact sums of the export's decimals (all statuses). Fees and taxes are
# below, of the successful records only, as the close summary counts them (a failed record's
# fee is never charged).

# %%
volumes = overview.volume_summary(df, by=("transType", "toCurrency")).drop("fees", "taxes")
display_table(volumes, show_pii=show_pii)

# %%
mix = overview.status_mix(df)
display_table(mix, show_pii=show_pii)

# %% tags=["nbval-ignore-output"]
plot_status_mix(mix);

# %% [markdown]
# ## Volume per day

# %%
daily = overview.daily_volume(df)
written = publish_table(
    daily, "daily_volume", title="Volume per day", month=month, folder=downloads,
    page="01_explore.html", show_pii=show_pii,
)
shown = daily.filter(daily["currency"] == currency)
display_table(shown, show_pii=show_pii, rows=10, download="daily_volume" if written else None)
# The table is one currency's; the download every currency's: say which holds what.
out.markdown(f"The table shows {currency} ({shown.height:,} rows); the download holds every "
             f"currency's days ({daily.height:,} rows).")

# %% tags=["nbval-ignore-output"]
plot_daily_volume(daily, currency=currency);

# %% [markdown]
# ## Fees and taxes
# Of the successful records (the close summary's fees and tax, per currency). `fee_rate` is
# fees over amount, `tax_rate` taxes over fees (VAT is usually 7.5% of the fee).

# %%
display_table(overview.fee_summary(df), show_pii=show_pii)

# %% [markdown]
# ## A sample of records (customer data masked unless `show_pii`)

# %%
display_table(
    df.select("id", "createdAt", "transType", "status", "toAmount", "toCurrency",
              "customerEmail", "meta.accountNumber", "meta.bankName").tail(5),
    show_pii=show_pii,
)

# %% [markdown]
# ## What to look at

# %%
what_to_look_at(overview.explore_findings(df), show_pii=show_pii)
