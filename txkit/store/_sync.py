"""The sync: what each month needs (its coverage), fetched, merged and written in one commit.

Each month's coverage decides what is fetched (:mod:`txkit.store._coverage`): a month not yet
stored is fetched whole; a stored month only from its first day that was never fetched, was
fetched before its look-back ended (statuses change after a record is first seen), or was read
once and not yet proven; ``refresh`` forces whole months. Re-fetched records replace their
older versions (by id, newest ``updatedAt`` wins, then the later fetch). A sync with nothing to
fetch writes nothing (a read-only store is fine). How each day's set is proven (the store's
earlier read, or a second read; the newest days read once): :meth:`_MonthSync.proven_read`.

The store belongs to one account of one service: a new key of the same account is recognised
by the records it returns (:func:`_same_account`, the note says so), another account's key is
refused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import polars as pl

from txkit.calendar import month_bounds, months_between, parse_day, parse_month, previous_months
from txkit.config import default_store, store_for_url
from txkit.decode import dedupe_latest, finalize
from txkit.errors import ConfigError, IncompleteExportError, StoreError, one_line
from txkit.fetch.client import Client
from txkit.fetch.load import load_transactions
from txkit.fetch.pages import ExportStats
from txkit.fetch.source import connect
from txkit.store._compact import compact_months
from txkit.store._coverage import Fetch, MonthCoverage, day_runs, needed_window, settled
from txkit.store._location import StoreLike, store_location
from txkit.store._lock import locked
from txkit.store._read import read_months
from txkit.store._retention import RetentionPolicy, VacuumResult, apply_retention
from txkit.store._state import (
    DEFAULT_LOOKBACK_DAYS,
    SourceIdentity,
    StoreState,
    commit_metadata,
    read_state,
)
from txkit.store._table import new_store_beside, refuse_foreign_folder
from txkit.store._write import MonthWriter


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
        vacuum: what the retention policy removed after the commit (None: not applied).
    """

    fetched: dict[str, str]
    skipped: list[str]
    rows: dict[str, int]
    stats: ExportStats
    store: str
    version: int | None = None
    notes: list[str] = field(default_factory=list)
    vacuum: VacuumResult | None = None


def _retain(
    store: str | os.PathLike[str],
    retention: RetentionPolicy | bool | None,
    now: datetime,
    notes: list[str],
) -> VacuumResult | None:
    """A failure is a note, not a failed sync: the commit is made, and nothing is removed."""
    policy = retention if isinstance(retention, RetentionPolicy) else None
    try:
        return apply_retention(store, policy=policy, now=now)
    except (StoreError, ConfigError) as exc:
        notes.append(f"the store's retention policy was not applied: {exc}")
    except Exception as exc:  # the commit is made: a failed clean-up must not fail the sync
        notes.append(
            f"the store's retention policy was not applied ({one_line(exc, 200)}); run "
            f"`txkit store vacuum --store {store}` to apply it"
        )
    return None


def _merge(old: pl.DataFrame | None, new: pl.DataFrame) -> pl.DataFrame:
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


@dataclass(frozen=True)
class _Asked:
    """What a sync was asked for, checked (see :func:`sync` for each field)."""

    start: date | str | None
    end: date | str | None
    today: date | None
    lookback_days: int
    refresh: frozenset[str]
    read_once: bool = True

    @classmethod
    def of(
        cls,
        start: date | str | None,
        end: date | str | None,
        today: date | None,
        lookback_days: int,
        refresh: Sequence[str],
        read_once: bool = True,
    ) -> _Asked:
        if lookback_days < 0:
            raise ValueError(f"lookback_days must be 0 or more, got {lookback_days}")
        asked = cls(start, end, today, lookback_days, _refresh_months(refresh, today), read_once)
        asked.months()  # bad dates are refused before anything is read
        return asked

    def months(self) -> list[str]:
        return _range(self.start, self.end, self.today)[0]


def _plan(state: StoreState, asked: _Asked) -> dict[str, tuple[str, date, date]]:
    """month -> (kind, first day, last day); a ``refresh`` month outside the range is fetched
    whole (up to today)."""
    months, last = _range(asked.start, asked.end, asked.today)
    now = _clock(asked.today)
    plan = {}
    for month in sorted(set(months) | asked.refresh):
        need = needed_window(
            month,
            state.coverage.get(month),
            last=last if month in months else now.date(),
            lookback_days=asked.lookback_days,
            now=now,
            refresh=month in asked.refresh,
        )
        if need is not None:
            plan[month] = need
    return plan


