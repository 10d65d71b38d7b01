"""The local (or object-storage) copy of the export: one Delta Lake table, synced incrementally.

Layout: the store *is* a Delta table (``deltalake``/delta-rs), partitioned by the month of
``createdAt``::

    STORE/_delta_log/00000000000000000007.json     one commit per sync
    STORE/month=2026-10/part-...parquet             data files
    STORE/_txkit.lock                               held by the running sync (local stores)

``STORE`` is a folder (default ``data/store/sandbox`` or ``data/store/<host>``, one per source)
or a URI such as ``s3://bucket/prefix`` (credentials and endpoint from the standard AWS
variables). Readers: :func:`scan_store` (``version=`` reads an earlier version), or any Delta
reader: ``polars.scan_delta``, DuckDB's ``delta_scan``, Spark.

Every sync is one commit: the months it touched are rewritten (stored records merged with the
re-fetched ones by ``id``: newest ``updatedAt`` wins, then the later fetch) and, in the same
commit's metadata, the store's source and each month's coverage (:mod:`txkit.coverage`: the
windows fetched, when, with which queries and totals). A sync that is killed or fails before
its commit leaves the table at its previous version (its unreferenced files are ignored by
every reader). Two syncs on one local store exclude each other with a lock file; on object
storage, the second commit fails Delta's conflict check and says so.

The store keeps raw data, customer e-mails and account numbers included: it is the analyst's
own copy (mask it for display with :func:`txkit.mask_pii`). It never holds the secret key, only
a salted hash of it that tells which key wrote it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import polars as pl

from txkit import defaults
from txkit.calendar import month_bounds, months_between, parse_day, parse_month, previous_months
from txkit.client import Client
from txkit.coverage import Fetch, MonthCoverage, needed_window
from txkit.decode import dedupe_latest, finalize
from txkit.load import load_transactions
from txkit.pages import ExportStats
from txkit.schema import COLUMNS
from txkit.storage import (
    StoreError,
    StoreLockedError,
    locked,
    open_table,
    refuse_old_layout,
    storage_options,
)
from txkit.store_write import META_KEY, MonthWriter

_locked = locked  # the lock, for tests that hold it

__all__ = [
    "DEFAULT_STORE",
    "MonthManifest",
    "SourceIdentity",
    "StoreError",
    "StoreLockedError",
    "StoreState",
    "SyncResult",
    "format_status",
    "read_manifests",
    "read_months",
    "read_state",
    "scan_store",
    "sync",
    "sync_needed",
]

log = logging.getLogger("txkit")

DEFAULT_STORE = defaults.STORE_DIR
DEFAULT_LOOKBACK_DAYS = defaults.LOOKBACK_DAYS
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
        coverage: month -> :class:`~txkit.coverage.MonthCoverage`.
        lookback_days: the look-back of the sync that wrote this version.
        committed_at: when that version was committed (UTC).
    """

    version: int | None
    source: SourceIdentity | None = None
    coverage: dict[str, MonthCoverage] = field(default_factory=dict)
    lookback_days: int = DEFAULT_LOOKBACK_DAYS
    committed_at: datetime | None = None


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
        complete: the windows cover the month whole and the newest fetch happened after the
            month ended plus the look-back.
        newest_created_at: the newest ``createdAt`` stored.
        query: the last fetch's queries (``{"queries": [...]}``).
        table_version: the store's table version this summary describes.
        coverage: the full :class:`~txkit.coverage.MonthCoverage`.
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


@dataclass
class SyncResult:
    """What a sync did.

    Attributes:
        fetched: month -> ``"full"``, ``"refresh"``, ``"gap"`` or ``"look-back"``.
        skipped: months already complete enough (nothing to fetch).
        rows: rows stored per month after the sync.
        stats: the export statistics (requests, pages, passes).
        store: the store.
        version: the table version after the sync.
    """

    fetched: dict[str, str]
    skipped: list[str]
    rows: dict[str, int]
    stats: ExportStats
    store: str
    version: int | None = None


# --------------------------------------------------------------------------------------------
# State (the metadata of the newest txkit commit at or before a version).


