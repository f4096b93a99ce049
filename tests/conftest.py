"""Test-wide settings.

Hypothesis runs derandomized under CI (the `CI` variable is set there), so a
landing never depends on luck; locally it explores new examples each run.
`HYPOTHESIS_PROFILE=thorough` multiplies the examples for a deeper search.

Tests marked `slow` (the thorough part of the fault matrices) run only with
`ACP_AGENT_SLOW_TESTS=1`; by default each matrix runs a bounded sample.

Async tests and fixtures run on anyio's pytest plugin (`anyio_mode = "auto"`),
on asyncio unless a package asks for more (`tests/core/anyio_backends.py`).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=40, derandomize=True, print_blob=True)
settings.register_profile("dev", max_examples=40, print_blob=True)
settings.register_profile("thorough", max_examples=1000, print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


@pytest.fixture
def anyio_backend() -> str:
    """The event loop of every async test: asyncio (the adapters and the agent use it)."""
    return "asyncio"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("ACP_AGENT_SLOW_TESTS") == "1":
        return
    skip = pytest.mark.skip(
        reason="slow: the thorough sample; set ACP_AGENT_SLOW_TESTS=1 to run it"
    )
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