def _refresh_months(refresh: Sequence[str], today: date | None) -> frozenset[str]:
    months = frozenset(parse_month(m, "refresh month") for m in refresh)
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
    stored = state.source
    if stored is None:
        return identity
    same = stored.url == identity.url and stored.fingerprint == identity.fingerprint
    if same:
        return stored
    if stored.url == identity.url and stored.fingerprint and identity.fingerprint:
        notes.append(_same_account(store, state, client))
        return SourceIdentity(identity.url, identity.fingerprint, identity.salt, stored.label)
    other = str(store_for_url(identity.url))
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
    """The line to show; raises StoreError unless the service returns, with ``client``'s key,
    every stored record of one day (record ids belong to one account: docs/store.md)."""
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
    store: StoreLike = None,
    lookback_days: int = DEFAULT_LOOKBACK_DAYS,
    refresh: Sequence[str] = (),
    today: date | None = None,
    progress: bool | None = None,
    source: str | None = None,
    source_url: str | None = None,
    retention: RetentionPolicy | bool | None = None,
    read_once: bool = True,
) -> SyncResult:
    """Bring the store up to date for the months from ``start`` to ``end``, in one commit.

    What is fetched, how it is proven and how a new key is recognised: the module's docstring.

    Args:
        client: a :class:`~txkit.fetch.client.Client`; default: the source ``txkit sync``
            uses (:func:`txkit.fetch.source.connect`; the first note says which), opened only
            when something is to be fetched.
        start: first day (default: the first day of the month 11 months before ``end``).
        end: last day (default: ``today``, UTC).
        store: the store folder or URI; default: :func:`txkit.config.default_store`, or with
            a client the store of its source (:func:`txkit.config.store_for_url`).
        lookback_days: days after which a stored record's status is taken as final.
        refresh: months (``YYYY-MM``) to fetch whole again, widening the range if needed.
        today: "today" for the defaults and the fetch times recorded (tests pin it).
        progress: show progress bars (default: when interactive).
        source: how the store names the source (default: the client's base URL).
        source_url: the source's identity when it is not the client's URL and key
            (``sandbox:<settings>`` for the embedded sandbox, whose port and key change).
        retention: applied after the commit (:mod:`txkit.store._retention`): None for the
            configured policy, a :class:`~txkit.store._retention.RetentionPolicy`, or False.
        read_once: the newest days read for the first time may be stored after one read
            (unproven until the next sync; docs/completeness.md); False proves every day now
            (the report's sync of its month).

    Raises:
        StoreLockedError: another sync holds the lock, or committed meanwhile.
        StoreError: another source or account, not a store, a value would change (named), or
            it cannot be written; the store is then left at its previous version.
        ValueError: bad dates, months (a refresh month not begun) or look-back.
        TxkitError: the export failed (the store is then left as it was).
    """
    if store is None or store == "":
        store = default_store() if client is None else store_for_url(source_url or client.base_url)
    asked = _Asked.of(start, end, today, lookback_days, refresh, read_once)
    refuse_foreign_folder(store)
    if not _plan(read_state(store), asked):
        state = read_state(store)
        rows = {m: state.coverage[m].rows for m in asked.months() if m in state.coverage}
        return SyncResult({}, asked.months(), rows, ExportStats(), str(store), state.version)
    notes: list[str] = []
    with contextlib.ExitStack() as stack, locked(store):
        if client is None:
            opened = stack.enter_context(connect())
            notes.append(f"source: {opened.description}")
            client, source = opened.client, source or opened.label
            source_url = source_url or opened.url
        state = read_state(store)
        identity = _identity(client, source_url, state, source)
        ident = _check_source(store, state, identity, client, notes)
        run = _MonthSync(client, store, state, asked, progress, notes)
        run.fetch_plan(stack, _plan(state, asked))
        run.commit(ident, retention)
        return run.result