def read_state(
    store: str | os.PathLike[str] = DEFAULT_STORE, *, version: int | None = None
) -> StoreState:
    """The store's source and coverage at ``version`` (default: the newest).

    Raises:
        StoreError: a store of the previous format, or one that cannot be read.
    """
    table = open_table(store, version)
    if table is None:
        return StoreState(version=None)
    return _state_of(table, store)


def _state_of(table: Any, store: str | os.PathLike[str]) -> StoreState:
    at = table.version()
    for entry in table.history():
        if entry.get("version", -1) > at or META_KEY not in entry:
            continue
        try:
            meta = json.loads(entry[META_KEY])
            source = SourceIdentity(**meta["source"])
            coverage = {m: MonthCoverage.from_json(c) for m, c in meta["coverage"].items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"the store {store}'s commit {entry.get('version')} has unreadable txkit "
                f"metadata ({type(exc).__name__}: {exc})"
            ) from None
        return StoreState(
            version=at,
            source=source,
            coverage=coverage,
            lookback_days=int(meta.get("lookback_days", DEFAULT_LOOKBACK_DAYS)),
            committed_at=datetime.fromtimestamp(entry["timestamp"] / 1000, UTC),
        )
    raise StoreError(
        f"{store} is a Delta table without txkit's metadata: it was not written by `txkit "
        "sync`; point --store at another folder"
    )


def read_manifests(
    store: str | os.PathLike[str] = DEFAULT_STORE, *, version: int | None = None
) -> dict[str, MonthManifest]:
    """A summary of each stored month's coverage, by month.

    Args:
        store: the store folder or URI.
        version: a table version (default: the newest).
    """
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
    )


# --------------------------------------------------------------------------------------------
# Reading.


def _casts(schema: pl.Schema) -> list[pl.Expr]:
    """Delta stores timestamps in microseconds: the casts back to the loader's types."""
    return [
        pl.col(name).cast(dtype)
        for name, dtype in COLUMNS.items()
        if name in schema and schema[name] != dtype and isinstance(dtype, pl.Datetime)
    ]


def _typed(lf: pl.LazyFrame) -> pl.LazyFrame:
    """``lf`` with the loader's types (see :func:`_casts`)."""
    casts = _casts(lf.collect_schema())
    return lf.with_columns(casts) if casts else lf


def _plain_files(table: Any) -> bool:
    """Whether the table's data files can be read as they are: no column mapping (reader
    version 2, or the feature) and no deletion vectors. txkit's own tables qualify; a table
    another writer upgraded is read through ``scan_delta``."""
    protocol = table.protocol()
    return protocol.min_reader_version == 1 or (
        protocol.min_reader_version >= 3 and not set(protocol.reader_features or ())
    )


def _scan_months(
    table: Any, store: str | os.PathLike[str], months: list[str]
) -> pl.LazyFrame | None:
    """The months' data files of ``table`` scanned directly (in the stored types), or None to
    use ``scan_delta``.

    ``scan_delta`` with a filter on ``month`` reads every file's statistics from the log to
    prune files; the partition values alone select the month's files, which is all a month
    read needs (the files are the version's, listed by delta-rs).
    """
    if not _plain_files(table):
        return None
    parts = set(table.metadata().partition_columns)
    if parts != {"month"}:
        return None
    schema = pl.Schema({k: v for k, v in pl.Schema(table.schema()).items() if k not in parts})
    paths = table.file_uris(file_pruning_predicate=[("month", "in", months)])
    if not paths:
        return pl.LazyFrame(schema=schema)
    lf = pl.scan_parquet(
        paths,
        schema=schema,
        missing_columns="insert",  # a file written before a column was added to the table
        extra_columns="ignore",
        storage_options=storage_options(store) or None,
    )
    return lf


