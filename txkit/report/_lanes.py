"""The report's kernels: a few lanes, each one kernel that runs its notebooks in turn.

Starting a kernel (the interpreter, ipykernel, polars, txkit, matplotlib) costs about 1.3 s
of CPU and 1.5 to 3 s of wall time on a 2-core machine, a fifth of a curated notebook's run
on the sandbox: six notebooks in two lanes start two kernels, not six. Between two notebooks
the lane resets its kernel (every name the notebook defined, its figures, the prompt numbers),
so a notebook runs as it would in a kernel of its own; modules stay imported. A kernel that
died, or ran a notebook that failed, is shut down and the lane starts a new one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from jupyter_core.utils import run_sync

from txkit.errors import NotebookFailedError
from txkit.report._kernel import ReportKernelManager

__all__ = ["Lane", "run_in_lanes"]

T = TypeVar("T")
Item = TypeVar("Item")

#: Run between two notebooks, outside the history: figures closed, txkit's per-notebook state
#: started again (:mod:`txkit._session`), names removed (``%reset``), and the next notebook's
#: first cell numbered 1 again, as in a new kernel.
_RESET = """\
import sys as _sys
if "matplotlib.pyplot" in _sys.modules:
    _sys.modules["matplotlib.pyplot"].close("all")
if "txkit._session" in _sys.modules:
    _sys.modules["txkit._session"].new_notebook()
del _sys
get_ipython().run_line_magic("reset", "-f")
get_ipython().execution_count = 1
"""


class Lane:
    """One kernel, started by the first notebook run in it, reused by the next ones.

    A lane is used by one thread only (the kernel manager's futures belong to that thread's
    event loop)."""

    def __init__(self, make_manager: Callable[[], ReportKernelManager]) -> None:
        self._make_manager = make_manager
        self._manager: ReportKernelManager | None = None
        self.kernels_started = 0

    def manager(self) -> ReportKernelManager:
        """The kernel manager for the next notebook: its kernel reset, or a new one (started
        by the notebook's client)."""
        if self._manager is not None and self._manager.has_kernel:
            if run_sync(self._manager.is_alive)():
                self._reset()
                return self._manager
            self.close()
        if self._manager is None:
            self._manager = self._make_manager()
            self.kernels_started += 1
        return self._manager

    def done(self, *, failed: bool) -> None:
        """After a notebook: its clients' channels closed; the kernel shut down if it failed."""
        if self._manager is not None:
            self._manager.stop_clients()
            if failed:
                self.close()

    def close(self) -> None:
        """Shut the kernel down (idempotent)."""
        manager, self._manager = self._manager, None
        if manager is None:
            return
        manager.stop_clients()
        if manager.has_kernel:
            # Killed, not asked: its notebooks are done and its history is in memory (nbclient's
            # default), and a kernel asked to shut down sometimes logs a traceback from its
            # closing sockets onto the report's stderr (ipykernel's "Socket operation on
            # non-socket", seen once in about ten reports).
            run_sync(manager.shutdown_kernel)(now=True)
        run_sync(manager.cleanup_resources)()

    def _reset(self) -> None:
        assert self._manager is not None
        run_sync(_reset_kernel)(self._manager)


async def _reset_kernel(manager: ReportKernelManager, timeout: float = 60) -> None:
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=timeout)
        reply = await client.execute_interactive(
            _RESET, store_history=False, timeout=timeout, output_hook=lambda _msg: None
        )
    finally:
        manager.stop_clients()
    if reply["content"]["status"] != "ok":
        raise NotebookFailedError(
            f"the report's kernel could not be reset between two notebooks: "
            f"{reply['content'].get('ename')}: {reply['content'].get('evalue')}"
        )


def run_in_lanes(
    waves: Sequence[Sequence[Item]],
    work: Callable[[Item, Lane], T],
    make_manager: Callable[[int], ReportKernelManager],
    *,
    lanes: int,
    on_done: Callable[[Item, T], None] = lambda _item, _result: None,
) -> tuple[dict[Item, T], list[Lane]]:
    """Run ``work(item, lane)`` for every item of every wave on ``lanes`` threads, each with
    its own :class:`Lane`; a wave begins when the one before it has ended. Returns the results
    by item and the lanes (closed).

    The first exception stops the lanes from taking new items and is raised once they have
    stopped (their kernels shut down)."""
    results: dict[Item, T] = {}
    errors: list[BaseException] = []
    guard = threading.Lock()
    count = max(1, lanes)
    barrier = threading.Barrier(count)
    queues = [list(wave) for wave in waves]
    made = [Lane(lambda index=index: make_manager(index)) for index in range(count)]

    def take(wave: list[Item]) -> Item | None:
        with guard:
            return wave.pop(0) if wave and not errors else None

    def lane_main(lane: Lane) -> None:
        try:
            for wave in queues:
                while (item := take(wave)) is not None:
                    try:
                        result = work(item, lane)
                    except BaseException as exc:
                        lane.done(failed=True)
                        with guard:
                            errors.append(exc)
                        break
                    lane.done(failed=False)
                    with guard:
                        results[item] = result
                    on_done(item, result)
                try:
                    barrier.wait()
                except threading.BrokenBarrierError:
                    return
                if errors:
                    return
        except BaseException as exc:  # a reset or a shutdown that failed
            with guard:
                errors.append(exc)
            barrier.abort()
        finally:
            lane.close()

    threads = [
        threading.Thread(target=lane_main, args=(lane,), name=f"txkit-lane-{i}", daemon=True)
        for i, lane in enumerate(made)
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:
        with guard:
            errors.append(KeyboardInterrupt())
        barrier.abort()
        raise
    if errors:
        raise errors[0]
    return results, made
