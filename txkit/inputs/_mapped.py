"""Bank statements as CSV, every bank its own columns: read through a column mapping (private).

A mapping names the file's columns for what txkit needs (see :data:`MAPPING_KEYS`):
``date``, the amount as one signed ``amount`` column or as ``credit`` and ``debit``
columns, ``currency`` (or ``account_currency=NGN`` for a file of one currency), and a
``reference`` or ``narration`` column (or both); optionally ``value_date``, ``balance`` (the
running balance after each line, which then proves every line is there),
``bank_reference`` and ``account``; and how the file writes values: ``date_format``
(``%d/%m/%Y``; default ``%Y-%m-%d``), ``decimal`` (``dot`` or ``comma``) and ``thousands``
(``comma``, ``dot``, ``space``, ``apostrophe`` or ``none``).
Without a mapping the columns must be called ``date``, ``amount``, ``currency``,
``reference`` and ``narration`` (case and spaces around names do not matter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Final

import polars as pl

from txkit.errors import DataFileError
from txkit.inputs._layouts import LAYOUTS, layout_of
from txkit.inputs._model import MAX_DECIMALS, WHAT, Balance, Entry, Read
from txkit.inputs._stated import merged_text, stated_rows
from txkit.inputs._table import LINE, CsvTable, fail_lines
from txkit.inputs.columns import (
    BANK,
    BANK_PRESETS,
    ColumnMapping,
    Writing,
    describe_columns,
    find_writing,
    parse_columns,
    plain_amount,
    writing_name,
)

#: How a format reads its table (CSV's or a spreadsheet's), with :func:`read_csv_table`'s
#: arguments: the mapping is the same whatever the format.
TableReader = Callable[..., CsvTable]
#: Keys of a CSV column mapping: the columns txkit reads, and how values are written.
MAPPING_KEYS: Final[Mapping[str, str]] = BANK.keys
_VALUE_KEYS: Final = BANK.value_keys
# The columns holding money, written one way in a file.
_MONEY: Final = ("amount", "credit", "debit", "balance")


def parse_mapping(text: str | Mapping[str, str] | None, *, origin: str = "") -> ColumnMapping:
    """A column mapping from ``key=Column Name`` pairs separated by commas (or a mapping): the
    syntax orders share (:func:`txkit.inputs.columns.parse_columns`).

    Raises:
        ValueError: an unknown key, a pair without ``=``, a key given twice, or values that
            do not go together (one message naming the accepted keys).
    """
    return parse_columns(text, BANK, origin=origin)


def describe_mapping(mapping: Mapping[str, str]) -> str:
    """The mapping as it would be written: ``date=Value Date,amount=Amount``."""
    return describe_columns(mapping)


def read(
    path: Path, reader: TableReader, mapping: Mapping[str, str], *, text: str | None = None
) -> Read:
    """The entries of a CSV statement (or a spreadsheet's: ``.xlsx``, ``.xls``, ``.ods``, a
    ``.xls`` that is HTML), its table read by ``reader`` (the format's), through ``mapping``
    (see the module docstring); ``text`` is the file's text where it has one (a bank's title
    mark is looked for in it). Title rows, total and footer rows and description lines
    continuing on the next row are found as :mod:`txkit.inputs._layout` says."""
    found = ""
    try:
        columns, table = _table(path, reader, mapping)
    except DataFileError as exc:
        if any(k not in _VALUE_KEYS for k in mapping) or not exc.problem.startswith("no column"):
            raise
        mapping, found = _preset_of(path, reader, text, mapping, exc)
        columns, table = _table(path, reader, mapping)
    frame = table.frame.rename({v: k for k, v in columns.items() if v in table.frame.columns})
    if not {"reference", "narration"} & set(frame.columns):
        raise DataFileError(
            path,
            f"neither a reference nor a narration column (found: {', '.join(table.header)})",
            "name them reference and narration, or map the file's columns with --bank-columns "
            "(e.g. narration=Details)",
            lines=[1],
            what=WHAT,
        )
    if "amount" in frame.columns and "direction" not in frame.columns:
        _refuse_unmapped_direction(path, frame, set(columns.values()), table.unit)
    frame, merged = merged_text(frame)
    frame, stated = stated_rows(frame)
    frame, left_out = _booked(path, frame, table.unit)
    written = _writing(path, frame, mapping, table.unit)
    notes = [*([found] if found else []), *table.notes, *merged, *left_out]
    notes += [written.note] if written.note else []
    result = Read(table.kind, notes=notes)
    typed, notes = _typed(path, frame, written.mapping, table.unit, table.kind != "csv")
    result.entries.extend(_entries(typed))
    result.notes += notes
    if stated.height:
        result.balances = [_stated_balance(path, stated, written.mapping, typed, table.unit)]
        for entry in result.entries:
            entry.balance = result.balances[0]
        result.notes.append(
            f"the opening and closing balance read from their rows ({table.unit}s "
            f"{' and '.join(map(str, stated[LINE].to_list()))})"
        )
    elif "balance" in typed.columns:
        result.balances, said = _month_balances(typed, written.mapping, result.entries, table.unit)
        result.notes += said
    result.notes += _sign_notes(frame, mapping)
    return result


#: A line's state (compared in upper case): booked lines are read; pending ones (Revolut's
#: PENDING without a completion date, a card payment still authorised) and ones never booked
#: are left out and counted, as camt.053's PDNG entries are.
BOOKED_STATES: Final = frozenset({"COMPLETED", "COMPLETE", "BOOKED", "SETTLED", "POSTED"})
PENDING_STATES: Final = frozenset({"PENDING", "AUTHORISED", "AUTHORIZED", "IN PROGRESS"})
UNBOOKED_STATES: Final = frozenset({"DECLINED", "REVERTED", "FAILED", "CANCELLED", "CANCELED"})


def _booked(path: Path, frame: pl.DataFrame, unit: str) -> tuple[pl.DataFrame, list[str]]:
    """The lines whose ``state`` says booked (all of them without a state column), and the
    load line's notes on those left out; a state that is none of these is refused."""
    if "state" not in frame.columns:
        return frame, []
    state = _direction_word("state")
    fail_lines(
        path,
        frame,
        ~state.is_in([*BOOKED_STATES, *PENDING_STATES, *UNBOOKED_STATES]),
        problem="state is not one of the states read",
        advice=f"accepted (any case): booked {', '.join(sorted(BOOKED_STATES))}; left out "
        f"{', '.join(sorted(PENDING_STATES | UNBOOKED_STATES))}",
        shown="state",
        what=WHAT,
        unit=unit,
    )
    notes = []
    for words, what in ((PENDING_STATES, "pending"), (UNBOOKED_STATES, "never booked")):
        out = frame.filter(state.is_in(list(words)))
        if out.height:
            lines = out.get_column(LINE).to_list()
            shown = ", ".join(map(str, lines[:10])) + (" ..." if len(lines) > 10 else "")
            notes.append(f"{out.height:,} {what} {unit}(s) left out ({unit}s {shown})")
    return frame.filter(state.is_in(list(BOOKED_STATES))), notes


