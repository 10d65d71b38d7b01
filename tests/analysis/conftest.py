"""Fixtures of the analysis tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest


@pytest.fixture(params=["eager", "lazy"])
def as_input(request: pytest.FixtureRequest) -> Callable[[pl.DataFrame], Any]:
    """Hand a frame to the function under test eagerly or lazily."""
    if request.param == "lazy":
        return lambda df: df.lazy()
    return lambda df: df
