"""``txkit exceptions``: the exception register from a shell (:mod:`txkit.register`).

* ``txkit exceptions [--month YYYY-MM] [--open] [--material] [--older-than DAYS]
  [--format table|csv]``: the register as of a month's report (default the newest);
* ``txkit exceptions explain KEY [--category C] [--owner O] [--note N] [--status S]``;
* ``txkit exceptions import FILE``: the ``key`` and any of ``category``, ``owner``,
  ``explanation``, ``status`` columns of a CSV or Excel file (the report's ``exceptions.csv``
  edited), one commit.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

import polars as pl

from txkit import config
from txkit.cli._args import month_arg
from txkit.config import default_store
from txkit.errors import DataFileError, StoreError
from txkit.inputs import SPREADSHEET_SUFFIXES, read_text
from txkit.money import format_money
from txkit.output import csv_safe
from txkit.register import (
    CATEGORIES,
    REGISTER_COLUMNS,
    STATUSES,
    annotate,
    explain,
    filter_items,
    load_materiality,
    read_events,
    read_xlsx_text,
    register_view,
    repair_register,
    reported_months,
    revision_lines,
    revisions,
)
from txkit.store import is_remote

__all__ = ["add_parser"]

#: The CSV interface's columns (the issue's list), in this order, then the rest.
CSV_COLUMNS = list(REGISTER_COLUMNS)


def _days(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a number of days, 0 or more, got {text!r}")
    return int(text)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit exceptions`` and its ``explain`` and ``import`` subcommands."""
    p = sub.add_parser(
        "exceptions",
        help="the exception register: list, filter and annotate items across months",
        description="List the exception register as of a month's report, or annotate an item.",
    )
    p.add_argument("--store", metavar="DIR|URI", help="default: the source's store")
    p.add_argument("--month", type=month_arg, metavar="YYYY-MM", help="default: newest reported")
    p.add_argument("--open", action="store_true", help="only open or explained items")
    p.add_argument("--material", action="store_true", help="only material items")
    p.add_argument("--older-than", type=_days, metavar="DAYS", help="only items older than this")
    p.add_argument("--format", choices=["table", "csv"], default="table")
    p.add_argument(
        "--reports",
        default=str(config.REPORTS_DIR),
        metavar="DIR",
        help="where the month's reports are: a table ends with the month's revisions "
        "(default: %(default)s)",
    )
    p.set_defaults(func=_list)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    e = actions.add_parser("explain", help="set an item's category, owner, explanation, status")
    e.add_argument("key")
    e.add_argument("--category", choices=CATEGORIES)
    e.add_argument("--owner")
    e.add_argument("--note", help="the explanation (carried over to later months)")
    e.add_argument("--status", choices=STATUSES, help="default: explained when a note is given")
    _add_who(e)
    e.add_argument("--store", metavar="DIR|URI", help="default: the source's store")
    e.set_defaults(func=_explain)
    i = actions.add_parser("import", help="annotations from a CSV or Excel file (key column)")
    i.add_argument("file")
    _add_who(i)
    i.add_argument("--store", metavar="DIR|URI", help="default: the source's store")
    i.set_defaults(func=_import)
    r = actions.add_parser(
        "repair",
        help="rebuild a damaged register from its intact files (names what was lost)",
    )
    r.add_argument("--store", metavar="DIR|URI", help="default: the source's store")
    r.set_defaults(func=_repair)


def _add_who(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--by",
        metavar="NAME",
        help="who makes the change (default: this process's operating system account, which is "
        "recorded beside the name either way)",
    )
    p.add_argument(
        "--key",
        dest="key_file",
        metavar="PATH",
        help="sign the change with your OpenSSH ed25519 key (or its .pub in the running "
        "ssh-agent), one allowed_signers lists: the name is then the key's; a write-off of a "
        "material item needs it when the project has allowed_signers",
    )
    p.add_argument(
        "--allowed-signers",
        metavar="FILE",
        help="who may sign, in OpenSSH's format (default: allowed_signers in the project folder)",
    )


