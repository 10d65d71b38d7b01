"""The register as of a month: the event log folded into one row per item.

Rules (docs/register.md):

* an item is new in the first month a report lists it; each later report that lists it
  updates its amount and ``last_month``; its first month never changes;
* an item stays ``open`` (or ``explained``) until it is resolved: automatically when a later
  run of a month that listed it no longer does (a record arrived or changed; the run's table
  version says which store version), when a later month's report recomputes the item's month
  from the store and the item is gone (``cleared`` events, :mod:`._carry`), or by an analyst
  (``resolved``, ``written_off``). Absence from a later month's own list is not a resolution:
  a later month's report does not look at the item's dates;
* an item listed again after it was resolved is open again, its explanation kept.
"""

from __future__ import annotations

import calendar
import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from txkit.calendar import parse_month
from txkit.errors import ReportSignedError
from txkit.register._annotate import made_by, needs_key, provenance
from txkit.register._carry import Carry, Recompute, carry_over
from txkit.register._lock import (
    check_text,
    files_digest,
    locked_message,
    month_state,
    pack_files,
    refuse_locked,
)
from txkit.register._materiality import Materiality, load_materiality
from txkit.register._model import (
    BUCKETS,
    CATEGORIES,
    OPEN_STATUSES,
    STATUSES,
    age_bucket,
    default_category,
)
from txkit.register._table import append_events, events_frame, now, read_events

__all__ = [
    "ITEMS_SUFFIX",
    "REGISTER_COLUMNS",
    "bucket_counts",
    "commit_report",
    "explain",
    "filter_items",
    "record_report",
    "register_view",
    "report_events",
    "reported_months",
    "select_events",
    "with_revision",
]

#: Beside each exception list in a report folder: ``NAME.register.parquet``.
ITEMS_SUFFIX = ".register.parquet"

#: The columns of :func:`register_view`, in order (the first thirteen are the CSV interface).
REGISTER_COLUMNS: dict[str, Any] = {
    "key": pl.String,
    "section": pl.String,
    "currency": pl.String,
    "amount": pl.Decimal(38, 6),
    "first_month": pl.String,
    "last_month": pl.String,
    "status": pl.String,
    "category": pl.String,
    "age_days": pl.Int64,
    "age_bucket": pl.String,
    "material": pl.Boolean,
    "owner": pl.String,
    "explanation": pl.String,
    "kind": pl.String,
    "item_date": pl.Date,
    "listed": pl.Boolean,
    "threshold": pl.Decimal(38, 6),
    "resolved_month": pl.String,
    "resolved_by": pl.String,
    "changed_by": pl.String,
    "changed_at": pl.Datetime("us", "UTC"),
    "changed_account": pl.String,
    "changed_key": pl.String,
}


def _month_end(month: str) -> date:
    year, mon = int(month[:4]), int(month[5:7])
    return date(year, mon, calendar.monthrange(year, mon)[1])


def record_report(
    store: str | os.PathLike[str],
    month: str,
    folder: str | os.PathLike[str],
    *,
    table_version: int | None,
    actor: str = "txkit report",
    orders: pl.DataFrame | None = None,
    recompute: Recompute | None = None,
    revision: int = 1,
    reason: str | None = None,
) -> int:
    """Record a report run in the register: the month, its table version and every item its
    exception lists hold (``NAME.register.parquet`` in ``folder``), and (given ``recompute``,
    :func:`txkit.notebook.recomputer`) the re-evaluation of earlier months' open items
    (:func:`._carry.carry_over`; ``orders``: the whole orders file the report read). One
    commit (:func:`commit_report`; ``revision``, ``reason``: which revision of the month the
    folder is, and why it was reopened). Returns the register's version.

    Raises:
        RegisterFormatError: the register was written by a newer txkit.
        StoreError: the register could not be written.
    """
    events, _carry = report_events(
        store, month, folder, table_version=table_version, actor=actor, orders=orders,
        recompute=recompute,
    )  # fmt: skip
    return commit_report(store, month, events, folder, revision=revision, reason=reason)