#: How banks write an entry's direction in a column of its own (compared in upper case):
#: English, Indonesian (Debet/Kredit, D/K), German (Soll/Haben, S/H), Dutch (Af/Bij),
#: French, Spanish and Italian.
DEBIT_WORDS: Final = frozenset(
    {"D", "DR", "DB", "DEBIT", "DEBET", "DÉBIT", "DEBITO", "DÉBITO", "S", "SOLL", "AF"}
)
CREDIT_WORDS: Final = frozenset(
    {"C", "CR", "CREDIT", "KREDIT", "K", "CRÉDIT", "CREDITO", "CRÉDITO", "H", "HABEN", "BIJ"}
)
_ACCEPTED_DIRECTIONS: Final = (
    "debit: D, DR, DB, Debit, Debet, S, Soll, Af; credit: C, CR, Credit, Kredit, K, H, Haben, "
    "Bij (any case)"
)


def _direction_word(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.String).fill_null("").str.strip_chars().str.to_uppercase()


def _refuse_unmapped_direction(
    path: Path, frame: pl.DataFrame, mapped: set[str], unit: str
) -> None:
    """A column the mapping leaves out that says debit or credit on every line (with at least
    one debit) would leave every amount of an unsigned column read as a credit: refused,
    naming the column."""
    for name in frame.columns:
        if name == LINE or name in mapped or name in MAPPING_KEYS:
            continue
        words = frame.select(_direction_word(name).alias("w")).to_series()
        said = words.filter(words != "")
        if said.len() == 0 or not said.is_in([*DEBIT_WORDS, *CREDIT_WORDS]).all():
            continue
        if said.is_in(list(DEBIT_WORDS)).any():
            raise DataFileError(
                path,
                f"column {name!r} says debit or credit on every {unit} "
                f"({', '.join(sorted(set(said.to_list())))}) and the mapping leaves it out: "
                "every amount would be read as its sign in the amount column says",
                f"map it: direction={name} (values accepted: {_ACCEPTED_DIRECTIONS})",
                what=WHAT,
            )