def scan_store(
    store: str | os.PathLike[str] = DEFAULT_STORE, *, version: int | None = None
) -> pl.LazyFrame:
    """Scan the store as one LazyFrame (documented columns first, plus ``month``).

    Args:
        store: the store folder or URI (``s3://bucket/prefix``).
        version: read this table version instead of the newest (time travel).

    Returns:
        A :class:`polars.LazyFrame`; empty (with every documented column) if nothing is stored.

    Raises:
        StoreError: an old-format store, a missing version, or a store that cannot be read.

    Example:
        >>> txkit.scan_store().filter(pl.col("month") == "2026-10").collect()
    """
    table = open_table(store, version)
    if table is None:
        return pl.LazyFrame(schema={**COLUMNS, "month": pl.String()})
    lf = pl.scan_delta(table)  # the version opened above, with its storage options
    names = lf.collect_schema().names()
    extra = sorted(c for c in names if c not in COLUMNS and c != "month")
    return _typed(lf).select([*(c for c in COLUMNS if c in names), *extra, "month"])


def read_months(
    months: Sequence[str],
    *,
    store: str | os.PathLike[str] = DEFAULT_STORE,
    currency: str | None = None,
    version: int | None = None,
) -> pl.DataFrame:
    """The stored records of ``months``, as :func:`txkit.load_transactions` would return them.

    Args:
        months: ``YYYY-MM`` months.
        store: the store folder or URI.
        currency: optionally one ``toCurrency``.
        version: a table version (default: the newest).

    Returns:
        One row per transaction, documented columns first, sorted by ``createdAt`` then ``id``
        (no ``month`` column).

    Raises:
        ValueError: a malformed month.
        StoreError: the store cannot be read (the message names the file when it can).
    """
    wanted = [parse_month(m) for m in months]
    table = open_table(store, version)
    lf = _scan_months(table, store, wanted) if table is not None else None
    if lf is None:
        lf = scan_store(store, version=version).filter(pl.col("month").is_in(wanted))
        lf = lf.drop("month")
    if currency is not None:
        lf = lf.filter(pl.col("toCurrency") == currency)
    # Sorted before the casts to the loader's types: a frame cast in the scan comes back in
    # chunks, and sorting those costs a third more (see benchmarks/bench_store.py).
    frame = finalize(_collect(lf, store, wanted))
    casts = _casts(frame.schema)
    return frame.with_columns(casts) if casts else frame


def _collect(lf: pl.LazyFrame, store: str | os.PathLike[str], months: list[str]) -> pl.DataFrame:
    try:
        return lf.collect()
    except (pl.exceptions.ComputeError, pl.exceptions.PanicException, OSError) as exc:
        text = " ".join(str(exc).split())[:200]
        bad = _damaged_file(store, months)
        named = [m for m in months if bad and f"month={m}/" in bad] or months
        refresh = " ".join(f"--refresh {m}" for m in named)
        raise StoreError(
            f"a data file of the store {store} cannot be read: {bad or text}; run `txkit sync "
            f"--store {store} {refresh}` to fetch the month(s) again"
        ) from None


def _damaged_file(store: str | os.PathLike[str], months: list[str]) -> str | None:
    """The first data file of ``months`` that does not read whole (after a failed read)."""
    table = open_table(store)
    wanted = {f"month={m}" for m in months}
    for uri in table.file_uris() if table is not None else []:
        if not wanted & set(uri.split("/")):
            continue
        try:
            pl.read_parquet(uri, storage_options=storage_options(store))
        except (pl.exceptions.ComputeError, pl.exceptions.PanicException, OSError) as exc:
            return f"{uri} ({' '.join(str(exc).split())[:120]})"
    return None


# --------------------------------------------------------------------------------------------
# Sync.


def _merge(old: pl.DataFrame | None, new: pl.DataFrame) -> pl.DataFrame:
    """Stored and re-fetched records, merged on ``id`` by the one rule of
    :func:`txkit.decode.dedupe_latest`: the newest ``updatedAt`` wins; on a tie, the re-fetched
    copy."""
    if old is None or old.height == 0:
        return new
    return finalize(dedupe_latest([old.drop("month", strict=False), new]))


def _clock(today: date | None) -> datetime:
    now = datetime.now(UTC)
    return now if today is None else datetime.combine(today, now.time(), tzinfo=UTC)


