"""``txkit store``: ``status``, ``verify`` and ``vacuum``."""

from __future__ import annotations

import argparse

from txkit import config
from txkit.config import default_store
from txkit.register import register_file_checks, repair_command, retention_policy
from txkit.store import (
    REGISTER,
    format_status,
    format_vacuum,
    format_verify,
    vacuum_store,
    verify_store,
)

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit store``."""
    p = sub.add_parser(
        "store",
        help="the local store: status, verify, vacuum",
        description="Look after the store: `status` prints each month's coverage; `verify` "
        "checks every data file of a version against the digest recorded when it was "
        "committed; `vacuum` removes the versions the retention policy does not keep.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="each month's coverage, rows, totals, last fetch")
    status.add_argument("--store", metavar="DIR|URI", help="default: this source's store")
    status.set_defaults(func=_run_store_status)
    verify = actions.add_parser(
        "verify", help="check every data file of a version against its recorded digest"
    )
    verify.add_argument("--store", metavar="DIR|URI", help="default: this source's store")
    verify.add_argument("--version", type=_version_number, metavar="N",
                        help="a table version (default: the newest)")  # fmt: skip
    verify.set_defaults(func=_run_store_verify)
    vacuum = actions.add_parser(
        "vacuum",
        help="remove the versions the retention policy does not keep, listing what goes",
        description="Keep the newest version, every version of the last N days "
        f"({config.STORE_KEEP_DAYS_VAR}, default {config.STORE_KEEP_DAYS}) and every version a "
        "report under reports/ cites; remove the data files and log entries of the rest (a "
        "file a kept version needs is never removed). A sync applies the same policy after "
        "its commit.",
    )
    vacuum.add_argument("--store", metavar="DIR|URI", help="default: this source's store")
    vacuum.add_argument("--dry-run", action="store_true",
                        help="list what would be removed, remove nothing")  # fmt: skip
    vacuum.add_argument("--keep-days", type=_days, metavar="N",
                        help=f"days of versions to keep (default: {config.STORE_KEEP_DAYS_VAR} "
                        f"or {config.STORE_KEEP_DAYS})")  # fmt: skip
    vacuum.add_argument("--reports", metavar="DIR", default=str(config.REPORTS_DIR),
                        help="reports whose versions are kept (default: %(default)s)")  # fmt: skip
    vacuum.set_defaults(func=_run_store_vacuum)


def _run_store_status(args: argparse.Namespace) -> int:
    print(format_status(args.store or str(default_store())))
    return 0


def _version_number(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"a table version is a whole number from 0, got {text!r}")
    return int(text)


def _days(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) > 36_500:
        raise argparse.ArgumentTypeError(
            f"a number of days is a whole number from 0 to 36500, got {text!r}"
        )
    return int(text)


def _run_store_vacuum(args: argparse.Namespace) -> int:
    store = args.store or str(default_store())
    policy = retention_policy(args.keep_days, args.reports)
    print(format_vacuum(vacuum_store(store, policy=policy, dry_run=args.dry_run)))
    return 0


def _run_store_verify(args: argparse.Namespace) -> int:
    store = args.store or str(default_store())
    checks = verify_store(store, version=args.version, others=(register_file_checks,))
    repairs = {REGISTER: repair_command(store)}
    text, whole = format_verify(store, checks, args.version, repairs=repairs)
    print(text)
    return 0 if whole else 1
