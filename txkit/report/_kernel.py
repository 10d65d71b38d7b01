"""The report's kernel manager: the notebooks' kernels get a few variables of their own
(:func:`txkit.report._run.kernel_environment`) without the report changing its own process's
environment, which two notebooks running at once, and the caller, share. It keeps the clients
it made, so that a lane (:mod:`txkit.report._lanes`) closes their channels between notebooks."""

from __future__ import annotations

import os
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from traitlets import Dict

__all__ = ["ReportKernelManager"]


class ReportKernelManager(AsyncKernelManager):
    """An :class:`AsyncKernelManager` that adds :attr:`extra_env` to its kernel's
    environment and remembers its clients."""

    extra_env = Dict(config=True, help="variables set in the kernel's environment only")

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
