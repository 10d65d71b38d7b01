"""Measuring helpers shared by the benchmarks: peak resident memory of a step, medians."""

from __future__ import annotations

import contextlib
import statistics
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
