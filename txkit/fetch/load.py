"""``load_transactions``: filters in, one verified, flat, exact polars DataFrame out."""

from __future__ import annotations

import concurrent.futures as cf
import enum
import itertools
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import polars as pl

from txkit.calendar import DateLike, parse_day
from txkit.decode import assemble
from txkit.errors import IncompleteExportError, IncompleteExportWarning
from txkit.fetch._windows import RecordsMovingError, WindowedExport
from txkit.fetch.client import Client
from txkit.fetch.pages import (
    DEFAULT_CONCURRENCY,
    ExportStats,
    QueryResult,
    _progress_hook,
    current_total,
    require_complete,
    timed,
)
from txkit.fetch.profile import ServiceProfile, load_profile
from txkit.fetch.progress import export_bar
from txkit.schema import CURRENCIES, STATUSES, TRANS_TYPES

__all__ = [
    "ExportFilters",
    "ExportOptions",
    "IncompleteExportWarning",
    "WindowPlan",
    "load_transactions",
    "validate_filters",
]

log = logging.getLogger("txkit")

Choice = str | Sequence[str] | None


def _choices(name: str, value: Choice, accepted: Sequence[str], *, upper: bool) -> list[str | None]:
    if value is None:
        return [None]
    values = [value] if isinstance(value, str) else list(value)
    if not values:
        raise ValueError(f"{name} is an empty list; give one or more of: {', '.join(accepted)}")
    out: list[str | None] = []
    for item in values:
        if not isinstance(item, str):
            raise ValueError(f"{name} must be a string or a list of strings, got {item!r}")
        norm = item.strip().upper() if upper else item.strip().lower()
        if norm not in accepted:
            raise ValueError(f"unknown {name} {item!r}; accepted values: {', '.join(accepted)}")
        if norm not in out:
            out.append(norm)
    return out


def validate_filters(
    *,
    trans_type: Choice = None,
    status: Choice = None,
    currency: Choice = None,
    start: DateLike | None = None,
    end: DateLike | None = None,
) -> tuple[list[str | None], list[str | None], list[str | None], date | None, date | None]:
    """Check the filters before anything is sent.

    Returns:
        (trans types, statuses, currencies, start day, end day); ``[None]`` means unfiltered.

    Raises:
        ValueError: an unknown value (the message lists the accepted ones), a malformed date,
            or ``start`` after ``end``.
    """
    types = _choices("trans_type", trans_type, TRANS_TYPES, upper=False)
    statuses = _choices("status", status, STATUSES, upper=False)
    currencies = _choices("currency", currency, CURRENCIES, upper=True)
    first = parse_day(start, "start")
    last = parse_day(end, "end")
    if first and last and first > last:
        raise ValueError(f"start {first} is after end {last}")
    return types, statuses, currencies, first, last


@dataclass(frozen=True)
class ExportFilters:
    """The filters of an export, checked (:func:`validate_filters`); ``(None,)``: unfiltered.

    Attributes:
        types: ``transType`` values, one query each.
        statuses: ``status`` values, one query each.
        currencies: ``currency`` values, one query each.
        first: the first UTC day (None: unbounded).
        last: the last UTC day, included (None: unbounded).
    """

    types: tuple[str | None, ...] = (None,)
    statuses: tuple[str | None, ...] = (None,)
    currencies: tuple[str | None, ...] = (None,)
    first: date | None = None
    last: date | None = None

    @classmethod
    def of(
        cls,
        *,
        trans_type: Choice = None,
        status: Choice = None,
        currency: Choice = None,
        start: DateLike | None = None,
        end: DateLike | None = None,
    ) -> ExportFilters:
        """Raises: ValueError as :func:`validate_filters`."""
        types, statuses, currencies, first, last = validate_filters(
            trans_type=trans_type, status=status, currency=currency, start=start, end=end
        )
        return cls(tuple(types), tuple(statuses), tuple(currencies), first, last)

    def day_range(self) -> pl.Expr | None:
        """``createdAt`` inside ``[first 00:00Z, last + 1 day 00:00Z)`` (None: no dates)."""
        return _day_range(self.first, self.last) if self.first or self.last else None


