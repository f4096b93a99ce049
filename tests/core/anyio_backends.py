"""The backends matrix: tests marked `anyio` here run on every backend we support.

Every async test of the suite runs on anyio's pytest plugin (`anyio_mode =
"auto"`), on plain asyncio (`anyio_backend` in `tests/conftest.py`). Tests
marked `anyio` under the conftests that re-export `pytest_generate_tests`
(`tests/core`, `tests/store`, `tests/tools`, `tests/mcp`: code that uses anyio
only) run once per backend instead: asyncio in debug mode; asyncio with the
eager task factory (Python 3.12+); trio (when installed). Their unmarked tests
(the ones driving the agent process over asyncio) stay on plain asyncio. A
backend this interpreter lacks is skipped once, with its reason, by
`test_backends.py` (not once per test).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from typing import Any

import pytest

__all__ = ("BACKENDS", "MISSING_BACKENDS", "pytest_generate_tests")


def _eager_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    loop.set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]
    return loop


#: Backend id -> (anyio backend, options), for each backend this interpreter has.
BACKENDS: dict[str, Any] = {"asyncio": ("asyncio", {"debug": True})}
#: Backend id -> why this interpreter cannot run it; `test_backends.py` reports it once.
MISSING_BACKENDS: dict[str, str] = {}

if sys.version_info >= (3, 12):
    BACKENDS["asyncio-eager"] = ("asyncio", {"debug": True, "loop_factory": _eager_loop})
else:
    MISSING_BACKENDS["asyncio-eager"] = "the eager task factory needs Python 3.12"
if importlib.util.find_spec("trio") is not None:
    BACKENDS["trio"] = "trio"
else:
    MISSING_BACKENDS["trio"] = "trio is not installed"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each `anyio`-marked test once per backend (and its options) in `BACKENDS`."""
    marked = metafunc.definition.get_closest_marker("anyio") is not None
    if marked and "anyio_backend" in metafunc.fixturenames:
        metafunc.parametrize("anyio_backend", list(BACKENDS.values()), ids=list(BACKENDS))
