"""The report's lanes: one kernel runs several notebooks in turn, each as in a kernel of its own.

Real kernels (ipykernel over Unix sockets, as the report starts them) run small notebooks
through papermill, as :func:`txkit.report._execute.run_notebook` does.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import papermill
import pytest

from txkit.report._kernels import _kernel_folder
from txkit.report._kernels import kernel_manager as _kernel_manager
from txkit.report._lanes import KeptLanes, Lane, run_in_lanes

pytestmark = pytest.mark.slow


@pytest.fixture
def sockets() -> Iterator[Path]:
    folder = _kernel_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def notebook(folder: Path, name: str, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "py"}
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def run(source: Path, lane: Lane, settings: object = None) -> dict[str, object]:
    """Run ``source`` in ``lane``'s kernel (started with ``settings``); the JSON its last cell
    printed, and when."""
    began = time.monotonic()
    target = source.with_suffix(".out.ipynb")
    papermill.execute_notebook(
        str(source), str(target), progress_bar=False, kernel_name="python3",
        resources={"metadata": {"path": str(source.parent)}}, km=lane.manager(settings),
    )  # fmt: skip
    executed = json.loads(target.read_text())
    printed = [o for o in executed["cells"][-1]["outputs"] if o["output_type"] == "stream"]
    seen = json.loads("".join(printed[0]["text"])) if printed else {}
    counts = [c["execution_count"] for c in executed["cells"]]
    return {**seen, "counts": counts, "began": began, "ended": time.monotonic()}


REPORT = """\
import json, os, sys
print(json.dumps({
    "pid": os.getpid(),
    "leaked": sorted(n for n in ("planted", "figure") if n in globals()),
    "figures": len(sys.modules["matplotlib.pyplot"].get_fignums())
    if "matplotlib.pyplot" in sys.modules else 0,
}))
"""

PLANT = """\
import matplotlib
matplotlib.use("agg")
import matplotlib.pyplot as plt
planted = 1
figure = plt.figure()
"""

TABLE_ID = """\
import polars as pl
from txkit.notebook.tables import format_table
table_id = format_table(pl.DataFrame({"a": [1]}))._id
"""


def test_two_lanes_start_two_kernels_for_four_notebooks(tmp_path: Path, sockets: Path) -> None:
    books = [notebook(tmp_path, f"n{i}", PLANT, REPORT) for i in range(4)]
    results, lanes = run_in_lanes([books], run, lambda i: _kernel_manager(sockets, i), lanes=2)
    assert [lane.kernels_started for lane in lanes] == [1, 1]
    assert len({results[b]["pid"] for b in books}) == 2
    for book in books:  # each notebook sees only its own names and figure
        assert results[book]["leaked"] == ["figure", "planted"]
        assert results[book]["figures"] == 1
        assert results[book]["counts"] == [1, 2]


def test_the_next_notebook_in_a_lane_starts_clean(tmp_path: Path, sockets: Path) -> None:
    first = notebook(tmp_path, "first", PLANT, TABLE_ID, "table_id")
    report_table = REPORT.replace("json.dumps({", "json.dumps({'table': table_id, ")
    second = notebook(tmp_path, "second", TABLE_ID, report_table)
    results, (lane,) = run_in_lanes(
        [[first, second]], run, lambda i: _kernel_manager(sockets, i), lanes=1
    )
    assert lane.kernels_started == 1
    seen = results[second]
    assert seen["leaked"] == [] and seen["figures"] == 0
    assert seen["counts"] == [1, 2]  # numbered from 1, as in a kernel of its own
    assert seen["table"] == "txkit-table-1"  # txkit's per-notebook state starts again


def test_a_wave_begins_when_the_one_before_has_ended(tmp_path: Path, sockets: Path) -> None:
    early = [notebook(tmp_path, f"e{i}", "import time; time.sleep(0.3 * " + str(i) + ")", REPORT)
             for i in range(3)]  # fmt: skip
    late = notebook(tmp_path, "late", REPORT)
    results, lanes = run_in_lanes(
        [early, [late]], run, lambda i: _kernel_manager(sockets, i), lanes=2
    )
    assert results[late]["began"] >= max(results[b]["ended"] for b in early)
    assert sum(lane.kernels_started for lane in lanes) == 2


def test_a_notebook_that_names_others_begins_once_they_have_run() -> None:
    """The trends wait for two pages, not for all: a free lane takes them as soon as those have
    run, before the pages nobody waits for (no kernel: the work only records its times)."""
    times: dict[str, list[float]] = {}
    length = {"needed": 0.3, "other": 0.6, "waits": 0.05, "rest": 0.05, "last": 0.05}

    def work(item: str, _lane: Lane) -> str:
        began = time.monotonic()
        time.sleep(length[item])
        times[item] = [began, time.monotonic()]
        return item

    def no_kernel(_index: int) -> Any:
        raise AssertionError("the work starts no kernel")

    results, _ = run_in_lanes(
        [["waits", "needed", "other", "rest"], ["last"]], work, no_kernel, lanes=2,
        needs={"waits": ["needed", "not in this run"]},
    )  # fmt: skip
    assert set(results) == set(length)
    assert times["waits"][0] >= times["needed"][1]  # after the page it names...
    assert times["waits"][0] < times["other"][1] and times["waits"][0] < times["rest"][0]
    assert times["last"][0] >= max(end for name, (_, end) in times.items() if name != "last")
    with pytest.raises(ValueError, match="wait for each other: a, b"):
        run_in_lanes([["a", "b"]], work, no_kernel, lanes=2, needs={"a": ["b"], "b": ["a"]})


def test_a_kernel_that_died_after_its_notebook_is_replaced(tmp_path: Path, sockets: Path) -> None:
    dying = notebook(
        tmp_path, "dying", "import os, threading; threading.Timer(0.2, os._exit, (0,)).start()"
    )
    after = notebook(tmp_path, "after", "import time; time.sleep(0)", REPORT)

    def slow_run(source: Path, lane: Lane) -> dict[str, object]:
        done = run(source, lane)
        time.sleep(1.0)  # the kernel exits meanwhile
        return done

    results, (lane,) = run_in_lanes(
        [[dying, after]], slow_run, lambda i: _kernel_manager(sockets, i), lanes=1
    )
    assert lane.kernels_started == 2
    assert results[after]["counts"] == [1, 2]


def test_a_failed_notebook_stops_the_lanes_and_their_kernels(tmp_path: Path, sockets: Path) -> None:
    failing = notebook(tmp_path, "a_failing", "raise RuntimeError('planted failure')")
    others = [notebook(tmp_path, f"b{i}", REPORT) for i in range(4)]
    started: list[Path] = []
    managers = []
    failed = threading.Event()

    def tracked(source: Path, lane: Lane) -> dict[str, object]:
        started.append(source)
        if source != failing:
            # The other lane's notebook finishes after the failure, whatever the load: with a
            # fixed sleep instead, a slow kernel start let it take a third (seen at load 19).
            assert failed.wait(120)
            return run(source, lane)
        try:
            return run(source, lane)
        finally:
            failed.set()

    def make(i: int):
        managers.append(_kernel_manager(sockets, i))
        return managers[-1]

    with pytest.raises(papermill.PapermillExecutionError, match="planted failure"):
        run_in_lanes([[failing, *others], [notebook(tmp_path, "z", REPORT)]], tracked, make,
                     lanes=2)  # fmt: skip
    # The failing notebook and at most the one the other lane had taken: none after the failure.
    names = {p.name for p in started}
    assert "a_failing.ipynb" in names and names <= {"a_failing.ipynb", "b0.ipynb"}, names
    assert all(not m.has_kernel for m in managers)  # every kernel shut down


def test_kept_lanes_keep_their_kernel_across_runs_until_its_settings_change(
    tmp_path: Path, sockets: Path
) -> None:
    books = [notebook(tmp_path, f"k{i}", PLANT, REPORT) for i in range(3)]
    managers = []
    threads: list[int] = []

    def make(i: int):
        managers.append(_kernel_manager(sockets, i))
        return managers[-1]

    def runner(settings: str):
        def go(source: Path, lane: Lane) -> dict[str, object]:
            threads.append(threading.get_ident())
            return run(source, lane, settings)

        return go

    kept = KeptLanes()
    try:
        seen = [run_in_lanes([[book]], runner(settings), make, lanes=1, kept=kept)
                for book, settings in zip(books, ("a", "a", "b"), strict=True)]  # fmt: skip
    finally:
        kept.close()
    first, second, third = (results[book] for (results, _), book in zip(seen, books, strict=True))
    assert second["pid"] == first["pid"]  # the next run's notebook, in the same kernel
    assert second["leaked"] == ["figure", "planted"] and second["figures"] == 1  # its own only
    assert second["counts"] == [1, 2]
    assert third["pid"] != first["pid"]  # started again: other settings
    (lane,) = seen[-1][1]
    assert lane.kernels_started == 2
    assert len(set(threads)) == 1  # one thread drives the lane's kernel in every run
    assert managers and all(not m.has_kernel for m in managers)  # closed: every kernel down


WHERE = """\
import json, os
print(json.dumps({
    "pid": os.getpid(),
    "cwd": os.getcwd(),
    "txkit": {k: v for k, v in os.environ.items() if k.startswith("TXKIT_")},
}))
"""


def test_a_kept_kernel_is_given_the_next_reports_folder_and_settings(
    tmp_path: Path, sockets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a kernel started for that report would have them: its notebooks' folder as the
    working folder, txkit's settings of the process (and the report's data folder), no other;
    the key and any other variable still start a new kernel."""
    from txkit.report._kernels import kernel_settings, kernel_setup

    first, second = (tmp_path / "one", tmp_path / "two")
    first.mkdir()
    second.mkdir()
    books = [notebook(first, "where", WHERE), notebook(second, "where", WHERE)]

    def runner(source: Path, lane: Lane) -> dict[str, object]:
        target = source.with_suffix(".out.ipynb")
        papermill.execute_notebook(
            str(source), str(target), progress_bar=False, kernel_name="python3",
            resources={"metadata": {"path": str(source.parent)}},
            km=lane.manager(kernel_settings(), kernel_setup(source.parent)),
        )  # fmt: skip
        out = json.loads(target.read_text())["cells"][-1]["outputs"][0]["text"]
        return json.loads("".join(out))

    kept = KeptLanes()

    def report(book: Path) -> tuple[dict[str, object], int]:
        results, (lane,) = run_in_lanes(
            [[book]], runner, lambda i: _kernel_manager(sockets, i), lanes=1, kept=kept
        )
        return results[book], lane.kernels_started

    try:
        monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data-one"))
        monkeypatch.setenv("TXKIT_ORDERS_COLUMNS", "shopify")
        one, _ = report(books[0])
        monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data-two"))
        monkeypatch.delenv("TXKIT_ORDERS_COLUMNS")
        two, started = report(books[1])
        monkeypatch.setenv("TXKIT_SECRET_KEY", "sk_test_other")
        three, _ = report(books[0])
    finally:
        kept.close()
    assert one["cwd"] == str(first.resolve()) and two["cwd"] == str(second.resolve())
    assert two["pid"] == one["pid"]  # the same kernel, given the second report's settings
    assert one["txkit"]["TXKIT_DATA_DIR"] == str((tmp_path / "data-one").resolve())
    assert one["txkit"]["TXKIT_ORDERS_COLUMNS"] == "shopify"
    assert two["txkit"]["TXKIT_DATA_DIR"] == str((tmp_path / "data-two").resolve())
    assert "TXKIT_ORDERS_COLUMNS" not in two["txkit"] and two["txkit"]["TXKIT_PROGRESS"] == "0"
    assert three["pid"] != one["pid"]  # another key: a new kernel, started with it
    assert three["txkit"]["TXKIT_SECRET_KEY"] == "sk_test_other"
    assert started == 1


