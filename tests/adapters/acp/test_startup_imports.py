"""What answering `initialize` costs in imports, observed in the agent process itself.

Every editor start pays for what the first answer imports. With `ACP_AGENT_DEBUG=1`
the agent serves `_acp-agent/debug/modules`; right after `initialize`, with the
background warm-up switched off (`ACP_AGENT_WARMUP=0`), it must not have loaded the
language-server libraries, HTTP, the MCP SDK, the model providers, the tools or the
runtime core, nor the wire types past the handshake's: they are for sessions and
prompts, not for the handshake. Nor anything of ACP v2 (`protocol.v2`), then or
later: a v1 client never pays for it. With the warm-up on, the rest loads after the
answer, and the first session and prompt find it loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import agent_env, running_agent, write_script

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
    # What a model streams and is asked, and the scripted provider (without --script).
    "acp_agent.models._events",
    "acp_agent.models._request",
    "acp_agent.models._provider",
    "acp_agent.models._scripted",
    # The runtime loads with the first session.
    "acp_agent.core",
    "acp_agent.capabilities",
    # A prompt's content, and the content parts under it, load with the first prompt.
    "acp_agent.adapters.acp._prompt_content",
    "acp_agent.adapters.acp_content",
    "acp_agent.content",
    # Of the wire types, only the handshake's part: the rest is most of their cost.
    "protocol._types_sessions",
    "protocol._types_prompts",
    "protocol._types_others",
    # A v1 client's start pays nothing for v2: not its types, table or converter.
    "protocol.v2",
)


def matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


async def test_answering_initialize_imports_no_lsp_http_mcp_provider_or_tool_code(
    tmp_path: Path,
) -> None:
    env = agent_env(ACP_AGENT_DEBUG="1", ACP_AGENT_WARMUP="0")
    async with running_agent(tmp_path / "home", env=env) as client:  # initialized
        answer = await client.request_raw("_acp-agent/debug/modules", {})
        await anyio.sleep(0.3)  # a warm-up, if one ran, would show now
        later = await client.request_raw("_acp-agent/debug/modules", {})
        session_id = await client.new_session(tmp_path)
        # The session assembles behind its answer; a request about it waits for that.
        await client.request_raw("session/set_mode", {"sessionId": session_id, "modeId": "ask"})
        after_session = await client.request_raw("_acp-agent/debug/modules", {})

    modules = answer["result"]["modules"]
    assert "protocol._types_handshake" in modules  # the request answers from inside the agent
    # The collector runs rarely while the agent starts, as usual once a session is open.
    assert answer["result"]["gcThresholds"][0] > 700
    assert after_session["result"]["gcThresholds"] == [700, 10, 10]
    assert (answer["result"]["warmup"], later["result"]["warmup"]) == ("off", "off")
    for seen in (modules, later["result"]["modules"]):
        loaded = [m for m in seen if any(matches(m, prefix) for prefix in NOT_FOR_INITIALIZE)]
        assert loaded == []
    # A session does need the tools (the probe sees later imports too).
    assert session_id
    assert "acp_agent.tools" in after_session["result"]["modules"]


async def wait_for_warmup(client: Any) -> list[str]:
    """Poll the debug request until the warm-up is done; the modules then."""
    with anyio.fail_after(20):
        while True:
            answer = (await client.request_raw("_acp-agent/debug/modules", {}))["result"]
            if answer["warmup"] == "done":
                return list(answer["modules"])
            await anyio.sleep(0.05)


async def test_the_warm_up_loads_what_the_first_session_and_prompt_import(
    tmp_path: Path,
) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "Hi."}])
    env = agent_env(ACP_AGENT_DEBUG="1")
    async with running_agent(tmp_path / "home", env=env, script=script) as client:
        warmed = await wait_for_warmup(client)
        session_id = await client.new_session(tmp_path)
        response = await client.prompt(session_id, "Hello")
        after = (await client.request_raw("_acp-agent/debug/modules", {}))["result"]["modules"]

    assert response.stop_reason.value == "end_turn"
    assert "acp_agent.tools" in warmed
    assert "acp_agent.core" in warmed
    # With the scripted model nothing of HTTP's is warmed: no real model answers.
    assert not any(matches(m, "httpx") for m in warmed)
    late = sorted(set(after) - set(warmed))
    assert [m for m in late if m.split(".")[0] in ("acp_agent", "protocol")] == []
    # Serving, a session and a prompt never load the doctor front end, nor (for a v1
    # client) anything of ACP v2, nor, on the default store, the PostgreSQL store or its
    # driver.
    unneeded = (
        "acp_agent.adapters.doctor",
        "protocol.v2",
        "acp_agent.store._postgres",
        "psycopg",
    )
    assert [m for m in after if any(matches(m, prefix) for prefix in unneeded)] == []


async def test_a_real_default_model_warms_http_and_the_providers(tmp_path: Path) -> None:
    env = agent_env(
        ACP_AGENT_DEBUG="1", ACP_AGENT_MODEL="openai/gpt-fake", OPENAI_API_KEY="sk-unused"
    )
    async with running_agent(tmp_path / "home", env=env) as client:
        warmed = await wait_for_warmup(client)

    assert {"httpx", "acp_agent.models._openai", "acp_agent.models._anthropic"} <= set(warmed)
    # Not httpx's command line client (click, and rich where installed): never run.
    assert not any(matches(m, "click") or matches(m, "rich") for m in warmed)


async def test_the_debug_requests_are_not_served_without_debugging(tmp_path: Path) -> None:
    async with running_agent(tmp_path / "home") as client:
        answer = await client.request_raw("_acp-agent/debug/modules", {})

    assert answer["error"]["code"] == -32601
