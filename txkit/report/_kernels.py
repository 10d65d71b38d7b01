"""Where the report's kernels live: one private folder per run (``txkit-kernel-*``, mode 0700,
in the system temporary folder) for their connection files (each holds the key that signs its
kernel's messages) and Unix sockets, removed when the run ends; what a killed run left is
removed by the next. Also what the kernels are started with, and :func:`keep_kernels`."""

from __future__ import annotations

import ast
import contextlib
import contextvars
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from txkit import config
from txkit.errors import TxkitError
from txkit.report._lanes import KeptLanes, ReportKernelManager
from txkit.report._publish import OWNER_FILE, alive

log = logging.getLogger("txkit")

__all__ = [
    "KERNEL_ARGUMENTS",
    "clean_kernel_folders",
    "imports_code",
    "keep_kernels",
    "kept_lanes",
    "kernel_environment",
    "kernel_manager",
    "kernel_settings",
    "kernel_setup",
    "notebook_imports",
    "sockets_folder",
    "start_kernels",
]

_KERNELS = "txkit-kernel-"

# A Unix socket's path holds at most 107 bytes (``sockaddr_un.sun_path``); a kernel's sockets
# are ``<folder>/k<N>-<port index>``, and pytest's temporary folders alone reach 70 characters.
_SOCKET_PATH_MAX = 107
_SOCKET_NAME_MAX = len("/txkit-kernel-xxxxxxxx/k99-99")


def clean_kernel_folders(temp: Path | None = None) -> list[str]:
    """Remove this user's ``txkit-kernel-*`` folders whose report (its owner file) is no
    longer running, with the connection files and sockets in them; a line per folder.

    Args:
        temp: the temporary folder (default: :func:`tempfile.gettempdir`).
    """
    temp = Path(temp or tempfile.gettempdir())
    done: list[str] = []
    for folder in sorted(temp.glob(f"{_KERNELS}*")):
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        try:
            owner = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not (yet) a report's: its owner file is written right after mkdtemp
        if alive(owner):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        done.append(f"removed the kernel folder {folder} (left by a killed report)")
    return done


def _kernel_base() -> Path:
    """``/tmp`` when the temporary folder's path is too long for a Unix socket path inside it."""
    temp = Path(tempfile.gettempdir())
    if len(os.fsencode(temp)) + _SOCKET_NAME_MAX <= _SOCKET_PATH_MAX:
        return temp
    fallback = Path("/tmp")
    if fallback.is_dir() and os.access(fallback, os.W_OK | os.X_OK):
        return fallback
    raise TxkitError(
        f"the temporary folder {temp} is too long for the kernels' sockets (at most "
        f"{_SOCKET_PATH_MAX - _SOCKET_NAME_MAX} characters): set TMPDIR to a shorter folder"
    )


def _kernel_folder() -> Path:
    base = _kernel_base()
    for line in clean_kernel_folders(base):
        log.warning("report: %s", line)
    folder = Path(tempfile.mkdtemp(prefix=_KERNELS, dir=base))
    (folder / OWNER_FILE).write_text(str(os.getpid()))
    return folder


@contextlib.contextmanager
def sockets_folder() -> Iterator[Path]:
    """This run's private folder for its kernels' sockets and connection files: Unix sockets
    in a 0700 folder, not loopback TCP, which any local user could reach. Inside
    :func:`keep_kernels`, the kept lanes' folder, left for the next report."""
    kept = kept_lanes()
    if kept is not None:
        kept.folder = kept.folder or _kernel_folder()
        yield kept.folder
        return
    folder = _kernel_folder()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def kernel_environment(data: Path | None = None) -> dict[str, str]:
    """What the notebooks' kernels get beside this process's environment: no progress bars
    in executed pages, and this process's data folder (absolute), so that a kernel started in
    the notebooks' folder finds the same sandbox cache and store, not a second one under
    ``notebooks/data/``. Nothing of this process's environment is changed."""
    return {
        config.PROGRESS_VAR: "0",
        config.DATA_DIR_VAR: str((data or config.data_dir()).resolve()),
    }


#: txkit's settings a kept kernel is given at each reset (:func:`kernel_setup`), with its
#: working folder; the key, the service's address and a PDF statement's password are not
#: sent in code: a kernel started with others is started again.
_SET_AT_RESET = tuple(
    v
    for v in config.VARIABLES
    if v not in (config.SECRET_KEY_VAR, config.BASE_URL_VAR, config.PDF_PASSWORD_VAR)
)


