"""The report's kernels: a few lanes, each one kernel that runs its notebooks in turn.

Starting a kernel (the interpreter, ipykernel, polars, txkit, matplotlib) costs a good part
of a curated notebook's run on the sandbox (docs/benchmarks.md): eight notebooks in two lanes
start two kernels, not eight. Between two notebooks
the lane resets its kernel (every name the notebook defined, its figures, the prompt numbers),
so a notebook runs as it would in a kernel of its own; modules stay imported. A kernel that
died, or ran a notebook that failed, is shut down and the lane starts a new one.

A run's lanes end with it. :class:`KeptLanes` keeps them across runs in one process (reports
of several months in turn), each lane's kernel still driven by one thread only, and started
again when a run's kernel settings (the environment, the working folder) differ from those it
was started with.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from traitlets import Dict, DottedObjectName, Type

from txkit.errors import NotebookFailedError

log = logging.getLogger("txkit")

__all__ = ["KeptLanes", "Lane", "ReportKernelClient", "ReportKernelManager", "run_in_lanes"]

T = TypeVar("T")
Item = TypeVar("Item")

#: Run between two notebooks, outside the history: figures closed, txkit's per-notebook state
#: started again (:mod:`txkit._session`), names removed, and the next notebook's first cell
#: numbered 1 again, as in a new kernel. The names go as ``%reset -f`` removes them (the
#: shell's own reset), without a full garbage collection: the magic adds one, and the reset
#: itself runs one when it flushes the output cache (``DisplayHook.flush``), which is why the
#: cache's last results are released here and its flush skipped. Each collection cost more
#: than the rest of the reset; the collector frees what is left in its time.
_RESET = """\
import sys as _sys
if "matplotlib.pyplot" in _sys.modules:
    _sys.modules["matplotlib.pyplot"].close("all")
if "txkit._session" in _sys.modules:
    _sys.modules["txkit._session"].new_notebook()
del _sys
def _txkit_reset(shell):
    hook = shell.displayhook
    hook._ = hook.__ = hook.___ = ""
    full, hook.do_full_cache = hook.do_full_cache, False
    try:
        shell.reset(new_session=False)
    finally:
        hook.do_full_cache = full
    shell.execution_count = 1
