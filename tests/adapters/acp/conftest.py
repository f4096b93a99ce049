"""Fixtures that start the real acp-agent and check every line it writes against the schema."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support import SCRIPTS, EditorClient, remove_agent_home, running_agent


@pytest.fixture(scope="session", autouse=True)
def _throwaway_agent_home() -> Iterator[None]:
    yield
    remove_agent_home()


# Not initialized: the tests send `initialize` themselves. On exit the agent is
# stopped first, so the lines written while shutting down are checked too.


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[EditorClient]:
    """acp-agent playing `scripts/greeting.json`."""
    script = SCRIPTS / "greeting.json"
    async with running_agent(
        tmp_path / "home", script=script, initialize=False, exit_code=0
    ) as client:
        yield client


@pytest.fixture
async def slow_agent(tmp_path: Path) -> AsyncIterator[EditorClient]:
    """acp-agent whose reply sleeps 30 s after its first chunk: a turn to cancel."""
    script = SCRIPTS / "slow.json"
    async with running_agent(
        tmp_path / "home", script=script, initialize=False, exit_code=0
    ) as client:
        yield client


@pytest.fixture
async def unscripted_agent(tmp_path: Path) -> AsyncIterator[EditorClient]:
    """acp-agent without a script: the default reply."""
    async with running_agent(tmp_path / "home", initialize=False, exit_code=0) as client:
        yield client