def kernel_settings() -> tuple[object, ...]:
    """What a notebook's kernel must be started again for: this process's environment but
    the settings :func:`kernel_setup` gives a kept kernel (:func:`keep_kernels`) at each
    reset with its working folder."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k not in _SET_AT_RESET))


def kernel_setup(notebooks: Path) -> str:
    """Code that gives a kept kernel, after its reset, what a kernel started now would have:
    the working folder (the notebooks' folder) and txkit's settings of this process and of
    :func:`kernel_environment`, no other."""
    wanted = {k: os.environ[k] for k in _SET_AT_RESET if os.environ.get(k)}
    wanted.update(kernel_environment())
    return (
        "import os as _os\n"
        f"_os.chdir({str(notebooks.resolve())!r})\n"
        f"for _name in {_SET_AT_RESET!r}:\n"
        "    _os.environ.pop(_name, None)\n"
        f"_os.environ.update({wanted!r})\n"
        "del _os, _name\n"
    )


#: What a lane's kernel is started with: jupyter_client interrupts a kernel before shutting it
#: down, and the kernel may log "KeyboardInterrupt caught in kernel" at ERROR on the report's
#: stderr (a failing cell is reported through papermill instead); its history in memory, as
#: nbclient starts one (kernels sharing the user's history file, their prompt numbers restarted
#: at each reset, printed "Session/line number was not unique" into pages).
KERNEL_ARGUMENTS = ("--IPKernelApp.log_level=CRITICAL", "--HistoryManager.hist_file=:memory:")


def notebook_imports(sources: Sequence[Path]) -> list[str]:
    """The modules the notebooks' code cells import at their top level, in order, once each
    (a cell that is not Python, an IPython magic, is skipped)."""
    found: dict[str, None] = {}
    for source in sources:
        try:
            cells = json.loads(source.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue  # the notebook's own run says what is wrong with it
        for cell in cells:
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            text = cell.get("source", "")
            try:
                tree = ast.parse(text if isinstance(text, str) else "".join(text))
            except (SyntaxError, ValueError, TypeError):
                continue
            for node in tree.body:
                if isinstance(node, ast.Import):
                    found.update(dict.fromkeys(alias.name for alias in node.names))
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found[node.module] = None
    return list(found)


def imports_code(sources: Sequence[Path]) -> str:
    """Code that imports :func:`notebook_imports` in a kernel started ahead of its notebooks,
    as a lane's later notebooks find them imported; a module that fails to import is left for
    the notebook's own cell to report."""
    return (
        "import importlib as _importlib\n"
        f"for _name in {notebook_imports(sources)!r}:\n"
        "    try:\n"
        "        _importlib.import_module(_name)\n"
        "    except Exception:\n"
        "        pass\n"
        "del _importlib\n"
    )


def start_kernels(kept: KeptLanes, notebooks: Path, sources: Sequence[Path], count: int) -> None:
    """Start ``count`` lanes' kernels of ``kept`` now, each on its lane's thread, in the
    notebooks' folder and with their imports: the report syncs meanwhile."""
    if kept.folder is None:
        kept.folder = _kernel_folder()
    folder = kept.folder
    settings = kernel_settings()
    code = kernel_setup(notebooks) + imports_code(sources)
    for lane, driver in kept.take(count, lambda index: kernel_manager(folder, index)):
        driver.submit(
            lambda lane=lane: lane.start(settings, code, cwd=notebooks, arguments=KERNEL_ARGUMENTS)
        )


def kernel_manager(sockets: Path, index: int) -> ReportKernelManager:
    """Lane ``index``'s kernel manager: Unix sockets in the private folder (short names, for
    the socket path's limit), its connection file there, and :func:`kernel_environment`."""
    return ReportKernelManager(
        kernel_name="python3",
        transport="ipc",
        ip=str(sockets / f"k{index}"),
        connection_file=str(sockets / f"lane{index}.json"),
        extra_env=kernel_environment(),
    )


_KEPT: contextvars.ContextVar[KeptLanes | None] = contextvars.ContextVar(
    "txkit_report_kept_lanes", default=None
)


def kept_lanes() -> KeptLanes | None:
    """The lanes :func:`keep_kernels` keeps in this context, if any."""
    return _KEPT.get()


@contextlib.contextmanager
def keep_kernels() -> Iterator[KeptLanes]:
    """Reports run inside this block, in this thread, keep the notebooks' kernels from one to
    the next (each reset between two notebooks as within a report; see
    :mod:`txkit.report._lanes`) and shut them down at its end: two kernel starts and their
    imports saved per report after the first (docs/benchmarks.md).

    A kept kernel is given the next report's working folder and txkit's settings at its
    reset (:func:`kernel_setup`); one started with another environment besides those
    (:func:`kernel_settings`) is started again.
    """
    kept = KeptLanes()
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)
        kept.close()