def _range(
    start: date | str | None, end: date | str | None, today: date | None
) -> tuple[list[str], date]:
    today = today or datetime.now(UTC).date()
    last = parse_day(end, "end") or today
    first = parse_day(start, "start") or month_bounds(previous_months(f"{last:%Y-%m}", 11)[0])[0]
    if first > last:
        raise ValueError(f"start {first} is after end {last}")
    return months_between(first, last), last


def _plan(
    state: StoreState,
    start: date | str | None,
    end: date | str | None,
    today: date | None,
    lookback_days: int,
    refresh: set[str],
) -> dict[str, tuple[str, date, date]]:
    """month -> (kind, first day, last day) of what must be fetched."""
    if lookback_days < 0:
        raise ValueError(f"lookback_days must be 0 or more, got {lookback_days}")
    months, last = _range(start, end, today)
    now = _clock(today)
    plan = {}
    for month in months:
        need = needed_window(
            month,
            state.coverage.get(month),
            last=last,
            lookback_days=lookback_days,
            now=now,
            refresh=month in refresh,
        )
        if need is not None:
            plan[month] = need
    return plan


def _check_source(
    store: str | os.PathLike[str], state: StoreState, identity: SourceIdentity
) -> SourceIdentity:
    """The identity to record: the stored one if it is the same source; else refuse."""
    stored = state.source
    if stored is None:
        return identity
    same = stored.url == identity.url and stored.fingerprint == identity.fingerprint
    if same:
        return stored
    if stored.url == identity.url and stored.fingerprint is None and identity.fingerprint:
        return identity  # a migrated store learns the key's fingerprint from its first sync
    from txkit.source import default_store_for_url

    other = default_store_for_url(identity.url)
    what = "another key of the same service" if stored.url == identity.url else stored.url
    raise StoreError(
        f"the store {store} holds data from {what}, not from {identity.label or identity.url}: "
        f"use --store {other} (or another folder) for this source"
    )


def _identity(
    client: Client, source_url: str | None, state: StoreState, label: str | None
) -> SourceIdentity:
    label = label or client.base_url
    if source_url and source_url.startswith("sandbox:"):
        return SourceIdentity(source_url, None, None, label)
    salt = state.source.salt if state.source and state.source.salt else None
    return SourceIdentity.of_client(client, label, salt)