def test_a_lane_client_is_ready_with_both_channels_and_says_when_its_kernel_died(
    sockets: Path,
) -> None:
    from jupyter_core.utils import run_sync

    from txkit.report._lanes import ReportKernelClient

    manager = _kernel_manager(sockets, 0)
    run_sync(manager.start_kernel)()
    try:
        client = manager.client()
        assert isinstance(client, ReportKernelClient)  # papermill's client too: km.client()
        client.start_channels()
        run_sync(client.wait_for_ready)(timeout=60)
        seen: list[str] = []  # IOPub is connected: the cell's output arrives on it

        def keep(msg: dict) -> None:
            if msg["msg_type"] == "stream":
                seen.append(msg["content"]["text"])

        reply = run_sync(client.execute_interactive)("print(6 * 7)", output_hook=keep, timeout=60)
        assert reply["content"]["status"] == "ok" and seen == ["42\n"]
        manager.stop_clients()
        run_sync(manager.shutdown_kernel)(now=True)
        late = manager.client()
        late.start_channels()
        with pytest.raises(RuntimeError, match="died|respond"):
            run_sync(late.wait_for_ready)(timeout=3)
    finally:
        manager.stop_clients()
        if manager.has_kernel:
            run_sync(manager.shutdown_kernel)(now=True)


