"""Async tests here run on anyio's pytest plugin, over every backend we support.

pytest-asyncio runs in auto mode for the rest of the suite and would claim
every coroutine test, ignoring `anyio_backend`. `pytest_pycollect_makeitem`
hands tests marked `anyio` back to anyio's plugin; the conftests of
`tests/core` and `tests/store` re-export it with the `anyio_backend` fixture.
Backends: asyncio in debug mode; asyncio with the eager task factory
(Python 3.12+); trio (when installed). A backend this interpreter lacks is
skipped once, with its reason, by `test_backends.py` (not once per test).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Generator
from typing import Any

import pytest
from pytest_asyncio.plugin import PytestAsyncioFunction

__all__ = ("BACKENDS", "MISSING_BACKENDS", "anyio_backend", "pytest_pycollect_makeitem")


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


@pytest.fixture(params=list(BACKENDS.values()), ids=list(BACKENDS))
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    """The backend (and its options) anyio runs each `anyio`-marked test on."""
    return request.param


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(
    collector: pytest.Collector, name: str, obj: object
) -> Generator[None, Any, Any]:
    """Give `anyio`-marked coroutine tests back to anyio after pytest-asyncio took them."""
    result = yield
    if result is None:
        return None
    items = result if isinstance(result, list) else [result]
    return [_to_anyio(item) for item in items]


def _to_anyio(item: Any) -> Any:
    if not isinstance(item, PytestAsyncioFunction) or item.get_closest_marker("anyio") is None:
        return item
    function = pytest.Function.from_parent(
        item.parent,
        name=item.name,
        callspec=getattr(item, "callspec", None),
        callobj=item.obj,
        fixtureinfo=item._fixtureinfo,
        keywords=item.keywords,
        originalname=item.originalname,
    )
    # pytest-asyncio's own marker would make it warn about a non-asyncio test.
    function.own_markers = [m for m in item.own_markers if m.name != "asyncio"]
    return function
