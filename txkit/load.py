"""``load_transactions``: filters in, one verified, flat, exact polars DataFrame out."""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import polars as pl

from txkit.calendar import DateLike, parse_day
from txkit.client import Client
from txkit.decode import assemble
from txkit.errors import IncompleteExportError
from txkit.pages import (
    DEFAULT_CONCURRENCY,
    ExportStats,
    QueryResult,
    current_total,
    fetch_query,
    require_complete,
    timed,
)
from txkit.progress import export_bar
from txkit.schema import CURRENCIES, STATUSES, TRANS_TYPES

__all__ = [
    "IncompleteExportWarning",
    "load_transactions",
    "validate_filters",
]

log = logging.getLogger("txkit")

Choice = str | Sequence[str] | None


class IncompleteExportWarning(UserWarning):
    """An export was returned although it does not add up (``allow_incomplete=True``)."""


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


def load_transactions(
    client: Client | None = None,
    *,
    trans_type: Choice = None,
    status: Choice = None,
    currency: Choice = None,
    start: DateLike | None = None,
    end: DateLike | None = None,
    page_size: int = 1000,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_passes: int = 4,
    margin_days: int = 1,
    allow_incomplete: bool = False,
    progress: bool | None = None,
    stats: ExportStats | None = None,
) -> pl.DataFrame:
    """Load every matching transaction into one flat, typed polars DataFrame.

    ``status``, ``trans_type`` and ``currency`` take one value or a list (one query per
    value, combined). ``start``/``end`` are UTC days, both included: the result is exactly the
    records whose ``createdAt`` is in ``[start 00:00Z, end + 1 day 00:00Z)``, whatever the
    server's own bounds do (txkit asks for ``margin_days`` more on each side and filters
    locally). Every query is verified against the service's ``total`` (see
    :mod:`txkit.pages`).

    Args:
        client: a :class:`~txkit.client.Client`; default one from ``TXKIT_BASE_URL`` and
            ``TXKIT_SECRET_KEY`` (closed afterwards).
        trans_type: ``conversion``, ``settlement``, ``collection``, ``transfer``.
        status: values of :data:`txkit.schema.STATUSES`.
        currency: values of :data:`txkit.schema.CURRENCIES`.
        start: first day (``date``, ``datetime`` or ``'YYYY-MM-DD'``).
        end: last day, included.
        page_size: records asked per page.
        concurrency: pages fetched at once.
        max_passes: passes per query before the export is declared incomplete.
        margin_days: extra days asked for on each side of the range.
        allow_incomplete: return an export that does not add up, with an
            :class:`IncompleteExportWarning`, instead of raising.
        progress: show a progress bar; default: only on a terminal or in Jupyter.
        stats: an :class:`~txkit.pages.ExportStats` to fill in.

    Returns:
        One row per transaction (unique ``id``), sorted by ``createdAt`` then ``id``, with every
        column of :data:`txkit.schema.COLUMNS` and any undocumented field after them.

    Raises:
        ValueError: bad filters, before any request.
        IncompleteExportError: the records do not add up to the total after every pass.
        TxkitError: the subclasses of :mod:`txkit.errors` for HTTP and format failures.

    Example:
        >>> df = txkit.load_transactions(status=["successful", "verified"], currency="NGN",
        ...                              start="2026-10-01", end="2026-10-31")
    """
    types, statuses, currencies, first, last = validate_filters(
        trans_type=trans_type, status=status, currency=currency, start=start, end=end
    )
    if page_size < 1 or concurrency < 1 or max_passes < 1 or margin_days < 0:
        raise ValueError(
            "page_size, concurrency and max_passes must be at least 1, margin_days at least 0"
        )
    own_client = client is None
    client = client or Client()
    stats = stats if stats is not None else ExportStats()
    elapsed = timed()
    requests_before, retries_before = client.requests_sent, client.retries
    bar = export_bar(progress, client)
    try:
        queries = [
            _params(t, s, c, first, last, margin_days)
            for t, s, c in itertools.product(types, statuses, currencies)
        ]

        def fetch(params: dict[str, str | int]) -> QueryResult:
            result = fetch_query(
                client,
                params,
                page_size=page_size,
                concurrency=concurrency,
                max_passes=max_passes,
                stats=stats,
                progress=bar,
            )
            stats.totals[_key(params)] = result.total
            if not result.complete:
                _incomplete(result, params, max_passes, allow_incomplete)
            return result

        results = {_key(q): fetch(q) for q in queries}
        # Each query was verified when it ran; records may have moved since (a status change
        # takes a record out of one query and into another). Check every total once more and
        # fetch again the queries whose total moved, until all hold still. A single query was
        # verified as a whole already: no other query ran after it.
        now: dict[str, int] = {}
        for _ in range(max_passes):
            if len(queries) == 1:
                break
            now = {_key(q): current_total(client, q) for q in queries}
            moved = [q for q in queries if now[_key(q)] != results[_key(q)].total]
            if not moved:
                break
            log.warning("totals moved during the export of %s; fetching again", moved)
            for q in moved:
                # Re-inserted at the end: the frames stay in fetch order for dedupe_latest.
                del results[_key(q)]
                results[_key(q)] = fetch(q)
        else:
            _incomplete(
                QueryResult(
                    frames=[],
                    total=sum(now.values()),
                    unique=sum(r.unique for r in results.values()),
                    complete=False,
                ),
                {"queries": ", ".join(_key(q) for q in queries)},
                max_passes,
                allow_incomplete,
                what="the totals kept moving while the export was re-checked",
            )
        frames = [f for result in results.values() for f in result.frames]
    finally:
        if bar is not None:
            bar.close()
        stats.requests += client.requests_sent - requests_before
        stats.retries += client.retries - retries_before
        if own_client:
            client.close()
    results.clear()
    frame = assemble(frames, _day_range(first, last) if first or last else None)
    stats.seconds += elapsed()
    return frame


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


def _incomplete(
    result: QueryResult,
    params: dict[str, Any],
    passes: int,
    allow: bool,
    what: str | None = None,
) -> None:
    """Raise IncompleteExportError, or (allow_incomplete) warn loudly and log it."""
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