def commit_report(
    store: str | os.PathLike[str],
    month: str,
    events: pl.DataFrame,
    folder: str | os.PathLike[str],
    *,
    revision: int = 1,
    reason: str | None = None,
    reopened: dict[str, Any] | None = None,
) -> int:
    """Commit a report's events (:func:`report_events`) once its pack is in place at
    ``folder``: the ``reported`` event names the revision, why it was reopened, the folder
    and the SHA-256 of every file of the pack (what ``txkit report verify`` and a signature
    check). Refused when the month is locked and this is not its next revision (a signature
    landed while the report ran). Returns the register's version.

    Raises:
        ReportSignedError: the month is locked (one line naming the lock and ``--reopen``).
        StoreError: the register could not be written.
    """
    now_events, _ = read_events(store)
    state = month_state(now_events, month)
    if state.locked and state.newest is not None and revision <= state.newest.number:
        raise ReportSignedError(locked_message(state, f"the report of {month} is not recorded"))
    files = pack_files(folder)
    detail = {
        "revision": revision,
        "reason": reason,
        "folder": _absolute(folder),
        "files": files,
        "pack": files_digest(files),
    }
    if reopened is not None:  # who reopened the signed month, signed (register._sign)
        detail["reopened"] = reopened
    sealed = events.with_columns(
        pl.when(pl.col("event") == "reported")
        .then(pl.lit(json.dumps(detail, sort_keys=True)))
        .otherwise(pl.col("explanation"))
        .alias("explanation")
    )
    return append_events(store, sealed)


def with_revision(events: pl.DataFrame, revision: int, reason: str | None) -> pl.DataFrame:
    """``events`` (the register's, then a report's not yet committed) with the report's
    ``reported`` event naming its revision and why (what the month's state reads before the
    commit names the pack's files too)."""
    reported = events.filter(pl.col("event") == "reported")
    if reported.is_empty():
        return events
    run = reported["run"][-1]
    doc = json.dumps({"revision": revision, "reason": reason}, sort_keys=True)
    return events.with_columns(
        pl.when((pl.col("event") == "reported") & (pl.col("run") == run))
        .then(pl.lit(doc))
        .otherwise(pl.col("explanation"))
        .alias("explanation")
    )


def _absolute(folder: str | os.PathLike[str]) -> str:
    return str(folder) if "://" in str(folder) else str(Path(folder).resolve())


def report_events(
    store: str | os.PathLike[str],
    month: str,
    folder: str | os.PathLike[str],
    *,
    table_version: int | None,
    actor: str = "txkit report",
    orders: pl.DataFrame | None = None,
    recompute: Recompute | None = None,
    events: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, Carry | None]:
    """The events :func:`record_report` appends, without appending them (``events``: the
    register's, when read already), and the carry-over's summary."""
    month = parse_month(month)
    paths = sorted(Path(folder).glob(f"*{ITEMS_SUFFIX}"))
    lists = [pl.read_parquet(p) for p in paths]
    frame = pl.concat(lists, how="vertical_relaxed") if lists else None
    run, at = uuid.uuid4().hex, now()
    sections = sorted({str(s) for f in lists for s in f["section"].unique().to_list()})
    published = sorted(p.name[: -len(ITEMS_SUFFIX)] for p in paths)
    stamp = {"run": run, "actor": actor, "at": at, "table_version": table_version}
    head = events_frame(
        [
            {
                "event": "reported",
                "month": month,
                **stamp,
                "note": ",".join(published),
                "section": ",".join(sections),
            }
        ]
    )
    parts = [head]
    if frame is not None and frame.height:
        parts.append(_seen_events(frame, month, stamp))
    done = None
    if recompute is not None:
        if events is None:
            events, _ = read_events(store)
        # Forward only: the items as the month being reported sees them (runs of later
        # months, and of earlier months run after them, are not its state).
        items, _, _ = _fold(select_events(events, month, cut=now()), month)
        done = carry_over(
            store,
            month,
            version=table_version,
            orders=orders,
            items=items,
            fingerprints=fingerprints(events),
            recompute=recompute,
        )
        if done.events:
            parts.append(events_frame([e | stamp for e in done.events]))
    return pl.concat(parts), done


def _seen_events(frame: pl.DataFrame, month: str, stamp: dict[str, Any]) -> pl.DataFrame:
    return events_frame(
        frame.unique("key", keep="first", maintain_order=True).with_columns(
            pl.lit("seen").alias("event"),
            pl.lit(stamp["run"]).alias("run"),
            pl.lit(month).alias("month"),
            pl.lit(stamp["actor"]).alias("actor"),
            pl.lit(stamp["at"]).alias("at"),
            pl.lit(stamp["table_version"], dtype=pl.Int64).alias("table_version"),
        )
    )


def fingerprints(events: pl.DataFrame) -> dict[str, str]:
    """Each month's fingerprint when it was last evaluated (``checked`` events)."""
    checked = events.with_row_index("_i").filter(pl.col("event") == "checked").sort("at", "_i")
    return {row["month"]: row["note"] for row in checked.iter_rows(named=True)}


