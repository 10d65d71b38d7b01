"""The store's state: the txkit metadata of the newest commit at or before a version.

Every sync's commit carries, in its commit info, the store's source (:class:`SourceIdentity`),
the look-back, each month's coverage (:mod:`txkit.store._coverage`) and the digest of every
data file (:func:`commit_metadata` writes it, :func:`read_state` reads it back).
:func:`read_manifests` summarises each month; :func:`format_status` prints them.
"""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from txkit import config
from txkit.calendar import month_bounds
from txkit.errors import StoreError
from txkit.store._coverage import MonthCoverage
from txkit.store._location import StoreLike, objects, store_location
from txkit.store._table import open_table
from txkit.store._write import META_KEY

if TYPE_CHECKING:
    from txkit.fetch.client import Client

log = logging.getLogger("txkit")

DEFAULT_LOOKBACK_DAYS = config.LOOKBACK_DAYS
_FORMAT = 1


@dataclass(frozen=True)
class SourceIdentity:
    """Which source a store holds: its address and a salted hash of its key (never the key).

    Attributes:
        url: the service's base URL, or ``sandbox:<settings>`` for the embedded sandbox.
        fingerprint: PBKDF2 hash of the key with ``salt`` (None for the embedded sandbox,
            whose key is new each run).
        salt: hex salt of the fingerprint.
        label: how reports name the source.
    """

    url: str
    fingerprint: str | None = None
    salt: str | None = None
    label: str = ""

    @classmethod
    def of_client(cls, client: Client, label: str = "", salt: str | None = None) -> SourceIdentity:
        """The identity of ``client``'s service and key (a fresh salt unless given)."""
        salt = salt or secrets.token_hex(16)
        return cls(client.base_url, client.key_fingerprint(bytes.fromhex(salt)), salt, label or "")


@dataclass(frozen=True)
class StoreState:
    """The store at one table version.

    Attributes:
        version: the Delta table version (None: no table yet).
        source: the source that wrote it.
        coverage: month -> :class:`~txkit.store._coverage.MonthCoverage`.
        lookback_days: the look-back of the sync that wrote this version.
        committed_at: when that version was committed (UTC).
        files: the digest recorded for each data file (path relative to the store); a file
            of the version not in it has no digest recorded (unverified: another tool added it).
        table_id: the Delta table's id (a new one when the store is moved aside and synced
            again), so a report's version is never taken for another table's.
        synced_at: the "now" of the sync that wrote the version (its pinned ``today`` in
            tests and the benchmark; else the commit time): what the retention policy ages
            versions by.
    """

    version: int | None
    source: SourceIdentity | None = None
    coverage: dict[str, MonthCoverage] = field(default_factory=dict)
    lookback_days: int = DEFAULT_LOOKBACK_DAYS
    committed_at: datetime | None = None
    files: dict[str, str] = field(default_factory=dict)
    table_id: str | None = None
    synced_at: datetime | None = None


@dataclass
class MonthManifest:
    """What a stored month holds and how fresh it is (a summary of its coverage).

    Attributes:
        month: ``YYYY-MM``.
        fetched_at: when the month was last fetched, fully or in part (UTC, ISO 8601).
        full_fetch_at: when it was last fetched whole in one window (None if never).
        windows: the ``[first, last]`` day ranges of its fetches, oldest fetch first.
        rows: records stored for the month.
        service_total: the service's ``total`` for the last fetch's queries (a day of margin
            on each side, so it counts more than the window's rows).
        source: how the store names its source (never the key).
        complete: the windows cover the month whole, the newest fetch happened after the
            month ended plus the look-back, and no day is unproven (read once).
        newest_created_at: the newest ``createdAt`` stored.
        query: the last fetch's queries (``{"queries": [...]}``).
        table_version: the store's table version this summary describes.
        table_id: the Delta table's id (see :attr:`StoreState.table_id`).
        coverage: the full :class:`~txkit.store._coverage.MonthCoverage`.
    """

    month: str
    fetched_at: str
    full_fetch_at: str | None
    windows: list[list[str]]
    rows: int
    service_total: int
    source: str
    complete: bool
    newest_created_at: str | None
    query: dict[str, Any] = field(default_factory=dict)
    table_version: int | None = None
    coverage: MonthCoverage | None = None
    table_id: str | None = None


