"""``txkit report --month YYYY-MM``: the monthly job, as its steps.

1. Plan (:mod:`._plan`): check the request and the merchant's files; choose the days to sync
   (the months the trends show, up to twelve, and the days after the month; inside the
   sandbox's calendar).
2. Sync the local store for those days (only what is missing, plus the look-back window; a
   closed month already stored costs no request at all), and read the month's manifest.
3. Execute every curated notebook (``notebooks/NN_*.ipynb``) for the month with papermill,
   reading from the store (:mod:`._execute`, in the lanes of :mod:`._lanes` and
   :mod:`._kernels`).
4. Record the month in the exception register and write ``report.json`` (:mod:`._manifest`),
   the headlines and the index (:mod:`._pages`).
5. Publish (:mod:`._publish`): the report, built aside, is swapped in at the end.

A failing notebook fails the command, naming the notebook and the cell; the previous report of
that month is then left untouched. The library prints nothing: what the user is told is in
:attr:`ReportResult.notes`, each passed to ``on_note`` as it comes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from txkit import config
from txkit.calendar import parse_month
from txkit.config import default_store
from txkit.errors import StoreError
from txkit.notebook import sandbox_statements
from txkit.register import (
    Materiality,
    Target,
    history_block,
    load_materiality,
    month_lock,
    month_state,
    read_events,
    refuse_overwrite,
    refuse_signed,
    revisions,
    sign_reopening,
    with_revision,
)
from txkit.report._execute import Executed, kernels_started_early, run_notebooks
from txkit.report._manifest import ReportManifest, record_register, write_manifest
from txkit.report._pages import (
    add_headlines,
    attach_downloads,
    review_close,
    write_close_summary,
    write_index,
)
from txkit.report._plan import (
    Notes,
    OrdersCheck,
    ReportPlan,
    ReportRequest,
    check_orders,
    month_manifest,
    plan_report,
    sync_for_report,
)
from txkit.report._publish import publish, stage
from txkit.store import Lease, MonthManifest, SyncResult, read_state

__all__ = ["ReportResult", "run", "run_report"]


@dataclass
class ReportResult:
    """Where the report is and what it took.

    Attributes:
        index: the index page.
        notebooks: executed notebook -> seconds.
        sync: what the store sync did (None when nothing needed fetching).
        sync_seconds: time spent syncing (0 when the store was up to date).
        notes: what the user is told, in order (the orders and statements read, the sync's
            notes, the register's carried items, a revision's changes).
        reused: the notebooks taken from the execution cache, not executed.
    """

    index: Path
    notebooks: dict[str, float]
    sync: SyncResult | None
    sync_seconds: float
    notes: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)


def run_report(
    month: str,
    *,
    store: str | Path | None = None,
    out: Path,
    notebooks: Path,
    show_pii: bool = False,
    lookback_days: int = config.LOOKBACK_DAYS,
    orders: str | None = None,
    progress: bool | None = None,
    as_of: int | None = None,
    bank_statements: list[str] | None = None,
    bank_columns: str | None = None,
    reopen: str | None = None,
    on_note: Callable[[str], None] | None = None,
    orders_columns: str | None = None,
    cache: bool = True,
    key: str | None = None,
) -> ReportResult:
    """Sync the month into the store, execute the notebooks, write HTML and an index.

    The arguments are :class:`ReportRequest`'s; ``on_note`` gets each line of
    :attr:`ReportResult.notes` as it comes (the CLI prints them).

    Raises:
        NotebookFailedError: a notebook failed (named, with its cell); the previous report of
            the month is left as it was.
        ValueError: a bad month or missing notebooks.
        DataFileError: the orders file cannot be read as it is (raised before the sync).
        TxkitError: the sync failed (the store is left as it was).
        ReportSignedError: the month is locked (the store's register, whatever ``out``) and
            ``reopen`` not given (nothing is done), or was locked while the report ran
            (nothing is put in place or recorded), or a signature of it is being given.
        RegisterFormatError: the store's exception register was written by a newer txkit.
    """
    request = ReportRequest(
        month=month,
        out=out,
        notebooks=notebooks,
        store=store,
        show_pii=show_pii,
        lookback_days=lookback_days,
        orders=orders,
        progress=progress,
        as_of=as_of,
        bank_statements=bank_statements,
        bank_columns=bank_columns,
        reopen=reopen,
        orders_columns=orders_columns,
        cache=cache,
        key=key,
    )
    return run(request, on_note=on_note)


def run(request: ReportRequest, *, on_note: Callable[[str], None] | None = None) -> ReportResult:
    """:func:`run_report` for a :class:`ReportRequest`, step by step.

    The month's lock is the store's register (:mod:`txkit.register._lock`): a locked month is
    refused first, before anything is read, fetched, run or written (whatever ``out``); the
    report then holds the month (a signature meanwhile is refused) and checks the lock again
    before its final swap; its register events are committed only once its pack is in place.
    ``--as-of`` is read-only: no lock, no register event."""
    notes = Notes(on_note)
    where, month = request.store or default_store(), parse_month(request.month)
    _refuse_sandbox_with_key(where)
    if request.as_of is not None:
        plan = plan_report(request, notes)
        return _kernels_then_run(
            request, plan, notes, _as_of_target(plan, request.out, request.reopen)
        )
    # A register this txkit cannot read, a locked month, or a signed pack where this report
    # would go (whatever the store says) stops the report here.
    _target(request, where, month)
    plan = plan_report(request, notes)  # arguments and the merchant's files: nothing written
    with month_lock(where, month, wait=_LOCK_WAIT, what=f"a report of {month} (txkit report)"):
        target = _target(request, where, month)
        if request.reopen is not None:  # who reopens signs it, before anything is run
            target = sign_reopening(target, month, key=str(request.key), store=where)
        return _kernels_then_run(request, plan, notes, target)


def _refuse_sandbox_with_key(where: str | Path) -> None:
    """A configured key never reports the embedded sandbox's store: its pages would show
    synthetic data and say that no key is configured.

    Raises:
        ValueError: ``where`` holds the sandbox's data while a key is configured.
    """
    if not config.key_configured():
        return
    try:
        source = read_state(where).source
    except StoreError:  # no table yet, or unreadable: the sync says which
        return
    if source is not None and source.url.startswith("sandbox:"):
        raise ValueError(
            f"--store {where} holds the embedded sandbox's synthetic data, but "
            f"{config.SECRET_KEY_VAR} is configured: a report with a key reads the service's "
            f"store ({default_store()}); to report the sandbox, run without the key"
        )


def _target(request: ReportRequest, where: str | Path, month: str) -> Target:
    events = read_events(where)[0]
    target = refuse_signed(request.out, month, request.reopen, events=events)
    if request.reopen is not None and request.key is None:
        raise ValueError(
            f"--reopen needs --key PATH: who reopens {month} signs the reopening with their own "
            "key (one the project's allowed_signers lists)"
        )
    refuse_overwrite(request.out / target.name, month, events, where)
    return target


#: How long a report waits for another command holding its month (a signature: a second; a
#: report of the same month: its whole run) before it is refused.
_LOCK_WAIT: float = 900.0


def _as_of_target(plan: ReportPlan, out: Path, reopen: str | None) -> Target:
    """Never a folder the register holds as a pack: it would replace bytes a report recorded,
    perhaps signed."""
    if reopen is not None:
        raise ValueError("--as-of renders a version again, read-only: it takes no --reopen")
    events = read_events(plan.store)[0]
    refuse_overwrite(out / plan.month, plan.month, events, plan.store)
    state = month_state(events, plan.month)
    packs = {Path(r.folder).resolve() for r in state.revisions.values() if r.folder}
    if (out / plan.month).resolve() in packs:
        raise ValueError(
            f"--as-of: {out / plan.month} is {plan.month}'s report as the register recorded "
            "it; an --as-of rendering is read-only and goes elsewhere: give --out DIR"
        )
    return Target(plan.month)


def _kernels_then_run(
    request: ReportRequest, plan: ReportPlan, notes: Notes, target: Target
) -> ReportResult:
    with kernels_started_early(plan, start=_executes_every_notebook(request, plan)):
        return _run(request, plan, notes, target)


def _executes_every_notebook(request: ReportRequest, plan: ReportPlan) -> bool:
    """The month's first report in its reports folder, a reopening, or the execution cache
    off: every notebook is executed, so their kernels are started while the report syncs."""
    cache = request.cache and config.report_cache_setting()
    first = not (request.out / plan.month / "index.html").is_file()
    return first or not cache or request.reopen is not None


def _run(request: ReportRequest, plan: ReportPlan, notes: Notes, target: Target) -> ReportResult:
    materiality = load_materiality()
    synced, sync_seconds = sync_for_report(plan, request, notes)
    checked = plan.checked
    if checked is None:  # the sandbox's orders are written by its first start: after the sync
        checked = check_orders(plan.orders, plan.month)
        notes.add(checked.note)
    if plan.bank_source == "sandbox":  # where they are, for the analyst who looks for them
        files = [Path(p) for p in sandbox_statements(plan.month)]
        names = ", ".join(p.name for p in files) or "none for the month"
        where = f" in {config.shown_path(files[0].parent)}/" if files else ""
        notes.add(f"bank statements: the embedded sandbox's{where}: {names}")
    # The version read is held against the retention policy until the report is published
    # (then its report.json cites it): a vacuum meanwhile removed it under the notebooks.
    with Lease(plan.store, f"txkit report --month {plan.month}") as lease:
        manifest = lease.hold(lambda: month_manifest(plan), lambda m: m.table_version)
        try:
            final, executed = _render(request, plan, notes, target, manifest, materiality, checked)
        except Exception as exc:
            vanished = lease.vanished()
            if vanished is not None:  # what removed it, not "no table version N" (exit 2)
                raise vanished from exc
            raise
    return ReportResult(
        final / "index.html",
        executed.seconds,
        synced,
        sync_seconds,
        notes.lines,
        sorted(executed.reused),
    )


def _render(
    request: ReportRequest,
    plan: ReportPlan,
    notes: Notes,
    target: Target,
    manifest: MonthManifest,
    materiality: Materiality,
    checked: OrdersCheck,
) -> tuple[Path, Executed]:
    """Run the notebooks on ``manifest``'s version and publish the pack; its folder and how
    the notebooks came to be."""
    staging = stage(request.out, plan.month)
    try:
        # A revision of a signed month is executed afresh: nothing reused across revisions.
        sections, executed = run_notebooks(
            plan,
            manifest,
            staging,
            progress=request.progress,
            out=request.out,
            cache=request.cache and config.report_cache_setting(),
            reuse=request.reopen is None,
        )
        timings = executed.seconds
        for section in sections:
            reuse = executed.reused.get(Path(section.href).stem)
            if reuse is not None:
                section.reused = reuse.line()
        if executed.reused:
            notes.add(
                f"execution cache: {len(executed.reused)} of {len(sections)} notebooks reused "
                f"(inputs unchanged): {', '.join(sorted(executed.reused))}"
            )
        attach_downloads(sections, staging)
        close = review_close(staging, plan, manifest, out=request.out, materiality=materiality)
        register, pending = record_register(
            plan, manifest, staging, materiality, notes, orders=checked.whole
        )
        if pending is not None:  # this report's run is the target's revision
            pending = with_revision(pending, target.number, target.reason)
        material = register.material if register else None
        add_headlines(sections, plan, manifest, out=request.out, orders=checked, material=material)
        recorded = ReportManifest.of(plan, manifest, sorted(timings), checked)
        recorded = replace(recorded, register=register.doc if register else None)
        # Before the manifest: a revision compares this close summary's figures with the
        # signed one's (a missing file read as every figure gone, the real change hidden).
        write_close_summary(staging, close, material=material)
        revision = write_manifest(staging, recorded, target, notes)
        history = ""
        if revision:
            at = (target.name, staging)
            history = history_block(revisions(request.out, plan.month, pending=at, events=pending))
        write_index(
            staging,
            plan,
            sections,
            manifest,
            checked,
            register=register,
            revision=revision,
            history=history,
        )
        final = publish(
            staging, request.out, target, store=plan.store, month=plan.month, pending=pending
        )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final, executed
