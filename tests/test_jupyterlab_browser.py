"""JupyterLab in a real browser, as an analyst following the README opens a notebook.

``jupyter lab`` on loopback (with a token) in a copy of the project, after ``make install``'s
trust step; Debian's Chromium (``.ci/run`` installs it; Playwright drives it, never
``playwright install``) opens 01, checks the stored outputs render styled, runs all cells, and
checks what the page shows and what the browser logged: no "Error displaying widget", no
traceback, a great_tables table with its styles, no "not trusted" in the console.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_jupyter import comparable

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK = "01_explore.ipynb"
#: The notebooks opened, in turn: 01, or ``TXKIT_TEST_NOTEBOOKS`` (names separated by commas,
#: or ``all``), to measure them by hand.
OPENED = (
    [p.name for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    if os.environ.get("TXKIT_TEST_NOTEBOOKS") == "all"
    else [n.strip() for n in os.environ.get("TXKIT_TEST_NOTEBOOKS", NOTEBOOK).split(",")]
)
#: Chromium's switches for a quiet, private, headless run (nothing fetched from the network).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = os.environ.get("TXKIT_TEST_SCREENSHOTS")  # a folder: screenshots kept for a person

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (.ci/run installs it)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _jupyter_env(home: Path) -> dict[str, str]:
    """The analyst's environment, with Jupyter's own folders (settings, workspaces, trust
    database) in a fresh home, so nothing of this machine's JupyterLab state is read."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TXKIT_", "JUPYTER"))}
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
    )
    return env


@pytest.fixture
def jupyterlab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``jupyter lab`` serving a close project as ``txkit init`` makes it (its notebooks
    trusted in this home's signature database; the sandbox writes ``data/`` on first use); a
    notebook's URL with the token (``{name}`` to fill in: a fresh workspace, so no other
    notebook is restored beside it), and the project. The notebooks as initialised are kept
    in ``as-initialised/`` beside it."""
    project = tmp_path / "project"
    env = _jupyter_env(tmp_path / "home")
    subprocess.run(
        [sys.executable, "-m", "txkit.cli", "init", str(project)],
        env=env | {"PYTHONPATH": str(ROOT)}, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    shutil.copytree(project / "notebooks", tmp_path / "as-initialised")
    settings = tmp_path / "home" / "settings" / "@jupyterlab"
    # Every cell rendered (JupyterLab renders only the cells in view by default), so that the
    # page's text holds every output to check; no news pop-up over the notebook.
    for name, value in {
        "notebook-extension/tracker": {"windowingMode": "none"},
        "apputils-extension/notification": {"fetchNews": "false"},
    }.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{name}.jupyterlab-settings").write_text(json.dumps(value))
    jupyter = Path(sys.executable).with_name("jupyter")
    token, port = secrets.token_hex(16), _free_port()
    log = (tmp_path / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={project}",
         "--ServerApp.port_retries=0", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate",
         *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI's container runs as root
        cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError((tmp_path / "jupyterlab.log").read_text()) from None
                time.sleep(0.2)
        yield f"{url}/lab/tree/notebooks/{{name}}?reset&token={token}", project
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _shot(page: object, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=False)  # type: ignore[attr-defined]


#: JavaScript: the computed style of the first great_tables table's first body cell and heading.
_TABLE_STYLE = """() => {
  const table = document.querySelector('.jp-OutputArea-output table.gt_table');
  if (!table) return null;
  const cell = table.querySelector('td.gt_row');
  const head = table.querySelector('th.gt_col_heading');
  const t = getComputedStyle(table), c = getComputedStyle(cell), h = getComputedStyle(head);
  return {border_top: t.borderTopStyle, border_top_width: t.borderTopWidth,
          font_size: t.fontSize, cell_padding: c.paddingTop, head_weight: h.fontWeight,
          nowrap: c.whiteSpace};
}"""


def _check_tables(page: object) -> dict[str, str]:
    style = page.evaluate(_TABLE_STYLE)  # type: ignore[attr-defined]
    assert style is not None, "no great_tables table in the page"
    # great_tables' own styles (from its <style>, kept only in a trusted notebook)
    assert style["border_top"] == "solid" and style["border_top_width"] == "2px", style
    assert style["font_size"] == "13px" and style["cell_padding"] == "3px", style
    assert style["nowrap"] == "nowrap" and int(style["head_weight"]) >= 600, style
    return style


def _run_all(page: Any, url: str, name: str, saved: Path) -> float:
    """Open ``name`` (a fresh workspace: no other notebook restored beside it), check its
    stored tables are styled, Run All Cells, save; the seconds Run All took."""
    page.goto(url.format(name=name), timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-OutputArea-output", timeout=60_000)
    page.wait_for_selector("table.gt_table", timeout=30_000)
    _shot(page, f"{Path(name).stem}-1-opened")
    _check_tables(page)  # the stored outputs, styled before any run
    began = time.monotonic()
    page.click("text=Run", timeout=10_000)  # the Run menu
    page.click("text=Run All Cells", timeout=10_000)
    # Done: every code cell numbered, none waiting ([*]).
    page.wait_for_function(
        """() => {
          const prompts = [...document.querySelectorAll(
            '.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent.trim());
          return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
        }""",
        timeout=180_000,
    )
    ran = time.monotonic() - began
    before = saved.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while saved.stat().st_mtime_ns == before:  # written by the server
        assert time.monotonic() < deadline, f"{name} was not saved"
        time.sleep(0.2)
    _shot(page, f"{Path(name).stem}-2-ran")
    text = page.inner_text(".jp-Notebook")
    _check_tables(page)
    for bad in ("Error displaying widget", "Traceback", "model not found"):
        assert bad not in text, (name, bad)
    assert not re.search(r"\w+Error: ", text), text[:2000]
    assert page.query_selector_all(".jp-OutputArea-output[data-mime-type="
                                   "'application/vnd.jupyter.stderr']") == []  # fmt: skip
    assert "Source: the embedded sandbox" in text and "As run" in text
    return ran


def test_a_notebook_opens_runs_and_saves_clean_in_jupyterlab(
    jupyterlab: tuple[str, Path], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    url, project = jupyterlab
    console: list[str] = []
    seconds = {}
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1440, "height": 900},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            for name in OPENED:
                seconds[name] = _run_all(page, url, name, project / "notebooks" / name)
        finally:
            context.close()
    logged = "\n".join(console)
    for bad in ("not trusted", "widget model not found", "Error displaying widget", "pageerror"):
        assert bad not in logged, logged
    for name in OPENED:
        saved = project / "notebooks" / name
        text = saved.read_text(encoding="utf-8")
        assert "application/vnd.jupyter.widget" not in text and "txkit export" not in text
        # Saved as initialised: nothing changed but what the run changed (here: nothing).
        committed = tmp_path / "as-initialised" / name
        assert comparable(Path(shutil.copy(saved, tmp_path / "saved.ipynb"))) == comparable(
            Path(shutil.copy(committed, tmp_path / "committed.ipynb"))
        ), name
    for name, ran in seconds.items():
        print(f"Run All Cells of {name} in JupyterLab: {ran:.1f} s")
