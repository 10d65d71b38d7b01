"""A local Parquet copy of the export, one Hive partition per month, synced incrementally.

Layout (``DIR`` defaults to ``data/store``)::

    DIR/current -> generations/g000007          a symlink, swapped atomically
    DIR/generations/g000007/transactions/month=2026-10/part-0.parquet
    DIR/generations/g000007/manifests/2026-10.json
    DIR/.lock                                   held by the running sync

Readers use ``DIR/current/transactions`` (``polars.scan_parquet(..., hive_partitioning=True)``,
DuckDB ``read_parquet('DIR/current/transactions/*/*.parquet', hive_partitioning=true)``,
Spark) or :func:`scan_store`.

Why generations: a sync may change several months. It builds the next generation beside the
current one (unchanged months are hard links, so this costs no copy), then swaps the ``current``
symlink in one ``rename``. A sync that is killed or fails leaves ``current`` exactly as it was;
its half-built generation is removed by the next sync. Two syncs on one store exclude each
other with a lock file.

The store keeps raw data, customer e-mails and account numbers included: it is the analyst's
own copy (mask it for display with :func:`txkit.mask_pii`). It never holds the secret key.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from txkit import defaults
from txkit.calendar import month_bounds, months_between, parse_day, parse_month, previous_months
from txkit.client import Client
from txkit.decode import dedupe_latest, finalize
from txkit.errors import TxkitError
from txkit.load import load_transactions
from txkit.pages import ExportStats
from txkit.schema import COLUMNS

__all__ = [
    "DEFAULT_STORE",
    "MonthManifest",
    "StoreLockedError",
    "SyncResult",
    "read_manifests",
    "read_months",
    "scan_store",
    "sync",
    "sync_needed",
]

log = logging.getLogger("txkit")

DEFAULT_STORE = defaults.STORE_DIR
DEFAULT_LOOKBACK_DAYS = defaults.LOOKBACK_DAYS
_KEEP_GENERATIONS = 2


class StoreLockedError(TxkitError):
    """Another sync holds the store's lock."""


@dataclass
class MonthManifest:
    """What a stored month holds and how fresh it is.

    Attributes:
        month: ``YYYY-MM``.
        fetched_at: when the month was last fetched, fully or in part (UTC, ISO 8601).
        full_fetch_at: when it was last fetched whole.
        windows: the ``[start, end]`` day ranges fetched at ``fetched_at`` (the look-back
            window or the whole month).
        rows: records stored for the month.
        service_total: the ``total`` the service reported for the last fetch's query, which
            asks for a day of margin on each side of ``windows`` (so it counts more than
            ``rows``); every record of that query was fetched and verified against it.
        query: the last fetch's query parameters.
        source: the service's base address (never the key).
        complete: the last fetch was verified against the service's total.
        newest_created_at: the newest ``createdAt`` stored.
    """

    month: str
    fetched_at: str
    full_fetch_at: str
    windows: list[list[str]]
    rows: int
    service_total: int
    source: str
    complete: bool
    newest_created_at: str | None
    query: dict[str, Any] = field(default_factory=dict)
    txkit_version: str = "0.1.0"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SyncResult:
    """What a sync did.

    Attributes:
        fetched: month -> ``"full"``, ``"look-back"`` or ``"refresh"``.
        skipped: months already stored and outside the look-back window.
        rows: rows stored per month after the sync.
        stats: the export statistics (requests, pages, passes).
        store: the store directory.
    """

    fetched: dict[str, str]
    skipped: list[str]
    rows: dict[str, int]
    stats: ExportStats
    store: Path


# --------------------------------------------------------------------------------------------
# Reading.


def _current(store: Path) -> Path | None:
    link = store / "current"
    return link.resolve() if link.exists() else None


def read_manifests(store: str | os.PathLike[str] = DEFAULT_STORE) -> dict[str, MonthManifest]:
    """The manifests of the stored months, by month.

    Args:
        store: the store directory.
    """
    gen = _current(Path(store))
    if gen is None:
        return {}
    out = {}
    for file in sorted((gen / "manifests").glob("*.json")):
        data = json.loads(file.read_text())
        out[data["month"]] = MonthManifest(**data)
    return out


def scan_store(store: str | os.PathLike[str] = DEFAULT_STORE) -> pl.LazyFrame:
    """Scan the store as one LazyFrame (documented columns first, plus ``month``).

    Months may differ in undocumented columns; they are aligned (missing ones are null).

    Args:
        store: the store directory.

    Returns:
        A :class:`polars.LazyFrame`; empty (with every documented column) if nothing is stored.

    Example:
        >>> txkit.scan_store().filter(pl.col("month") == "2026-10").collect()
    """
    gen = _current(Path(store))
    files = sorted(gen.glob("transactions/month=*/*.parquet")) if gen else []
    if not files:
        return pl.LazyFrame(schema={**COLUMNS, "month": pl.String()})
    frames = [
        pl.scan_parquet(f, hive_partitioning=True, hive_schema={"month": pl.String()})
        for f in files
    ]
    return pl.concat(frames, how="diagonal_relaxed")


