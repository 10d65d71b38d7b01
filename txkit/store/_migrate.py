"""``txkit store migrate``: a store of the previous format (Parquet generations) to Delta.

The previous format kept ``DIR/current -> generations/gNNNNNN`` with one Parquet file and one
JSON manifest per month. Migration reads the current generation whole (every file is checked
before anything is written), writes it as the first commit of a Delta table, with each
month's coverage taken from its manifest, and only then removes the old generations. A
migration that is killed before its commit leaves the old store as it was; one killed after
it is finished by running it again. A month's manifest records only its last fetch's window,
so that is the coverage recorded: a month whose earlier windows are unknown is completed by
the next sync (the gap is fetched), never taken as whole on trust.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from txkit.config import SandboxSettings, store_for_url, store_root
from txkit.decode import finalize
from txkit.errors import StoreError
from txkit.store._coverage import Fetch, MonthCoverage
from txkit.store._location import (
    LOCK_NAME,
    is_remote,
    locked,
    os_problem,
    refuse_foreign_folder,
)
from txkit.store._state import (
    DEFAULT_LOOKBACK_DAYS,
    SourceIdentity,
    commit_metadata,
    read_state,
)
from txkit.store._write import commit

__all__ = ["MigrationResult", "migrate_store"]

_SANDBOX_LABEL = re.compile(r"^the embedded sandbox \(seed (\d+), ([\d,]+) records\)$")


@dataclass(frozen=True)
class MigrationResult:
    """What a migration did.

    Attributes:
        source: the old store folder.
        target: the Delta store written.
        months: months migrated.
        rows: records migrated.
        version: the table version written (None when the target already held it).
    """

    source: Path
    target: Path
    months: list[str]
    rows: int
    version: int | None


def _old_generation(store: Path) -> Path | None:
    current = store / "current"
    return current.resolve() if current.exists() else None


def _identity(label: str) -> SourceIdentity:
    """The old manifests name the source by a label: the sandbox's, or a base URL."""
    match = _SANDBOX_LABEL.match(label)
    if match:
        settings = SandboxSettings(seed=int(match[1]), records=int(match[2].replace(",", "")))
        return SourceIdentity(f"sandbox:{settings.name}", None, None, label)
    return SourceIdentity(label, None, None, label)


def default_target(store: Path, source: SourceIdentity) -> Path:
    """Where a store is migrated to: in place, except the old default ``data/store``, which
    goes to its source's default (``data/store/sandbox``, ``data/store/<host>``)."""
    if store.absolute() == store_root().absolute():
        return store_for_url(source.url)
    return store


