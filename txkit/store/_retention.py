"""Which versions of the store are kept, and removing the rest (``txkit store vacuum``).

Every sync rewrites the months it touches and keeps the old files, so that earlier versions
stay readable: a daily look-back sync leaves about thirty copies of the current month a year.
The policy (:class:`RetentionPolicy`) keeps

* the newest version;
* every version of the last ``keep_days`` days (``TXKIT_STORE_KEEP_DAYS``, default 30), and
  the version that was newest when that window began, so that reading "as of" any moment of
  the window works;
* every version a report under ``reports/`` cites (its ``report.json``: ``table_version`` of
  this table, by ``table_id``);
* every version the policy's ``sources`` return (callables given the store and the table id,
  such as the register's signed months: :func:`txkit.register.retention_policy`);
* every version a running report holds (its lease: :mod:`txkit.store._lease`).

Everything else goes: data files that no kept version references, and the log entries
(commits and checkpoints) that no kept version is read from. A version is read from the
newest checkpoint at or before it and the commits after that checkpoint up to it, so those
are kept, and its own commit (txkit's metadata: coverage, digests). A file a kept version
needs is never removed.

On object storage, where no lock keeps a sync out, data files younger than
:data:`REMOTE_GRACE` are never removed: they may belong to a sync that has not committed yet.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from txkit import config
from txkit.errors import StoreError
from txkit.store._lease import held_versions, record_removal, retention_guard
from txkit.store._location import StoredObject, StoreLike, is_remote, objects, store_location
from txkit.store._lock import locked
from txkit.store._state import commit_info
from txkit.store._table import open_table, table_files
from txkit.store._write import META_KEY, write_checkpoint

__all__ = [
    "REMOTE_GRACE",
    "KeepSource",
    "RetentionPolicy",
    "VacuumResult",
    "apply_retention",
    "format_vacuum",
    "vacuum_store",
]

log = logging.getLogger("txkit")

#: A source of versions to keep: called with the store (as given) and the table's id, returns
#: the versions it needs (versions the table no longer has are ignored).
KeepSource = Callable[[str, str], Iterable[int]]
#: Data files younger than this are never removed from object storage (a sync may be writing
#: them; no lock keeps it out there).
REMOTE_GRACE = timedelta(hours=1)

_LOG_ENTRY = re.compile(r"_delta_log/(\d{20})\.(json|checkpoint\.parquet)")


@dataclass(frozen=True)
class RetentionPolicy:
    """What the store keeps (see the module's docstring).

    Attributes:
        keep_days: days of versions kept for time travel (0: only the newest, the cited ones
            and the sources').
        reports: the folder whose ``*/report.json`` cite versions (None: no reports).
        sources: sources of versions to keep besides the reports (the register's signed
            months: :func:`txkit.register.retention_policy`).
    """

    keep_days: int = config.STORE_KEEP_DAYS
    reports: Path | None = config.REPORTS_DIR
    sources: tuple[KeepSource, ...] = ()

    @classmethod
    def from_config(
        cls, keep_days: int | None = None, reports: str | os.PathLike[str] | None = None
    ) -> RetentionPolicy:
        """The configured policy: ``TXKIT_STORE_KEEP_DAYS`` unless ``keep_days`` is given,
        and the reports under ``reports`` (default ``reports/``)."""
        days = config.store_keep_days() if keep_days is None else keep_days
        if isinstance(days, bool) or not isinstance(days, int) or days < 0:
            raise ValueError(f"keep_days must be a whole number of days, 0 or more, got {days!r}")
        return cls(days, Path(reports) if reports is not None else config.REPORTS_DIR)


@dataclass
class VacuumResult:
    """What the policy kept and removed (or would remove, on a dry run).

    Attributes:
        store: the store.
        newest: the newest table version (None: no table).
        kept: kept version -> why (``newest``, ``within 30 days``, a report's path, ...).
        dropped: versions that can no longer be read afterwards.
        files: data files removed (paths relative to the store, sizes).
        log_entries: log entries removed (paths relative to the store).
        dry_run: nothing was removed.
        notes: reports or sources that cite versions the table does not have.
    """

    store: str
    newest: int | None
    kept: dict[int, str] = field(default_factory=dict)
    dropped: list[int] = field(default_factory=list)
    files: list[tuple[str, int]] = field(default_factory=list)
    log_entries: list[str] = field(default_factory=list)
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        """Bytes of the data files removed."""
        return sum(size for _, size in self.files)


def _version_time(store: str | os.PathLike[str], version: int) -> datetime | None:
    entry = commit_info(store, version)
    if entry is None:
        return None
    with contextlib.suppress(ValueError, KeyError, TypeError):
        synced = json.loads(entry[META_KEY]).get("synced_at")
        if synced:
            return datetime.fromisoformat(synced)
    stamp = entry.get("timestamp")
    return datetime.fromtimestamp(stamp / 1000, UTC) if isinstance(stamp, int | float) else None


def _cited(store: str | os.PathLike[str], table_id: str, reports: Path | None) -> dict[int, str]:
    """An unreadable report.json is a StoreError: nothing may be removed until it is fixed."""
    if reports is None or is_remote(str(reports)) or not Path(reports).is_dir():
        return {}
    cited: dict[int, str] = {}
    for path in sorted(Path(reports).glob("**/report.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            version = doc.get("table_version")
            of = doc.get("table_id")
        except (OSError, ValueError, AttributeError) as exc:
            raise StoreError(
                f"cannot read {path} ({type(exc).__name__}): the versions it cites are unknown, "
                "so the store's retention removes nothing; fix or move that file"
            ) from None
        if not isinstance(version, int) or isinstance(version, bool):
            continue
        if of == table_id:
            cited.setdefault(version, str(path))
    return cited


def _files_of(store: str | os.PathLike[str], versions: list[int]) -> set[str]:
    files: set[str] = set()
    runs: list[list[int]] = []
    for v in versions:
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    store_files = objects(store)
    for run in runs:
        live = {rel for rel, _, _ in table_files(open_table(store, run[0]))}
        files |= live
        for version in run[1:]:
            data = store_files.get(f"_delta_log/{version:020d}.json")
            for line in data.splitlines():
                action = json.loads(line) if line.strip() else {}
                if "add" in action:
                    live.add(unquote(action["add"]["path"]))
                elif "remove" in action:
                    live.discard(unquote(action["remove"]["path"]))
            files |= live
    return files


def _needed_log(versions: Iterable[int], checkpoints: list[int]) -> set[int]:
    """The newest checkpoint at or before each version, and the commits from there to it."""
    needed: set[int] = set()
    for v in versions:
        base = max((c for c in checkpoints if c <= v), default=None)
        needed.update(range(base if base is not None else 0, v + 1))
    return needed


@dataclass
class _Listing:
    """The store's objects by role: log entries by version (and which are checkpoints), and
    the table's data files."""

    entries: dict[int, list[StoredObject]] = field(default_factory=dict)
    checkpoints: list[int] = field(default_factory=list)
    data: list[StoredObject] = field(default_factory=list)

    @classmethod
    def of(cls, listing: Iterable[StoredObject]) -> _Listing:
        """Sort a listing of the store into log entries and data files."""
        out = cls()
        for item in listing:
            match = _LOG_ENTRY.fullmatch(item.rel)
            if match:
                version = int(match.group(1))
                out.entries.setdefault(version, []).append(item)
                if match.group(2) != "json":
                    out.checkpoints.append(version)
            elif not item.rel.split("/", 1)[0].startswith(("_", ".")):
                # The table's data files only: as Delta readers do, folders and files whose
                # name starts with `_` or `.` are not the table's (the log, the exception
                # register in `_register/`, the lock), and are never the policy's to remove.
                out.data.append(item)
        return out

    def readable(self, newest: int) -> list[int]:
        """The versions that have a commit (JSON) entry, up to ``newest``."""
        return sorted(v for v, items in self.entries.items()
                      if any(i.rel.endswith(".json") for i in items) and v <= newest)  # fmt: skip


def apply_retention(
    store: StoreLike = None,
    *,
    policy: RetentionPolicy | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    grace: timedelta | None = None,
    by: str = "a sync's retention policy",
) -> VacuumResult:
    """Apply ``policy`` to ``store`` without taking its lock (the sync holds it already).

    Use :func:`vacuum_store` from outside a sync. Versions that running reports hold
    (:mod:`txkit.store._lease`) are kept; no report leases a version meanwhile.

    Args:
        store: the store folder or URI.
        policy: default :meth:`RetentionPolicy.from_config`.
        dry_run: only list what would be removed.
        now: the moment versions are aged from (default: now; the sync's clock).
        grace: data files younger than this are kept (default: :data:`REMOTE_GRACE` on object
            storage, none in a locked folder).
        by: what removes the versions, as a report that was reading one is told.
    """
    store = store_location(store)
    policy = policy or RetentionPolicy.from_config()
    if dry_run:
        return _apply(store, policy, dry_run, now, grace, held_versions(store, prune=False))
    with retention_guard(store):
        result = _apply(store, policy, dry_run, now, grace, held_versions(store))
        record_removal(store, result.dropped, by)
        return result


def _apply(
    store: str | os.PathLike[str],
    policy: RetentionPolicy,
    dry_run: bool,
    now: datetime | None,
    grace: timedelta | None,
    held: dict[int, str],
) -> VacuumResult:
    now = now or datetime.now(UTC)
    if grace is None:
        grace = REMOTE_GRACE if is_remote(store) else timedelta(0)
    table = open_table(store)
    if table is None:
        return VacuumResult(str(store), None, dry_run=dry_run)
    newest = table.version()
    table_id = str(table.metadata().id)
    files = objects(store)
    listing = _Listing.of(files.list())
    readable = listing.readable(newest)
    result = VacuumResult(str(store), newest, dry_run=dry_run)
    result.kept[newest] = "the newest version"
    for version, why in sorted(held.items()):
        if version in readable:
            result.kept.setdefault(version, why)
    _keep_recent(store, result.kept, readable, policy, now)
    _keep_wanted(store, table_id, result, readable, policy)
    needed_files = _files_of(store, sorted(result.kept))
    result.files.extend(_unneeded_files(listing.data, needed_files, grace))
    # Each run of kept versions is read from a checkpoint at its first version (written now
    # when missing), so no version between runs needs its log entry: it is gone, and opening
    # it says so, rather than finding its data files gone.
    kept = result.kept
    starts = [v for v in sorted(kept) if v > 0 and v - 1 not in kept]
    missing = [v for v in starts if v not in listing.checkpoints]
    if missing and not dry_run:
        _checkpoints_at(store, missing)
    needed_log = _needed_log(kept, sorted({*listing.checkpoints, *missing}))
    for version, items in sorted(listing.entries.items()):
        if version in needed_log or version > newest:
            continue
        result.log_entries.extend(i.rel for i in items)
    result.dropped = [v for v in readable if v not in kept]
    if not dry_run:
        _remove(store, files, result, sorted({*listing.checkpoints, *missing} & needed_log))
    return result


def _keep_recent(
    store: str | os.PathLike[str],
    kept: dict[int, str],
    readable: list[int],
    policy: RetentionPolicy,
    now: datetime,
) -> None:
    """Within the policy's days, and the newest version written before them."""
    cutoff = now - timedelta(days=policy.keep_days)
    at_cutoff = None
    for version in readable:
        when = _version_time(store, version)
        if when is None:
            continue
        if when >= cutoff:
            kept.setdefault(version, f"within {policy.keep_days} days")
        else:
            at_cutoff = version
    if at_cutoff is not None:
        kept.setdefault(at_cutoff, f"the newest {policy.keep_days} days ago")


def _keep_wanted(
    store: str | os.PathLike[str],
    table_id: str,
    result: VacuumResult,
    readable: list[int],
    policy: RetentionPolicy,
) -> None:
    wanted: dict[int, str] = {}
    for version, why in _cited(store, table_id, policy.reports).items():
        wanted.setdefault(version, f"cited by {why}")
    for source in policy.sources:
        name = getattr(source, "__qualname__", repr(source))
        for version in source(str(store), table_id):
            wanted.setdefault(int(version), f"kept by {name}")
    for version, why in sorted(wanted.items()):
        if version in readable:
            result.kept.setdefault(version, why)
        else:
            result.notes.append(f"{why.removeprefix('cited by ')} cites table version "
                                f"{version}, which the store no longer has")  # fmt: skip


def _unneeded_files(
    data: list[StoredObject], needed_files: set[str], grace: timedelta
) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    young = datetime.now(UTC) - grace
    for item in data:
        if item.rel in needed_files or (grace > timedelta(0) and item.modified >= young):
            continue
        if not item.rel.endswith(".parquet"):
            continue  # only data files: anything else is not the policy's to remove
        out.append((item.rel, item.size))
    return out


def _remove(
    store: str | os.PathLike[str], files: Any, result: VacuumResult, hint_at: list[int]
) -> None:
    # Data files first: a failure halfway leaves every version's log, and its files are
    # then missing only for versions the policy already gave up.
    for rel, _ in result.files:
        files.delete(rel)
    for rel in result.log_entries:
        files.delete(rel)
    _fix_hint(files, hint_at)
    if not is_remote(store):
        _remove_empty_folders(Path(store))


def _checkpoints_at(store: str | os.PathLike[str], versions: list[int]) -> None:
    files = objects(store)
    hint = "_delta_log/_last_checkpoint"
    try:
        before = files.get(hint)
    except Exception:  # none yet (no checkpoint so far)
        before = None
    for version in versions:
        write_checkpoint(store, version)
    # each write moves the hint to the checkpoint it wrote: keep it on the newest one
    if before is not None:
        files.put(hint, before)
    else:
        files.delete(hint)


def _fix_hint(files: Any, remaining: list[int]) -> None:
    """When its checkpoint was removed: readers then list the log (the hint is optional)."""
    hint = "_delta_log/_last_checkpoint"
    try:
        version = json.loads(files.get(hint)).get("version")
    except Exception:  # no hint, or an unreadable one: nothing to fix
        return
    if version not in remaining:
        files.delete(hint)


def _remove_empty_folders(root: Path) -> None:
    """Delta readers list empty month folders otherwise."""
    for folder in root.glob("month=*"):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty


def vacuum_store(
    store: StoreLike = None,
    *,
    policy: RetentionPolicy | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    grace: timedelta | None = None,
) -> VacuumResult:
    """Apply the retention policy to the store now (``txkit store vacuum``).

    A local store is locked for it, as for a sync.

    Args:
        store: the store folder or URI.
        policy: default :meth:`RetentionPolicy.from_config` (``TXKIT_STORE_KEEP_DAYS``, the
            reports under ``reports/``).
        dry_run: list what would be removed, remove nothing.
        now: the moment versions are aged from (default: now).
        grace: see :func:`apply_retention`.

    Returns:
        A :class:`VacuumResult` (:func:`format_vacuum` prints it).

    Raises:
        StoreLockedError: a sync holds the store.
        StoreError: a report.json cannot be read, or the store cannot be read or written.
    """
    store = store_location(store)
    by = "txkit store vacuum"
    if dry_run or is_remote(store):
        return apply_retention(store, policy=policy, dry_run=dry_run, now=now, grace=grace, by=by)
    with locked(store):
        return apply_retention(store, policy=policy, dry_run=dry_run, now=now, grace=grace, by=by)


def format_vacuum(result: VacuumResult, *, verbose: bool = True) -> str:
    """What a vacuum kept and removed, as printable lines."""
    if result.newest is None:
        return f"store {result.store}: empty (no sync yet), nothing to remove"
    verb = "would remove" if result.dry_run else "removed"
    lines = [
        f"store {result.store}: {verb} {len(result.files)} data file(s) "
        f"({result.bytes / 1e6:,.1f} MB) and {len(result.log_entries)} log entr(ies); "
        f"{len(result.dropped)} version(s) no longer readable; kept {len(result.kept)} "
        f"version(s) (newest {result.newest})"
    ]
    if verbose:
        lines += [f"  keep version {v}: {why}" for v, why in sorted(result.kept.items())]
        lines += [f"  {verb}: {rel} ({size:,} bytes)" for rel, size in result.files]
        lines += [f"  {verb}: {rel}" for rel in result.log_entries]
    lines += [f"  note: {note}" for note in result.notes]
    return "\n".join(lines)
