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

Writing never changes a value (:mod:`txkit.store_write` widens a narrower column, proven by
casting back). Each commit also records every data file's digest; every read here checks it
before parsing the same bytes (:class:`_Reader`), and :func:`verify_store` checks a whole
version. The store belongs to one account of one service: a new key of the same account is
recognised by the records it returns (:func:`_same_account`).

The store keeps raw data, customer e-mails and account numbers included: it is the analyst's
own copy (mask it for display with :func:`txkit.mask_pii`). It never holds the secret key, only
a salted hash of it that tells which key wrote it.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import polars as pl
from polars.io.plugins import register_io_source

from txkit import config
from txkit.calendar import month_bounds, months_between, parse_day, parse_month, previous_months
from txkit.coverage import Fetch, MonthCoverage, needed_window
from txkit.decode import dedupe_latest, finalize
from txkit.errors import StoreDamagedError, StoreError, StoreLockedError
from txkit.fetch.client import Client
from txkit.fetch.load import load_transactions
from txkit.fetch.pages import ExportStats
from txkit.schema import COLUMNS
from txkit.storage import (
    digest_of,
    locked,
    new_store_beside,
    objects,
    open_table,
    read_verified,
    refuse_foreign_folder,
    refuse_old_layout,
    table_files,
)
from txkit.store_write import META_KEY, MonthWriter

_locked = locked  # the lock, for tests that hold it

__all__ = [
    "DEFAULT_STORE",
    "FileCheck",
    "MonthManifest",
    "SourceIdentity",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "StoreState",
    "SyncResult",
    "format_status",
    "format_verify",
    "read_manifests",
    "read_months",
    "read_state",
    "scan_store",
    "sync",
    "sync_needed",
    "verify_store",
]

log = logging.getLogger("txkit")