def reported_months(events: pl.DataFrame) -> list[str]:
    """The months the register has a report run of, oldest first."""
    return sorted(events.filter(pl.col("event") == "reported")["month"].unique().to_list())


def _resolution_note(key: str, month: str, before: Any, after: Any, now_keys: set[str]) -> str:
    head = key.split(":", 1)[0]
    moved = sorted(k for k in now_keys if k.split(":", 1)[0] == head and k != key)
    versions = f"table version {before} -> {after}" if before != after else f"table version {after}"
    if moved:
        return f"no longer listed in {month}'s report ({versions}): now listed as {moved[0]}"
    return (
        f"no longer listed in {month}'s report ({versions}): the records that arrived or "
        "changed since settle it"
    )


@dataclass
class _Fold:
    """The state built while folding the events: the items, the keys each month's latest run
    listed, the table version of that run, and the newest month reported."""

    upto: str | None
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    listed: dict[str, set[str]] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    newest: str | None = None

    def cleared(self, row: dict[str, Any]) -> None:
        """A later month's report recomputed the item's month and it was gone (._carry)."""
        item = self.items.get(row["key"])
        if (self.upto is not None and row["month"] > self.upto) or item is None:
            return
        if item["status"] in OPEN_STATUSES:
            item["status"] = "resolved"
            item["resolved_month"] = row["month"]
            item["resolved_by"] = row["note"]
            _changed(item, row)

    def reported(self, row: dict[str, Any], seen: list[dict[str, Any]]) -> None:
        """A run of a month's report: settle what it no longer lists, then list what it saw."""
        month = row["month"]
        if self.upto is not None and month > self.upto:
            return
        self.newest = month if self.newest is None or month > self.newest else self.newest
        keys = {s["key"] for s in seen}
        covered = set((row["section"] or "").split(",")) - {""}
        self._settle_unlisted(row, keys, covered)
        for s in seen:
            self._list(row, s)
        self.listed[month] = keys
        self.versions[month] = row["table_version"]

    def _settle_unlisted(self, row: dict[str, Any], keys: set[str], covered: set[str]) -> None:
        """Settled by what arrived or changed between two runs of a month that covers its
        section."""
        month = row["month"]
        for key in self.listed.get(month, set()) - keys:
            item = self.items.get(key)
            if item is None or item["status"] not in OPEN_STATUSES:
                continue
            if item["section"] not in covered:
                continue
            item["status"] = "resolved"
            item["resolved_month"] = month
            item["resolved_by"] = _resolution_note(
                key, month, self.versions.get(month), row["table_version"], keys
            )
            _changed(item, row)

    def _list(self, row: dict[str, Any], s: dict[str, Any]) -> None:
        month = row["month"]
        item = self.items.get(s["key"])
        if item is None:
            item = self.items[s["key"]] = {
                "key": s["key"],
                "first_month": month,
                "last_month": month,
                "status": "open",
                "category": default_category(s["section"], s["kind"]),
                "owner": None,
                "explanation": None,
                "resolved_month": None,
                "resolved_by": None,
            }
            _changed(item, row)
        elif item["status"] == "resolved":
            item["status"] = "explained" if item["explanation"] else "open"
            item["resolved_month"] = item["resolved_by"] = None
        item["first_month"] = min(item["first_month"], month)
        item["last_month"] = max(item["last_month"], month)
        for name in ("section", "kind", "currency", "amount", "item_date"):
            item[name] = s[name]

    def annotated(self, row: dict[str, Any]) -> None:
        """An analyst's category, owner, explanation or status."""
        item = self.items.get(row["key"])
        if item is None:
            return
        for name in ("category", "owner", "explanation"):
            if row[name] is not None:
                item[name] = row[name]
        status = row["status"]
        if status is None and row["explanation"] and item["status"] == "open":
            status = "explained"
        account, key = made_by(row)
        if status is not None:
            item["status"] = status
            if status in ("resolved", "written_off"):
                item["resolved_month"] = row["month"] or self.newest or item["last_month"]
                what = item["explanation"] or "no note"
                how = f"signed, key {key}" if key else "not signed"
                item["resolved_by"] = (
                    f"{status.replace('_', ' ')} by {row['actor']} ({how}; account "
                    f"{account or 'not recorded'}) on {row['at']:%Y-%m-%d}: {what}"
                )
            else:
                item["resolved_month"] = item["resolved_by"] = None
        _changed(item, row, account, key)


