"""``txkit report``: the monthly job (:func:`txkit.report.run_report`) from a shell."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from txkit import config
from txkit.cli._args import month_arg, version_arg
from txkit.config import default_store
from txkit.notebook import source_sentence
from txkit.register import ROLES, shown_keys, sign_report, unexplained_flux, verify_report
from txkit.report import run_report

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit report`` and ``txkit report-sign``."""
    _add_report(sub)
    _add_sign(sub)
    _add_verify(sub)


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="the monthly job: sync the month, run the notebooks, write HTML",
        description=(
            "Sync the month into the local store (the embedded sandbox when no "
            f"{config.SECRET_KEY_VAR} is configured), execute the curated notebooks for it and "
            "write reports/YYYY-MM/ with HTML pages and an index."
        ),
    )
    _add_where(p)
    _add_data_files(p)
    _add_how_shown(p)
    p.set_defaults(func=_run)


def _add_where(p: argparse.ArgumentParser) -> None:
    p.add_argument("--month", required=True, type=month_arg, metavar="YYYY-MM")
    p.add_argument(
        "--store",
        metavar="DIR|URI",
        help="default: data/store/sandbox without a key, data/store/<host> with one",
    )
    p.add_argument("--out", default=str(config.REPORTS_DIR), metavar="DIR")
    p.add_argument(
        "--notebooks",
        default=str(config.NOTEBOOKS_DIR),
        metavar="DIR",
        help="the notebooks to run (default: the project's notebooks/)",
    )
    p.add_argument("--lookback-days", type=int, default=config.LOOKBACK_DAYS, metavar="N")


def _add_data_files(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--orders",
        metavar="FILE",
        help="expected payments for the reconciliation (default: data/orders.csv with a key, "
        "the sandbox's orders without)",
    )
    p.add_argument(
        "--orders-columns",
        metavar="MAPPING",
        help="the orders file's columns: a preset (shopify, woocommerce, stripe), key=Column "
        "Name pairs separated by commas (reference=Order ID,amount=Total,currency=Currency,"
        "status=State,date=Created), or a preset with changes ('shopify,status.pending=ignore'); "
        f"status.<shop status>=<service status or ignore> maps statuses (default: "
        f"{config.ORDERS_COLUMNS_VAR}, else [orders] in txkit.toml)",
    )
    p.add_argument(
        "--bank-statement",
        action="append",
        metavar="FILE",
        dest="bank_statements",
        help="the merchant's bank statement (CSV, MT940 or camt.053; the format is found from "
        "the content); repeat it for the next month's, where the month's last settlements "
        "arrive (default: the sandbox's own without a key, none with one)",
    )
    p.add_argument(
        "--bank-columns",
        metavar="MAPPING",
        help="a CSV statement's columns: key=Column Name pairs separated by commas, e.g. "
        "'date=Value Date,credit=Credit,debit=Debit,currency=Currency,narration=Details' "
        f"(default: {config.BANK_COLUMNS_VAR}, else [bank] in txkit.toml)",
    )


def _add_how_shown(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--show-pii",
        action="store_true",
        help="render customer e-mails and account numbers unmasked (the report says so)",
    )
    p.add_argument(
        "--as-of",
        type=version_arg,
        metavar="VERSION",
        help="re-render from this table version of the store (no sync; see report.json)",
    )
    p.add_argument(
        "--reopen",
        metavar="WHY",
        help="report a locked month (signed by preparer and reviewer) again: a new revision "
        "beside the signed one, with why and what changed (needs --key: who reopens signs it); "
        "a month only the preparer signed is rerun without it",
    )
    p.add_argument(
        "--key",
        metavar="PATH",
        help="with --reopen: your OpenSSH ed25519 private key (one allowed_signers lists), or "
        "its .pub when the running ssh-agent holds it",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="execute every notebook, reusing none from the execution cache (data/cache/"
        f"notebooks/; also {config.REPORT_CACHE_VAR}=0)",
    )
    p.add_argument("--no-progress", action="store_true")


