"""`initialize`: version negotiation and an honest description of the agent."""

from __future__ import annotations

import pytest

import acp_agent
from protocol import types
from tests.support import AcpTestClient
from tests.support.steps import initialize

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("asked", [65535, 2, 1, 0])
async def test_initialize_answers_protocol_version_one_whatever_the_client_asks(
    agent: AcpTestClient, asked: int
):
    response = await initialize(agent, version=asked)

    assert response.protocol_version == 1


async def test_initialize_describes_the_agent_and_only_what_it_implements(agent: AcpTestClient):
    response = await initialize(agent)

    assert response.agent_info == types.Implementation(
        name="acp-agent", title="acp-agent", version=acp_agent.__version__
    )
    # How to configure a model: one method per provider key variable, and naming one.
    assert [(m.id, m.name) for m in response.auth_methods] == [  # type: ignore[union-attr]
        ("openai-api-key", "OpenAI API key"),
        ("anthropic-api-key", "Anthropic API key"),
        ("model", "Another model"),
    ]
    assert "Set OPENAI_API_KEY" in str(response.auth_methods[0].description)  # type: ignore[union-attr]
    capabilities = response.agent_capabilities
    assert capabilities is not None
    assert capabilities.load_session is True
    # The scripted model takes images (it plays its replies whatever it is sent).
    assert capabilities.prompt_capabilities == types.PromptCapabilities(
        image=True, audio=False, embedded_context=True
    )
    assert capabilities.mcp_capabilities is not None
    # MCP servers over stdio, streamable HTTP and SSE are connected (acp_agent.mcp).
    assert capabilities.mcp_capabilities.http is True
    assert capabilities.mcp_capabilities.sse is True
    # Every stable session method works, with additional directories (multi-root
    # workspaces); fork is unstable, so not without --unstable.
    assert capabilities.session_capabilities == types.SessionCapabilities(
        list=types.SessionListCapabilities(),
        resume=types.SessionResumeCapabilities(),
        close=types.SessionCloseCapabilities(),
        delete=types.SessionDeleteCapabilities(),
        additional_directories=types.SessionAdditionalDirectoriesCapabilities(),
    )