def _coverage(manifest: dict) -> MonthCoverage:
    """The coverage an old manifest proves: its last fetch's window."""
    try:
        first, last = (date.fromisoformat(d) for d in manifest["windows"][-1])
        fetch = Fetch(
            first=first,
            last=last,
            fetched_at=datetime.fromisoformat(manifest["fetched_at"]).astimezone(UTC),
            kind="migrated",
            queries=list(manifest.get("query", {}).get("queries", [])),
            service_total=int(manifest["service_total"]),
            rows=int(manifest["rows"]),
        )
        return MonthCoverage(
            manifest["month"], (fetch,), int(manifest["rows"]), manifest.get("newest_created_at")
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise StoreError(
            f"manifest of {manifest.get('month', '?')} is unreadable ({type(exc).__name__}: "
            f"{exc}); migrate cannot prove what the month holds: move the old store aside and "
            "run `txkit sync`"
        ) from None


def migrate_store(
    store: str | os.PathLike[str], *, to: str | os.PathLike[str] | None = None
) -> MigrationResult:
    """Convert a store of the previous format into a Delta store.

    Args:
        store: the old store folder (with ``current`` and ``generations``).
        to: where the Delta store goes (default: see :func:`default_target`).

    Returns:
        A :class:`MigrationResult`.

    Raises:
        StoreError: not an old store, a damaged file (named), or a target that holds
            another table.
    """
    if is_remote(store):
        raise StoreError(f"{store}: the previous format was local only; nothing to migrate")
    old = Path(store)
    gen = _old_generation(old)
    if gen is None:
        if (old / "generations").is_dir():  # migrated, but killed before the cleanup
            shutil.rmtree(old / "generations")
            return MigrationResult(old, Path(to or old), [], 0, None)
        raise StoreError(f"{store} is not a store of the previous format (no `current` link)")
    manifests = _read_manifests(gen)
    source = _one_source(store, manifests)
    target = Path(to) if to is not None else default_target(old, source)
    if target.absolute() != old.absolute():
        refuse_foreign_folder(target)
    frames, coverage = _read_months(gen, manifests, store, to, target)
    with contextlib.ExitStack() as stack:
        stack.enter_context(locked(old))
        if target.absolute() != old.absolute():
            stack.enter_context(locked(target))
        version = _write_table(old, target, manifests, source, coverage, frames)
        try:
            (old / "current").unlink()
            shutil.rmtree(old / "generations")
            (old / ".lock").unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(os_problem(old, exc)) from None
    if target.absolute() != old.absolute():
        (old / LOCK_NAME).unlink(missing_ok=True)  # the old folder keeps nothing of txkit's
    return MigrationResult(old, target, sorted(coverage), sum(f.height for f in frames), version)


def _read_manifests(gen: Path) -> dict[str, dict[str, Any]]:
    """The generation's month manifests, by month."""
    manifests = {}
    for file in sorted((gen / "manifests").glob("*.json")):
        try:
            manifests[file.stem] = json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read {file} ({exc}); nothing was migrated") from None
    return manifests


def _one_source(
    store: str | os.PathLike[str], manifests: dict[str, dict[str, Any]]
) -> SourceIdentity:
    """The one source the manifests name (a store of several is refused)."""
    labels = {m.get("source", "") for m in manifests.values()}
    if len(labels) > 1:
        raise StoreError(
            f"{store} mixes sources ({', '.join(sorted(labels))}); the new store holds one "
            "source: move the old store aside and run `txkit sync` for each source"
        )
    return _identity(labels.pop() if labels else "unknown")


def _read_months(
    gen: Path,
    manifests: dict[str, dict[str, Any]],
    store: str | os.PathLike[str],
    to: str | os.PathLike[str] | None,
    target: Path,
) -> tuple[list[pl.DataFrame], dict[str, MonthCoverage]]:
    """Each month's records (finalized, with their month) and coverage."""
    frames, coverage = [], {}
    for month, manifest in sorted(manifests.items()):
        part = gen / "transactions" / f"month={month}" / "part-0.parquet"
        try:
            frame = pl.read_parquet(part)
        except (OSError, pl.exceptions.ComputeError) as exc:
            manifest_file = gen / "manifests" / f"{month}.json"
            raise StoreError(
                f"cannot read {part} ({' '.join(str(exc).split())[:200]}); nothing was "
                f"migrated: move {manifest_file} aside (the month is then left out), run "
                f"`txkit store migrate --store {store}{f' --to {to}' if to else ''}` again, then "
                f"`txkit sync --store "
                f"{target} --refresh {month}`"
            ) from None
        coverage[month] = _coverage(manifest)
        frames.append(finalize(frame.drop("month", strict=False)).with_columns(month=pl.lit(month)))
    return frames, coverage


def _write_table(
    old: Path,
    target: Path,
    manifests: dict[str, dict[str, Any]],
    source: SourceIdentity,
    coverage: dict[str, MonthCoverage],
    frames: list[pl.DataFrame],
) -> int | None:
    """Commit the months to the Delta table (None: a killed migration had committed them)."""
    if _has_table(target):
        done = read_state(target).coverage.keys() == coverage.keys() if target != old else True
        if not done:
            raise StoreError(f"{target} already holds a Delta table: pass another --to")
        return None
    # Not yet written (a migration killed after its commit only cleans up).
    lookback = (
        next(
            (int(m.get("extra", {}).get("lookback_days", 0)) for m in manifests.values()),
            0,
        )
        or DEFAULT_LOOKBACK_DAYS
    )
    meta = commit_metadata(source, lookback, coverage)
    return commit(target, None, frames, sorted(coverage), meta)


def _has_table(path: Path) -> bool:
    from deltalake import DeltaTable

    return DeltaTable.is_deltatable(str(path.absolute()))
