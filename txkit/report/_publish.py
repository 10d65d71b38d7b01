"""The report's last step: it is built in a staging folder beside the reports and swapped in
at the end, so that a failing report leaves the previous one of that month untouched. A
report killed outright (SIGKILL, power loss) can leave its staging folder, or the previous
report moved aside mid-swap; the next report in the same folder removes the first and puts the
second back (:func:`clean_leftovers`)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from txkit.register import Target

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
    for path in sorted(out.glob(".[0-9][0-9][0-9][0-9]-[0-9][0-9].*")):
        if not path.is_dir():
            continue
        month = path.name[1:8]
        if path.name.endswith(".previous"):
            final = out / month
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


def publish(staging: Path, out: Path, target: Target) -> Path:
    """Put the finished report in place of the previous one of the target's name (the month,
    or a revision ``YYYY-MM.rN`` of a signed month); its folder."""
    return _swap(staging, out, target.name)


def _swap(staging: Path, out: Path, name: str) -> Path:
    final = out / name
    previous = out / f".{name}.previous"
    shutil.rmtree(previous, ignore_errors=True)
    if final.exists():
        os.rename(final, previous)
    (staging / OWNER_FILE).unlink()
    os.rename(staging, final)
    shutil.rmtree(previous, ignore_errors=True)
    return final