def read_state(store: StoreLike = None, *, version: int | None = None) -> StoreState:
    """The store's source and coverage at ``version`` (default: the newest).

    Raises:
        StoreError: a store that cannot be read.
    """
    store = store_location(store)
    table = open_table(store, version)
    if table is None:
        return StoreState(version=None)
    return _state_of(table, store)


def commit_info(store: str | os.PathLike[str], version: int) -> dict[str, Any] | None:
    """The ``commitInfo`` of ``version``'s own log entry (None when the entry is gone, e.g.
    removed with its version by the retention policy, or holds none).

    Read from ``_delta_log/<version>.json`` itself: delta-rs's ``history()`` of a table opened
    at an older version numbers the newest commits as if they were that version's (opened at
    version 0 of three, it labels commit 2 as version 0), so it cannot be trusted for an old
    version.
    """
    try:
        data = objects(store).get(f"_delta_log/{version:020d}.json")
    except Exception as exc:  # a lost or removed entry; obstore raises its own errors
        if isinstance(exc, OSError) or type(exc).__module__.startswith("obstore"):
            return None
        raise
    for line in data.splitlines():
        if b'"commitInfo"' in line:
            # orjson: with json, parsing a year's commit metadata was a noticeable share of a
            # small month's read (docs/benchmarks.md, Store).
            entry = orjson.loads(line).get("commitInfo")
            if isinstance(entry, dict):
                return entry
    return None


def _newest_meta(table: Any, store: str | os.PathLike[str]) -> tuple[int, dict, dict[str, Any]]:
    """Of the newest commit at or before ``table``'s version with txkit's metadata (another
    writer's commits have none)."""
    at = table.version()
    for version in range(at, -1, -1):
        entry = commit_info(store, version)
        if entry is None and version == at:
            # Read from its checkpoint, but its own entry is gone (the retention policy keeps
            # every kept version's): txkit's metadata for it is lost.
            path = f"{store}/_delta_log/{version:020d}.json"
            raise StoreError(
                f"the store {store} is missing its commit log entry {path}: restore that file "
                f"(a backup, or the bucket's versioning), or move the store aside and run "
                f"`txkit sync --store {store}` to fetch it again"
            )
        if entry is None:
            break  # removed by the retention policy: no older entry is kept for this version
        if META_KEY not in entry:
            continue
        try:
            meta = orjson.loads(entry[META_KEY])
            if not isinstance(meta, dict):
                raise TypeError(f"a {type(meta).__name__}, not an object")
        except (ValueError, TypeError) as exc:  # orjson: ValueError
            raise _unreadable(store, version, exc) from None
        return version, entry, meta
    raise StoreError(
        f"{store} is a Delta table without txkit's metadata: it was not written by `txkit "
        "sync`; point --store at another folder"
    )


def _unreadable(store: str | os.PathLike[str], version: int, exc: Exception) -> StoreError:
    return StoreError(
        f"the store {store}'s commit {version} has unreadable txkit "
        f"metadata ({type(exc).__name__}: {exc})"
    )


def recorded_digests(table: Any, store: str | os.PathLike[str]) -> dict[str, str]:
    """The digest recorded for each data file of ``table``'s version (see
    :attr:`StoreState.files`), without parsing the coverage, which a read does not need: a
    year's coverage was a noticeable share of a small month's open and read to parse before
    it was merged (docs/benchmarks.md, Store).

    Raises:
        StoreError: as :func:`read_state`.
    """
    version, _, meta = _newest_meta(table, store)
    try:
        return {str(k): str(v) for k, v in meta.get("files", {}).items()}
    except (AttributeError, TypeError) as exc:
        raise _unreadable(store, version, exc) from None