def read_months(
    months: Sequence[str],
    *,
    store: str | os.PathLike[str] = DEFAULT_STORE,
    currency: str | None = None,
) -> pl.DataFrame:
    """The stored records of ``months``, as :func:`txkit.load_transactions` would return them.

    Args:
        months: ``YYYY-MM`` months.
        store: the store directory.
        currency: optionally one ``toCurrency``.

    Returns:
        One row per transaction, documented columns first, sorted by ``createdAt`` then ``id``
        (no ``month`` column).

    Raises:
        ValueError: a malformed month.
    """
    wanted = [parse_month(m) for m in months]
    lf = scan_store(store).filter(pl.col("month").is_in(wanted)).drop("month")
    if currency is not None:
        lf = lf.filter(pl.col("toCurrency") == currency)
    return finalize(lf.collect())


def _read_month(gen: Path, month: str) -> pl.DataFrame | None:
    file = gen / "transactions" / f"month={month}" / "part-0.parquet"
    return pl.read_parquet(file) if file.exists() else None


# --------------------------------------------------------------------------------------------
# Locking and generations.


@contextlib.contextmanager
def _locked(store: Path) -> Iterator[None]:
    store.mkdir(parents=True, exist_ok=True)
    lock_path = store / ".lock"
    handle = open(lock_path, "a+")  # noqa: SIM115 - held for the whole sync
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise StoreLockedError(
                f"another sync is running on {store} ({holder}); wait for it to finish, "
                "then run this one again"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}")
        handle.flush()
        yield
    finally:
        handle.close()


def _generations(store: Path) -> list[Path]:
    root = store / "generations"
    return sorted(p for p in root.glob("g[0-9]*") if p.is_dir() and not p.name.endswith(".tmp"))


def _cleanup(store: Path) -> None:
    """Remove half-built generations (of killed syncs) and all but the newest ones."""
    root = store / "generations"
    for tmp in root.glob("*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)
    current = _current(store)
    for old in _generations(store)[:-_KEEP_GENERATIONS]:
        if old != current:
            shutil.rmtree(old, ignore_errors=True)


def _new_generation(store: Path) -> Path:
    existing = _generations(store)
    number = int(existing[-1].name[1:]) + 1 if existing else 1
    path = store / "generations" / f"g{number:06d}.tmp"
    path.mkdir(parents=True)
    return path


def _link_tree(src: Path, dst: Path, skip_months: set[str]) -> None:
    """Hard-link the unchanged months' files from ``src`` into ``dst``."""
    for file in src.rglob("*"):
        if file.is_dir():
            continue
        rel = file.relative_to(src)
        month = _month_of(rel)
        if month in skip_months:
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(file, target)
        except OSError:
            shutil.copy2(file, target)


def _month_of(rel: Path) -> str | None:
    for part in rel.parts:
        if part.startswith("month="):
            return part.removeprefix("month=")
    if rel.parts and rel.parts[0] == "manifests":
        return rel.stem
    return None


def _fsync_tree(path: Path) -> None:
    for file in path.rglob("*"):
        if file.is_file():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())


def _publish(store: Path, tmp_gen: Path) -> Path:
    final = tmp_gen.with_name(tmp_gen.name.removesuffix(".tmp"))
    _fsync_tree(tmp_gen)
    os.rename(tmp_gen, final)
    link_tmp = store / "current.tmp"
    with contextlib.suppress(FileNotFoundError):
        link_tmp.unlink()
    link_tmp.symlink_to(final.relative_to(store))
    os.replace(link_tmp, store / "current")  # the one atomic step
    return final


# --------------------------------------------------------------------------------------------
# Sync.


