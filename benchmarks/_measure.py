"""Measuring helpers shared by the benchmarks: peak resident memory of a step, medians, and
the work folder each run writes in."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def rss_mb(field: str = "VmRSS") -> float:
    """A field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MB; NaN where there is none."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> None:
    """Reset the process's peak resident set (``VmHWM``) to what it holds now (Linux)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def step(call: Callable[[], object]) -> tuple[float, float, object]:
    """Run ``call`` once: (seconds, peak resident MB above the step's start, its result)."""
    reset_peak()
    before = rss_mb()
    began = time.perf_counter()
    result = call()
    return time.perf_counter() - began, rss_mb("VmHWM") - before, result


def round_robin(calls: dict[str, Callable[[], object]], runs: int) -> dict[str, dict[str, float]]:
    """Each call ``runs`` times, in turn (so drift on the machine hits all alike): the median
    seconds, the fastest and slowest, the median CPU seconds of the process (every thread:
    steadier than the wall clock on a shared machine) and the median peak MB, by name."""
    seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            cpu = time.process_time()
            seconds, peak, _ = step(call)
            seen[name].append((seconds, peak, time.process_time() - cpu))
    return {
        name: {
            "seconds": statistics.median(s for s, _, _ in ms),
            "min": min(s for s, _, _ in ms),
            "max": max(s for s, _, _ in ms),
            "cpu": statistics.median(c for _, _, c in ms),
            "peak_mb": statistics.median(p for _, p, _ in ms),
        }
        for name, ms in seen.items()
    }


def work_folder(prefix: str) -> Path:
    """A new folder in the system's temporary folder for this run's files (stores, sandboxes,
    reports), removed when the process exits; with ``TXKIT_BENCH_KEEP=1`` it is kept and its
    path printed (a million-record report run writes about 300 MB)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if os.environ.get("TXKIT_BENCH_KEEP") == "1":
        atexit.register(print, f"work folder kept: {folder}")
    else:
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
