"""Authentication as configuring a model provider, and what each request used and cost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from protocol.errors import AuthRequired, InvalidParams
from tests.adapters.acp.session_support import openai_text
from tests.support import EditorClient, agent_env, openai_env, running_agent, write_script
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.e2e


async def authenticate(client: EditorClient, method_id: str) -> dict[str, Any]:
    return await client.request_raw(methods.AUTHENTICATE, {"methodId": method_id})


async def test_authenticate_succeeds_only_for_a_provider_configured_now(tmp_path: Path):
    env = agent_env(OPENAI_API_KEY="sk-test")
    async with running_agent(tmp_path / "home", env=env) as client:
        methods_offered = next(m for m in client.messages if m.get("id") == 1)["result"][
            "authMethods"
        ]
        openai = await authenticate(client, "openai-api-key")
        anthropic = await authenticate(client, "anthropic-api-key")
        model = await authenticate(client, "model")
        unknown = await authenticate(client, "github")

    assert [m["id"] for m in methods_offered] == ["openai-api-key", "anthropic-api-key", "model"]
    assert openai == {"jsonrpc": "2.0", "id": openai["id"], "result": {}}
    assert anthropic["error"] == {
        "code": AuthRequired.CODE,
        "message": "Authentication required: ANTHROPIC_API_KEY is not set in acp-agent's "
        "environment; set it, then restart the agent",
    }
    assert model["result"] == {}  # a model is configured (openai/gpt-4.1, from the key)
    assert unknown["error"]["code"] == InvalidParams.CODE


async def test_without_any_model_a_session_opens_and_authenticate_says_what_to_set(
    tmp_path: Path,
):
    async with running_agent(tmp_path / "home") as client:
        new = await client.request_raw(methods.SESSION_NEW, {"cwd": "/tmp", "mcpServers": []})
        model = await authenticate(client, "model")
        listed = await client.list_sessions()

    # The session opens (a prompt then explains how to configure a model);
    # only `authenticate` reports what is missing.
    assert "sessionId" in new["result"]
    assert model["error"]["code"] == AuthRequired.CODE
    assert model["error"]["message"].endswith("Run `acp-agent doctor` to check the set-up.")
    assert [s.session_id for s in listed.sessions] == [new["result"]["sessionId"]]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


async def test_each_request_reports_the_context_used_and_the_cumulative_cost(
    tmp_path: Path, server: FakeProviderServer
):
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(
        '[providers.openai.prices."gpt-fake"]\ninput = 1.0\noutput = 2.0\n'
    )
    server.add(openai_text("One."), openai_text("Two."))
    env = openai_env(server.base_url, api_key="sk-test")
    async with running_agent(home, env=env) as client:
        session_id = await client.new_session(tmp_path)
        await client.prompt(session_id, "One")
        await client.prompt(session_id, "Two")
        usage = [u for u in client.updates_for(session_id) if isinstance(u, types.UsageUpdate)]

    # 900 tokens in at $1 and 12 out at $2 per million, per request; the cost adds up.
    assert [(u.used, u.size, u.cost) for u in usage] == [
        (912, 128_000, types.Cost(amount=0.000924, currency="USD")),
        (912, 128_000, types.Cost(amount=0.001848, currency="USD")),
    ]


async def test_the_scripted_model_reports_usage_without_a_cost(tmp_path: Path):
    script = write_script(tmp_path / "s.json", [{"text": "Hi."}], context_window=8192)
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        await client.prompt(session_id, "Hello")
        [usage] = [u for u in client.updates_for(session_id) if isinstance(u, types.UsageUpdate)]

    assert (usage.size, usage.cost) == (8192, None)
    assert 0 < usage.used < 8192