@dataclass(frozen=True)
class ExportOptions:
    """How an export is read and proven; checked when made (as httpx's ``Timeout``).

    Attributes:
        page_size: records asked per page; None: the measured maximum of the service's
            profile, else 1000.
        concurrency: pages fetched at once.
        max_passes: passes per query before the export is declared incomplete.
        margin_days: extra days asked for on each side of the range at first (widened until
            each edge is proven).
        allow_incomplete: return an export that does not add up, with an
            :class:`IncompleteExportWarning`, instead of raising.
        confirm: read every window once more at the end, proving the set of records and not
            only their count (one request per page; see docs/completeness.md).
        status_locally: how a ``status`` filter is proven. The status is the one field of a
            record that changes, so on a live service records move in and out of a status
            query while it is read. None: the status is sent to the service; if records keep
            moving, the windows are proven on the other filters (type, currency, dates) and
            the status applied to each record as last read (the summary says so;
            docs/completeness.md gives the guarantee). True: that from the start. False:
            never (fail instead).

    Raises:
        ValueError: a value of another type, or a size below its minimum (page_size,
            concurrency, max_passes at least 1, margin_days at least 0).
    """

    page_size: int | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    max_passes: int = 4
    margin_days: int = 1
    allow_incomplete: bool = False
    confirm: bool = True
    status_locally: bool | None = None

    def __post_init__(self) -> None:
        for name in ("page_size", "concurrency", "max_passes", "margin_days"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool)) and not (
                name == "page_size" and value is None
            ):
                raise ValueError(f"{name} must be a whole number, got {value!r}")
        for name in ("allow_incomplete", "confirm", "status_locally"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (name == "status_locally" and value is None):
                raise ValueError(f"{name} must be True or False, got {value!r}")
        _check_sizes(self.page_size, self.concurrency, self.max_passes, self.margin_days)


@dataclass(frozen=True)
class WindowPlan:
    """What a measured service profile changes in the windows (see :class:`WindowedExport`):
    the first server window, the overlap of split windows, dates not on ``createdAt``, a known
    maximum ``skip`` and whether cut tie groups are read whole."""

    start_end: tuple[date, date] | None = None
    overlap: int | None = None
    open_dates: bool = False
    max_skip: int | None = None
    ties: bool = True


def load_transactions(
    client: Client | None = None,
    *,
    trans_type: Choice = None,
    status: Choice = None,
    currency: Choice = None,
    start: DateLike | None = None,
    end: DateLike | None = None,
    page_size: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_passes: int = 4,
    margin_days: int = 1,
    allow_incomplete: bool = False,
    progress: bool | None = None,
    stats: ExportStats | None = None,
    confirm: bool = True,
    profile: Any = None,
    status_locally: bool | None = None,
    options: ExportOptions | None = None,
) -> pl.DataFrame:
    """Load every matching transaction into one flat, typed polars DataFrame.

    ``status``, ``trans_type`` and ``currency`` take one value or a list (one query per
    value, combined). ``start``/``end`` are UTC days, both included (``date``, ``datetime`` or
    ``'YYYY-MM-DD'``): the result is exactly the records whose ``createdAt`` is in
    ``[start 00:00Z, end + 1 day 00:00Z)``, whatever the server's own bounds do (edges proven,
    filtered locally). Every query is verified against the service's ``total`` per date
    window, split by dates past an offset cap or when offset pages do not converge, and read
    once more to prove the set (docs/completeness.md). ``page_size`` to ``status_locally``:
    the attributes of :class:`ExportOptions` of the same names, or ``options`` (not both).

    Args:
        client: a :class:`~txkit.fetch.client.Client`; default one from the configured
            service (closed afterwards).
        progress: show a progress bar; default: only on a terminal or in Jupyter.
        stats: an :class:`~txkit.fetch.pages.ExportStats` to fill in.
        profile: the profile ``txkit probe`` measured (:class:`WindowPlan`): None reads the
            default file (if for the client's base URL), a path that file, a
            :class:`~txkit.probe.ServiceProfile` is used as is, False uses none.

    Returns:
        One row per transaction (unique ``id``), sorted by ``createdAt`` then ``id``, with every
        column of :data:`txkit.schema.COLUMNS` and any undocumented field after them.

    Raises:
        ValueError: bad filters or options, before any request.
        IncompleteExportError: the records do not add up to the total after every pass.
        TxkitError: the subclasses of :mod:`txkit.errors` for HTTP and format failures.

    Example:
        >>> df = txkit.load_transactions(status=["successful", "verified"], currency="NGN",
        ...                              start="2026-10-01", end="2026-10-31")
    """
    filters = ExportFilters.of(
        trans_type=trans_type, status=status, currency=currency, start=start, end=end
    )
    keywords = ExportOptions(page_size=page_size, concurrency=concurrency, max_passes=max_passes,
                             margin_days=margin_days, allow_incomplete=allow_incomplete,
                             confirm=confirm, status_locally=status_locally)  # fmt: skip
    if options is not None and keywords != ExportOptions():
        raise ValueError(
            "give the export options either as keywords or as options=ExportOptions(...), not both"
        )
    options = options or keywords
    own_client = client is None
    client = client or Client()
    try:
        stats = stats if stats is not None else ExportStats()
        return _export(client, filters, options, stats, progress, profile)
    finally:
        if own_client:
            client.close()


def _export(
    client: Client,
    filters: ExportFilters,
    options: ExportOptions,
    stats: ExportStats,
    progress: bool | None,
    profile: Any,
) -> pl.DataFrame:
    measured = _profile(profile, client)
    plan = _profile_plan(measured, filters.first, filters.last, stats)
    if options.page_size is None:
        size = measured.page_size() if measured is not None else 1000
        options = replace(options, page_size=size)
    elapsed = timed()
    requests_before, retries_before = client.requests_sent, client.retries
    bar = export_bar(progress, client)
    export = _Export(client, stats, filters, options, plan, _progress_hook(bar), bar=bar)
    try:
        frame = export.run(_queries(filters, export.local))
    finally:
        if bar is not None:
            bar.close()
        stats.requests += client.requests_sent - requests_before
        stats.retries += client.retries - retries_before
    if export.local is not None:
        # After the dedupe: each record as last read (its newest version) has the status.
        frame = frame.filter(pl.col("status").cast(pl.String).is_in(export.local))
    stats.seconds += elapsed()
    return frame


def _local_statuses(
    statuses: Sequence[str | None], status_locally: bool | None
) -> list[str] | None:
    if status_locally is not True or list(statuses) == [None]:
        return None
    return [s for s in statuses if s is not None]


def _queries(filters: ExportFilters, local: list[str] | None) -> list[dict[str, str | int]]:
    statuses = (None,) if local is not None else filters.statuses
    return [
        _params(t, s, c, filters.first, filters.last, 0)
        for t, s, c in itertools.product(filters.types, statuses, filters.currencies)
    ]


class SetProof(enum.Enum):
    """How an export proves its records once every query ran."""

    #: Re-read every window of every query, round after round until none changed (the set).
    CONFIRM = enum.auto()
    #: ``confirm=False`` with several queries: re-read every query's total, fetch again those
    #: that moved (a record that left one query for another).
    TOTALS = enum.auto()
    #: ``confirm=False`` with one query: verified as a whole when it ran.
    NONE = enum.auto()


def _check_sizes(page_size: int | None, concurrency: int, max_passes: int, margin: int) -> None:
    if (page_size is not None and page_size < 1) or concurrency < 1 or max_passes < 1 or margin < 0:
        raise ValueError(
            "page_size, concurrency and max_passes must be at least 1, margin_days at least 0"
        )


@dataclass
class _Export:
    """The steps of :func:`load_transactions` once its filters are checked: fetch every
    query (each a :class:`WindowedExport`), then prove the whole (:class:`SetProof`)."""

    client: Client
    stats: ExportStats
    filters: ExportFilters
    options: ExportOptions
    plan: WindowPlan
    on_page: Any
    bar: Any = None
    #: The statuses applied locally to each record as last read (None: sent as filters).
    local: list[str] | None = field(init=False)
    #: The statuses to apply locally if their queries' records keep moving (empty: none).
    fallback: list[str] = field(init=False)
    #: What each query's proven windows add up to, with the server window that holds them.
    outer: dict[str, dict[str, str | int]] = field(default_factory=dict)
    exports: dict[str, WindowedExport] = field(default_factory=dict)
    results: dict[str, QueryResult] = field(default_factory=dict)

    def __post_init__(self) -> None:
        locally, statuses = self.options.status_locally, self.filters.statuses
        self.local = _local_statuses(statuses, locally)
        self.fallback = [s for s in statuses if s is not None] if locally is None else []

    def run(self, queries: list[dict[str, str | int]]) -> pl.DataFrame:
        """Fetch every query, prove the whole; the records assembled (:func:`assemble`: one
        row per id, in the local date range, sorted).

        When records keep moving in and out of a status query (:class:`RecordsMovingError`)
        and the status may be applied locally, everything is fetched again without it.
        """
        notes, windows = list(self.stats.notes), self.stats.windows
        try:
            return self._run(queries)
        except RecordsMovingError as exc:
            if self.local is not None or not self.fallback:
                raise
            self.local = self.fallback
            log.warning("%s; proving the windows without the status filter", exc)
        # What the status queries had to do no longer describes the export.
        self.stats.notes[:], self.stats.windows = notes, windows
        self.exports, self.results, self.outer = {}, {}, {}
        self.stats.totals.clear()
        local = [{k: v for k, v in q.items() if k != "status"} for q in queries]
        return self._run(list({_key(q): q for q in local}.values()))

    def _run(self, queries: list[dict[str, str | int]]) -> pl.DataFrame:
        if self.local is not None:
            what = ", ".join(self.local)
            self.stats.note(
                f"status {what} applied locally to each record as last read (records kept "
                "moving in and out of the status filter; windows proven without it)"
            )
            if self.bar is not None:
                self.bar.describe(f"txkit export (status {what} applied locally)")
        self.results = {_key(q): self.fetch(q) for q in queries}
        proof = self.proof(len(queries))
        if proof is SetProof.CONFIRM:
            return self.confirmed()
        if proof is SetProof.TOTALS:
            self.recheck_totals(queries)
        frames = [f for result in self.results.values() for f in result.frames]
        self.results.clear()
        return assemble(frames, self.filters.day_range())

    def confirmed(self) -> pl.DataFrame:
        """The set confirmed (:func:`_confirm`), then assembled.

        The records as fetched are assembled beside the confirming re-read (which mostly
        waits on the network). That frame is returned only when the confirmation left every
        frame as it was (the same frame objects, in the same order), so it is exactly what
        assembling afterwards would give; otherwise the confirmed frames are assembled anew.
        """
        fetched = [f for result in self.results.values() for f in result.frames]
        keep = self.filters.day_range()
        with cf.ThreadPoolExecutor(1, thread_name_prefix="txkit-assemble") as pool:
            early = pool.submit(assemble, list(fetched), keep)
            self.results = _confirm(
                self.exports,
                self.stats,
                self.options.max_passes,
                self.options.allow_incomplete,
                self.falls_back,
            )
        frames = [f for result in self.results.values() for f in result.frames]
        self.results.clear()
        if len(frames) == len(fetched) and all(
            a is b for a, b in zip(frames, fetched, strict=True)
        ):
            return early.result()
        return assemble(frames, keep)

    def falls_back(self, exc: Exception) -> bool:
        """Whether ``exc`` makes the export fetch again with the status applied locally."""
        return isinstance(exc, RecordsMovingError) and self.local is None and bool(self.fallback)

    def proof(self, queries: int) -> SetProof:
        """The proof after the last query (see :class:`SetProof`)."""
        if self.options.confirm:
            return SetProof.CONFIRM
        return SetProof.TOTALS if queries > 1 else SetProof.NONE

    def fetch(self, params: dict[str, str | int]) -> QueryResult:
        """One query over the days, proven (or, with ``allow_incomplete``, what was got)."""
        options, plan = self.options, self.plan
        assert options.page_size is not None  # _export set it
        export = WindowedExport(
            self.client,
            {k: v for k, v in params.items() if k not in ("startDate", "endDate")},
            self.filters.first,
            self.filters.last,
            page_size=options.page_size,
            concurrency=options.concurrency,
            max_passes=options.max_passes,
            digests=options.confirm,
            stats=self.stats,
            on_page=self.on_page,
            margin=options.margin_days,
            versions_move=self.local is not None,
            start_end=plan.start_end,
            overlap=plan.overlap,
            open_dates=plan.open_dates,
            max_skip=plan.max_skip,
            ties=plan.ties,
        )
        try:
            result = export.run()
        except IncompleteExportError as exc:
            if not self.options.allow_incomplete or self.falls_back(exc):
                raise
            _incomplete(
                QueryResult(frames=[], total=exc.expected, unique=exc.got, complete=False),
                params,
                options.max_passes,
                options.allow_incomplete,
                what=str(exc),
            )
            result = export.partial()
        self.stats.totals[_key(params)] = result.total
        self.outer[_key(params)] = export.outer_params()
        self.exports[_key(params)] = export
        return result

    def recheck_totals(self, queries: list[dict[str, str | int]]) -> None:
        """Each query was verified when it ran; records may have moved since (a status change
        takes a record out of one query and into another). Check every total once more and
        fetch again the queries whose total moved, until all hold still."""
        now: dict[str, int] = {}
        for _ in range(self.options.max_passes):
            now = {_key(q): current_total(self.client, self.outer[_key(q)]) for q in queries}
            self.stats.proof("totals", len(queries))
            moved = [q for q in queries if now[_key(q)] != self.results[_key(q)].total]
            if not moved:
                return
            log.warning("totals moved during the export of %s; fetching again", moved)
            for q in moved:
                # Re-inserted at the end: the frames stay in fetch order for dedupe_latest.
                del self.results[_key(q)]
                self.results[_key(q)] = self.fetch(q)
        if self.local is None and self.fallback:
            raise RecordsMovingError(
                "the totals kept moving while the export was re-checked",
                expected=sum(now.values()),
                got=sum(r.unique for r in self.results.values()),
                attempts=self.options.max_passes,
            )
        _incomplete(
            QueryResult(
                frames=[],
                total=sum(now.values()),
                unique=sum(r.unique for r in self.results.values()),
                complete=False,
            ),
            {"queries": ", ".join(_key(q) for q in queries)},
            self.options.max_passes,
            self.options.allow_incomplete,
            what="the totals kept moving while the export was re-checked",
        )


def _params(
    t: str | None,
    s: str | None,
    c: str | None,
    first: date | None,
    last: date | None,
    margin_days: int,
) -> dict[str, str | int]:
    params: dict[str, str | int] = {}
    if t:
        params["transType"] = t
    if s:
        params["status"] = s
    if c:
        params["currency"] = c
    if first:
        params["startDate"] = (first - timedelta(days=margin_days)).isoformat()
    if last:
        params["endDate"] = (last + timedelta(days=margin_days)).isoformat()
    return params


def _confirm(
    exports: dict[str, WindowedExport],
    stats: ExportStats,
    max_passes: int,
    allow: bool,
    falls_back: Any = lambda exc: False,
) -> dict[str, QueryResult]:
    """Runs after the last query, so that a record that left one query's filter for another's
    (same totals, different sets) is seen."""
    try:
        for _ in range(3 * max_passes):
            if all([export.confirm_round() for export in exports.values()]):
                break
        else:
            raise next(iter(exports.values())).unquiet()
        for export in exports.values():
            export.final_check()
    except IncompleteExportError as exc:
        if not allow or falls_back(exc):
            raise
        _incomplete(
            QueryResult(frames=[], total=exc.expected, unique=exc.got, complete=False),
            {"queries": ", ".join(exports)},
            max_passes,
            allow,
            what=str(exc),
        )
    results = {}
    for key, export in exports.items():
        results[key] = export.partial()
        stats.totals[key] = results[key].total
    return results


def _profile(profile: Any, client: Client) -> Any:
    if profile is False:
        return None
    if isinstance(profile, ServiceProfile):
        if profile is not None and _same_url(profile.base_url, client.base_url):
            return profile
        warnings.warn(
            f"service profile ignored: it was measured for {profile.base_url}, not "
            f"{client.base_url}",
            UserWarning,
            stacklevel=4,  # _profile, _export, load_transactions, the caller
        )
        return None
    return load_profile(client.base_url, None if profile in (None, True) else profile)


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _profile_plan(
    profile: Any, first: date | None, last: date | None, stats: ExportStats
) -> WindowPlan:
    if profile is None:
        return WindowPlan()
    stats.note(f"profile: {profile.describe()}")
    max_skip = profile.value("max_skip")
    plan = WindowPlan(
        # measured: a cut tie group's parts never miss a record
        ties=not profile.ties_stable,
        max_skip=max_skip if isinstance(max_skip, int) and max_skip >= 0 else None,
    )
    field = profile.value("date_field")
    if field is not None and field != "createdAt":
        return replace(plan, open_dates=True)
    if not profile.dates_known:
        return plan
    overlap = int(not profile.value("start_inclusive")) + int(not profile.value("end_inclusive"))
    start_end = None
    if first is not None or last is not None:
        # A day beyond each edge, so that records past it prove the edge for free.
        low = (first or last) - timedelta(days=1)
        high = (last or first) + timedelta(days=1)
        start_end = profile.server_window(low, high)
    return replace(plan, overlap=overlap, start_end=start_end)


def _incomplete(
    result: QueryResult,
    params: dict[str, Any],
    passes: int,
    allow: bool,
    what: str | None = None,
) -> None:
    if not allow:
        if what is None:
            require_complete(result, params, passes)
        raise IncompleteExportError(
            f"the export of {_key(params)} is not consistent: {what}",
            expected=result.total,
            got=result.unique,
            attempts=passes,
        )
    message = (
        f"RETURNING AN INCOMPLETE EXPORT of {_key(params)} as asked (allow_incomplete=True): "
        + (
            what
            or f"expected {result.total} records (the service's total), "
            f"got {result.unique} unique records after {passes} pass(es)"
        )
    )
    warnings.warn(message, IncompleteExportWarning, stacklevel=3)
    log.error(message)


def _key(params: dict[str, Any]) -> str:
    return "&".join(f"{k}={v}" for k, v in params.items()) or "all"


def _day_range(first: date | None, last: date | None) -> pl.Expr:
    expr = pl.lit(True)
    if first:
        expr &= pl.col("createdAt") >= datetime.combine(first, time(), tzinfo=UTC)
    if last:
        expr &= pl.col("createdAt") < datetime.combine(last + timedelta(days=1), time(), tzinfo=UTC)
    return expr
