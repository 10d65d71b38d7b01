"""The report's last step: it is built in a staging folder beside the reports and swapped in
at the end, so that a failing report leaves the previous one of that month untouched. A
report killed outright (SIGKILL, power loss) can leave its staging folder, or the previous
report moved aside mid-swap; the next report in the same folder removes the first and puts the
second back (:func:`clean_leftovers`)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import polars as pl

from txkit.errors import RegisterFormatError, ReportSignedError, StoreError, one_line
from txkit.register import (
    Target,
    commit_report,
    locked_message,
    month_state,
    read_events,
    refuse_overwrite,
)

log = logging.getLogger("txkit")

__all__ = ["OWNER_FILE", "alive", "clean_leftovers", "publish", "stage"]

#: Written in a staging or kernel folder: the process that owns it.
OWNER_FILE = ".owner-pid"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


#: In a pack put in place whose register commit has not landed yet: the store, the run, the
#: process (hidden: outside the pack's digest). Removed once the commit lands.
UNCOMMITTED = ".uncommitted"


def _unrecorded(final: Path, out: Path) -> str | None:
    """A pack a killed report put in place without its register commit: the previous pack
    back (or none), so that no pack stands without its event."""
    marker = final / UNCOMMITTED
    if not marker.is_file():
        return None
    try:
        doc = json.loads(marker.read_text(encoding="utf-8"))
        store, run, pid = str(doc["store"]), str(doc["run"]), int(doc["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if alive(pid):
        return None  # its report is still committing
    previous = out / f".{final.name}.previous"
    try:
        events = read_events(store)[0]
    except Exception:  # the register cannot be read: leave the folder as it is
        return None
    if events.filter((pl.col("event") == "reported") & (pl.col("run") == run)).height:
        marker.unlink(missing_ok=True)
        return None  # the commit landed: the pack is recorded; .previous is removed below
    _swap_back(final, previous)
    what = "restored the previous report" if final.exists() else "removed the report"
    return f"{what} {final.name}: a killed report had put its pack in place without recording it"


def clean_leftovers(out: Path) -> list[str]:
    """Remove what killed reports left in ``out``; returns a line per thing done.

    A staging folder (``.YYYY-MM.*``) whose owning process is gone is removed. A previous report
    moved aside for the swap (``.YYYY-MM.previous``) is put back when the month has no report
    (the kill came between the two renames), else removed. Staging folders of a report still
    running (its process is alive) are left alone.
    """
    done: list[str] = []
    if not out.is_dir():
        return done
    for final in sorted(out.glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]*")):
        line = _unrecorded(final, out)
        if line:
            done.append(line)
    for path in sorted(out.glob(".[0-9][0-9][0-9][0-9]-[0-9][0-9].*")):
        if not path.is_dir():
            continue
        month = path.name[1:8]
        if path.name.endswith(".previous"):
            final = out / path.name[1 : -len(".previous")]
            if final.exists():
                shutil.rmtree(path, ignore_errors=True)
                done.append(f"removed {path.name} (left by a killed report; {month} is complete)")
            else:
                os.rename(path, final)
                done.append(f"restored the previous report of {month} (a killed report moved it)")
            continue
        try:
            owner = int((path / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            owner = None
        if owner is not None and alive(owner):
            continue
        shutil.rmtree(path, ignore_errors=True)
        done.append(f"removed the staging folder {path.name} (left by a killed report)")
    return done


def stage(out: Path, month: str) -> Path:
    """A staging folder beside the reports (what killed reports left is cleaned first)."""
    out.mkdir(parents=True, exist_ok=True)
    for line in clean_leftovers(out):
        log.warning("report: %s", line)
    staging = Path(tempfile.mkdtemp(prefix=f".{month}.", dir=out))
    staging.chmod(0o755)
    (staging / OWNER_FILE).write_text(str(os.getpid()))
    return staging


def publish(
    staging: Path,
    out: Path,
    target: Target,
    *,
    store: str | os.PathLike[str] | None = None,
    month: str | None = None,
    pending: pl.DataFrame | None = None,
) -> Path:
    """Put the finished report in place of the previous one of the target's name (the month,
    or a revision ``YYYY-MM.rN`` of a signed month); its folder.

    With ``pending`` (the register's events and this report's, not yet committed): the
    month's lock is checked again first (a signature that landed while the report ran, from
    where the month's lock file does not reach: object storage, another machine), and so is
    the folder it replaces (never a signed pack); the pack goes in place and this report's
    events are committed, naming each file's digest, as one step: a failure of the commit (a
    register that cannot be written, a broken pipe, an interrupt) puts the previous pack back
    and leaves no event. Only a register that cannot be written with no recorded pack to keep
    (a read-only store's first report) leaves the new pack, as a draft, with a warning.

    Raises:
        ReportSignedError: the month was locked meanwhile, or the folder is a signed pack
            (nothing is put in place or recorded).
        StoreError: the register could not be written (the previous pack is back in place).
    """
    mine = None
    if pending is not None and store is not None and month is not None:
        events = read_events(store)[0]
        state = month_state(events, month)
        if state.locked and state.newest is not None and target.number <= state.newest.number:
            raise ReportSignedError(
                locked_message(state, f"the report of {month} is not put in place")
            )
        refuse_overwrite(out / target.name, month, events, store)
        # This report's events: the last run of ``pending`` (the register's come first).
        run = pending.filter(pl.col("event") == "reported")["run"][-1]
        mine = pending.filter(pl.col("run") == run)
    if mine is not None and store is not None:
        marker = {"store": str(store), "run": str(run), "pid": os.getpid()}
        (staging / UNCOMMITTED).write_text(json.dumps(marker), encoding="utf-8")
    final, previous = _swap_in(staging, out, target.name)
    if mine is not None and store is not None and month is not None:
        try:
            commit_report(store, month, mine, final, revision=target.number,
                          reason=target.reason, reopened=target.reopened)  # fmt: skip
        except StoreError as exc:
            if isinstance(exc, (RegisterFormatError, ReportSignedError)) or _committed(store, mine):
                raise
            if previous.exists() and _recorded(store, month, target.name):
                _swap_back(final, previous)  # the recorded pack stays, verifiable and signable
                raise
            # A register that cannot be written (a read-only store) and no recorded pack to
            # keep: the report is a draft the register does not know.
            log.warning("report: the exception register was not updated: %s", one_line(exc))
        except BaseException:
            if not _committed(store, mine):
                _swap_back(final, previous)
            raise
    (final / UNCOMMITTED).unlink(missing_ok=True)
    shutil.rmtree(previous, ignore_errors=True)
    return final


def _recorded(store: str | os.PathLike[str], month: str, name: str) -> bool:
    """Whether the register holds a report of ``month`` in the folder ``name``."""
    try:
        state = month_state(read_events(store)[0], month)
    except Exception:  # unreadable: treated as recorded, so the previous pack is kept
        return True
    return any(rev.name == name for rev in state.revisions.values())


def _committed(store: str | os.PathLike[str], mine: pl.DataFrame) -> bool:
    """Whether this report's ``reported`` event reached the register (a failure after it)."""
    run = mine.filter(pl.col("event") == "reported")["run"][-1]
    try:
        events = read_events(store)[0]
    except Exception:  # the register cannot be read: the commit is not known to have landed
        return False
    return events.filter((pl.col("event") == "reported") & (pl.col("run") == run)).height > 0


def _swap_in(staging: Path, out: Path, name: str) -> tuple[Path, Path]:
    """The staging folder in place as ``name``; the previous pack kept aside
    (``.NAME.previous``) until the register's commit lands."""
    final = out / name
    previous = out / f".{name}.previous"
    shutil.rmtree(previous, ignore_errors=True)
    if final.exists():
        os.rename(final, previous)
    (staging / OWNER_FILE).unlink()
    os.rename(staging, final)
    return final, previous


def _swap_back(final: Path, previous: Path) -> None:
    """The previous pack in place again (none: the month's folder removed)."""
    shutil.rmtree(final, ignore_errors=True)
    if previous.exists():
        os.rename(previous, final)
