"""The export's progress bar: records so far, retries so far, and nothing printed over it.

:func:`export_bar` gives a tqdm bar on a terminal (a plain-text line in Jupyter, see
:class:`JupyterLine`) that counts records against the service's totals and shows the retries
so far (``retries=3``). Per-retry detail is logged at DEBUG only (``txkit -v``); while a bar is
shown, txkit's log records are written through tqdm (:func:`quiet_logging`), so a warning
appears above the bar instead of breaking it. Every text the bar shows goes through
:func:`txkit._scrub.scrub`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from txkit._scrub import scrub
from txkit.config import progress_setting

__all__ = ["ExportBar", "JupyterLine", "export_bar", "interactive", "quiet_logging"]


def _kernel_shell() -> Any:
    """None: a terminal, a script, or merely an imported ipykernel."""
    shell = sys.modules.get("IPython")
    if shell is not None:
        ip = shell.get_ipython()
        if ip is not None and type(ip).__name__ == "ZMQInteractiveShell":
            return ip
    return None


def interactive() -> bool:
    """A terminal on stderr, or a Jupyter kernel (not merely an imported ipykernel)."""
    if _kernel_shell() is not None:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class ExportBar:
    """A tqdm bar in records, with the retries of ``client`` in its postfix.

    It has the small tqdm interface :func:`txkit.fetch.pages.fetch_query` uses: ``total`` (read and
    set), ``update(n)``, ``refresh()`` and ``close()``.
    """

    def __init__(self, client: Any, desc: str = "txkit export") -> None:
        from tqdm.auto import tqdm

        self._client = client
        self._retries = -1
        self._bar = tqdm(total=0, unit="rec", unit_scale=True, desc=scrub(desc), leave=False)
        self._postfix()

    def _postfix(self) -> None:
        retries = getattr(self._client, "retries", 0)
        if retries != self._retries:
            self._retries = retries
            self._bar.set_postfix_str(f"retries={retries:,}", refresh=False)

    def describe(self, text: str) -> None:
        """Replace the bar's description (what the export is doing)."""
        self._bar.set_description(scrub(text), refresh=False)

    @property
    def total(self) -> int:
        return int(self._bar.total or 0)

    @total.setter
    def total(self, value: int) -> None:
        self._bar.total = value

    def update(self, n: int) -> None:
        self._postfix()
        self._bar.update(n)

    def refresh(self) -> None:
        self._postfix()
        self._bar.refresh()

    def close(self) -> None:
        self._bar.close()


class _CellOutputs:
    """Which cells (execute requests) have shown something other than txkit's progress line:
    displays seen through the kernel's display hook, text through the hooks of its
    ``sys.stdout`` and ``sys.stderr`` (prints, warnings, log records). A line may be cleared
    only from a cell that showed nothing else, since clearing clears the whole cell. Watched
    from the first ``import txkit`` in a kernel: what a cell showed before that, in the same
    cell, is unknown.
    """

    def __init__(self, ip: Any) -> None:
        self._ip = ip
        self.own: set[str] = set()  # display ids of progress lines
        self.shown: set[str] = set()  # execute requests (msg ids) that showed something else
        ip.display_pub.register_hook(self)
        for stream in (sys.stdout, sys.stderr):
            self._watch(stream)

    def _watch(self, stream: Any) -> None:
        # The kernel's text streams send from their own thread, whose hooks are its own
        # (IPython rewraps ``write`` at every cell, so a wrapper would not last).
        pub = getattr(stream, "pub_thread", None)
        if pub is not None and hasattr(stream, "register_hook"):
            pub.schedule(lambda: stream.register_hook(self))

    def _cell(self) -> str:
        return str((self._ip.display_pub.parent_header or {}).get("msg_id", ""))

    def __call__(self, msg: dict[str, Any]) -> dict[str, Any]:
        transient = msg.get("content", {}).get("transient") or {}
        if transient.get("display_id") not in self.own and msg.get("msg_type") != "clear_output":
            parent = msg.get("parent_header", {}).get("msg_id")
            if parent:
                self.shown.add(str(parent))
        return msg

    def quiet(self) -> bool:
        """The current cell has shown nothing but progress lines."""
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # what the cell wrote so far, sent (and seen) first
        cell = self._cell()
        return bool(cell) and cell not in self.shown


