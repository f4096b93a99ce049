"""Fixtures that start the real acp-agent and check every line it writes against the schema."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig

from tests.support import AcpTestClient, agent_command, agent_env, remove_agent_home


@pytest.fixture(scope="session", autouse=True)
def _throwaway_agent_home() -> Iterator[None]:
    yield
    remove_agent_home()


async def _checked(client: AcpTestClient):
    yield
    # Stop first so the lines written while shutting down are checked too.
    await client.stop()
    assert client.wire_problems() == []
    assert client.process is not None
    assert client.process.returncode == 0


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=agent_command(script="greeting.json"),
        client_factory=AcpTestClient,
        server_env=agent_env(),
    )
)
async def agent(client: AcpTestClient):
    """acp-agent playing `scripts/greeting.json`."""
    async for _ in _checked(client):
        yield


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=agent_command(script="slow.json"),
        client_factory=AcpTestClient,
        server_env=agent_env(),
    )
)
async def slow_agent(client: AcpTestClient):
    """acp-agent whose reply sleeps 30 s after its first chunk: a turn to cancel."""
    async for _ in _checked(client):
        yield


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=agent_command(), client_factory=AcpTestClient, server_env=agent_env()
    )
)
async def unscripted_agent(client: AcpTestClient):
    """acp-agent without a script: the default reply."""
    async for _ in _checked(client):
        yield