@dataclass
class _MonthSync:
    """What fetching the plan's months needs and updates: the client, the store as read under
    the lock, what was asked, the coverage being built and the result."""

    client: Client
    store: StoreLike
    state: StoreState
    asked: _Asked
    progress: bool | None
    notes: list[str]
    coverage: dict[str, MonthCoverage] = field(init=False)
    result: SyncResult = field(init=False)
    plan: list[str] = field(init=False, default_factory=list)
    writer: MonthWriter | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.coverage = dict(self.state.coverage)
        self.result = SyncResult(fetched={}, skipped=[], rows={}, stats=ExportStats(),
                                 store=str(self.store), version=self.state.version,
                                 notes=self.notes)  # fmt: skip

    def fetch_plan(
        self, stack: contextlib.ExitStack, plan: dict[str, tuple[str, date, date]]
    ) -> None:
        """Fetch and write (uncommitted) every month of ``plan``."""
        self.plan = list(plan)
        self.result.skipped = [m for m in self.asked.months() if m not in plan]
        self.writer = MonthWriter(self.store, self.state.version, self.state.files)
        stack.callback(self.writer.close)
        for month, (kind, f_first, f_last) in plan.items():
            self.writer.add(month, self.fetch(month, kind, f_first, f_last))

    def commit(self, ident: SourceIdentity, retention: RetentionPolicy | bool | None) -> None:
        """One commit of what :meth:`fetch_plan` wrote, then compaction and retention."""
        now, result = _clock(self.asked.today), self.result
        if self.plan and self.writer is not None:
            meta = commit_metadata(ident, self.asked.lookback_days, self.coverage, now)
            result.version = self.writer.commit(self.plan, meta)
            compacted = compact_months(self.store, now=now)
            if compacted is not None:
                result.version = compacted
            if retention is not False:
                result.vacuum = _retain(self.store, retention, now, self.notes)
        for month in result.skipped:
            if month in self.coverage:
                result.rows[month] = self.coverage[month].rows

    def fetch(self, month: str, kind: str, f_first: date, f_last: date) -> pl.DataFrame:
        """Fetch the month's window, proven (:meth:`proven_read`), merge it with what the
        store holds (unless the window replaces the month) and record the fetch in its
        coverage; returns the month's rows."""
        month_stats = ExportStats()
        m_first, m_last = month_bounds(month)
        replace = (f_first <= m_first and f_last >= m_last) or month not in self.coverage
        # The stored month is read to merge with (a window that replaces the month, such as
        # a refresh, does not read it: it may be what is being repaired).
        old = (
            None if replace else read_months([month], store=self.store, version=self.state.version)
        )
        covered = self.covered_days(month, f_first, f_last) if old is not None else set()
        once = self.read_once_days(month, kind, f_first, f_last)
        fetched = self.proven_read(f_first, f_last, old, covered, once, month_stats)
        _add_stats(self.result.stats, month_stats)
        merged = _merge(old, fetched)
        fetch = Fetch(f_first, f_last, _clock(self.asked.today), kind,
                      sorted(month_stats.totals), sum(month_stats.totals.values()),
                      fetched.height)  # fmt: skip
        previous = self.coverage.get(month) or MonthCoverage(month, (), 0)
        self.coverage[month] = previous.with_fetch(
            fetch, replace=replace, rows=merged.height, newest=_newest(merged), read_once=once
        )
        self.result.fetched[month] = kind
        self.result.rows[month] = merged.height
        return merged

    def covered_days(self, month: str, first: date, last: date) -> set[date]:
        """The days of ``first..last`` a verified read the store holds contains."""
        coverage = self.coverage.get(month)
        if coverage is None:
            return set()
        return {d for d in _days(first, last) if coverage.newest_fetch_of(d) is not None}

    def read_once_days(self, month: str, kind: str, first: date, last: date) -> frozenset[date]:
        """The days of ``first..last`` this sync may store after one read (unproven until the
        next sync): the newest days (inside the look-back at this read) never stored before,
        in a store that holds earlier syncs. A first sync, a refresh, a report's sync
        (``read_once=False``) and a month read for the first time (unless every day of it
        read is that new) prove every day now, so no month is left unproven in bulk."""
        if not self.asked.read_once or kind == "refresh" or not self.state.coverage:
            return frozenset()
        now, stored = _clock(self.asked.today), self.coverage.get(month)
        days = _days(first, last)
        new = {
            d
            for d in days
            if (stored is None or stored.newest_fetch_of(d) is None)
            and not settled(d, now, self.asked.lookback_days)
        }
        if stored is None and len(new) < len(days):
            return frozenset()
        return frozenset(new)

    def proven_read(
        self,
        first: date,
        last: date,
        stored: pl.DataFrame | None,
        covered: set[date],
        once: frozenset[date],
        stats: ExportStats,
    ) -> pl.DataFrame:
        """The records of ``first..last``, each day's set proven by two reads that agree, or
        (the days in ``once``) read once, verified by the service's totals.

        With no day stored and none to read once, the export's own confirming re-read proves
        it. Otherwise one read, verified by the service's totals, is compared day by day with
        the store's earlier read (ids with ``updatedAt``): a day that holds the same set is
        proven by the two reads (docs/completeness.md, "A proof that reuses earlier reads");
        a day that differs, or was never stored and is not in ``once``, is read again until
        two consecutive reads agree.

        Raises:
            IncompleteExportError: the days read again never held still.
        """
        if not covered and not once:
            return load_transactions(
                self.client, start=first, end=last, stats=stats, progress=self.progress
            )
        fetched = load_transactions(
            self.client, start=first, end=last, stats=stats, progress=self.progress,
            confirm=False,
        )  # fmt: skip
        if stored is None:
            differ = set(_days(first, last)) - covered
        else:
            differ = _differing_days(fetched, stored, first, last, covered)
        differ -= once
        reused = len(_days(first, last)) - len(differ) - len(once)
        before = stats.requests
        for a, b in day_runs(sorted(differ)):
            fetched = self.read_again(fetched, a, b, stats)
        stats.proof("confirm", stats.requests - before)
        line = f"{reused} day(s) proven by the store's earlier read, {len(differ)} read again"
        if once:
            line += (
                f", {len(once)} new day(s) read once (count verified against the service's "
                "totals; the next sync proves the set)"
            )
        stats.note(line)
        return fetched

    def read_again(
        self, fetched: pl.DataFrame, a: date, b: date, stats: ExportStats
    ) -> pl.DataFrame:
        """``fetched`` with the days ``a..b`` read again until two consecutive reads hold the
        same records (ids: the days' windows have no filter a record's update moves it out
        of), each record in the newest version read (``updatedAt``, then the later read)."""
        days = pl.col("createdAt").dt.date().is_between(a, b)
        current = fetched.filter(days)
        for _ in range(_READS):
            again = load_transactions(
                self.client, start=a, end=b, stats=stats, progress=self.progress, confirm=False
            )
            if set(again["id"].to_list()) == set(current["id"].to_list()):
                newest = finalize(dedupe_latest([current, again]))
                return finalize(dedupe_latest([fetched.filter(~days), newest]))
            current = again
        raise IncompleteExportError(
            f"the records created {a}..{b} kept changing: no two of {_READS} reads held the "
            "same records",
            expected=current.height,
            got=current.height,
            attempts=_READS,
        )


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


