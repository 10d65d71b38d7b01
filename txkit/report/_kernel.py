"""The report's kernel manager: the notebooks' kernels get a few variables of their own
(:func:`txkit.report._run.kernel_environment`) without the report changing its own process's
environment, which two notebooks running at once, and the caller, share."""

from __future__ import annotations

import os
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from traitlets import Dict

__all__ = ["ReportKernelManager"]


class ReportKernelManager(AsyncKernelManager):
    """An :class:`AsyncKernelManager` that adds :attr:`extra_env` to its kernel's
    environment."""

    extra_env = Dict(config=True, help="variables set in the kernel's environment only")

    async def _async_pre_start_kernel(self, **kw: Any) -> Any:
        env = dict(kw.pop("env", None) or os.environ)
        env.update(self.extra_env)
        return await super()._async_pre_start_kernel(env=env, **kw)