def _add_sign(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "report-sign",
        prog="txkit report sign",
        help="sign a month's report (also spelled `txkit report sign`)",
        description="Sign the month's report as preparer or reviewer with your own OpenSSH "
        "ed25519 key (ssh-keygen -t ed25519), listed in the project's allowed_signers: the "
        "signed text (the pack's files and digest, the register's version) and its SSHSIG "
        "signature go into the pack's signatures/ and the register. The preparer signs first, "
        "then a reviewer with another key; the month is locked once both have signed (txkit "
        "report then refuses it without --reopen; the preparer alone does not lock it). "
        "Refused while the register changed after the report was written (an explanation "
        "given since: run the report again) and, for the reviewer, while a flux breach has "
        "no explanation.",
    )
    s.add_argument("--month", required=True, type=month_arg, metavar="YYYY-MM")
    s.add_argument("--role", required=True, choices=ROLES)
    s.add_argument(
        "--key",
        required=True,
        metavar="PATH",
        help="your OpenSSH ed25519 private key (encrypted: its passphrase from "
        f"{config.KEY_PASSPHRASE_VAR} or asked at a terminal), or its public key (.pub) when "
        "the running ssh-agent (SSH_AUTH_SOCK) holds it: the agent signs; who you are is the "
        "name allowed_signers gives its public key",
    )
    _add_allowed(s)
    s.add_argument("--out", default=str(config.REPORTS_DIR), metavar="DIR")
    s.add_argument("--store", metavar="DIR|URI", help="default: this source's store")
    s.set_defaults(func=_sign)


def _add_verify(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser(
        "report-verify",
        prog="txkit report verify",
        help="verify a month's reports against the register (also `txkit report verify`)",
        description="Recompute the digest of every file of every revision of the month and "
        "check it, and every signature, against what the store's exception register recorded; "
        "names every file changed, added or missing. Exit 1 when anything does not verify.",
    )
    v.add_argument("--month", required=True, type=month_arg, metavar="YYYY-MM")
    _add_allowed(v)
    v.add_argument("--out", default=str(config.REPORTS_DIR), metavar="DIR")
    v.add_argument("--store", metavar="DIR|URI", help="default: this source's store")
    v.set_defaults(func=_verify)


def _add_allowed(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allowed-signers",
        metavar="FILE",
        help="who may sign, in OpenSSH's format (default: allowed_signers in the project folder)",
    )


def _sign(args: argparse.Namespace) -> int:
    store = args.store or default_store()
    signature = sign_report(Path(args.out), args.month, role=args.role, key=args.key,
                            store=store, allowed_signers=args.allowed_signers)  # fmt: skip
    print(
        f"signed {args.month} revision {signature['revision']} as {signature['role']}: "
        f"{signature['name']} (key {signature['key']}), {signature['at']}, table version "
        f"{signature['table_version']}, register version {signature['register_version']}, "
        f"SHA-256 {signature['sha256']}"
    )
    breaches = unexplained_flux(store, args.month) if args.role == "preparer" else []
    if breaches:
        print(
            "note: the reviewer cannot sign while flux breaches have no explanation: "
            f"{shown_keys(breaches)} "
            '(txkit exceptions explain KEY --note "why", then txkit report again)'
        )
    return 0


def _verify(args: argparse.Namespace) -> int:
    lines, whole = verify_report(Path(args.out), args.month, store=args.store or default_store(),
                                 allowed_signers=args.allowed_signers)  # fmt: skip
    for line in lines:
        print(line)
    return 0 if whole else 1


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    result = run_report(
        args.month,
        store=args.store,
        out=Path(args.out),
        notebooks=Path(args.notebooks),
        show_pii=args.show_pii,
        lookback_days=args.lookback_days,
        orders=args.orders,
        progress=False if args.no_progress else None,
        as_of=args.as_of,
        bank_statements=args.bank_statements,
        bank_columns=args.bank_columns,
        reopen=args.reopen,
        orders_columns=args.orders_columns,
        key=args.key,
        on_note=print,
        cache=not args.no_cache,
    )
    synced = (
        ", ".join(f"{m}: {k}" for m, k in result.sync.fetched.items()) or "nothing new"
        if result.sync
        else "store up to date, no request sent"
    )
    print(f"sync: {synced} ({result.sync_seconds:.1f} s)")
    # Which source the pages show, also when nothing was fetched (then no sync line names it).
    print(source_sentence(args.month, source="store", store=args.store, version=args.as_of,
                          plain=True))  # fmt: skip
    for name, seconds in result.notebooks.items():
        print(f"  {name}: {seconds:.1f} s")
    print(f"report {args.month} done in {time.perf_counter() - started:.1f} s")
    print(f"index: {result.index.resolve()}")
    return 0
