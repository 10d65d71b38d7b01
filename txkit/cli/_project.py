"""``txkit init`` and ``txkit notebooks status|update``: the merchant's close project."""

from __future__ import annotations

import argparse
from pathlib import Path

from txkit.project import init_project, notebook_states, update_notebooks

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit init`` and ``txkit notebooks``."""
    i = sub.add_parser(
        "init",
        help="make a close project: curated notebooks, settings, a folder for your files",
        description="Make a close project in DIR (default: the working folder): notebooks/ "
        "(the curated notebooks, trusted), txkit.toml, materiality.toml, .env.example, "
        ".gitignore, inputs/ and a README with the monthly routine. Nothing is overwritten: "
        "a folder that holds any of these is refused.",
    )
    i.add_argument("dir", nargs="?", default=".", metavar="DIR")
    i.set_defaults(func=_init)
    n = sub.add_parser(
        "notebooks",
        help="the project's curated notebooks: status, update (never over an edit)",
        description="status: each curated notebook of the project is curated, edited, outdated "
        "or missing. update: replaces the outdated ones and restores the missing; for an edited "
        "one, writes the new curated version beside it (NN_topic.curated-VERSION.ipynb) and says "
        "what changed. The project is the working folder or the nearest one above it with a "
        "txkit.toml.",
    )
    n.add_argument("action", choices=["status", "update"])
    n.set_defaults(func=_notebooks)


def _init(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    made = init_project(target)
    print(f"made the close project {target.absolute()}:")
    for line in made:
        print(f"  {line}")
    print("next:")
    if target.absolute() != Path.cwd():
        print(f"  cd {args.dir}")
    print("  txkit report --month 2026-10     # the embedded sandbox: no key needed")
    print("  jupyter lab notebooks/           # explore; each notebook runs on its own")
    print("  cp .env.example .env             # then set your service's URL and key in .env")
    return 0


def _notebooks(args: argparse.Namespace) -> int:
    if args.action == "status":
        for state in notebook_states():
            print(state.describe())
    else:
        for line in update_notebooks():
            print(line)
    return 0