def _repair(args: argparse.Namespace) -> int:
    store = args.store or default_store()
    lost, version = repair_register(store)
    if version is None:
        print(f"the exception register in {store} is whole: nothing to repair")
        return 0
    for check in lost:
        print(f"dropped: _register/{check.path} ({check.status}: {check.detail})")
    print(
        f"the exception register in {store} was rebuilt from its intact files (version "
        f"{version}): the events of the {len(lost)} file(s) dropped are lost; rerun the "
        "reports and signatures they held (`txkit exceptions` shows what remains)"
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    store = args.store or default_store()
    events, version = read_events(store)
    if version is None:
        what = "a store without an" if _is_store(store) else "no store, so no"
        raise StoreError(
            f"{store}: {what} exception register (txkit report --month YYYY-MM writes it; "
            "--store names another store)"
        )
    view = register_view(store, month=args.month, materiality=load_materiality(), events=events)
    view = filter_items(
        view, still_open=args.open, material=args.material, older_than=args.older_than
    )
    if args.format == "csv":
        csv_safe(view.select(CSV_COLUMNS)).write_csv(sys.stdout)
        return 0
    with pl.Config(
        tbl_rows=200,
        tbl_cols=-1,
        tbl_width_chars=200,
        fmt_str_lengths=40,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
    ):
        print(_table(view))
    print(f"{view.height:,} items")
    months = reported_months(events)
    month = args.month or (months[-1] if months else None)
    history = revisions(args.reports, month, events=events) if month else []
    if len(history) > 1:  # a reopened month: each report of it, why, who signed, what changed
        print(f"reports of {month}:")
        for line in revision_lines(history):
            print(f"  {line}")
    return 0


def _is_store(store: str | os.PathLike[str]) -> bool:
    if is_remote(store):
        return True  # object storage: the register's absence is what matters
    return (Path(store) / "_delta_log").is_dir()


def _table(view: pl.DataFrame) -> pl.DataFrame:
    """Amounts as the report writes them (:func:`txkit.money.format_money`), not at the column's
    scale of six."""
    amounts = [format_money(value) for value in view["amount"]]
    width = max((len(text) for text in amounts), default=0)
    return view.select(
        "key", "section", "currency",
        pl.Series("amount", [text.rjust(width) for text in amounts], dtype=pl.String),
        "first_month", "status", "category", "age_days", "age_bucket", "material",
        pl.col("owner").fill_null(""), pl.col("explanation").fill_null(""),
    )  # fmt: skip


def _explain(args: argparse.Namespace) -> int:
    row = explain(
        args.store or default_store(),
        args.key,
        category=args.category,
        owner=args.owner,
        note=args.note,
        status=args.status,
        actor=args.by,
        key_file=args.key_file,
        allowed_signers=args.allowed_signers,
    ).row(0, named=True)
    print(
        f"{row['key']}: {row['status']}, {row['category']}, owner {row['owner'] or '-'}"
        f"{': ' + row['explanation'] if row['explanation'] else ''}"
    )
    print(f"  {_who(row)}")
    return 0


_IMPORTED = ("category", "owner", "explanation", "status")
_IMPORT_WHAT = "exceptions file"


def _read_import(path: Path) -> pl.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        text = read_text(path, what=_IMPORT_WHAT).text
        try:
            return pl.read_csv(io.StringIO(text), infer_schema=False)
        except pl.exceptions.PolarsError as exc:
            raise DataFileError(
                path,
                f"cannot be read as CSV ({str(exc).splitlines()[0][:200]})",
                "export the register again (the report's exceptions.csv) and edit that",
                what=_IMPORT_WHAT,
            ) from None
    if suffix in SPREADSHEET_SUFFIXES:
        rows = read_xlsx_text(path, what=_IMPORT_WHAT)
        header = [str(h or "").strip() for h in rows[0]] if rows else []
        return pl.DataFrame(
            [
                dict(zip(header, r + [None] * (len(header) - len(r)), strict=False))
                for r in rows[1:]
            ],
            schema=dict.fromkeys(header, pl.String),
        )
    raise ValueError(f"{path}: import reads .csv or .xlsx (the report's exceptions.csv, edited)")


def _import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    frame = _read_import(path)
    if "key" not in frame.columns:
        raise ValueError(f"{path}: no 'key' column (columns: {', '.join(frame.columns)})")
    store = args.store or default_store()
    # Only what differs from the register changes it: a sheet exported and read back as it
    # was changes nothing, and an explanation added to an open row makes it explained.
    current = {r["key"]: r for r in register_view(store).iter_rows(named=True)}
    changes = []
    for line, row in enumerate(frame.iter_rows(named=True), start=2):
        now = current.get(row["key"], {})
        change = {
            c: value
            for c in _IMPORTED
            if (value := (row.get(c) or "").strip() or None) is not None and value != now.get(c)
        }
        change = {c: change.get(c) for c in _IMPORTED}
        if change["category"] not in (None, *CATEGORIES):
            raise ValueError(
                f"{path} line {line}: category {change['category']!r} is not one of "
                f"{', '.join(CATEGORIES)}"
            )
        if change["status"] not in (None, *STATUSES):
            raise ValueError(
                f"{path} line {line}: status {change['status']!r} is not one of "
                f"{', '.join(STATUSES)}"
            )
        if any(v is not None for v in change.values()) or row["key"] not in current:
            changes.append({"key": row["key"], **change})
    if changes:
        annotate(store, changes, actor=args.by, key_file=args.key_file,
                 allowed_signers=args.allowed_signers)  # fmt: skip
    print(f"imported {len(changes):,} annotations from {path}")
    return 0


def _who(row: dict) -> str:
    """Who made an item's last change, as the register recorded it."""
    how = f"signed with key {row['changed_key']}" if row["changed_key"] else "not signed"
    return f"by {row['changed_by']} ({how}; account {row['changed_account'] or 'not recorded'})"
