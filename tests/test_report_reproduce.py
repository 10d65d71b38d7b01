"""report.json's ``reproduce`` command: the arguments the report was run with, the bank
statements and their CSV column mapping included, as one line a shell reads back exactly."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from tests.factories import SessionReport, invoke_cli, small_notebooks
from txkit.cli._main import build_parser
from txkit.report import reproduce_command
from txkit.sandbox.ledger._bank import CSV_COLUMNS

MONTH = "2026-10"


def _parsed(command: str) -> object:
    argv = shlex.split(command)
    assert argv[:2] == ["txkit", "report"]
    return build_parser().parse_args(argv[1:])


def test_the_command_carries_the_statements_and_the_mapping(tmp_path: Path) -> None:
    folder = tmp_path / "bank statements (Oct)"  # a space and brackets: quoted
    paths = [str(folder / "statement_2026-10.csv"), str(folder / "statement_2026-11.csv")]
    command = reproduce_command(
        MONTH, "data/store/sandbox", 7, orders="/data/orders 2026.csv",
        bank_statements=paths, bank_columns=CSV_COLUMNS,
    )  # fmt: skip
    args = _parsed(command)
    assert args.month == MONTH and args.store == "data/store/sandbox" and args.as_of == 7
    assert args.orders == "/data/orders 2026.csv"
    assert args.bank_statements == paths
    assert args.bank_columns == CSV_COLUMNS  # spaces and a % kept, one argument
    assert command.startswith("txkit report --month 2026-10 --store data/store/sandbox --as-of 7")


def test_without_statements_no_bank_flags_are_written() -> None:
    command = reproduce_command(MONTH, "s3://books/store", 3, bank_columns=CSV_COLUMNS)
    assert command == "txkit report --month 2026-10 --store s3://books/store --as-of 3"
    args = _parsed(command)
    assert args.bank_statements is None and args.bank_columns is None


def test_report_json_reproduces_the_bank_arguments(
    session_report: SessionReport, tmp_path: Path
) -> None:
    """A report given CSV statements and their mapping through TXKIT_BANK_COLUMNS (not the
    flag) writes both into its command, so it reproduces in any environment.

    Over a copy of the shared report's data (its store: nothing to sync; the sandbox's bank
    statements), with one small notebook: the command in report.json is the point."""
    data = session_report.copy_data(tmp_path)
    (files,) = (data / "sandbox/cache").glob("*/bank")
    folder = tmp_path / "my statements"
    folder.mkdir()
    given = []
    for month in (MONTH, "2026-11"):
        given.append(folder / f"statement_{month}.csv")
        shutil.copy(files / f"statement_{month}.csv", given[-1])
    books = small_notebooks(tmp_path / "books")
    done = invoke_cli(
        "report", "--month", MONTH, "--notebooks", str(books), "--out", "reports",
        "--bank-statement", str(given[0]), "--bank-statement", str(given[1]),
        cwd=tmp_path, env={"TXKIT_BANK_COLUMNS": CSV_COLUMNS},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / f"reports/{MONTH}/report.json").read_text())
    args = _parsed(doc["reproduce"])
    assert args.bank_statements == [str(p) for p in given]
    assert args.bank_columns == CSV_COLUMNS
    assert args.month == MONTH and args.as_of == doc["table_version"]