DEFAULT_STORE = config.store_root()
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
        coverage: month -> :class:`~txkit.coverage.MonthCoverage`.
        lookback_days: the look-back of the sync that wrote this version.
        committed_at: when that version was committed (UTC).
        files: the digest recorded for each data file (path relative to the store); a file
            of the version not in it was written before digests (unverified).
    """

    version: int | None
    source: SourceIdentity | None = None
    coverage: dict[str, MonthCoverage] = field(default_factory=dict)
    lookback_days: int = DEFAULT_LOOKBACK_DAYS
    committed_at: datetime | None = None
    files: dict[str, str] = field(default_factory=dict)


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
        notes: lines to show the user (a new key of the same account recognised).
    """

    fetched: dict[str, str]
    skipped: list[str]
    rows: dict[str, int]
    stats: ExportStats
    store: str
    version: int | None = None
    notes: list[str] = field(default_factory=list)


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
            files = {str(k): str(v) for k, v in meta.get("files", {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
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
            files=files,
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
    """Delta stores timestamps in microseconds: the casts back to the loader's milliseconds
    (exact for what txkit writes: :func:`_check_millis` proves it on every read)."""
    return [
        pl.col(name).cast(dtype)
        for name, dtype in COLUMNS.items()
        if name in schema and schema[name] != dtype and isinstance(dtype, pl.Datetime)
    ]


def _check_millis(frame: pl.DataFrame, store: str | os.PathLike[str]) -> None:
    """Fail, naming the record, when a stored timestamp has a part below the millisecond
    (written by another writer): the cast to the loader's milliseconds would drop it."""
    names = [
        n
        for n, d in frame.schema.items()
        if n in COLUMNS and isinstance(d, pl.Datetime) and d.time_unit != "ms"
    ]
    if not names or frame.height == 0:
        return
    fine = pl.any_horizontal(pl.col(n).dt.microsecond() % 1000 != 0 for n in names)
    bad = frame.filter(fine).head(1)
    if bad.height:
        row = bad.row(0, named=True)
        name = next(n for n in names if row[n] is not None and row[n].microsecond % 1000)
        raise StoreError(
            f"the store {store} holds record {row.get('id')}'s {name} = {row[name].isoformat()}, "
            "finer than the milliseconds txkit reads it in: it was not written by txkit; point "
            "--store at a store `txkit sync` wrote"
        )


def _typed(lf: pl.LazyFrame) -> pl.LazyFrame:
    """``lf`` with the loader's types (see :func:`_casts`)."""
    casts = _casts(lf.collect_schema())
    return lf.with_columns(casts) if casts else lf


def _plain_files(table: Any) -> bool:
    """Whether the table's data files can be read as they are: no column mapping (reader
    version 2, or the feature) and no deletion vectors. txkit's own tables qualify; a table
    another writer upgraded is read through ``scan_delta`` (unverified)."""
    protocol = table.protocol()
    return protocol.min_reader_version == 1 or (
        protocol.min_reader_version >= 3 and not set(protocol.reader_features or ())
    )


def _digests(table: Any, store: str | os.PathLike[str]) -> dict[str, str]:
    """The digests recorded for the version's files ({} for a table txkit did not write)."""
    try:
        return _state_of(table, store).files
    except StoreError:
        return {}


class _Reader:
    """The data files of one table version, read with their digests checked.

    Every read txkit makes goes through it (:func:`read_months`, :func:`scan_store`, the sync's
    merge read, the report's reads): each file's bytes are read once, checked against the
    digest recorded when the file was committed, and parsed from memory, so what is parsed
    is what was checked. A file without a digest (written before digests) is read as it is;
    :func:`verify_store` lists those.
    """

    def __init__(self, table: Any, store: str | os.PathLike[str], version: int | None) -> None:
        self.table = table
        self.store = store
        self.version = version
        self.digests = _digests(table, store)
        self.files = table_files(table)
        self.objects = objects(store)
        full = pl.Schema(table.schema())
        self.schema = pl.Schema({k: v for k, v in full.items() if k != "month"})

    def months(self) -> list[str]:
        return sorted({month for _, month, _ in self.files})

    def buffers(self, month: str) -> list[bytes]:
        """The month's files, each proven (or unverified: written before digests)."""
        out = []
        for rel, m, _ in self.files:
            if m == month:
                expected = self.digests.get(rel)
                if expected is None:
                    _note_unverified(self.store, rel)
                out.append(
                    read_verified(self.objects, self.store, rel, month, expected, self.version)
                )
        return out

    def scan(self, month: str) -> pl.LazyFrame:
        """The month's records in the stored types (without ``month``)."""
        buffers = self.buffers(month)
        if not buffers:
            return pl.LazyFrame(schema=self.schema)
        return pl.scan_parquet(
            buffers,
            schema=self.schema,
            missing_columns="insert",  # a file written before a column was added to the table
            extra_columns="ignore",
        )


_UNVERIFIED_SEEN: set[tuple[str, str]] = set()


def _note_unverified(store: str | os.PathLike[str], rel: str) -> None:
    """Say once per store (per process) that it holds files written before digests."""
    if any(seen == str(store) for seen, _ in _UNVERIFIED_SEEN):
        _UNVERIFIED_SEEN.add((str(store), rel))
        return
    _UNVERIFIED_SEEN.add((str(store), rel))
    month = rel.split("/", 1)[0].removeprefix("month=")
    log.warning(
        "the store %s holds data files unverified (written before digests), e.g. %s: `txkit "
        "store verify --store %s` lists them; `txkit sync --store %s --refresh %s` rewrites a "
        "month with digests",
        store,
        rel,
        store,
        store,
        month,
    )


def _reader(table: Any, store: str | os.PathLike[str], version: int | None) -> _Reader | None:
    """A verifying reader, or None for a table whose files need ``scan_delta`` (column
    mapping, deletion vectors, partitions other than ``month``: not written by txkit)."""
    if not _plain_files(table) or set(table.metadata().partition_columns) != {"month"}:
        return None
    return _Reader(table, store, version)


def _month_filter(predicate: pl.Expr | None, months: list[str]) -> list[str]:
    """The months a pushed-down predicate can select: its conjuncts on ``month`` alone,
    evaluated on the month names (all months when it has none, or cannot be split)."""
    if predicate is None:
        return months
    on_month = [c for c in _conjuncts(predicate) if set(c.meta.root_names()) == {"month"}]
    if not on_month or not months:
        return months
    try:
        return pl.DataFrame({"month": months}).filter(*on_month)["month"].to_list()
    except Exception:  # an expression that needs other columns after all: read every month
        return months


def _conjuncts(expr: pl.Expr) -> list[pl.Expr]:
    """``a & b & c`` as ``[a, b, c]`` (``expr`` itself when its top is not an AND)."""
    try:
        tree = json.loads(expr.meta.serialize(format="json"))
        top = tree.get("BinaryExpr") if isinstance(tree, dict) else None
        if isinstance(top, dict) and top.get("op") == "And":
            return [c for part in expr.meta.pop() for c in _conjuncts(part)]
    except Exception:  # a serialisation this version does not offer: no split
        pass
    return [expr]


def scan_store(
    store: str | os.PathLike[str] = DEFAULT_STORE, *, version: int | None = None
) -> pl.LazyFrame:
    """Scan the store as one LazyFrame (documented columns first, plus ``month``).

    Nothing is read until the frame is collected; then only the months a filter on ``month``
    selects are read, each data file checked against its recorded digest first.

    Args:
        store: the store folder or URI (``s3://bucket/prefix``).
        version: read this table version instead of the newest (time travel).

    Returns:
        A :class:`polars.LazyFrame`; empty (with every documented column) if nothing is stored.

    Raises:
        StoreError: an old-format store, a missing version, or a store that cannot be read;
            :class:`StoreDamagedError` (when collected) for a data file whose bytes are not
            those committed, naming the month and the command that repairs it.

    Example:
        >>> txkit.scan_store().filter(pl.col("month") == "2026-10").collect()
    """
    table = open_table(store, version)
    if table is None:
        return pl.LazyFrame(schema={**COLUMNS, "month": pl.String()})
    reader = _reader(table, store, version)
    if reader is None:
        lf = pl.scan_delta(table)  # the version opened above, with its storage options
        names = lf.collect_schema().names()
        extra = sorted(c for c in names if c not in COLUMNS and c != "month")
        return _typed(lf).select([*(c for c in COLUMNS if c in names), *extra, "month"])
    names = reader.schema.names()
    order = [
        *(c for c in COLUMNS if c in names),
        *sorted(c for c in names if c not in COLUMNS),
        "month",
    ]
    stored = {**reader.schema, "month": pl.String()}
    typed = {name: stored[name] for name in order}
    for cast in _casts(pl.Schema(typed)):
        name = cast.meta.output_name()
        typed[name] = COLUMNS[name]

    def source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        left = n_rows
        needed = None
        if with_columns is not None:
            needed = set(with_columns)
            if predicate is not None:
                needed |= set(predicate.meta.root_names())
        for month in _month_filter(predicate, reader.months()):
            if left is not None and left <= 0:
                return
            lf = reader.scan(month).with_columns(pl.lit(month).alias("month"))
            lf = lf.select([c for c in order if needed is None or c in needed])
            frame = _collect(lf, store, [month])
            _check_millis(frame, store)
            lf = frame.lazy().with_columns(_casts(frame.schema))
            if predicate is not None:
                lf = lf.filter(predicate)
            lf = lf.select(with_columns if with_columns is not None else order)
            if left is not None:
                lf = lf.head(left)
            out = lf.collect()
            if left is not None:
                left -= out.height
            yield out

    return register_io_source(source, schema=pl.Schema(typed), explain_name=f"txkit store {store}")


def read_months(
    months: Sequence[str],
    *,
    store: str | os.PathLike[str] = DEFAULT_STORE,
    currency: str | None = None,
    version: int | None = None,
) -> pl.DataFrame:
    """The stored records of ``months``, as :func:`txkit.load_transactions` would return them.

    Each data file is checked against the digest recorded when it was committed before it is
    parsed (see :class:`_Reader`).

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
        StoreDamagedError: a data file of the months is missing or changed (names the month
            and the command that repairs it).
        StoreError: the store cannot be read (the message names the file when it can).
    """
    wanted = [parse_month(m) for m in months]
    table = open_table(store, version)
    reader = _reader(table, store, version) if table is not None else None
    if reader is not None:
        parts = [reader.scan(m) for m in wanted]
        lf = pl.concat(parts, how="vertical") if parts else pl.LazyFrame(schema=reader.schema)
    else:
        lf = scan_store(store, version=version).filter(pl.col("month").is_in(wanted))
        lf = lf.drop("month")
    if currency is not None:
        lf = lf.filter(pl.col("toCurrency") == currency)
    # Sorted before the casts to the loader's types: a frame cast in the scan comes back in
    # chunks, and sorting those costs a third more (see benchmarks/bench_store.py).
    frame = finalize(_collect(lf, store, wanted))
    _check_millis(frame, store)
    casts = _casts(frame.schema)
    return frame.with_columns(casts) if casts else frame


def _collect(lf: pl.LazyFrame, store: str | os.PathLike[str], months: list[str]) -> pl.DataFrame:
    """Collect, turning a file that does not parse (one written before digests, or damaged
    in a way its digest could not be checked) into a :class:`StoreDamagedError`."""
    try:
        return lf.collect()
    except StoreError:
        raise
    except (pl.exceptions.ComputeError, pl.exceptions.PanicException, OSError) as exc:
        text = " ".join(str(exc).split())[:200]
        bad = _damaged_file(store, months)
        if bad is not None:
            rel, month, why = bad
            from txkit.storage import damaged_message

            raise StoreDamagedError(
                damaged_message(store, rel, month, f"does not read ({why})"),
                months=[month],
                path=rel,
            ) from None
        refresh = " ".join(f"--refresh {m}" for m in months)
        raise StoreError(
            f"a data file of the store {store} cannot be read: {text}; run `txkit sync "
            f"--store {store} {refresh}` to fetch the month(s) again"
        ) from None


def _damaged_file(store: str | os.PathLike[str], months: list[str]) -> tuple[str, str, str] | None:
    """The first data file of ``months`` that does not read whole (after a failed read)."""
    table = open_table(store)
    files = objects(store)
    for rel, month, _ in table_files(table) if table is not None else []:
        if month not in months:
            continue
        try:
            pl.read_parquet(io.BytesIO(files.get(rel)))
        except Exception as exc:  # any parse failure or a lost file names the file
            return rel, month, " ".join(str(exc).split())[:120]
    return None


# --------------------------------------------------------------------------------------------
# Verification.


@dataclass(frozen=True)
class FileCheck:
    """One data file of a version, checked.

    Attributes:
        path: the file, relative to the store.
        month: its month partition.
        size: its size in the log (bytes).
        status: ``ok`` (its digest matches), ``damaged`` (it does not), ``missing``, or
            ``unverified`` (written before digests: no digest to check; ``detail`` says
            whether it reads).
        detail: what was found.
    """

    path: str
    month: str
    size: int
    status: str
    detail: str = ""


def verify_store(
    store: str | os.PathLike[str] = DEFAULT_STORE, *, version: int | None = None
) -> list[FileCheck]:
    """Check every data file of a table version against the digest its commit recorded.

    Args:
        store: the store folder or URI.
        version: a table version (default: the newest).

    Returns:
        One :class:`FileCheck` per file, in month order.

    Raises:
        StoreError: the store has no table, or its log cannot be read.
    """
    table = open_table(store, version)
    if table is None:
        raise StoreError(f"the store {store} has no table yet: nothing to verify")
    digests = _digests(table, store)
    files = objects(store)
    out = []
    for rel, month, size in sorted(table_files(table), key=lambda f: (f[1], f[0])):
        try:
            data = files.get(rel)
        except Exception as exc:  # a lost file (OSError, or obstore's not-found)
            out.append(FileCheck(rel, month, size, "missing", " ".join(str(exc).split())[:120]))
            continue
        expected = digests.get(rel)
        if expected is None:
            try:
                pl.read_parquet(io.BytesIO(data))
                detail = "unverified (written before digests); it reads"
            except Exception as exc:  # any parse failure
                detail = (
                    "unverified (written before digests); it does not read: "
                    + " ".join(str(exc).split())[:120]
                )
            out.append(FileCheck(rel, month, size, "unverified", detail))
        elif digest_of(data) != expected:
            out.append(
                FileCheck(rel, month, size, "damaged", f"{len(data):,} bytes, digest differs")
            )
        else:
            out.append(FileCheck(rel, month, size, "ok"))
    return out


def format_verify(
    store: str | os.PathLike[str], checks: list[FileCheck], version: int | None
) -> tuple[str, bool]:
    """The printable result of :func:`verify_store` and whether the version is whole."""
    bad = [c for c in checks if c.status in ("damaged", "missing")]
    unverified = [c for c in checks if c.status == "unverified"]
    at = f"table version {version}" if version is not None else "the newest version"
    lines = [
        f"store {store}, {at}: {len(checks)} data file(s), "
        f"{sum(c.status == 'ok' for c in checks)} verified, {len(bad)} damaged or missing, "
        f"{len(unverified)} unverified (written before digests)"
    ]
    for check in bad + unverified:
        lines.append(f"  {check.status}: {check.path} ({check.month}) {check.detail}".rstrip())
    if bad:
        months = sorted({c.month for c in bad})
        refresh = " ".join(f"--refresh {m}" for m in months)
        lines.append(f"repair: txkit sync --store {store} {refresh}")
    elif unverified:
        months = sorted({c.month for c in unverified})
        refresh = " ".join(f"--refresh {m}" for m in months)
        lines.append(f"to give them digests: txkit sync --store {store} {refresh}")
    return "\n".join(lines), not bad


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
    """month -> (kind, first day, last day) of what must be fetched.

    A ``refresh`` month outside the range widens it: it is fetched whole (up to today).
    """
    if lookback_days < 0:
        raise ValueError(f"lookback_days must be 0 or more, got {lookback_days}")
    months, last = _range(start, end, today)
    now = _clock(today)
    plan = {}
    for month in sorted(set(months) | refresh):
        need = needed_window(
            month,
            state.coverage.get(month),
            last=last if month in months else now.date(),
            lookback_days=lookback_days,
            now=now,
            refresh=month in refresh,
        )
        if need is not None:
            plan[month] = need
    return plan


def _refresh_months(refresh: Sequence[str], today: date | None) -> set[str]:
    """The ``--refresh`` months, parsed; a month that has not begun is refused (there is
    nothing of it to fetch)."""
    months = {parse_month(m, "refresh month") for m in refresh}
    now = _clock(today).date()
    for month in sorted(months):
        if month_bounds(month)[0] > now:
            raise ValueError(
                f"refresh month {month} has not begun (today is {now:%Y-%m-%d} UTC): give a "
                "month up to the current one"
            )
    return months


def _check_source(
    store: str | os.PathLike[str],
    state: StoreState,
    identity: SourceIdentity,
    client: Client,
    notes: list[str],
) -> SourceIdentity:
    """The identity to record: the stored one if it is the same source; a new key's when it
    is the same account (:func:`_same_account`); else refuse."""
    stored = state.source
    if stored is None:
        return identity
    same = stored.url == identity.url and stored.fingerprint == identity.fingerprint
    if same:
        return stored
    if stored.url == identity.url and stored.fingerprint is None and identity.fingerprint:
        return identity  # a migrated store learns the key's fingerprint from its first sync
    if stored.url == identity.url and stored.fingerprint and identity.fingerprint:
        notes.append(_same_account(store, state, client))
        return SourceIdentity(identity.url, identity.fingerprint, identity.salt, stored.label)
    from txkit.fetch.source import default_store_for_url

    other = str(default_store_for_url(identity.url))
    if os.path.abspath(other) == os.path.abspath(str(store)):
        other = new_store_beside(store)
    raise StoreError(
        f"the store {store} holds data from {stored.label or stored.url}, not from "
        f"{identity.label or identity.url}: use --store {other} (or another new folder) for "
        "this source"
    )


#: How many records of the chosen day the account check compares (by id, createdAt and the
#: merchant), at most: one page of the service.
_ACCOUNT_SAMPLE = 1000


def _same_account(store: str | os.PathLike[str], state: StoreState, client: Client) -> str:
    """Prove that ``client``'s key (not the one that wrote the store) belongs to the same
    account: the service, asked with it for one day the store holds, returns every stored
    record of that day with the same ``createdAt`` and merchant. Returns the line to show.

    The store's identity is the account and the service, not the key: merchants rotate keys.
    A record id belongs to one account, so another account's key gets none of them back.

    Raises:
        StoreError: the records do not match (another account), or the store holds no record
            to compare with.
    """
    stored, day = _account_sample(store, state)
    if stored is None or day is None:
        raise StoreError(
            f"the store {store} was written with another key and holds no record to tell "
            "whether this key is of the same account: sync this key into a new store "
            f"(--store {new_store_beside(store)})"
        )
    fetched = load_transactions(client, start=day, end=day, progress=False, confirm=False)
    merchant = [c for c in stored.columns if c.startswith("merchantInfo.")]
    keys = ["id", "createdAt", *merchant]
    there = fetched.select([c for c in keys if c in fetched.columns])
    matched = stored.join(there, on=[c for c in keys if c in there.columns], how="semi").height
    if matched == stored.height:
        return (
            f"a new key for the store {store}: the service returns with it the {matched:,} "
            f"record(s) the store holds for {day} (same ids, createdAt and merchant), so it is "
            "the same account; its fingerprint is recorded in this sync's commit"
        )
    raise StoreError(
        f"the store {store} holds another account's records: with this key the service "
        f"returns {matched:,} of the {stored.height:,} record(s) the store holds for {day} "
        "(compared by id, createdAt and merchant), so this key belongs to another account; "
        f"keep {store} for its own account's key and sync this key into a store of its own "
        f"(--store {new_store_beside(store)})"
    )


def _account_sample(
    store: str | os.PathLike[str], state: StoreState
) -> tuple[pl.DataFrame | None, date | None]:
    """The stored records of one day to compare: in the newest month holding any (complete
    months first, whose records are settled), the day with the fewest records."""
    months = sorted(
        (m for m, c in state.coverage.items() if c.rows > 0),
        key=lambda m: (state.coverage[m].complete(state.lookback_days), m),
        reverse=True,
    )
    for month in months[:2]:
        frame = read_months([month], store=store, version=state.version)
        merchant = [c for c in frame.columns if c.startswith("merchantInfo.")]
        frame = frame.select("id", "createdAt", *merchant).with_columns(
            pl.col("createdAt").dt.date().alias("day")
        )
        counts = frame.group_by("day").len().filter(pl.col("len") <= _ACCOUNT_SAMPLE)
        if counts.height == 0:
            continue
        day = counts.sort(["len", "day"], descending=[False, True])["day"][0]
        return frame.filter(pl.col("day") == day).drop("day"), day
    return None, None


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
    ``refresh`` forces whole months, widening the range when a month lies outside it.
    Re-fetched records replace their older versions (by id, newest ``updatedAt`` wins, then
    the later fetch). A sync with nothing to fetch writes nothing (a read-only store is fine).

    The store belongs to one account of one service: a key other than the one that wrote it
    is accepted when the service returns with it the records the store holds for a day (the
    same account; :attr:`SyncResult.notes` says so), and refused otherwise.

    Args:
        client: a :class:`~txkit.fetch.client.Client`; default one from ``TXKIT_BASE_URL`` and
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
            ``sandbox:<settings>`` for the embedded sandbox (:attr:`txkit.fetch.source.Source.url`),
            whose port and key change at every start.

    Returns:
        A :class:`SyncResult`.

    Raises:
        StoreLockedError: another sync holds the lock, or committed meanwhile.
        StoreError: the store holds another source or account, is of the old format, is a
            folder that is not a store, a value would change in it (named), or it cannot be
            written (full disk, read-only); it is then left at its previous version.
        ValueError: bad dates, months (a refresh month not begun) or look-back.
        TxkitError: the export failed (the store is then left as it was).
    """
    refresh_set = _refresh_months(refresh, today)
    months, _ = _range(start, end, today)
    refuse_old_layout(store)
    refuse_foreign_folder(store)
    stats = ExportStats()
    if not _plan(read_state(store), start, end, today, lookback_days, refresh_set):
        state = read_state(store)
        rows = {m: state.coverage[m].rows for m in months if m in state.coverage}
        return SyncResult({}, months, rows, stats, str(store), state.version)
    own_client = client is None
    client = client or Client()
    with contextlib.ExitStack() as stack, locked(store):
        if own_client:
            stack.callback(client.close)
        state = read_state(store)
        notes: list[str] = []
        ident = _check_source(store, state, _identity(client, source_url, state, source),
                              client, notes)  # fmt: skip
        plan = _plan(state, start, end, today, lookback_days, refresh_set)
        result = SyncResult(fetched={}, skipped=[m for m in months if m not in plan], rows={},
                            stats=stats, store=str(store), version=state.version,
                            notes=notes)  # fmt: skip
        coverage = dict(state.coverage)
        writer = MonthWriter(store, state.version, state.files)
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
            del merged, fetched, old  # the month is written now: one month in memory
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
    refresh_set = _refresh_months(refresh, today)
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
