"""What notebook 06 (closing the month) needs: the bank statements, table downloads, and
its "what to look at" sentences.

* :func:`load_bank_statements`: the statements given (``sandbox``: the embedded sandbox's own
  statements of the month and the month after it), read and checked by
  :func:`txkit.inputs.read_statements`, with a line saying what was read;
* :func:`publish_table`: a whole table (the wallet statement, every settlement) written as
  CSV and Excel beside the report's pages, with the index's headline figures; exception lists
  keep :func:`~txkit.notebook.display_exceptions` (open items against last month);
* :func:`wallet_findings`, :func:`settlement_findings`: the sentences, with exact amounts;
* :func:`wallet_differences_line`, :func:`wallet_headlines`: each statement's difference, as
  the page's line and as the index's headline figures.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from txkit._scrub import scrub_frame
from txkit.analysis.wallet import DIFFERENCE_SIGN
from txkit.calendar import month_bounds, next_month, parse_month
from txkit.config import key_configured, project_path, shown_path
from txkit.fetch.source import sandbox_files
from txkit.inputs import BankStatement, read_statements
from txkit.inputs.columns import BANK, column_setting
from txkit.money import format_money, format_sums
from txkit.notebook._downloads import MANIFEST, _for_files
from txkit.notebook._load import LoadInfo
from txkit.output import atomic_path, csv_safe, ordered, write_xlsx
from txkit.privacy import mask_pii
from txkit.register import ITEMS_SUFFIX, wallet_items

__all__ = [
    "load_bank_statements",
    "publish_table",
    "resolve_bank_statements",
    "sandbox_statements",
    "settlement_findings",
    "wallet_differences_line",
    "wallet_findings",
    "wallet_headlines",
    "wallet_statement_lines",
]

_SANDBOX_FORMAT = ".camt053.xml"


def sandbox_statements(month: str) -> list[str]:
    """The embedded sandbox's camt.053 statements of ``month`` and of the month after it."""
    month = parse_month(month)
    nxt = next_month(month)
    folder = sandbox_files() / "bank"
    return [
        str(folder / f"statement_{m}{_SANDBOX_FORMAT}")
        for m in (month, nxt)
        if (folder / f"statement_{m}{_SANDBOX_FORMAT}").is_file()
    ]


def resolve_bank_statements(
    bank_statements: str | Sequence[str] | None,
) -> str | Sequence[str] | None:
    """``auto`` made what it means here: none with a key configured (the service's data is
    not checked against the sandbox's bank), ``sandbox`` without; anything else as given. A
    report resolves it in its own process and hands the kernels the result: they are given
    no key, and would take the sandbox's statements for the service's month."""
    if bank_statements == "auto":
        return None if key_configured() else "sandbox"
    return bank_statements


def load_bank_statements(
    bank_statements: str | Sequence[str] | None,
    month: str,
    *,
    columns: str | Mapping[str, str] | None = None,
) -> tuple[BankStatement | None, LoadInfo]:
    """The merchant's bank statements for ``month``'s settlements.

    Args:
        bank_statements: ``auto`` (none with a key configured: pass them; the sandbox's
            without), ``sandbox``, a path, or a list of paths (CSV, MT940, camt.053, OFX, PDF; the
            month's statement and the next month's, where its last settlements arrive).
        month: ``YYYY-MM``.
        columns: a CSV statement's column mapping (default: ``TXKIT_BANK_COLUMNS``, else the
            ``[bank]`` section of ``txkit.toml``).

    Returns:
        The statements (None when none is given) and a :class:`LoadInfo` whose line says
        what was read.

    Raises:
        DataFileError: a statement cannot be read as it is (its line and what to do).
    """
    month = parse_month(month)
    bank_statements = resolve_bank_statements(bank_statements)
    origin = ""
    if bank_statements == "sandbox":
        paths = sandbox_statements(month)
        origin = f"the embedded sandbox's bank account ({shown_path(sandbox_files() / 'bank')}/): "
    elif isinstance(bank_statements, str):
        paths = [str(project_path(bank_statements))]
    else:
        paths = [str(project_path(p)) for p in bank_statements or []]
    first, last = month_bounds(month)
    if not paths:
        note = (
            "Bank statements: none given, so settlements are not checked against the bank "
            "(txkit report --bank-statement FILE, or the notebook's bank_statements)"
        )
        return None, LoadInfo(
            month=month, first=None, last=None, source="", rows=0, kind="bank", note=note,
            warnings=(note,),
        )  # fmt: skip
    statement = read_statements(paths, columns=column_setting(BANK, columns))
    note = origin + statement.describe()
    return statement, LoadInfo(
        month=month, first=first, last=last, source=origin or "files",
        rows=statement.entries.height, kind="bank", note=note,
    )  # fmt: skip


