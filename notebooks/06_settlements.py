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
history_months = 1  # months before `month` loaded for the opening balances
show_pii = False  # True shows customer e-mails and account numbers unmasked
downloads = ""  # txkit report sets a folder: tables and exception lists are written there

# %%
import polars as pl
from IPython.display import Markdown, display

from txkit.analysis.settlements import match_settlements, settlement_summary
from txkit.analysis.wallet import wallet_differences, wallet_statement
from txkit.notebook import (
    as_run,
    display_exceptions,
    display_table,
    load_bank_statements,
    load_history,
    load_month,
    publish_table,
    what_to_look_at,
)
from txkit.notebook._close import (
    settlement_findings,
    wallet_findings,
    wallet_statement_lines,
)

df, info = load_month(month, source=source, store=store, version=version)
history, history_info = load_history(
    month, months=history_months, source=source, store=store, version=version
)
statement, bank_info = load_bank_statements(bank_statements, month, columns=bank_columns)
as_run(info, history_info, bank_info)

# %% [markdown]
# ## Wallet statement per currency
# Read like a bank statement: opening balance, the month's activity by category (money in
# positive, money out negative), the closing balance computed from them, the closing balance
# the month's last record reports, and the difference, which must be 0.

# %%
wallets = wallet_statement(df, month=month, history=history)
lines = wallet_statement_lines(wallets)
for (currency,), block in lines.group_by("currency", maintain_order=True):
    display(Markdown(f"**{currency}**"))
    display_table(block.select("line", "amount", "currency"), show_pii=show_pii, rows=20)
ties = ", ".join(
    f"{r['currency']} {r['difference']:,}" for r in wallets.iter_rows(named=True)
    if r["difference"] is not None
)
display(Markdown(f"**Difference of each statement:** {ties}."))
links = publish_table(
    wallets,
    "wallet_statement",
    title="Wallet statement",
    month=month,
    folder=downloads,
    page="06_settlements.html",
    show_pii=show_pii,
    headlines=[
        {
            "label": f"Wallet statement {r['currency']}: difference",
            "value": "not stated" if r["difference"] is None
            else f"{r['difference']:,} {r['currency']}",
            "look": r["difference"] != 0,
        }
        for r in wallets.iter_rows(named=True)
    ],
)
if links:
    display(Markdown(links))

# %% [markdown]
# ## What explains a difference
# The records the balance checks find (page 04) that move the statement: a record missing from
# the export (`chain_gap`: the reported balances include it, the export does not), or a wrong
# value at the month's last record or at the opening record. A wrong value in the middle of
# the month is undone by the next record and changes no statement.

# %%
display_table(
    wallet_differences(df, month=month, history=history),
    show_pii=show_pii,
    key=["currency", "side", "id"],
    empty="None: every wallet ties out.",
)

# %% [markdown]
# ## Settlements against the bank statement
# One row per settlement of the month (and per earlier settlement credited in it) and per
# bank credit of the month that matches none. `rule` says how each was matched; `candidates`
# lists the credits considered.

# %%
if statement is None:
    settlements = None
    display(Markdown(f"**{bank_info.note}.**"))
else:
    records = df if history is None else pl.concat([history, df], how="diagonal_relaxed")
    settlements = match_settlements(
        records,
        statement,
        month=month,
        date_tolerance=date_tolerance,
        amount_tolerance=amount_tolerance,
    )
    display_table(
        settlement_summary(settlements), show_pii=show_pii, key=["category", "currency"]
    )
    links = publish_table(
        settlements,
        "settlements",
        title="Settlements and bank credits",
        month=month,
        folder=downloads,
        page="06_settlements.html",
        show_pii=show_pii,
    )
    if links:
        display(Markdown(links))

# %% [markdown]
# ## Every settlement or credit that needs a look
# Matched ones and those arriving after the month's end (timing: they clear by themselves)
# are in the download above; everything else is listed here and in the exception downloads.

# %%
if settlements is not None:
    display_exceptions(
        settlements.filter(~pl.col("category").cast(pl.String).is_in(["matched",
                                                                       "timing_next_month"])),
        "settlement_exceptions",
        title="Settlement exceptions",
        key=["reference", "bank_line", "category"],
        first=["currency", "difference", "settlement_amount", "bank_amount", "settlement_date",
               "bank_date", "rule", "note"],
        sort=["category", "currency"],
        month=month,
        downloads=downloads,
        page="06_settlements.html",
        show_pii=show_pii,
        rows=40,
        empty="None this month: every settlement reached the bank in full, once.",
        population=settlements.height,
        population_label="settlements and credits",
    )

# %% [markdown]
# ## What to look at

# %%
what_to_look_at(
    [*wallet_findings(wallets),
     *settlement_findings(settlements if settlements is not None else pl.DataFrame(), statement)],
    show_pii=show_pii,
)