def _sign_notes(frame: pl.DataFrame, mapping: Mapping[str, str]) -> list[str]:
    if "direction" in mapping:
        words = frame.select(_direction_word("direction").alias("w")).to_series()
        debits = sorted({w for w in words.to_list() if w in DEBIT_WORDS})
        credits = sorted({w for w in words.to_list() if w in CREDIT_WORDS})
        return [
            f"direction from the column {mapping['direction']!r} "
            f"({'/'.join(credits) or 'none'} credit, {'/'.join(debits) or 'none'} debit)"
        ]
    if "debit" in mapping:
        debit = pl.col("debit").cast(pl.String).fill_null("").str.strip_chars()
        if frame.select((debit.str.starts_with("-") | debit.str.starts_with("(")).any()).item():
            return [f"debits written negative in the column {mapping['debit']!r}"]
    return []


def _writing(path: Path, frame: pl.DataFrame, mapping: Mapping[str, str], unit: str) -> Writing:
    """How the amounts and balances are written: declared, or found from them (one writing
    for all of them); a value two writings read otherwise is refused with its line."""
    written = find_writing(frame, _MONEY, mapping, codes=True)
    if written.unsure is not None:
        fail_lines(
            path,
            frame,
            written.unsure,
            problem=f"an amount reads two ways ({written.readings}) and no other amount says which",
            advice="declare how the file writes amounts in the column mapping (decimal=comma "
            "or decimal=dot, thousands=...)",
            shown=pl.concat_str(
                [pl.col(c).fill_null("") for c in _MONEY if c in frame.columns], separator=" / "
            ),
            what=WHAT,
            unit=unit,
        )
    return written


def _table(
    path: Path, reader: TableReader, mapping: Mapping[str, str]
) -> tuple[dict[str, str], CsvTable]:
    columns, required = _columns(path, mapping)
    layout = layout_of(mapping)[1]
    table = reader(
        path,
        columns=list(columns.values()),
        required=required,
        what=WHAT,
        rows="statement lines",
        date=columns["date"],
        continues=columns.get("narration"),
        footer=(layout.footer, layout.footer_text) if layout.footer is not None else None,
    )
    return columns, table


def _preset_of(
    path: Path,
    reader: TableReader,
    text: str | None,
    given: Mapping[str, str],
    refused: DataFileError,
) -> tuple[dict[str, str], str]:
    """A file read without a column mapping whose header is one preset's, and only one's:
    read through it, and said (values the mapping gave, such as account_currency, kept)."""
    fits = []
    for name, preset in BANK_PRESETS.items():
        mark = LAYOUTS[name].mark if name in LAYOUTS else None
        if mark is not None and (text is None or not mark.search(text[:4096])):
            continue  # a header of common words: this bank's only under its mark
        try:
            _table(path, reader, {**preset, "preset": name})
        except DataFileError as exc:
            if exc.problem.startswith("no column"):
                continue  # else the header fits: the read below says what else is wrong
        fits.append(name)
    if len(fits) != 1:
        which = f"its header fits the presets {', '.join(fits)}" if fits else ""
        raise DataFileError(
            path,
            refused.problem + (f"; {which}" if which else ""),
            f"{refused.advice}; or name a bank's preset with --bank-columns "
            f"({', '.join(sorted(BANK_PRESETS))}, e.g. gtbank,account_currency=NGN)",
            lines=refused.lines,
            what=WHAT,
        ) from None
    mark = LAYOUTS[fits[0]].mark_text if fits[0] in LAYOUTS else ""
    marked = f" and its title {mark!r}" if mark else ""
    note = (
        f"columns: the {fits[0]} preset, found from the file's header{marked} (say "
        f"--bank-columns {fits[0]} to rely on it)"
    )
    return {**BANK_PRESETS[fits[0]], "preset": fits[0], **given}, note


