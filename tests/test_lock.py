"""The development and CI environment is the lock file (issue 45): every package pinned, the
suite run on exactly those pins, and nothing pyproject.toml asks for left out of the lock."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements-dev.lock"
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;]+)\s*(?:;\s*(?P<marker>.+))?$")


def _pins() -> dict[str, str]:
    """The lock's pins that apply to this interpreter, by canonical name."""
    pins: dict[str, str] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line.strip())
        if match is None:
            continue
        marker = match["marker"]
        if marker is None or Marker(marker).evaluate():
            pins[canonicalize_name(match["name"])] = match["version"]
    return pins


def test_every_requirement_of_pyproject_is_pinned_in_the_lock() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pins = _pins()
    unpinned = [
        text
        for text in wanted
        if (req := Requirement(text)).marker is None or req.marker.evaluate({"extra": "dev"})
        if canonicalize_name(req.name) not in pins
    ]
    assert not unpinned, f"not in {LOCK.name}: {unpinned} (run `make lock`)"
    outside = [
        f"{req.name}=={pins[canonicalize_name(req.name)]} outside {req.specifier}"
        for text in wanted
        for req in [Requirement(text)]
        if canonicalize_name(req.name) in pins
        if not req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True)
    ]
    assert not outside, outside


def test_the_suite_runs_on_the_locked_versions() -> None:
    installed = {
        canonicalize_name(dist.metadata["Name"]): dist.version
        for dist in importlib.metadata.distributions()
    }
    drift = {
        name: (version, installed.get(name))
        for name, version in _pins().items()
        if installed.get(name) != version
    }
    assert not drift, f"installed versions differ from {LOCK.name}: {drift} (run `make install`)"