_SEEN: list[_CellOutputs] = []


def _cell_outputs(ip: Any) -> _CellOutputs:
    if not _SEEN or _SEEN[0]._ip is not ip:
        _SEEN[:] = [_CellOutputs(ip)]
    return _SEEN[0]


class JupyterLine:
    """The export's progress in a Jupyter kernel: one plain-text line (no widget, no
    JavaScript), updated in place while records arrive and removed at the end, so a saved
    notebook holds no progress output and no widget state.

    The line is removed by clearing the cell's output, which happens only when the cell has
    shown nothing else (the notebooks load first in a cell); otherwise its text is emptied
    (an empty output, invisible), so that a print, a warning or a log record stays readable.
    """

    #: Seconds between two updates of the line (each is a message to the browser).
    EVERY = 0.5
    #: Records expected, as the export learns the service's totals (as :class:`ExportBar`).
    total: int = 0

    def __init__(self, client: Any, ip: Any, desc: str = "txkit export") -> None:
        from IPython.display import DisplayHandle

        self._client, self._desc = client, scrub(desc)
        self._last = 0.0
        self._done = 0
        self.total = 0
        self._outputs = _cell_outputs(ip)
        self._handle: Any = DisplayHandle()
        self._outputs.own.add(self._handle.display_id)
        self._handle.display({"text/plain": self._text()}, raw=True)

    def _text(self) -> str:
        retries = getattr(self._client, "retries", 0)
        of = f" of {self.total:,}" if self.total else ""
        return f"{self._desc}: {self._done:,}{of} records, retries={retries:,}"

    def _show(self) -> None:
        # Updated from the thread that runs the cell only: the kernel sends a display from
        # another thread without the cell's header, and the browser would not place it.
        now = time.monotonic()
        if self._handle is None or threading.current_thread() is not threading.main_thread():
            return
        if now - self._last >= self.EVERY:
            self._last = now
            self._handle.update({"text/plain": self._text()}, raw=True)

    def describe(self, text: str) -> None:
        """Replace the line's description (what the export is doing)."""
        self._desc = scrub(text)

    def update(self, n: int) -> None:
        self._done += n
        self._show()

    def refresh(self) -> None:
        self._show()

    def close(self) -> None:
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        on_main = threading.current_thread() is threading.main_thread()
        if on_main and self._outputs.quiet():
            from IPython.display import clear_output

            clear_output()
        else:
            handle.update({"text/plain": ""}, raw=True)


def export_bar(progress: bool | None, client: Any) -> ExportBar | JupyterLine | None:
    """An :class:`ExportBar` when asked, or by default when interactive; in a Jupyter kernel,
    a :class:`JupyterLine` (plain text, gone when the export ends: nothing of it is saved).

    Args:
        progress: True or False to force; None: on a terminal or in Jupyter, unless
            ``TXKIT_PROGRESS=0`` (``1`` forces it on).
        client: the :class:`~txkit.fetch.client.Client` whose retries the bar shows.

    Returns:
        The bar, or None.
    """
    if progress is None:
        forced = progress_setting()
        progress = interactive() if forced is None else forced
    if not progress:
        return None
    ip = _kernel_shell()
    if ip is not None:
        return JupyterLine(client, ip)
    return ExportBar(client)


@contextlib.contextmanager
def quiet_logging() -> Iterator[None]:
    """Write the ``txkit`` logger's records through tqdm while bars may be shown, so that a
    log line is printed above a bar rather than over it."""

    from tqdm.contrib.logging import logging_redirect_tqdm

    root = logging.getLogger()
    before = list(root.handlers)
    with logging_redirect_tqdm(loggers=[root]):
        # tqdm before 4.68 (which Daft, a development dependency, requires) gives its handler
        # the console handler's formatter but not its filters, so the key's scrubber would
        # be lost while a bar shows: carry them over.
        console = [h for h in before if h not in root.handlers]
        for handler in root.handlers:
            if handler not in before and console:
                for kept in console[0].filters:
                    if kept not in handler.filters:
                        handler.addFilter(kept)
                handler.setLevel(console[0].level)
        yield


if _kernel_shell() is not None:  # watched from the first import of txkit in a kernel
    _cell_outputs(_kernel_shell())
