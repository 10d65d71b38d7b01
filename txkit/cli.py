"""The ``txkit`` command line: ``txkit sandbox``, ``txkit export`` (and later ``sync``/``report``).

Each subcommand lives with its concept; this module only wires them into one parser.
The secret key is never a flag: it comes from ``TXKIT_SECRET_KEY`` or a ``.env`` file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """Build the ``txkit`` argument parser with every subcommand."""
    from txkit.sandbox import cli as sandbox_cli

    parser = argparse.ArgumentParser(
        prog="txkit",
        description="Exact, complete transaction exports into polars; sandbox included.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sandbox_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``txkit`` command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
