"""What code intelligence's tests share: the task group its background work runs in."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from anyio.abc import TaskGroup


@pytest.fixture
async def owner() -> AsyncIterator[TaskGroup]:
    """The owner of the service's background work (servers starting, their stderr), as a
    session scope is: what is left when the test ends is cancelled and waited for."""
    async with anyio.create_task_group() as task_group:
        yield task_group
        task_group.cancel_scope.cancel()