def publish_table(
    df: pl.DataFrame,
    name: str,
    *,
    title: str,
    month: str,
    folder: str | os.PathLike[str] | None,
    page: str = "",
    show_pii: bool = False,
    headlines: Sequence[dict[str, Any]] = (),
    first: Sequence[str] = (),
) -> str | None:
    """Write a whole table (not an exception list) as CSV and Excel into the report.

    Masked and scrubbed like the exception lists; recorded in ``NAME.download.json`` with
    ``kind: table``, its rows and the index's ``headlines`` (``label``, ``value``, ``change``,
    ``look``); ``first`` names the columns the Excel sheet shows first. Returns the links as
    Markdown, or None outside a report.
    """
    if not folder:
        return None
    month = parse_month(month)
    folder = Path(folder)
    shown = df if show_pii else mask_pii(df)
    assert isinstance(shown, pl.DataFrame)
    shown, _ = scrub_frame(shown, where=f"the report's {name} download")
    # The CSV and the workbook in one column order.
    files = csv_safe(ordered(_for_files(shown), first, ("key",)))
    with atomic_path(folder / f"{name}.csv") as tmp:
        files.write_csv(tmp)
    with atomic_path(folder / f"{name}.xlsx") as tmp:
        write_xlsx(files, tmp, sheet=name, first=files.columns, last=())
    entry = {
        "name": name,
        "kind": "table",
        "title": title,
        "page": page,
        "csv": f"{name}.csv",
        "xlsx": f"{name}.xlsx",
        "rows": df.height,
        "month": month,
        "headlines": list(headlines),
    }
    if name == "wallet_statement" and "difference" in df.columns:
        # A wallet that does not tie out is an exception of the register (txkit.register).
        with atomic_path(folder / f"{name}{ITEMS_SUFFIX}") as tmp:
            wallet_items(df, month).write_parquet(tmp)
    with atomic_path(folder / f"{name}{MANIFEST}") as tmp:
        tmp.write_text(json.dumps(entry, indent=1, sort_keys=True), encoding="utf-8")
    return f"{title}: {df.height:,} rows. Download: [CSV]({name}.csv) · [Excel]({name}.xlsx)"


def wallet_differences_line(statement: pl.DataFrame) -> str:
    """The page's line under the statements: each stated wallet's difference (``0.00 NGN, ...``)."""
    ties = ", ".join(
        format_money(r["difference"], r["currency"])
        for r in statement.iter_rows(named=True)
        if r["difference"] is not None
    )
    if not ties:  # never "Difference of each statement: ."
        return "**Difference of each statement:** none could be computed (no wallet stated)."
    return f"**Difference of each statement** ({DIFFERENCE_SIGN}): {ties}."


def wallet_headlines(statement: pl.DataFrame) -> list[dict[str, Any]]:
    """The index's headline figures of the wallet statement: each wallet's difference, to be
    looked at unless it is 0 (a statement that cannot be stated is looked at too)."""
    return [
        {
            "label": f"Wallet statement {r['currency']}: difference ({DIFFERENCE_SIGN})",
            "value": "not stated"
            if r["difference"] is None
            else format_money(r["difference"], r["currency"]),
            "look": r["difference"] != 0,
        }
        for r in statement.iter_rows(named=True)
    ]


#: One record behind a statement's difference, as :func:`txkit.analysis.wallet` lists it.
_EXPLAINED = re.compile(r"(?P<id>\S+) (?P<kind>\S+) \((?P<where>[^,()]+), (?P<side>\w+)\)")
#: Records a sentence names before it says "and N more".
_NAMED = 5


def _explained_once(text: str | None) -> str:
    """Each once, the first :data:`_NAMED` by id; other text (``rounding``) as is. A ledger break
    moves available too (available = ledger - reserves held)."""
    entries = (text or "").split("; ")
    found = [_EXPLAINED.fullmatch(e) for e in entries]
    if not text or not all(found):
        return text or ""
    sides: dict[tuple[str, str, str], list[str]] = {}
    for m in found:
        assert m is not None
        sides.setdefault((m["id"], m["kind"], m["where"]), []).append(m["side"])
    shown = [
        f"{id_} {kind} ({where}{', available only' if set(s) == {'available'} else ''})"
        for (id_, kind, where), s in list(sides.items())[:_NAMED]
    ]
    more = len(sides) - len(shown)
    if more:
        shown.append(f"{more:,} more (04's balance breaks list each)")
    return f"{len(sides):,} record(s): " + "; ".join(shown) if len(sides) > 1 else shown[0]