#: Reads of the days that differ from the store, at most, before a sync gives up.
_READS = 4


def sync_needed(
    *,
    store: StoreLike = None,
    start: date | str | None = None,
    end: date | str | None = None,
    lookback_days: int = DEFAULT_LOOKBACK_DAYS,
    refresh: Sequence[str] = (),
    today: date | None = None,
) -> bool:
    """True when :func:`sync` with these arguments would send any request."""
    store = store_location(store)
    asked = _Asked.of(start, end, today, lookback_days, refresh)
    return bool(_plan(read_state(store), asked))


def _add_stats(total: ExportStats, part: ExportStats) -> None:
    total.pages += part.pages
    total.requests += part.requests
    total.retries += part.retries
    total.passes += part.passes
    total.exact_pages += part.exact_pages
    total.seconds += part.seconds
    total.totals.update(part.totals)
    for name, count in part.proof_requests.items():
        total.proof(name, count)
    for text in part.notes:
        total.note(text)


def _day_keys(frame: pl.DataFrame, first: date, last: date) -> pl.DataFrame:
    return frame.select(
        pl.col("createdAt").dt.date().alias("day"), "id", pl.col("updatedAt").cast(pl.String)
    ).filter(pl.col("day").is_between(first, last))


def _differing_days(
    new: pl.DataFrame, old: pl.DataFrame, first: date, last: date, covered: set[date] | None
) -> set[date]:
    a, b = _day_keys(new, first, last), _day_keys(old, first, last)
    keys = ["day", "id", "updatedAt"]
    out = set(a.join(b, on=keys, how="anti", nulls_equal=True)["day"].to_list())
    out |= set(b.join(a, on=keys, how="anti", nulls_equal=True)["day"].to_list())
    if covered is not None:
        out |= {d for d in _days(first, last) if d not in covered}
    return out


def _newest(frame: pl.DataFrame) -> str | None:
    value = frame["createdAt"].max() if frame.height else None
    return value.isoformat() if value is not None else None