def _columns(path: Path, mapping: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    columns = {k: v for k, v in mapping.items() if k not in _VALUE_KEYS and k != "preset"}
    required = list(columns.values())
    if not columns:
        columns = {k: k for k in ("date", "amount", "currency", "reference", "narration")}
        required = ["date", "amount", "currency"]
    if "amount" not in columns and "credit" not in columns:
        raise _config(path, "no amount column in the mapping (amount, or credit and debit)")
    if "date" not in columns:
        raise _config(path, "no date column in the mapping")
    if not {"reference", "narration"} & columns.keys():
        raise _config(path, "neither a reference nor a narration column in the mapping")
    return columns, required


def _typed(
    path: Path, frame: pl.DataFrame, mapping: Mapping[str, str], unit: str, iso: bool
) -> tuple[pl.DataFrame, list[str]]:
    """Currency: a column, the file's one currency, or written with the amounts (``0.01USD``);
    ``iso``: also ``2026-10-31`` dates."""
    date_format = mapping.get("date_format", "%Y-%m-%d")
    for key in ("date", "value_date"):
        if key in frame.columns:
            frame = frame.with_columns(_dates(path, frame, key, date_format, unit, iso))
    frame = frame.with_columns(_written_currency(frame).alias("_written"))
    amount = _signed_amount(path, frame, mapping, unit)
    frame = frame.with_columns(amount.alias("_amount"))
    if "currency" in frame.columns:
        currency = pl.col("currency").str.strip_chars().str.to_uppercase()
    elif "account_currency" in mapping:
        currency = pl.lit(mapping["account_currency"].strip().upper())
    else:
        currency = pl.col("_written").fill_null("")
    frame = frame.with_columns(currency.alias("currency"))
    fail_lines(
        path,
        frame,
        ~pl.col("currency").str.contains(r"^[A-Z]{3,4}$"),
        problem="currency is not a 3- or 4-letter code",
        advice="map the currency code's column (currency=...) or set account_currency=NGN",
        shown="currency",
        what=WHAT,
        unit=unit,
    )
    fail_lines(
        path,
        frame,
        pl.col("_written").is_not_null() & (pl.col("_written") != pl.col("currency")),
        problem="the amount is written with another currency than the line's",
        advice="check the currency column of the mapping (an amount is never converted)",
        shown=pl.concat_str([pl.col("_written"), pl.col("currency")], separator=" / "),
        what=WHAT,
        unit=unit,
    )
    notes = []
    if "balance" in frame.columns:
        notes.append(_check_running_balance(path, frame, mapping, unit))
    text = {k: pl.col(k).str.strip_chars() for k in ("reference", "narration", "bank_reference")}
    frame = frame.with_columns(
        pl.when(expr != "").then(expr).alias(k) for k, expr in text.items() if k in frame.columns
    )
    return frame, [n for n in notes if n]


def _written_currency(frame: pl.DataFrame) -> pl.Expr:
    found = [
        pl.col(k)
        .str.extract(r"^\s*([A-Za-z]{3})\s*[-+(0-9.]")
        .fill_null(pl.col(k).str.extract(r"[0-9.)]\s*([A-Za-z]{3})\s*$"))
        .str.to_uppercase()
        for k in ("amount", "credit", "debit")
        if k in frame.columns
    ]
    return pl.coalesce(found) if found else pl.lit(None, dtype=pl.String)


def _entries(frame: pl.DataFrame) -> list[Entry]:

    def column(key: str) -> list:
        return frame.get_column(key).to_list() if key in frame.columns else [None] * frame.height

    return [
        Entry(
            line=line,
            currency=cur,
            date=day,
            value_date=value_day,
            amount=amount,
            reference=ref,
            narration=narration,
            bank_reference=bank_ref,
            account=account,
        )
        for line, cur, day, value_day, amount, ref, narration, bank_ref, account in zip(
            frame.get_column(LINE).to_list(),
            column("currency"),
            column("date"),
            column("value_date"),
            column("_amount"),
            column("reference"),
            column("narration"),
            column("bank_reference"),
            column("account"),
            strict=True,
        )
    ]


def _config(path: Path, problem: str) -> DataFileError:
    return DataFileError(
        path,
        problem,
        "name the file's columns with --bank-columns (or the notebook's bank_columns), e.g. "
        "date=Value Date,credit=Credit,debit=Debit,currency=Currency,narration=Details",
        what=WHAT,
    )


def _dates(
    path: Path, frame: pl.DataFrame, key: str, date_format: str, unit: str, iso: bool
) -> pl.Series:
    text = pl.col(key).fill_null("").str.strip_chars()
    parsed = text.str.strptime(pl.Date, date_format, strict=False)
    if iso:  # a spreadsheet's date cell reads 2026-10-31 (00:00:00), whatever the format shows
        parsed = parsed.fill_null(
            text.str.slice(0, 10).str.strptime(pl.Date, "%Y-%m-%d", strict=False)
        )
    # A value date may be left empty (a payment still authorised, a fee): the line has none.
    wrong = parsed.is_null() & (text != "") if key == "value_date" else parsed.is_null()
    fail_lines(
        path,
        frame,
        wrong,
        problem=f"{key} is not a date written as {datetime(2026, 10, 31).strftime(date_format)}"
        f" ({date_format})",
        advice="set date_format in the column mapping to how the file writes dates"
        + (
            "; a pending line has no date: map the state column (state=State) to leave pending "
            "lines out"
            if key == "date"
            else ""
        ),
        shown=key,
        what=WHAT,
        unit=unit,
    )
    return frame.select(parsed.alias(key)).to_series()


_PLAIN: Final = rf"^-?[0-9]{{1,20}}(\.[0-9]{{1,{MAX_DECIMALS}}})?$"


def _signed_amount(
    path: Path, frame: pl.DataFrame, mapping: Mapping[str, str], unit: str
) -> pl.Series:
    advice = (
        "set decimal and thousands in the column mapping to how the file writes amounts "
        f"(e.g. thousands=comma: groups of three, 1,234.50), with at most {MAX_DECIMALS} "
        "decimals; amounts are never guessed"
    )
    writing = writing_name(mapping)
    if "amount" in frame.columns:
        text = plain_amount(pl.col("amount"), mapping, codes=True)
        fail_lines(
            path,
            frame,
            ~text.str.contains(_PLAIN),
            problem=f"amount is not a number written with {writing}",
            advice=advice,
            shown="amount",
            what=WHAT,
            unit=unit,
        )
        if "direction" in frame.columns:
            return _directed(path, frame, text, unit)
        return frame.select(text).to_series()
    credit = plain_amount(pl.col("credit"), mapping, codes=True)
    debit = plain_amount(pl.col("debit"), mapping, codes=True)
    empty_c, empty_d = credit == "", debit == ""
    fail_lines(
        path,
        frame,
        empty_c == empty_d,
        problem="a line needs exactly one of its credit and debit amounts",
        advice="check the credit and debit columns of the mapping",
        shown=pl.concat_str([pl.col("credit"), pl.col("debit")], separator=" / "),
        what=WHAT,
        unit=unit,
    )
    unsigned = rf"^[0-9]{{1,20}}(\.[0-9]{{1,{MAX_DECIMALS}}})?$"
    fail_lines(
        path,
        frame,
        ~empty_c & ~credit.str.contains(unsigned),
        problem=f"credit is not a number without a sign written with {writing}",
        advice=advice,
        shown="credit",
        what=WHAT,
        unit=unit,
    )
    fail_lines(
        path,
        frame,
        ~empty_d & ~debit.str.strip_prefix("-").str.contains(unsigned),
        problem=f"debit is not a number written with {writing}",
        advice=advice,
        shown="debit",
        what=WHAT,
        unit=unit,
    )
    _one_way_debits(path, frame, debit, unit)
    signed = pl.when(empty_c).then("-" + debit.str.strip_prefix("-")).otherwise(credit)
    return frame.select(signed).to_series()


def _one_way_debits(path: Path, frame: pl.DataFrame, debit: pl.Expr, unit: str) -> None:
    """A debit column is written unsigned or negative (Fineco's Uscite, Targobank's Soll): one
    way in a file, so that a negative debit is never a reversal read as a debit."""
    empty_d, negative = debit == "", debit.str.starts_with("-")
    counts = frame.select(
        (~empty_d & negative).sum().alias("neg"),
        (~empty_d & ~negative & (debit.str.replace_all(r"[0.]", "") != "")).sum().alias("pos"),
    ).row(0)
    if counts[0] and counts[1]:
        minority = negative if counts[0] < counts[1] else ~negative
        fail_lines(
            path,
            frame,
            ~empty_d & minority & (debit.str.replace_all(r"[-0.]", "") != ""),
            problem="the debit column writes debits both negative and unsigned; these lines "
            "differ from the rest",
            advice="a debit is written one way in a file (a negative debit may be a reversal): "
            "check these lines with the bank",
            shown="debit",
            what=WHAT,
            unit=unit,
        )


def _directed(path: Path, frame: pl.DataFrame, text: pl.Expr, unit: str) -> pl.Series:
    """The amount signed by its direction column: a debit negative. A signed amount must agree
    with its direction (a negative credit is refused, never read either way)."""
    word = _direction_word("direction")
    debit, credit = word.is_in(list(DEBIT_WORDS)), word.is_in(list(CREDIT_WORDS))
    fail_lines(
        path,
        frame,
        ~debit & ~credit,
        problem="direction is neither debit nor credit",
        advice=f"accepted: {_ACCEPTED_DIRECTIONS}",
        shown="direction",
        what=WHAT,
        unit=unit,
    )
    negative = text.str.starts_with("-")
    fail_lines(
        path,
        frame,
        credit & negative & (text.str.replace_all(r"[-0.]", "") != ""),
        problem="a negative amount marked as a credit",
        advice="the amount's sign and its direction column disagree: check the line with the "
        "bank (nothing is read either way)",
        shown=pl.concat_str([pl.col("amount"), pl.col("direction")], separator=" "),
        what=WHAT,
        unit=unit,
    )
    magnitude = text.str.strip_prefix("-")
    signed = pl.when(debit).then("-" + magnitude).otherwise(magnitude)
    return frame.select(signed).to_series()


def _check_running_balance(
    path: Path, frame: pl.DataFrame, mapping: Mapping[str, str], unit: str
) -> str:
    """Every balance written follows from the one before it and the amounts between, in the
    file's own order: oldest first, or newest first (dates going back; then a balance is the
    one below plus its line's amount). A balance on some lines only (end of day) is checked
    where present. Else the first line, in the file's order, whose balance does not follow is
    named. Returns the load line's note (empty when every line has its balance)."""
    text = plain_amount(pl.col("balance").fill_null(""), mapping, codes=True)
    fail_lines(
        path,
        frame,
        (text != "") & ~text.str.contains(_PLAIN),
        problem=f"balance is not a number written with {writing_name(mapping)}",
        advice="set decimal and thousands in the column mapping to how the file writes amounts",
        shown="balance",
        what=WHAT,
        unit=unit,
    )
    rows = frame.select(pl.col(LINE), "currency", "_amount", text.alias("_balance")).rows()
    dates = [d for d in frame.get_column("date").to_list() if d is not None]
    orders = ["oldest first", "newest first"]
    if dates and dates[0] > dates[-1]:
        orders = ["newest first"]
    elif dates and dates[0] < dates[-1]:
        orders = ["oldest first"]
    breaks = {order: _first_break(rows, order == "newest first") for order in orders}
    if any(b is None for b in breaks.values()):
        present = sum(1 for r in rows if r[3] != "")
        if present == len(rows):
            return ""
        return f"a balance on {present:,} of {len(rows):,} {unit}s, checked where written"
    order = orders[0]
    line, why = breaks[order]  # type: ignore[misc]
    raise DataFileError(
        path,
        f"the running balance does not follow from the balance before it in time and the "
        f"amounts since ({order}: {why})",
        "a line is missing or damaged, or its sign is wrong: export the statement again "
        "(nothing is matched against a statement that does not add up)",
        lines=[line],
        unit=unit,
        what=WHAT,
    )


def _first_break(
    rows: list[tuple[int, str, str, str]], newest_first: bool
) -> tuple[int, str] | None:
    """The first line, in time, whose balance does not follow from the balance before it (in
    time) plus the amounts since, its own included: in a newest-first file that is read from
    the bottom up, and the line is named as the file numbers it."""
    last: dict[str, Decimal] = {}
    since: dict[str, Decimal] = {}
    for line, currency, amount, balance in rows[::-1] if newest_first else rows:
        since[currency] = since.get(currency, Decimal(0)) + Decimal(amount)
        if balance == "":
            continue
        now = Decimal(balance)
        before = last.get(currency)
        if before is not None and before + since[currency] != now:
            return line, f"{before:,} + {since[currency]:,} is not {now:,}"
        last[currency], since[currency] = now, Decimal(0)
    return None


def _month_balances(
    frame: pl.DataFrame, mapping: Mapping[str, str], entries: list[Entry], unit: str
) -> tuple[list[Balance], list[str]]:
    """Each month's opening and closing balance per currency, from a running balance written
    on every line (already proven by :func:`_check_running_balance`): the opening is the
    balance before the month's first line in time (its balance less its amount), the closing
    the balance its last line writes. A balance on some lines only gives none, and says so."""
    text = plain_amount(pl.col("balance").fill_null(""), mapping, codes=True)
    rows = frame.select(pl.col(LINE), "currency", "_amount", text.alias("_b"), "date").rows()
    if any(balance == "" for _, _, _, balance, _ in rows):
        return [], [f"no opening or closing balance: the balance is written on some {unit}s only"]
    dates = [r[4] for r in rows]
    newest_first = dates[0] > dates[-1] or (
        dates[0] == dates[-1] and _first_break([r[:4] for r in rows], False) is not None
    )
    months: dict[tuple[str, str], list[tuple[int, str, str, date]]] = {}
    for line, currency, amount, balance, day in rows[::-1] if newest_first else rows:
        months.setdefault((currency, f"{day:%Y-%m}"), []).append((line, amount, balance, day))
    balances, said = [], []
    by_line: dict[tuple[str, int], Balance] = {}
    for (currency, month), lines in sorted(months.items()):
        first, last = lines[0], lines[-1]
        opening = str(Decimal(first[2]) - Decimal(first[1]))
        balance = Balance(
            None, None, currency, opening, first[3], first[0], last[2], last[3], last[0]
        )
        balances.append(balance)
        by_line.update({(currency, line): balance for line, *_ in lines})
        said.append(f"{month} {currency} {Decimal(opening):,} to {Decimal(last[2]):,}")
    for entry in entries:
        entry.balance = by_line.get((entry.currency, entry.line))
    return balances, [
        "opening and closing balances from the running balance (" + "; ".join(said) + ")"
    ]


def _stated_balance(
    path: Path, stated: pl.DataFrame, mapping: Mapping[str, str], typed: pl.DataFrame, unit: str
) -> Balance:
    """The statement's opening and closing balance from its rows saying so: one of each, in a
    statement of one currency, each a number written as the amounts are."""
    kinds = stated["_stated"].to_list()
    currencies = sorted(set(typed["currency"]))
    if sorted(kinds) != ["closing", "opening"] or len(currencies) != 1:
        raise DataFileError(
            path,
            f"rows state the balance ({', '.join(kinds)}) where a statement of one currency "
            f"states one opening and one closing (currencies: {', '.join(currencies)})",
            "export the statement of one account and period again",
            lines=stated[LINE].to_list(),
            unit=unit,
            what=WHAT,
        )
    text = plain_amount(pl.col("balance"), mapping, codes=True)
    fail_lines(
        path,
        stated,
        ~text.str.contains(_PLAIN),
        problem=f"balance is not a number written with {writing_name(mapping)}",
        advice="set decimal and thousands in the column mapping to how the file writes amounts",
        shown="balance",
        what=WHAT,
        unit=unit,
    )
    date_format = mapping.get("date_format", "%Y-%m-%d")
    written_day = pl.col("date").fill_null("").str.strip_chars()
    day = written_day.str.strptime(pl.Date, date_format, strict=False)
    rows = {
        kind: (line, value, when)
        for kind, line, value, when in stated.select(
            "_stated", LINE, text.alias("v"), day.alias("d")
        ).rows()
    }
    (o_line, opening, o_day), (c_line, closing, c_day) = rows["opening"], rows["closing"]
    return Balance(None, None, currencies[0], opening, o_day, o_line, closing, c_day, c_line)