def wallet_findings(statement: pl.DataFrame) -> list[str]:
    """One sentence per wallet whose statement does not tie out (or cannot be stated), and
    one for those that do."""
    out = []
    tied = []
    for row in statement.iter_rows(named=True):
        currency = row["currency"]
        if row["difference"] is None:
            out.append(f"Wallet {currency}: not stated ({row['note']}).")
        elif row["difference"] != 0:
            out.append(
                f"Wallet {currency} does not tie out: the closing balance reported is "
                f"{format_money(row['closing_reported'], currency)}, the month's records make it "
                f"{format_money(row['closing_computed'], currency)}; difference "
                f"{format_money(row['difference'], currency)}, explained by "
                f"{_explained_once(row['explained_by'])}."
                + (
                    f" Unexplained: {format_money(row['unexplained'], currency)}."
                    if row["unexplained"]
                    else ""
                )
            )
        else:
            tied.append(currency)
        if row["available_difference"] not in (None, 0) and row["difference"] == 0:
            out.append(
                f"Wallet {currency}: the available balance differs by "
                f"{format_money(row['available_difference'], currency)} "
                f"({_explained_once(row['explained_by'])})."
            )
    if tied:
        out.insert(0, f"Wallets that tie out to 0.00 (opening + activity = closing): "
                   f"{', '.join(tied)}.")  # fmt: skip
    return out


_SETTLEMENT_MEANING = {
    "amount_differs": "credited with another amount",
    "missing_in_bank": "not found on the bank statement",
    "unknown_credit": "bank credit(s) that match no settlement",
    "duplicate_credit": "credited more than once",
    "ambiguous": "with several candidate credits, listed for a person to choose",
}


def settlement_findings(
    result: pl.DataFrame, statement: BankStatement | None, *, month: str | None = None
) -> list[str]:
    """The settlements' sentences: how many matched, then each exception with its amounts.

    ``month`` (``YYYY-MM``, the one :func:`txkit.analysis.match_settlements` was given): the
    month's settlements are counted apart from earlier months' credited in it (a September
    settlement credited in October is not one of October's, on either side of the count)."""
    if statement is None:
        return [
            "No bank statement was given: the month's settlements were not checked against "
            "the bank (txkit report --bank-statement FILE)."
        ]
    earlier = pl.lit(value=False)
    if month is not None and "settlement_date" in result.columns:
        earlier = pl.col("settlement_date").cast(pl.Date) < month_bounds(month)[0]
    ours = result.filter(~earlier.fill_null(value=False))
    before = result.filter(earlier.fill_null(value=False) & pl.col("settlement_id").is_not_null())
    counts = dict(ours.group_by(pl.col("category").cast(pl.String)).len().iter_rows())
    settled = ours.filter(pl.col("settlement_id").is_not_null()).height
    of_month = "settlements of the month" if month is not None else "settlements"
    out = (
        [f"{counts.get('matched', 0):,} of {settled:,} {of_month} reached the bank in full "
         "within the month."]
        if settled
        else ["No settlement to check against the bank this month."]
    )  # fmt: skip
    if before.height:
        one = before.height == 1
        out.append(
            f"{before.height:,} {'settlement' if one else 'settlements'} of earlier months "
            f"{'was' if one else 'were'} credited in the month "
            f"({format_sums(before, 'settlement_amount')}; not counted above)."
        )
    if counts.get("timing_next_month"):
        out.append(
            f"{counts['timing_next_month']:,} arrived after the month's end (timing: clears by "
            "itself, no entry)."
        )
    for category, meaning in _SETTLEMENT_MEANING.items():
        rows = result.filter(pl.col("category") == category)
        if rows.height == 0:
            continue
        column = "bank_amount" if category == "unknown_credit" else "settlement_amount"
        if category == "amount_differs":
            column = "difference"
        amounts = format_sums(rows, column)
        out.append(f"{rows.height:,} {meaning} ({amounts}).")
    return out


_LINES = (
    ("opening_ledger", "Opening ledger balance (last record before the month)"),
    ("collections", "Collections (money in)"),
    ("transfers", "Transfers (money out)"),
    ("settlements", "Settlements to the bank (money out)"),
    ("conversions_in", "Conversions in"),
    ("conversions_out", "Conversions out"),
    ("fees", "Fees"),
    ("tax", "Tax on fees"),
    ("closing_computed", "Closing balance computed"),
    ("closing_reported", "Closing balance reported by the last record"),
    ("difference", f"Difference ({DIFFERENCE_SIGN})"),
    ("opening_available", "Opening available balance"),
    ("reserves_held", "Rolling reserves held"),
    ("reserves_released", "Rolling reserves released"),
    ("closing_available_computed", "Closing available computed"),
    ("closing_available_reported", "Closing available reported"),
    ("available_difference", f"Available difference ({DIFFERENCE_SIGN})"),
)


def wallet_statement_lines(statement: pl.DataFrame) -> pl.DataFrame:
    """The wallet statement as a bank statement reads: one line per figure, per currency
    (``currency``, ``line``, ``amount``), the ledger first, then the available balance."""
    rows = [
        {"currency": r["currency"], "line": label, "amount": r[column]}
        for r in statement.iter_rows(named=True)
        for column, label in _LINES
    ]
    scale = next((d.scale for d in statement.schema.values() if isinstance(d, pl.Decimal)), 2)
    return pl.DataFrame(
        rows,
        schema={"currency": pl.String, "line": pl.String, "amount": pl.Decimal(38, scale)},
        orient="row",
    )
