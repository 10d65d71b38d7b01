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
# # 06 · Does the month close: do the wallets tie out, and did every settlement reach the bank?
#
# **Question.** For each wallet, does the opening balance plus the month's activity equal the
# closing balance the records report? And did every settlement (a payout from the wallet to
# the merchant's bank account) arrive at the bank, in full, once?
#
# **Assumptions** (the interface document is silent on each):
# * the wallet statement follows the balance model the balance checks choose per wallet
#   (page 04); the opening balance is the one reported by the wallet's last record before the
#   month (the month before is loaded as history), never assumed 0; rolling reserves move the
#   available balance only;
# * a settlement's `toAmount` in `toCurrency` is what the bank should credit; its fee is taken
#   from the wallet, not from the credit;
# * a settlement matches a bank credit first by its reference (as the credit's reference or a
#   word of its narration), else by exact amount and currency from the day before it to
#   `date_tolerance` business days after it; when several credits or settlements fit, the set
#   is `ambiguous` and listed for a person, never chosen;
# * a credit reversed by the bank (MT940 `RC`, camt.053 `RvslInd`, or a debit of the same
#   amount and reference) is no credit.
#
# The statements read, and what they cover, are stated below the loading cell.

# %% tags=["parameters"]
month = "2026-10"  # YYYY-MM, UTC
source = "auto"  # auto: the service when TXKIT_SECRET_KEY is set, else the sandbox; or store
store = None  # the store (folder or s3:// URI) read when source is store; None: the source's
version = None  # the store's table version to read (None: the newest; txkit report --as-of)
bank_statements = "auto"  # auto, sandbox, or a list of CSV / MT940 / camt.053 files
bank_columns = None  # the column mapping of a CSV statement (None: TXKIT_BANK_COLUMNS)
date_tolerance = 3  # business days after a settlement in which its credit is looked for
amount_tolerance = None  # None: exact (unless the reference matches); or e.g. "100"
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: tables and exception lists are written there

# %%
import polars as pl

import txkit.notebook
from txkit.analysis.settlements import match_settlements, settlement_summary
from txkit.analysis.wallet import wallet_statement_and_differences
from txkit.notebook._close import wallet_differences_line, wallet_headlines, wallet_statement_lines
from txkit.notebook.findings import (
    settlement_findings,
    wallet_differences_totals,
    wallet_findings,
)

# %%
out = txkit.notebook.outputs(month, "06_settlements.html", source=source, store=store,
                             version=version, show_pii=show_pii, downloads=downloads)
df = out.load_month()
history = out.load_history(months=1)  # the month before: each wallet's opening balance
statement = out.load_bank_statements(bank_statements, columns=bank_columns)
out.as_run()

# %% [markdown]
# ## Wallet statement per currency
# Read like a bank statement: opening balance, the month's activity by category (money in
# positive, money out negative), the closing balance computed from them, the closing balance
# the month's last record reports, and the difference, which must be 0.

# %%
# The statement and the records behind its differences (shown below), read at once.
wallets, differences = wallet_statement_and_differences(df, month=month, history=history)
for (currency,), block in wallet_statement_lines(wallets).group_by("currency", maintain_order=True):
    out.markdown(f"**{currency}**")
    out.table(block.select("line", "amount"), rows=20)  # the currency is the heading
out.markdown(wallet_differences_line(wallets))
out.download(wallets, "wallet_statement", title="Wallet statement",
             headlines=wallet_headlines(wallets))

# %% [markdown]
# ## What explains a difference
# The records the balance checks find (page 04) that move the statement: a record missing from
# the export (`chain_gap`: the reported balances include it, the export does not), or a wrong
# value at the month's last record or at the opening record. A wrong value in the middle of
# the month is undone by the next record and changes no statement.
#
# Each record is listed once, on the side page 04 gives it: the `ledger` rows add to the
# ledger difference; the available balance is the ledger less the reserves held, so a ledger
# row moves it too, and the `ledger` and `available` rows together add to the available
# difference.

# %%
out.table(differences, key=["currency", "side", "id"], empty="None: every wallet ties out.")
out.markdown(wallet_differences_totals(differences, wallets))

# %% [markdown]
# ## Settlements against the bank statement
# One row per settlement of the month (and per earlier settlement credited in it) and per
# bank credit of the month that matches none. `rule` says how each was matched; `candidates`
# lists the credits considered.

# %%
if statement is None:
    settlements = None
    out.markdown(f"**{out.loaded('bank').note}.**")
else:
    records = df if history is None else pl.concat([history, df], how="diagonal_relaxed")
    settlements = match_settlements(records, statement, month=month, date_tolerance=date_tolerance,
                                    amount_tolerance=amount_tolerance)
    out.table(settlement_summary(settlements), key=["category", "currency"])
    out.download(settlements, "settlements", title="Settlements and bank credits")

# %% [markdown]
# ## Every settlement or credit that needs a look
# Matched ones and those arriving after the month's end (timing: they clear by themselves)
# are in the download above; everything else is listed here and in the exception downloads.

# %%
if settlements is not None:
    out.exceptions(settlements, "settlement_exceptions", rows=40,
                   population=settlements.height, population_label="settlements and credits")

# %% [markdown]
# ## What to look at

# %%
out.what_to_look_at(
    [*wallet_findings(wallets),
     *settlement_findings(settlements if settlements is not None else pl.DataFrame(), statement,
                         month=month)]
)