def _changed(
    item: dict[str, Any], row: dict[str, Any], account: str | None = None, key: str | None = None
) -> None:
    """The item's last change: by whom (the declared name), when, the account it was made
    from and the key that signed it (a person's annotation; None for a report's changes)."""
    item["changed_by"], item["changed_at"] = row["actor"], row["at"]
    item["changed_account"], item["changed_key"] = account, key


def _newest(events: pl.DataFrame) -> str | None:
    months = reported_months(events)
    return months[-1] if months else None


def annotation_months(events: pl.DataFrame) -> pl.DataFrame:
    """The ``annotated`` events, each with its ``month``: the newest month reported when it was
    made (the month whose register it changes, recorded by :func:`annotate`)."""
    notes = events.with_row_index("_i").filter(pl.col("event") == "annotated").sort("at", "_i")
    return notes.drop("_i")


def select_events(events: pl.DataFrame, month: str | None, *, cut: Any = None) -> pl.DataFrame:
    """The events that make ``month``'s register, whatever the order reports were run in:
    every run of ``month`` itself; the runs of earlier months recorded up to ``month``'s
    newest run (``cut``: up to then instead), not those run after it; no run of a later
    month; the annotations made while ``month`` or an earlier one was the newest reported."""
    if month is None or events.is_empty():
        return events
    runs = events.filter(pl.col("event") == "reported").select("run", "month", "at")
    if cut is None:
        mine = runs.filter(pl.col("month") == month)["at"]
        cut = mine.max() if mine.len() else None
    earlier = pl.col("month") < month
    if cut is not None:
        earlier = earlier & (pl.col("at") <= cut)
    keep = runs.filter((pl.col("month") == month) | earlier).select("run")
    produced = ["reported", "seen", "cleared", "checked"]
    reported = events.filter(pl.col("event").is_in(produced)).join(keep, on="run", how="semi")
    notes = annotation_months(events).filter(pl.col("month") <= month)
    other = events.filter(
        ~pl.col("event").is_in(["reported", "seen", "cleared", "checked", "annotated"])
    )
    return pl.concat([reported, notes, other])


def _fold(
    events: pl.DataFrame, upto: str | None, until: Any = None
) -> tuple[dict[str, dict[str, Any]], dict[str, set[str]], str | None]:
    """In recorded order; returns items, the keys of each month's latest run, the newest month
    (runs after ``upto`` skipped)."""
    ordered = events.with_row_index("_i").sort("at", "_i")
    if until is not None:
        ordered = ordered.filter(pl.col("at") <= until)
    seen_by_run: dict[str, list[dict[str, Any]]] = {}
    for row in ordered.filter(pl.col("event") == "seen").iter_rows(named=True):
        seen_by_run.setdefault(row["run"], []).append(row)
    fold = _Fold(upto)
    for row in ordered.filter(
        pl.col("event").is_in(["reported", "annotated", "cleared"])
    ).iter_rows(named=True):
        if row["event"] == "cleared":
            fold.cleared(row)
        elif row["event"] == "reported":
            fold.reported(row, seen_by_run.get(row["run"], []))
        else:
            fold.annotated(row)
    return fold.items, fold.listed, fold.newest


def register_view(
    store: str | os.PathLike[str],
    *,
    month: str | None = None,
    materiality: Materiality | None = None,
    events: pl.DataFrame | None = None,
    until: Any = None,
    pending: str | os.PathLike[str] | None = None,
    table_version: int | None = None,
    orders: pl.DataFrame | None = None,
    recompute: Recompute | None = None,
) -> pl.DataFrame:
    """The register as of ``month``'s report (default: the newest month reported).

    One row per item ever listed up to that month (:data:`REGISTER_COLUMNS`): its status,
    category, owner and explanation as they stand now, its age in days from its own date to
    the month's last day and the bucket, and whether it is material (:mod:`._materiality`, the
    section's volume being that month's listed items). ``until`` (a UTC datetime) leaves out
    what was recorded after it: the register as it stood then. ``pending``: the folder of a
    report of ``month`` being built (its lists, ``table_version``, ``orders``): the register
    as it will be once that report is recorded (a notebook of the report reads this; nothing
    is written).

    Raises:
        RegisterFormatError: the register was written by a newer txkit.
        ValueError: a month the register has no report of (names those it has).
    """
    if events is None:
        events, _ = read_events(store)
    if pending and month is not None:
        extra, _ = report_events(
            store, month, pending, table_version=table_version, orders=orders,
            recompute=recompute, events=events,
        )  # fmt: skip
        events = pl.concat([events, extra])
    month = _reported_month(events, month)
    if until is not None:
        events = events.filter(pl.col("at") <= until)
    items, listed, newest = _fold(select_events(events, month or _newest(events)), month)
    if newest is None:
        return pl.DataFrame(schema=REGISTER_COLUMNS)
    in_month = listed.get(newest, set())
    if not items:  # months reported, none with an exception
        return pl.DataFrame(schema=REGISTER_COLUMNS)
    columns = _view_columns(items, in_month, _month_end(newest), materiality or Materiality())
    return pl.DataFrame(
        [pl.Series(c, columns[c], dtype=t) for c, t in REGISTER_COLUMNS.items()]
    ).sort("section", "first_month", "key")


