"""``txkit probe``: the subcommand that measures the service and writes its profile."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from txkit.config import BASE_URL_VAR, DATA_DIR_VAR, SECRET_KEY_VAR
from txkit.fetch.profile import default_path
from txkit.output import check_writable
from txkit.probe.run import DEFAULT_MAX_REQUESTS, probe_service

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``txkit probe`` to the ``txkit`` command's subparsers."""
    p = sub.add_parser(
        "probe",
        help="measure what the interface document leaves out (limits, order, date bounds)",
        description=(
            "Send at most --max-requests read-only GET /transaction requests and measure the "
            "default and maximum page size, the maximum skip, the sort order and tie "
            "stability, what total counts, which timestamp the date filters use, whether "
            "each bound is inclusive, the UTC offset of the service's days, envelope extras "
            "and undocumented fields. Prints a table and writes the profile as JSON (the "
            f"base URL, never the key). Reads {BASE_URL_VAR} and {SECRET_KEY_VAR}."
        ),
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="where to write the profile (default data/service-profile.json, or under "
        f"{DATA_DIR_VAR})",
    )
    p.add_argument(
        "--max-requests",
        type=int,
        default=DEFAULT_MAX_REQUESTS,
        metavar="N",
        help=f"request budget, retries included (default {DEFAULT_MAX_REQUESTS})",
    )
    p.add_argument("--base-url", metavar="URL", help=f"service address (default {BASE_URL_VAR})")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.max_requests < 2:
        raise ValueError(f"--max-requests must be at least 2, got {args.max_requests}")
    out = Path(args.out) if args.out else default_path()
    if out.suffix.lower() != ".json":
        raise ValueError(f"--out must end in .json, got {out.name!r}")
    check_writable(out, is_file=True, flag="--out")  # before any request is sent
    profile = probe_service(
        base_url=args.base_url,
        max_requests=args.max_requests,
        progress=lambda step: print(f"probe: {step} ...", file=sys.stderr, flush=True),
    )
    print(profile.table())
    profile.save(out)
    print(
        f"probed {profile.base_url} with {profile.requests} of {profile.max_requests} requests "
        f"in {profile.seconds:.1f} s -> {out}"
    )
    return 0
