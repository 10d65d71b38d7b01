"""Fixtures for every test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.factories import NO_INSTANCE_METADATA


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