def _reported_month(events: pl.DataFrame, month: str | None) -> str | None:
    months = reported_months(events)
    if month is None:
        return None
    month = parse_month(month)
    if month not in months:
        have = f"{months[0]} to {months[-1]}" if months else "none yet (run txkit report)"
        raise ValueError(f"the register has no report of {month}: it has {have}")
    return month


def _view_columns(
    items: dict[str, dict[str, Any]], in_month: set[str], end: date, materiality: Materiality
) -> dict[str, list[Any]]:
    """The register's columns, each a list in the items' order (built column by column: no
    row of every item copied, each section's and currency's threshold computed once)."""
    volume = _listed_volume(items, in_month)
    thresholds: dict[tuple[str, str | None], Decimal] = {}
    values = list(items.values())
    ages = [max((end - i["item_date"]).days, 0) if i["item_date"] else 0 for i in values]
    buckets = {age: age_bucket(age) for age in set(ages)}
    threshold = []
    for item in values:
        at = (item["section"], item["currency"])
        if at not in thresholds:
            thresholds[at] = materiality.threshold(
                item["currency"], volume.get((item["section"], item["currency"] or ""), Decimal(0))
            )
        threshold.append(thresholds[at])
    added = {
        "age_days": ages,
        "age_bucket": [buckets[age] for age in ages],
        "listed": [i["key"] in in_month for i in values],
        "threshold": threshold,
        "material": [
            i["amount"] is not None and i["amount"] != 0 and abs(i["amount"]) >= t
            for i, t in zip(values, threshold, strict=True)
        ],
    }
    # Every item has every field (:meth:`_Fold._list` makes it so).
    return {
        name: added[name] if name in added else [i[name] for i in values]
        for name in REGISTER_COLUMNS
    }


def _listed_volume(
    items: dict[str, dict[str, Any]], in_month: set[str]
) -> dict[tuple[str, str], Decimal]:
    volume: dict[tuple[str, str], Decimal] = {}
    for key in in_month:
        item = items[key]
        if item["amount"] is not None:
            at = (item["section"], item["currency"] or "")
            volume[at] = volume.get(at, Decimal(0)) + abs(item["amount"])
    return volume


def filter_items(
    view: pl.DataFrame,
    *,
    still_open: bool = False,
    material: bool = False,
    older_than: int | None = None,
    section: str | None = None,
    owner: str | None = None,
) -> pl.DataFrame:
    """The items of :func:`register_view` that pass every filter given: still open
    (``open`` or ``explained``), material, older than ``older_than`` days, of a section, of an
    owner (``""``: those without one). ``txkit exceptions --open --material --older-than N``."""
    if still_open:
        view = view.filter(pl.col("status").is_in(OPEN_STATUSES))
    if material:
        view = view.filter(pl.col("material"))
    if older_than is not None:
        view = view.filter(pl.col("age_days") > older_than)
    if section is not None:
        view = view.filter(pl.col("section") == section)
    if owner is not None:
        view = view.filter(pl.col("owner").is_null() if owner == "" else pl.col("owner") == owner)
    return view


def bucket_counts(view: pl.DataFrame) -> pl.DataFrame:
    """Open items (``open``, ``explained``) per section and age bucket, with the material ones:
    ``section``, one column per bucket, ``open``, ``material``."""
    still = view.filter(pl.col("status").is_in(OPEN_STATUSES))
    rows = []
    for section in sorted(view["section"].unique().to_list()):
        part = still.filter(pl.col("section") == section)
        row: dict[str, Any] = {"section": section}
        for bucket in BUCKETS:
            row[bucket] = part.filter(pl.col("age_bucket") == bucket).height
        row["open"] = part.height
        row["material"] = part.filter(pl.col("material")).height
        rows.append(row)
    schema = {
        "section": pl.String,
        **{b: pl.Int64 for b in BUCKETS},
        "open": pl.Int64,
        "material": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema)


