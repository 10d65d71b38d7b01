"""The export's progress bar: records so far, retries so far, and nothing printed over it.

:func:`export_bar` gives a tqdm bar (terminal or Jupyter) that counts records against the
service's totals and shows the retries so far in its postfix (``retries=3``). Per-retry detail
is logged at DEBUG only (``txkit -v``); while a bar is shown, txkit's log records are written
through tqdm (:func:`quiet_logging`), so a warning appears above the bar instead of breaking it.
Every text the bar shows goes through :func:`txkit._scrub.scrub`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from txkit._scrub import scrub
from txkit.config import progress_setting

__all__ = ["ExportBar", "export_bar", "interactive", "quiet_logging"]


def interactive() -> bool:
    """A terminal on stderr, or a Jupyter kernel (not merely an imported ipykernel)."""
    shell = sys.modules.get("IPython")
    if shell is not None:
        ip = shell.get_ipython()
        if ip is not None and type(ip).__name__ == "ZMQInteractiveShell":
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


def export_bar(progress: bool | None, client: Any) -> ExportBar | None:
    """An :class:`ExportBar` when asked, or by default when interactive.

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
    return ExportBar(client) if progress else None


@contextlib.contextmanager
def quiet_logging() -> Iterator[None]:
    """Write the ``txkit`` logger's records through tqdm while bars may be shown, so that a
    log line is printed above a bar rather than over it."""
    import logging

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
