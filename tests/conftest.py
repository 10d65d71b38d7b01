"""Fixtures for every test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.factories import NO_INSTANCE_METADATA, ROOT, cli_env
from txkit import Client
from txkit.sandbox import Sandbox, generate_ledger

UV = Path(sys.executable).parent / "uv"  # `make install` puts uv in the checkout's .venv


@pytest.fixture(autouse=True, scope="session")
def _no_instance_metadata() -> Iterator[None]:
    """Nothing under delta-rs asks the network for EC2 instance metadata (a region,
    credentials) from a test: tests send nothing beyond loopback. Subprocesses get the same
    from :func:`tests.factories.cli_env`."""
    before = {name: os.environ.get(name) for name in NO_INSTANCE_METADATA}
    os.environ.update(NO_INSTANCE_METADATA)
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel (built from the sdist, as a release is), from the checkout."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [str(UV), "build", "--quiet", "--out-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@dataclass(frozen=True)
class Installed:
    """txkit as a merchant installs it: the built wheel in a fresh virtual environment outside
    the checkout, and the environment a command there runs with (its ``bin`` first on PATH)."""

    venv: Path
    env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)


@pytest.fixture(scope="session")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """One install a run, shared by the installed product's tests and the tutorial (the
    conftest's scheduler keeps both modules on one worker)."""
    home = tmp_path_factory.mktemp("installed")
    assert not home.resolve().is_relative_to(ROOT)
    venv = home / "venv"
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)],
                   check=True, timeout=120)  # fmt: skip
    install = [str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python")]
    overrides = ["--override", str(ROOT / "tools" / "uv-overrides.txt")]
    (wheel,) = dist.glob("txkit-*.whl")
    subprocess.run([*install, *overrides, str(wheel)], check=True, timeout=600)
    # pip compiles bytecode at install; uv does not, so the first import of each module writes
    # it, whatever the run's PYTHONDONTWRITEBYTECODE says (else every command compiles again).
    left_out = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in cli_env().items() if k not in left_out}
    env |= {
        "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "JUPYTER_DATA_DIR": str(home / "jupyter-data"),  # the notebooks' trust
    }
    return Installed(venv, env)


@pytest.fixture(scope="module")
def sync_ledger() -> object:
    """A module's own 3,000-record ledger (seed 21), for the store's sync tests: a module may
    change its data, so it is not the run's shared one (the root conftest's ``ledgers``)."""
    return generate_ledger(seed=21, records=3_000)


@pytest.fixture
def sync_client(sync_ledger: object) -> Iterator[Client]:
    """A client of a sandbox over :func:`sync_ledger`, for one test."""
    with (
        Sandbox(ledger=sync_ledger) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        yield client
