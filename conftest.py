"""Run-wide fixtures and hooks of the whole suite (``tests/`` and the notebooks under nbval).

What lives here, and why:

* ``ledgers`` and ``sandboxes`` (session scope): generated ledgers cached by their settings
  (the 60,000-record default costs 2.4 s of CPU a time; with pytest-xdist generated once a run
  and loaded by the other workers), and running sandboxes over them,
  one per setting, shared by every module that asks for the same one. A test that changes a
  shared sandbox's faults or data takes it through ``sandboxes.clean(...)`` (or a module's
  ``box`` fixture built on it): faults off and data restored before and after the test.
* ``session_report``: one ``txkit report --month 2026-10`` on the embedded sandbox, run once
  and read by every test that only reads a report. It starts in the background as soon as the
  collection shows a selected test will read it. With pytest-xdist each worker is its own
  session: the report is built once, under a file lock in the run's shared temporary folder,
  and both workers read it.
* ``hostile_server``: scripted HTTP servers for one test (:mod:`tests.hostile`).
* ``s3`` / ``aws``: moto's S3 server as a subprocess, started once per process at the first
  test that asks for it (each store under its own prefix of one bucket), and its AWS
  variables set for one test.
* The cyclic garbage collector runs every 10,000 allocations instead of 700: a worker keeps
  large ledgers and frames for the whole run, and the collector went over them again and
  again.
* ``--reverse`` / ``--shuffle SEED``: run the tests in reverse or random order (modules and the
  tests within them; a notebook's cells keep their order), to show that no test depends on
  another having run first.
* Markers (registered in ``pyproject.toml``): ``slow``, ``report``, ``s3``, ``serial``. The
  default run (``pytest``) leaves out ``slow``; ``make test`` runs everything: the parallel
  pass (``-n 4``), then the ``serial`` tests without that load (two at a time). With
  pytest-xdist a notebook's cells go to one worker together, in order, for its one kernel
  (``pytest_xdist_make_scheduler``).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import random
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.factories import LEDGERS, REPORT_MONTH, Ledgers, SessionReport

ROOT = Path(__file__).resolve().parent
NOTEBOOKS = ROOT / "notebooks"


# A worker keeps ledgers, sandboxes and frames of millions of objects for the whole run, and
# Python's cyclic collector, run every 700 allocations by default, went over them again and
# again: parsing a ledger's records took 1.6 s of CPU against 0.9 s (docs/benchmarks.md).
gc.set_threshold(10_000, 10, 10)


# -- order -------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("txkit")
    group.addoption(
        "--reverse",
        action="store_true",
        help="run the modules, and the tests in each, in reverse order (a notebook's cells "
        "keep theirs): shows that no test depends on one that ran before it",
    )
    group.addoption(
        "--shuffle",
        type=int,
        metavar="SEED",
        help="run the modules, and the tests in each, in a random order drawn from SEED",
    )


def _is_notebook_cell(item: pytest.Item) -> bool:
    return item.path.suffix == ".ipynb"


def _reorder(items: list[pytest.Item], rng: random.Random | None) -> list[pytest.Item]:
    """Items by module, modules and the items in each reversed (``rng`` None) or shuffled."""
    modules: dict[Path, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)
    groups = list(modules.values())
    if rng is None:
        groups.reverse()
    else:
        rng.shuffle(groups)
    ordered: list[pytest.Item] = []
    for group in groups:
        if not _is_notebook_cell(group[0]):  # a notebook's cells run in order, in one kernel
            if rng is None:
                group.reverse()
            else:
                rng.shuffle(group)
        ordered.extend(group)
    return ordered


def pytest_itemcollected(item: pytest.Item) -> None:
    if _is_notebook_cell(item):
        item.add_marker(pytest.mark.slow)
    elif "session_report" in getattr(item, "fixturenames", ()):
        # A test that reads the shared report is a report test, whatever it says.
        item.add_marker(pytest.mark.report)
        item.add_marker(pytest.mark.slow)
    elif item.get_closest_marker("report") or item.get_closest_marker("s3"):
        item.add_marker(pytest.mark.slow)


#: Modules whose tests share one long fixture: all on one worker. The register's months are
#: built under a file lock (the other worker sat idle on it for 150 s before); the others' module
#: fixtures were built once per worker, twice in a run: the privacy run (17 s of CPU), the
#: register's carry-over reports (7 s), the retention's daily syncs (15 s), the readers' store,
#: the orders' reports' folder.
_ONE_WORKER = frozenset(
    {
        "tests/test_register_months.py",
        "tests/test_privacy.py",
        "tests/test_register_carry.py",
        "tests/test_store_retention.py",
        "tests/test_store_readers.py",
        "tests/test_report_orders.py",
        # 05's JupyterLab-like runs (nbclient), built once, not per worker
        "tests/test_jupyter.py",
        # one project and its first report, each test changing one input after the one before
        "tests/test_report_cache.py",
    }
)
#: Modules that share one session fixture, on one worker together: the wheel installed in a
#: fresh environment (the installed product's tests and the tutorial's run).
_TOGETHER = {"tests/test_installed.py": "installed", "tests/test_tutorial.py": "installed"}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Tests one by one to whichever worker is free, except a notebook's cells: all on one
    worker, in order (they share one kernel). (pytest-xdist's own loadgroup cannot do it
    under pytest 9.2: it renames items through ``item._nodeid``, which pytest no longer
    reads, so the cells were spread over both workers.)"""
    from xdist.scheduler import LoadScopeScheduling

    class NotebooksWhole(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path in _TOGETHER:
                return _TOGETHER[path]
            return path if path.endswith(".ipynb") or path in _ONE_WORKER else nodeid

    return NotebooksWhole(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shuffle = config.getoption("--shuffle")
    if config.getoption("--reverse"):
        items[:] = _reorder(items, None)
    elif shuffle is not None:
        items[:] = _reorder(items, random.Random(shuffle))


# -- ledgers and sandboxes ----------------------------------------------------------------------


@pytest.hookimpl(trylast=True)  # after the tmpdir plugin's own
def pytest_configure(config: pytest.Config) -> None:
    """One cache folder for the whole run (every xdist worker, report and kernel), whatever a
    developer's ``TXKIT_CACHE_DIR``: the sandbox's ledger is generated once a run and read by
    the other processes, and no test reads a file another run left."""
    from tests.factories import CACHE_DIR_VAR

    os.environ[CACHE_DIR_VAR] = str(_shared_root(config._tmp_path_factory) / "txkit-cache")  # type: ignore[attr-defined]


@pytest.fixture(scope="session", autouse=True)
def _kernels_kept_by_the_process() -> Iterator[None]:
    """Reports run in this process keep their notebooks' kernels from one test to the next
    (:func:`txkit.report.keep_kernels`): each reset as between two notebooks of a report and
    given the next report's folder and settings, instead of two kernel starts and their
    imports per report. A test that keeps its own (a module's reports) nests inside."""
    from txkit.report import keep_kernels

    with keep_kernels():
        yield


@pytest.fixture(scope="session", autouse=True)
def _ledgers_shared_by_workers(tmp_path_factory: pytest.TempPathFactory) -> None:
    """With pytest-xdist, each ledger generated once a run, not once per worker (see
    :class:`tests.factories.Ledgers`)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        LEDGERS.shared = _shared_root(tmp_path_factory) / "ledgers"


@pytest.fixture(scope="session")
def ledgers() -> Ledgers:
    """``ledgers(seed=5, records=6_000)``: the ledger of those settings, generated once a run
    (shared: never change it)."""
    return LEDGERS


class Sandboxes:
    """Running sandboxes, one per (ledger settings, secret key), started once a run.

    ``get`` hands out the sandbox as it is (for tests that only read); ``clean`` is a context
    manager that turns its faults off and restores its data before and after the block.
    """

    def __init__(self, ledgers: Ledgers, stack: contextlib.ExitStack) -> None:
        self._ledgers = ledgers
        self._stack = stack
        self._running: dict[tuple[tuple[str, Any], ...], Any] = {}

    def get(self, *, secret_key: str | None = None, **settings: Any) -> Any:
        from txkit.sandbox import Sandbox

        key = (*sorted(settings.items()), ("secret_key", secret_key))
        if key not in self._running:
            box = Sandbox(ledger=self._ledgers(**settings), secret_key=secret_key)
            self._running[key] = self._stack.enter_context(box)
        return self._running[key]

    @contextlib.contextmanager
    def clean(self, *, secret_key: str | None = None, **settings: Any) -> Iterator[Any]:
        box = self.get(secret_key=secret_key, **settings)
        restore(box)
        try:
            yield box
        finally:
            restore(box)


def restore(box: Any) -> None:
    """A shared sandbox as new: no faults, the generated data, the fault sequence restarted."""
    box.faults = None
    box.reset()


@pytest.fixture(scope="session")
def sandboxes(ledgers: Ledgers) -> Iterator[Sandboxes]:
    """Shared running sandboxes (see :class:`Sandboxes`); all stop at the end of the run."""
    with contextlib.ExitStack() as stack:
        yield Sandboxes(ledgers, stack)


# -- hostile servers ----------------------------------------------------------------------------


@pytest.fixture
def hostile_server() -> Iterator[Callable[..., Any]]:
    """Start :class:`tests.hostile.HostileServer` objects for one test; all stop after it."""
    from tests.hostile import HostileServer

    servers: list[HostileServer] = []

    def start(script: Callable[..., Any]) -> HostileServer:
        server = HostileServer(script).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


# -- S3 (moto's standalone server) -------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: ``python -m moto.server``, except that the list of moto's services is read once: moto
#: lists its package folder on every request to match the Host header (a fifth of the
#: server's CPU), and werkzeug's line per request goes nowhere (stderr is discarded).
_MOTO_SERVER = """
import logging, sys
import moto.backends
from moto.server import main
listed = tuple(moto.backends.list_of_moto_modules())
moto.backends.list_of_moto_modules = lambda: listed
logging.getLogger("werkzeug").setLevel(logging.WARNING)
main(sys.argv[1:])
"""


@pytest.fixture(scope="session")
def s3() -> Iterator[dict[str, str]]:
    """moto's S3 server as a subprocess on a free loopback port, with the bucket ``txkit``;
    yields the AWS variables. One per process (each start cost about 1.5 s of CPU): every
    test keeps its store under a prefix of its own."""
    import time

    import httpx

    from txkit.fetch.client import tls_context

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", _MOTO_SERVER, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{endpoint}/moto-api/", timeout=1, verify=tls_context())
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        env = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint,
            # Nothing beyond loopback: the SDK never asks for instance metadata.
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket="txkit")
        yield env
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def aws(s3: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The S3 server's AWS variables, set in this process's environment for one test."""
    for name, value in s3.items():
        monkeypatch.setenv(name, value)
    return s3


# -- the shared report ----------------------------------------------------------------------------


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder that every xdist worker sees (each has one of its own
    below it); the basetemp itself without xdist."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _build_session_report(root: Path, env: dict[str, str]) -> None:
    """Run the shared report into ``root`` unless it is there (under a lock: one builder)."""
    workdir, done = root / "session-report", root / "session-report.json"
    with (root / "session-report.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.exists():
            return
        shutil.rmtree(workdir, ignore_errors=True)  # a half-built one of a crashed worker
        workdir.mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-m", "txkit.cli", "report", "--month", REPORT_MONTH,
             "--notebooks", str(NOTEBOOKS)],
            cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        _running.append(proc)
        try:
            stdout, stderr = proc.communicate(timeout=900)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        outcome = {"returncode": proc.returncode, "stdout": stdout, "stderr": stderr}
        tmp = done.with_suffix(".tmp")
        tmp.write_text(json.dumps(outcome))
        os.replace(tmp, done)


#: The shared report's process while it runs (killed if the run ends first).
_running: list[subprocess.Popen[str]] = []
_builder: list[threading.Thread] = []


@pytest.hookimpl(trylast=True)  # after the deselection by markers
def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the shared report in the background as soon as a selected test will read it (on
    the first xdist worker only), so no worker sits idle waiting for it later."""
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0" or session.config.option.collectonly:
        return
    if not any("session_report" in getattr(i, "fixturenames", ()) for i in session.items):
        return
    from tests.factories import cli_env

    root = _shared_root(session.config._tmp_path_factory)  # type: ignore[attr-defined]
    # The environment is taken now, before any test changes this process's.
    builder = threading.Thread(
        target=_build_session_report, args=(root, cli_env()), name="session-report", daemon=True
    )
    builder.start()
    _builder.append(builder)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """An interrupted run kills the shared report's build; otherwise this worker waits for it:
    the other worker may still need it (killed here, it failed the other's tests when this
    worker's own tests ended first). The controller of an xdist run removes the workers'
    pickled ledgers (about 0.5 GB a run; pytest keeps its last three temporary folders)."""
    if session.config.pluginmanager.has_plugin("dsession"):  # the controller of xdist workers
        factory = session.config._tmp_path_factory  # type: ignore[attr-defined]
        shutil.rmtree(factory.getbasetemp() / "ledgers", ignore_errors=True)
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        for proc in _running:
            if proc.poll() is None:
                proc.kill()
        return
    for builder in _builder:
        builder.join()


@pytest.fixture(scope="session")
def session_report(tmp_path_factory: pytest.TempPathFactory) -> SessionReport:
    """The one report of the run: ``txkit report --month 2026-10`` in a fresh working folder,
    as an analyst runs it (a subprocess: its stderr holds the kernels' output too).

    Tests read it and must not change anything in it; a test that needs to change a report
    runs its own. Built once per run under a file lock (pytest-xdist workers share it),
    started in the background when the collection shows a test will need it.
    """
    from tests.factories import cli_env

    root = _shared_root(tmp_path_factory)
    for builder in _builder:
        builder.join()
    _build_session_report(root, cli_env())  # waits for, or does, the build
    outcome = json.loads((root / "session-report.json").read_text())
    report = SessionReport(root / "session-report", **outcome)
    assert report.returncode == 0, report.stderr
    return report