_txkit_reset(get_ipython())
"""


class ReportKernelClient(AsyncKernelClient):
    """A kernel client whose :meth:`wait_for_ready` ends as soon as the kernel is ready.

    jupyter_client's ends by waiting for IOPub to stay silent for 0.2 s, every time: a lane
    makes two clients per notebook (its reset's and papermill's), so its kernel idled 0.4 s
    between two notebooks. Here the wait ends with the ``kernel_info`` request's own ``idle``
    status on IOPub, which also proves that channel connected (as jupyter_client's check
    does); a request whose status was missed (IOPub not connected yet) is sent again."""

    def start_channels(
        self,
        shell: bool = True,
        iopub: bool = True,
        stdin: bool = True,
        hb: bool = True,
        control: bool = True,
    ) -> None:
        """The channels without the heartbeat: whether the kernel lives is asked of its
        manager (the process), and a heartbeat thread stopped before it had begun beating spun
        making sockets until none was left ("Too many open files", jupyter_client 8.10)."""
        super().start_channels(shell=shell, iopub=iopub, stdin=stdin, hb=False, control=control)

    async def wait_for_ready(self, timeout: float | None = None) -> None:  # type: ignore[override]
        """Return once the kernel answered ``kernel_info`` on both the shell and IOPub.

        Raises:
            RuntimeError: the kernel died, or did not answer within ``timeout`` seconds.
        """
        deadline = time.monotonic() + (math.inf if timeout is None else timeout)
        while True:
            sent = self.kernel_info()
            reply = await self._reply_to(sent, wait=1.0)
            if reply is not None and await self._idle_after(sent, wait=0.2):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    async def _reply_to(self, sent: str, *, wait: float) -> dict[str, Any] | None:
        return await self._answer(self.shell_channel, sent, wait, lambda _msg: True)

    async def _idle_after(self, sent: str, *, wait: float) -> bool:
        idle = await self._answer(
            self.iopub_channel,
            sent,
            wait,
            lambda msg: (
                msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
            ),
        )
        return idle is not None

    @staticmethod
    async def _answer(
        channel: Any, sent: str, wait: float, wanted: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any] | None:
        """The first message on ``channel`` answering ``sent`` that is ``wanted``, within
        ``wait`` seconds (None: none came)."""
        until = time.monotonic() + wait
        while (left := until - time.monotonic()) > 0:
            try:
                msg = await channel.get_msg(timeout=left)
            except queue.Empty:
                return None
            if msg["parent_header"].get("msg_id") == sent and wanted(msg):
                return msg
        return None


class ReportKernelManager(AsyncKernelManager):
    """An :class:`AsyncKernelManager` that adds :attr:`extra_env` to its kernel's
    environment (the report's own process environment, which two lanes and the caller share,
    is left alone) and remembers its clients, so that a lane closes their channels between
    notebooks."""

    extra_env = Dict(config=True, help="variables set in the kernel's environment only")
    client_class = DottedObjectName("txkit.report._lanes.ReportKernelClient")
    client_factory = Type(ReportKernelClient, klass=AsyncKernelClient)

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._clients: list[Any] = []

    def client(self, **kw: Any) -> Any:
        made = super().client(**kw)
        self._clients.append(made)
        return made

    def stop_clients(self) -> None:
        """Close the channels of every client made so far (a notebook's, a reset's)."""
        clients, self._clients = self._clients, []
        for made in clients:
            made.stop_channels()

    async def _async_pre_start_kernel(self, **kw: Any) -> Any:
        env = dict(kw.pop("env", None) or os.environ)
        env.update(self.extra_env)
        return await super()._async_pre_start_kernel(env=env, **kw)


class Lane:
    """One kernel, started by the first notebook run in it, reused by the next ones.

    A lane is used by one thread only (the kernel manager's futures belong to that thread's
    event loop)."""

    def __init__(self, make_manager: Callable[[], ReportKernelManager]) -> None:
        self._make_manager = make_manager
        self._manager: ReportKernelManager | None = None
        self._settings: Hashable = None
        self.kernels_started = 0

    def manager(self, settings: Hashable = None, setup: str = "") -> ReportKernelManager:
        """The kernel manager for the next notebook: its kernel reset, or a new one (started
        by the notebook's client). ``settings``: what the kernel is started with besides its
        code (see :func:`txkit.report._kernels.kernel_settings`); a kernel started with others
        is shut down and a new one started. ``setup``: code run after a reset, giving the kept
        kernel what a new one would be started with (its working folder, txkit's settings)."""
        if self._manager is not None and self._manager.has_kernel:
            if self._settings == settings and run_sync(self._manager.is_alive)():
                self._reset(setup)
                return self._manager
            self.close()
        if self._manager is None:
            self._manager = self._make_manager()
            self._settings = settings
            self.kernels_started += 1
        return self._manager

    def start(
        self, settings: Hashable, code: str, *, cwd: Path, arguments: Sequence[str] = ()
    ) -> None:
        """Start the kernel before the first notebook needs it and run ``code`` in it (the
        notebooks' imports), unless one started with ``settings`` runs already. A kernel that
        fails to start or to run ``code`` is shut down: the first notebook then starts one, and
        says what is wrong."""
        if self._manager is not None and self._manager.has_kernel and self._settings == settings:
            return
        manager = self.manager(settings)
        try:
            run_sync(manager.start_kernel)(extra_arguments=list(arguments), cwd=str(cwd))
            run_sync(_reset_kernel)(manager, code)
        except Exception as exc:
            log.debug("report: a kernel started ahead was shut down: %s", exc)
            self.close()

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

    def _reset(self, setup: str = "") -> None:
        assert self._manager is not None
        run_sync(_reset_kernel)(self._manager, _RESET + setup)


class _Driver:
    """A daemon thread that runs the calls given to it in turn: a lane's kernel manager is
    driven from one thread only (its futures belong to that thread's event loop), across runs
    when the lane is kept. Daemon: an interrupted report does not wait for its notebooks."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (call := self._calls.get()) is not None:
            call()

    def submit(self, call: Callable[[], None]) -> threading.Event:
        """Run ``call`` on the thread; the event is set when it has returned (or raised)."""
        done = threading.Event()

        def run() -> None:
            try:
                call()
            finally:
                done.set()

        self._calls.put(run)
        return done

    def stop(self) -> None:
        """End the thread once the calls given before have run."""
        self._calls.put(None)


class KeptLanes:
    """Lanes kept across runs in one process until :meth:`close`, each with its thread.

    Attributes:
        folder: the private folder of the kept kernels' sockets and connection files (set by
            the report at its first run; removed by :meth:`close`).
    """

    def __init__(self) -> None:
        self._lanes: list[tuple[Lane, _Driver]] = []
        self.folder: Path | None = None

    def take(
        self, count: int, make_manager: Callable[[int], ReportKernelManager]
    ) -> list[tuple[Lane, _Driver]]:
        """The first ``count`` lanes, made with ``make_manager`` when not kept yet."""
        while len(self._lanes) < count:
            index = len(self._lanes)
            lane = Lane(lambda index=index: make_manager(index))
            self._lanes.append((lane, _Driver(f"txkit-lane-{index}")))
        return self._lanes[:count]

    def close(self) -> None:
        """Shut every kept kernel down, end the threads and remove :attr:`folder`."""
        lanes, self._lanes = self._lanes, []
        for lane, driver in lanes:
            driver.submit(lane.close).wait()
            driver.stop()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


async def _reset_kernel(manager: ReportKernelManager, code: str, timeout: float = 60) -> None:
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=timeout)
        reply = await client.execute_interactive(
            code, store_history=False, timeout=timeout, output_hook=lambda _msg: None
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
    kept: KeptLanes | None = None,
    needs: Mapping[Item, Collection[Item]] | None = None,
) -> tuple[dict[Item, T], list[Lane]]:
    """Run ``work(item, lane)`` for every item of every wave on ``lanes`` threads, each with
    its own :class:`Lane`; an item begins once the items of the waves before its own, and
    those ``needs`` names for it, have ended (a free lane takes the first such item, in wave
    order). Returns the results by item and the lanes (closed, unless ``kept`` holds them for
    the next run).

    The first exception stops the lanes from taking new items and is raised once they have
    stopped (the failed lane's kernel shut down; every kernel unless kept).

    Raises:
        ValueError: an item needs itself, or items need each other in a circle.
    """
    count = max(1, lanes)
    run = _LaneRun(_prerequisites(waves, needs or {}), work, on_done, kept is not None)
    made = (kept or KeptLanes()).take(count, make_manager)
    finished = [driver.submit(lambda lane=lane: run.lane_main(lane)) for lane, driver in made]
    try:
        for event in finished:
            event.wait()
    except BaseException:
        run.failed(KeyboardInterrupt())
        raise
    finally:
        if kept is None:
            for _lane, driver in made:
                driver.stop()
    if run.errors:
        raise run.errors[0]
    return run.results, [lane for lane, _driver in made]


def _prerequisites(
    waves: Sequence[Sequence[Item]], needs: Mapping[Item, Collection[Item]]
) -> dict[Item, set[Item]]:
    """Each item (in wave order) with the items it waits for: the earlier waves' and those
    ``needs`` names among the items run."""
    every = [item for wave in waves for item in wave]
    out: dict[Item, set[Item]] = {}
    before: list[Item] = []
    for wave in waves:
        for item in wave:
            out[item] = {*before, *(n for n in needs.get(item, ()) if n in every)}
        before.extend(wave)
    done: set[Item] = set()
    while len(done) < len(out):  # every item reachable: no circle
        ready = {i for i, wait in out.items() if i not in done and wait <= done}
        if not ready:
            left = ", ".join(sorted(map(str, set(out) - done)))
            raise ValueError(f"notebooks that wait for each other: {left}")
        done |= ready
    return out


@dataclass
class _LaneRun(Generic[Item, T]):
    """What the lanes of one :func:`run_in_lanes` share: the items left with what each waits
    for, the results, the errors (the first stops every lane from taking new items)."""

    waiting: dict[Item, set[Item]]
    work: Callable[[Item, Lane], T]
    on_done: Callable[[Item, T], None]
    keep: bool
    results: dict[Item, T] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    ended: set[Item] = field(default_factory=set)

    def take(self) -> Item | None:
        """The first item whose prerequisites have ended (waiting for one); None when none is
        left or an error stops the run."""
        with self.changed:
            while self.waiting and not self.errors:
                for item, wait in self.waiting.items():
                    if wait <= self.ended:
                        del self.waiting[item]
                        return item
                self.changed.wait()
            return None

    def failed(self, exc: BaseException) -> None:
        with self.changed:
            self.errors.append(exc)
            self.changed.notify_all()

    def lane_main(self, lane: Lane) -> None:
        try:
            while (item := self.take()) is not None:
                try:
                    result = self.work(item, lane)
                except BaseException as exc:
                    lane.done(failed=True)
                    self.failed(exc)
                    return
                lane.done(failed=False)
                with self.changed:
                    self.results[item] = result
                    self.ended.add(item)
                    self.changed.notify_all()
                self.on_done(item, result)
        except BaseException as exc:  # a reset or a shutdown that failed
            self.failed(exc)
            lane.close()
        finally:
            if not self.keep:
                lane.close()