def test_a_lane_clients_channels_opened_and_closed_at_once_leave_nothing_running(
    sockets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jupyter_client's heartbeat thread, stopped before it began beating, spun making
    sockets until none was left: 56 of 300 clients here raised "Too many open files" in it."""
    import threading

    from jupyter_core.utils import run_sync

    raised: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda done: raised.append(repr(done.exc_value)))
    manager = _kernel_manager(sockets, 0)
    run_sync(manager.start_kernel)()
    try:
        before = threading.active_count()
        for _ in range(300):
            client = manager.client()
            client.start_channels()
            assert not client.hb_channel.is_alive()
            client.stop_channels()
        manager.stop_clients()
        assert threading.active_count() == before and raised == []
        assert run_sync(manager.is_alive)()  # asked of the process, not of a heartbeat
    finally:
        manager.stop_clients()
        run_sync(manager.shutdown_kernel)(now=True)


def test_the_notebooks_imports_are_read_from_their_code_cells(tmp_path: Path) -> None:
    from txkit.report._kernels import notebook_imports

    first = notebook(tmp_path, "a", "import json, os.path\nfrom txkit.notebook import plots",
                     "%matplotlib inline", "def f():\n    import colorsys")  # fmt: skip
    second = notebook(tmp_path, "b", "from . import here\nimport json\nimport polars as pl")
    assert notebook_imports([first, second]) == ["json", "os.path", "txkit.notebook", "polars"]


def test_a_lane_started_ahead_runs_its_first_notebook_in_that_kernel(
    tmp_path: Path, sockets: Path
) -> None:
    from txkit.report._kernels import imports_code

    sources = [notebook(tmp_path, "uses", "import colorsys\nimport not_a_module_of_txkit_tests")]
    book = notebook(tmp_path, "first", REPORT.replace(
        '"pid": os.getpid(),',
        '"pid": os.getpid(), "imported": "colorsys" in sys.modules, "cwd": os.getcwd(), '
        '"left": sorted(n for n in globals() if n.startswith("_name")),',
    ))  # fmt: skip
    kept = KeptLanes()
    try:
        ((lane, driver),) = kept.take(1, lambda i: _kernel_manager(sockets, i))
        code = imports_code(sources)  # a module that does not import is left to its notebook
        driver.submit(lambda: lane.start(None, code, cwd=tmp_path)).wait()
        assert lane.kernels_started == 1
        started = lane._manager.provisioner.process.pid
        results, _ = run_in_lanes([[book]], run, lambda i: _kernel_manager(sockets, i), lanes=1,
                                  kept=kept)  # fmt: skip
        assert lane.kernels_started == 1 and results[book]["pid"] == started
        assert results[book]["imported"] and results[book]["cwd"] == str(tmp_path)
        assert results[book]["left"] == [] and results[book]["counts"] == [1]
    finally:
        kept.close()