def _state_of(table: Any, store: str | os.PathLike[str]) -> StoreState:
    at = table.version()
    table_id = str(table.metadata().id)
    version, entry, meta = _newest_meta(table, store)
    try:
        source = SourceIdentity(**meta["source"])
        coverage = {m: MonthCoverage.from_json(c) for m, c in meta["coverage"].items()}
        files = {str(k): str(v) for k, v in meta.get("files", {}).items()}
        lookback = int(meta["lookback_days"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _unreadable(store, version, exc) from None
    committed = datetime.fromtimestamp(entry["timestamp"] / 1000, UTC)
    synced = meta.get("synced_at")
    return StoreState(
        version=at,
        source=source,
        coverage=coverage,
        lookback_days=lookback,
        committed_at=committed,
        files=files,
        table_id=table_id,
        synced_at=datetime.fromisoformat(synced) if synced else committed,
    )


def read_manifests(
    store: StoreLike = None, *, version: int | None = None
) -> dict[str, MonthManifest]:
    """A summary of each stored month's coverage, by month.

    Args:
        store: the store folder or URI.
        version: a table version (default: the newest).
    """
    store = store_location(store)
    state = read_state(store, version=version)
    label = (state.source.label or state.source.url) if state.source else ""
    return {m: _manifest(c, state, label) for m, c in sorted(state.coverage.items())}


def _manifest(cov: MonthCoverage, state: StoreState, label: str) -> MonthManifest:
    last = cov.last_fetch
    m_first, m_last = month_bounds(cov.month)
    whole = [f for f in cov.fetches if f.first <= m_first and f.last >= m_last]
    ordered = sorted(cov.fetches, key=lambda f: f.fetched_at)
    return MonthManifest(
        month=cov.month,
        fetched_at=last.fetched_at.isoformat(timespec="seconds") if last else "",
        full_fetch_at=max(f.fetched_at for f in whole).isoformat(timespec="seconds")
        if whole
        else None,
        windows=[[f.first.isoformat(), f.last.isoformat()] for f in ordered],
        rows=cov.rows,
        service_total=last.service_total if last else 0,
        source=label,
        complete=cov.complete(state.lookback_days),
        newest_created_at=cov.newest_created_at,
        query={"queries": list(last.queries) if last else []},
        table_version=state.version,
        coverage=cov,
        table_id=state.table_id,
    )


def commit_metadata(
    source: SourceIdentity,
    lookback_days: int,
    coverage: dict[str, MonthCoverage],
    synced_at: datetime | None = None,
) -> dict[str, Any]:
    """The txkit metadata every commit carries: the source, the whole coverage (each complete
    month's fetches merged under ``lookback_days``: :meth:`MonthCoverage.merged`) and when the
    sync ran (its clock: ``today`` when pinned)."""
    meta: dict[str, Any] = {
        "format": _FORMAT,
        "source": source.__dict__,
        "lookback_days": lookback_days,
        "coverage": {m: c.merged(lookback_days).to_json() for m, c in sorted(coverage.items())},
    }
    if synced_at is not None:
        meta["synced_at"] = synced_at.isoformat()
    return meta


def format_status(store: StoreLike = None, *, lookback_days: int | None = None) -> str:
    """Each stored month's coverage, rows, totals and last fetch, as printable lines.

    Args:
        store: the store folder or URI.
        lookback_days: the look-back to judge completeness by (default: the last sync's).
    """
    store = store_location(store)
    state = read_state(store)
    if state.version is None:
        return f"store {store}: empty (no sync yet)"
    lookback = state.lookback_days if lookback_days is None else lookback_days
    source = state.source.label or state.source.url if state.source else "?"
    lines = [
        f"store {store}: table version {state.version}, source {source}, look-back {lookback} days"
    ]
    for month, cov in sorted(state.coverage.items()):
        last = cov.last_fetch
        uncovered = cov.uncovered()
        status = (
            "complete"
            if cov.complete(lookback)
            else f"partial ({len(uncovered)} day(s) never fetched)"
            if uncovered
            else f"open ({len(cov.unproven)} day(s) read once, not yet set-proven)"
            if cov.unproven
            else "open (within the look-back)"
        )
        lines.append(
            f"  {month}: {status}; {cov.rows:,} rows; windows {cov.describe_windows()}; "
            + (
                f"last fetch {last.fetched_at:%Y-%m-%d %H:%M}Z, service total "
                f"{last.service_total:,} for {', '.join(last.queries) or 'its query'}"
                if last
                else "never fetched"
            )
        )
    return "\n".join(lines)