def _check_choice(value: str | None, allowed: Iterable[str], flag: str) -> None:
    if value is not None and value not in allowed:
        raise ValueError(f"{flag} {value!r} is not one of {', '.join(allowed)}")


def explain(
    store: str | os.PathLike[str],
    key: str,
    *,
    category: str | None = None,
    owner: str | None = None,
    note: str | None = None,
    status: str | None = None,
    actor: str | None = None,
    key_file: str | os.PathLike[str] | None = None,
    allowed_signers: str | os.PathLike[str] | None = None,
) -> pl.DataFrame:
    """Annotate an item: category, owner, explanation, status. Returns its register row.

    Giving an explanation to an ``open`` item makes it ``explained`` (unless ``status`` says
    otherwise). The change is one appended event, with who (``actor``, default the process's
    account), the account it was made from, when, and with ``key_file`` its signature
    (:func:`annotate`).

    Raises:
        ValueError: an unknown key, category or status (one line naming the accepted values),
            or nothing to change.
        StoreError: the register could not be written (nothing was).
    """
    _check_choice(category, CATEGORIES, "--category")
    _check_choice(status, STATUSES, "--status")
    if category is None and owner is None and note is None and status is None:
        raise ValueError("nothing to change: give --category, --owner, --note or --status")
    annotate(
        store,
        [{"key": key, "category": category, "owner": owner, "explanation": note, "status": status}],
        actor=actor,
        key_file=key_file,
        allowed_signers=allowed_signers,
    )
    view = register_view(store)
    return view.filter(pl.col("key") == key)


def annotate(
    store: str | os.PathLike[str],
    changes: list[dict[str, Any]],
    *,
    actor: str | None = None,
    key_file: str | os.PathLike[str] | None = None,
    allowed_signers: str | os.PathLike[str] | None = None,
) -> int:
    """Append annotations (``key`` and any of ``category``, ``owner``, ``explanation``,
    ``status``) as one commit; returns the register's version. Each records the process's
    account (never ``LOGNAME``/``USER``) beside the declared name; with ``key_file`` (a key
    ``allowed_signers`` lists) each is signed and the name is the key's
    (:mod:`txkit.register._annotate`). A write-off of a material item needs ``key_file`` when
    the project has an ``allowed_signers`` file.

    Raises:
        ValueError: a key the register does not know (names it, and the row when several),
            or a material write-off without ``key_file``.
        ReportSignedError: ``key_file`` is not listed, or ``actor`` names another person.
    """
    events, register_version = read_events(store)
    known = set(events.filter(pl.col("event") == "seen")["key"].to_list())
    unknown = [(i, c["key"]) for i, c in enumerate(changes) if c["key"] not in known]
    if unknown:
        where = "" if len(changes) == 1 else f" (row {unknown[0][0] + 2} of the file)"
        more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
        raise ValueError(
            f"no item {unknown[0][1]!r} in the register{where}{more}: `txkit exceptions` "
            "lists the keys"
        )
    declared = check_text(actor, "--by")
    for change in changes:
        for name in ("owner", "explanation"):
            flag = "--note" if name == "explanation" else f"--{name}"
            if change.get(name) is not None:
                change[name] = check_text(change[name], flag)
    month = _newest(events)
    if month is not None:
        refuse_locked(events, month, f"the change of {changes[0]['key']} is refused")
    if key_file is None and any(c.get("status") == "written_off" for c in changes):
        signers = Path(allowed_signers) if allowed_signers is not None else None
        view = register_view(store, events=events, materiality=load_materiality())
        why = needs_key(changes, view, signers)
        if why:
            raise ValueError(why)
    who, notes = provenance(changes, by=declared, key=key_file, allowed_signers=allowed_signers,
                            month=month, register_version=register_version)  # fmt: skip
    at = now()
    rows = [
        {
            "event": "annotated",
            "key": c["key"],
            "category": c.get("category"),
            "owner": c.get("owner"),
            "explanation": c.get("explanation"),
            "status": c.get("status"),
            "note": note,
            "actor": who,
            "at": at,
            "month": month,
        }
        for c, note in zip(changes, notes, strict=True)
    ]
    return append_events(store, events_frame(rows))