def sync(
    client: Client | None = None,
    *,
    start: date | str | None = None,
    end: date | str | None = None,
    store: str | os.PathLike[str] = DEFAULT_STORE,
    lookback_days: int = DEFAULT_LOOKBACK_DAYS,
    refresh: Sequence[str] = (),
    today: date | None = None,
    progress: bool | None = None,
    source: str | None = None,
    source_url: str | None = None,
) -> SyncResult:
    """Bring the store up to date for the months from ``start`` to ``end``, in one commit.

    Each month's coverage decides what is fetched (:mod:`txkit.coverage`): a month not yet
    stored is fetched whole; a stored month only from its first day that was never fetched,
    or fetched before its look-back ended (statuses change after a record is first seen);
    ``refresh`` forces whole months. Re-fetched records replace their older versions (by id,
    newest ``updatedAt`` wins, then the later fetch).

    Args:
        client: a :class:`~txkit.client.Client`; default one from ``TXKIT_BASE_URL`` and
            ``TXKIT_SECRET_KEY`` (closed afterwards), as for :func:`txkit.load_transactions`.
        start: first day (default: the first day of the month 11 months before ``end``).
        end: last day (default: ``today``, UTC).
        store: the store folder or URI (``s3://bucket/prefix``).
        lookback_days: days after which a stored record's status is taken as final.
        refresh: months (``YYYY-MM``) to fetch whole again.
        today: "today" for the defaults and the fetch times recorded (tests pin it).
        progress: show progress bars (default: when interactive).
        source: how the store names the source (default: the client's base URL).
        source_url: the source's identity when it is not the client's URL and key:
            ``sandbox:<settings>`` for the embedded sandbox (:attr:`txkit.source.Source.url`),
            whose port and key change at every start.

    Returns:
        A :class:`SyncResult`.

    Raises:
        StoreLockedError: another sync holds the lock, or committed meanwhile.
        StoreError: the store holds another source, is of the old format, or cannot be
            written (full disk, read-only); it is then left at its previous version.
        ValueError: bad dates, months or look-back.
        TxkitError: the export failed (the store is then left as it was).
    """
    refresh_set = {parse_month(m, "refresh month") for m in refresh}
    months, _ = _range(start, end, today)
    refuse_old_layout(store)
    stats = ExportStats()
    own_client = client is None
    client = client or Client()
    with contextlib.ExitStack() as stack, locked(store):
        if own_client:
            stack.callback(client.close)
        state = read_state(store)
        ident = _check_source(store, state, _identity(client, source_url, state, source))
        plan = _plan(state, start, end, today, lookback_days, refresh_set)
        result = SyncResult(fetched={}, skipped=[m for m in months if m not in plan], rows={},
                            stats=stats, store=str(store), version=state.version)  # fmt: skip
        coverage = dict(state.coverage)
        writer = MonthWriter(store, state.version)
        stack.callback(writer.close)
        for month, (kind, f_first, f_last) in plan.items():
            month_stats = ExportStats()
            fetched = load_transactions(
                client, start=f_first, end=f_last, stats=month_stats, progress=progress
            )
            _add_stats(stats, month_stats)
            m_first, m_last = month_bounds(month)
            replace = (f_first <= m_first and f_last >= m_last) or month not in coverage
            old = None if replace else read_months([month], store=store, version=state.version)
            merged = _merge(old, fetched)
            fetch = Fetch(f_first, f_last, _clock(today), kind, sorted(month_stats.totals),
                          sum(month_stats.totals.values()), fetched.height)  # fmt: skip
            previous = coverage.get(month) or MonthCoverage(month, (), 0)
            coverage[month] = previous.with_fetch(
                fetch, replace=replace, rows=merged.height, newest=_newest(merged)
            )
            result.fetched[month] = kind
            result.rows[month] = merged.height
            writer.add(month, merged)
            del merged, fetched, old  # a folder's month is on disk now: one month in memory
        if plan:
            meta = commit_metadata(ident, lookback_days, coverage)
            result.version = writer.commit(list(plan), meta)
        for month in result.skipped:
            if month in coverage:
                result.rows[month] = coverage[month].rows
        return result


def commit_metadata(
    source: SourceIdentity, lookback_days: int, coverage: dict[str, MonthCoverage]
) -> dict[str, Any]:
    """The txkit metadata every commit carries: the source and the whole coverage."""
    return {
        "format": _FORMAT,
        "source": source.__dict__,
        "lookback_days": lookback_days,
        "coverage": {m: c.to_json() for m, c in sorted(coverage.items())},
    }


def sync_needed(
    *,
    store: str | os.PathLike[str] = DEFAULT_STORE,
    start: date | str | None = None,
    end: date | str | None = None,
    lookback_days: int = DEFAULT_LOOKBACK_DAYS,
    refresh: Sequence[str] = (),
    today: date | None = None,
) -> bool:
    """True when :func:`sync` with these arguments would send any request."""
    refresh_set = {parse_month(m, "refresh month") for m in refresh}
    return bool(_plan(read_state(store), start, end, today, lookback_days, refresh_set))


def _add_stats(total: ExportStats, part: ExportStats) -> None:
    total.pages += part.pages
    total.requests += part.requests
    total.retries += part.retries
    total.passes += part.passes
    total.exact_pages += part.exact_pages
    total.seconds += part.seconds
    total.totals.update(part.totals)


def _newest(frame: pl.DataFrame) -> str | None:
    value = frame["createdAt"].max() if frame.height else None
    return value.isoformat() if value is not None else None


def format_status(
    store: str | os.PathLike[str] = DEFAULT_STORE, *, lookback_days: int | None = None
) -> str:
    """Each stored month's coverage, rows, totals and last fetch, as printable lines.

    Args:
        store: the store folder or URI.
        lookback_days: the look-back to judge completeness by (default: the last sync's).
    """
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
