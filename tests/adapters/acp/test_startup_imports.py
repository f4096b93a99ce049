"""What answering `initialize` costs in imports, observed in the agent process itself.

Every editor start pays for what the first answer imports. With `ACP_AGENT_DEBUG=1`
the agent serves `_acp-agent/debug/modules`; right after `initialize` it must not
have loaded the language-server libraries, HTTP, the MCP SDK, the model
providers, the tools or the runtime core: they are for sessions and prompts,
not for the handshake.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import agent_env, running_agent

pytestmark = pytest.mark.e2e

#: Module name prefixes answering `initialize` must not import.
NOT_FOR_INITIALIZE = (
    "pygls",
    "lsprotocol",
    "httpx",
    "mcp",
    "acp_agent.mcp",
    "acp_agent.tools",
    "acp_agent.models._openai",
    "acp_agent.models._anthropic",
    "acp_agent.models._http",
    # The runtime loads with the first session.
    "acp_agent.core",
    "acp_agent.capabilities.context",
)


def matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


async def test_answering_initialize_imports_no_lsp_http_mcp_provider_or_tool_code(
    tmp_path: Path,
) -> None:
    env = agent_env(ACP_AGENT_DEBUG="1")
    async with running_agent(tmp_path / "home", env=env) as client:  # initialized
        answer = await client.request_raw("_acp-agent/debug/modules", {})
        session_id = await client.new_session(tmp_path)
        after_session = await client.request_raw("_acp-agent/debug/modules", {})

    modules = answer["result"]["modules"]
    assert "protocol.types" in modules  # the request answers from inside the agent
    loaded = [m for m in modules if any(matches(m, prefix) for prefix in NOT_FOR_INITIALIZE)]
    assert loaded == []
    # A session does need the tools (the probe sees later imports too).
    assert session_id
    assert "acp_agent.tools" in after_session["result"]["modules"]


async def test_the_debug_requests_are_not_served_without_debugging(tmp_path: Path) -> None:
    async with running_agent(tmp_path / "home") as client:
        answer = await client.request_raw("_acp-agent/debug/modules", {})

    assert answer["error"]["code"] == -32601
