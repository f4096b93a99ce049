"""Core tests run on every anyio backend this interpreter has; the rest are named here."""

from __future__ import annotations

import asyncio
import traceback

import pytest

from .anyio_backends import BACKENDS, MISSING_BACKENDS


@pytest.mark.parametrize("backend", ["asyncio", "asyncio-eager", "trio"])
def test_each_backend_runs_the_core_tests_or_is_skipped_with_its_reason(backend: str) -> None:
    if backend in MISSING_BACKENDS:
        pytest.skip(MISSING_BACKENDS[backend])
    assert backend in BACKENDS


@pytest.mark.anyio
async def test_anyio_marked_tests_run_on_anyio_not_pytest_asyncio(anyio_backend: object) -> None:
    stack = "".join(traceback.format_stack())
    assert "anyio/pytest_plugin" in stack
    if isinstance(anyio_backend, tuple) and anyio_backend[0] == "asyncio":
        # anyio's backend options apply (pytest-asyncio's loop would not be in debug mode).
        assert asyncio.get_running_loop().get_debug()