def _merge(old: pl.DataFrame | None, new: pl.DataFrame) -> pl.DataFrame:
    """Old and re-fetched records: by id, the newest ``updatedAt`` wins (ties: the new one).

    See :func:`txkit.decode.dedupe_latest`.
    """
    if old is None or old.height == 0:
        return new
    return finalize(dedupe_latest([old.drop("month", strict=False), new]))


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
) -> SyncResult:
    """Bring the store up to date for the months from ``start`` to ``end``.

    A month not yet stored is fetched whole. A stored month is not fetched again, except the
    look-back window (``lookback_days`` before the newest stored record, up to ``end``),
    because statuses change after a record is first seen; re-fetched records replace their
    older versions (by id, newest ``updatedAt`` wins). ``refresh`` forces whole months.

    Args:
        client: a :class:`~txkit.client.Client`; default one from ``TXKIT_BASE_URL`` and
            ``TXKIT_SECRET_KEY`` (closed afterwards), as for :func:`txkit.load_transactions`.
        start: first day (default: the first day of the month 11 months before ``end``).
        end: last day (default: ``today``, UTC).
        store: the store directory.
        lookback_days: days re-fetched before the newest stored record.
        refresh: months (``YYYY-MM``) to fetch whole again.
        today: "today" for the defaults (tests pin it).
        progress: show progress bars (default: when interactive).
        source: how manifests name the source (default: the client's base URL).

    Returns:
        A :class:`SyncResult`.

    Raises:
        StoreLockedError: another sync holds the lock.
        ValueError: bad dates, months or look-back.
        TxkitError: the export failed (the store is then left as it was).
    """
    store = Path(store)
    refresh_set = {parse_month(m, "refresh month") for m in refresh}
    months, _ = _range(start, end, today)
    stats = ExportStats()
    own_client = client is None
    client = client or Client()
    with contextlib.ExitStack() as stack, _locked(store):
        if own_client:
            stack.callback(client.close)
        _cleanup(store)
        current = _current(store)
        manifests = read_manifests(store)
        plan = _plan(store, start, end, today, lookback_days, refresh_set)
        skipped = [m for m in months if m not in plan]
        result = SyncResult(fetched={}, skipped=skipped, rows={}, stats=stats, store=store)
        if not plan:
            result.rows = {m: manifests[m].rows for m in months if m in manifests}
            return result
        tmp_gen = _new_generation(store)
        try:
            if current is not None:
                _link_tree(current, tmp_gen, skip_months=set(plan))
            for month, (kind, f_first, f_last) in plan.items():
                month_stats = ExportStats()
                fetched = load_transactions(
                    client, start=f_first, end=f_last, stats=month_stats, progress=progress
                )
                _add_stats(stats, month_stats)
                # A whole month replaces what was stored; a look-back window merges into it.
                old = _read_month(current, month) if current and kind == "look-back" else None
                merged = _merge(old, fetched)
                _write_month(tmp_gen, month, merged)
                now = datetime.now(UTC).isoformat(timespec="seconds")
                previous = manifests.get(month)
                manifest = MonthManifest(
                    month=month,
                    fetched_at=now,
                    full_fetch_at=now
                    if kind != "look-back" or previous is None
                    else previous.full_fetch_at,
                    windows=[[f_first.isoformat(), f_last.isoformat()]],
                    rows=merged.height,
                    service_total=sum(month_stats.totals.values()),
                    query={"queries": sorted(month_stats.totals)},
                    source=source or client.base_url,
                    complete=True,
                    newest_created_at=_newest(merged),
                    extra={"kind": kind, "lookback_days": lookback_days},
                )
                _write_manifest(tmp_gen, manifest)
                result.fetched[month] = kind
                result.rows[month] = merged.height
            _publish(store, tmp_gen)
        except BaseException:
            shutil.rmtree(tmp_gen, ignore_errors=True)
            raise
        for month in skipped:
            if month in manifests:
                result.rows[month] = manifests[month].rows
        _cleanup(store)
        return result


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
    store: Path,
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
    manifests = read_manifests(store)
    newest = max(
        (
            datetime.fromisoformat(m.newest_created_at)
            for m in manifests.values()
            if m.newest_created_at
        ),
        default=None,
    )
    window_start = (newest - timedelta(days=lookback_days)).date() if newest else None
    plan: dict[str, tuple[str, date, date]] = {}
    for month in months:
        m_first, m_last = month_bounds(month)
        m_last = min(m_last, last)
        if month in refresh or month not in manifests:
            plan[month] = ("refresh" if month in manifests else "full", m_first, m_last)
        elif window_start is not None and window_start <= m_last:
            plan[month] = ("look-back", max(m_first, window_start), m_last)
    return plan


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
    return bool(_plan(Path(store), start, end, today, lookback_days, refresh_set))


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


def _write_month(gen: Path, month: str, frame: pl.DataFrame) -> None:
    folder = gen / "transactions" / f"month={month}"
    folder.mkdir(parents=True, exist_ok=True)
    frame.drop("month", strict=False).write_parquet(folder / "part-0.parquet", compression="zstd")


def _write_manifest(gen: Path, manifest: MonthManifest) -> None:
    folder = gen / "manifests"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{manifest.month}.json").write_text(json.dumps(asdict(manifest), indent=2) + "\n")
