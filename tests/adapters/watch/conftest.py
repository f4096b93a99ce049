"""The app server's tests share one server per module (a start costs about a second)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so a module-scoped server fixture and its tests share one event loop."""
    return "asyncio"
