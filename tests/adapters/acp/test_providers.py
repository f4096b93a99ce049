"""Real providers through the agent, against the fake provider server over HTTP.

The agent runs with `ACP_AGENT_MODEL` and the provider's base URL pointing at
the fake server on 127.0.0.1; each test checks what the editor sees and, where
it matters, what the provider was sent. The failures a provider can have reach
the person as a message, keep what was streamed, and never break the session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import types
from tests.adapters.acp.support import calls_of, text_of_updates
from tests.support import agent_env, openai_env, running_agent
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    anthropic_event,
    anthropic_stream,
    anthropic_text_block,
    json_error,
    openai_chunk,
    openai_stream,
)
from tests.support.messages import unnamed

pytestmark = pytest.mark.e2e

API_KEY = "sk-test-0123456789abcdefghij"
USAGE = {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}
CANCEL_BOUND_S = 1.0


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def openai_text(*pieces: str, finish: str = "stop") -> Exchange:
    return Exchange(
        chunks=[
            openai_stream(
                openai_chunk({"role": "assistant", "content": ""}),
                *(openai_chunk({"content": piece}) for piece in pieces),
                openai_chunk({}, finish),
                openai_chunk(usage=USAGE),
            )
        ]
    )


def openai_error(status: int, message: str, code: str, **headers: str) -> Exchange:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return json_error(status, body, headers)


async def one_turn(
    home: Path, env: dict[str, str], workspace: Path, answers: list[str | None] | None = None
) -> tuple[types.PromptResponse, list[types.SessionUpdate]]:
    async with running_agent(home, env=env) as client:
        session_id = await client.new_session(workspace)
        client.answers = list(answers or [])
        response = await client.prompt(session_id, "Say hello.")
        return response, client.updates_for(session_id)


async def test_an_openai_compatible_model_streams_through_the_agent(
    tmp_path: Path, server: FakeProviderServer
):
    server.add(openai_text("Hel", "lo."))

    response, updates = await one_turn(tmp_path / "home", openai_env(server.base_url), tmp_path)

    assert response.stop_reason == types.StopReason.END_TURN
    *chunks, usage = unnamed(updates)
    assert chunks == [
        types.AgentMessageChunk(content=types.TextContent(text="Hel")),
        types.AgentMessageChunk(content=types.TextContent(text="lo.")),
    ]
    assert isinstance(usage, types.UsageUpdate)
    # An unknown model: the default window, and no price.
    assert (usage.used, usage.size, usage.cost) == (912, 128_000, None)
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.json()
    assert body["model"] == "gpt-fake"
    assert body["messages"][0]["role"] == "system"
    assert "Say hello." in body["messages"][-1]["content"]
    assert {tool["function"]["name"] for tool in body["tools"]} >= {"read", "write", "shell"}
    # The model reads which commands the person has, as sourced state.
    texts = " ".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))
    assert '<state source="session/commands">/help, /compact,' in texts


async def test_an_anthropic_model_streams_through_the_agent(
    tmp_path: Path, server: FakeProviderServer
):
    start = anthropic_event(
        "message_start",
        message={
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 700, "output_tokens": 1},
        },
    )
    end = anthropic_event(
        "message_delta",
        delta={"stop_reason": "end_turn", "stop_sequence": None},
        usage={"output_tokens": 5},
    ) + anthropic_event("message_stop")
    server.add(Exchange(chunks=[anthropic_stream(start, anthropic_text_block(0, "Hi", "!"), end)]))
    env = agent_env(
        ANTHROPIC_BASE_URL=server.base_url,
        ANTHROPIC_API_KEY=API_KEY,
        ACP_AGENT_MODEL="anthropic/claude-fake",
    )

    response, updates = await one_turn(tmp_path / "home", env, tmp_path)

    assert response.stop_reason == types.StopReason.END_TURN
    assert text_of_updates(updates) == "Hi!"
    usage = updates[-1]
    assert isinstance(usage, types.UsageUpdate)
    assert (usage.used, usage.size) == (705, 200_000)
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == API_KEY
    assert request.json()["model"] == "claude-fake"


async def test_a_tool_call_over_the_openai_wire_runs_and_its_result_goes_back(
    tmp_path: Path, server: FakeProviderServer
):
    call = {"id": "call_ls", "type": "function", "function": {"name": "shell", "arguments": ""}}
    server.add(
        Exchange(
            chunks=[
                openai_stream(
                    openai_chunk(
                        {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **call}]}
                    ),
                    openai_chunk(
                        {
                            "tool_calls": [
                                {"index": 0, "function": {"arguments": '{"command": "echo fr'}}
                            ]
                        }
                    ),
                    openai_chunk(
                        {"tool_calls": [{"index": 0, "function": {"arguments": 'om-the-tool"}'}}]}
                    ),
                    openai_chunk({}, "tool_calls"),
                    openai_chunk(usage=USAGE),
                )
            ]
        ),
        openai_text("It said so."),
    )

    response, updates = await one_turn(
        tmp_path / "home", openai_env(server.base_url), tmp_path, ["allow_once"]
    )

    assert response.stop_reason == types.StopReason.END_TURN
    assert calls_of(updates, "call_ls")[-1].status == types.ToolCallStatus.COMPLETED
    second = server.requests[1].json()
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_ls"
    assert "from-the-tool" in tool_message["content"]


def failure_meta(response: types.PromptResponse) -> dict[str, Any]:
    assert response.meta is not None
    error: dict[str, Any] = response.meta["acp-agent"]["error"]
    return error


async def test_a_rate_limited_provider_is_retried_then_reported(
    tmp_path: Path, server: FakeProviderServer
):
    server.add(
        *[openai_error(429, "Rate limit reached.", "rate_limit_exceeded", **{"retry-after": "0"})]
        * 4
    )

    response, updates = await one_turn(tmp_path / "home", openai_env(server.base_url), tmp_path)

    assert len(server.requests) == 4
    assert response.stop_reason == types.StopReason.END_TURN
    assert failure_meta(response)["kind"] == "rate_limited"
    assert text_of_updates(updates).startswith("The model request failed: openai answered 429")


async def test_a_stream_broken_mid_reply_keeps_what_arrived_and_says_it_is_incomplete(
    tmp_path: Path, server: FakeProviderServer
):
    body = openai_stream(
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Half a"}),
        done=False,
    )
    server.add(Exchange(chunks=[body], truncate=True))

    response, updates = await one_turn(tmp_path / "home", openai_env(server.base_url), tmp_path)

    assert response.stop_reason == types.StopReason.END_TURN
    assert failure_meta(response)["kind"] == "stream_broken"
    text = text_of_updates(updates)
    assert text.startswith("Half a\n\nThe model request failed: the openai reply broke off")
    assert "incomplete" in text


async def test_an_exceeded_context_window_ends_the_turn_with_max_tokens(
    tmp_path: Path, server: FakeProviderServer
):
    message = "This model's maximum context length is 128000 tokens."
    server.add(openai_error(400, message, "context_length_exceeded"))

    response, _ = await one_turn(tmp_path / "home", openai_env(server.base_url), tmp_path)

    assert response.stop_reason == types.StopReason.MAX_TOKENS
    assert failure_meta(response)["kind"] == "context_window"


async def test_a_refused_key_says_which_variable_to_fix(tmp_path: Path, server: FakeProviderServer):
    server.add(openai_error(401, "Incorrect API key provided.", "invalid_api_key"))

    response, updates = await one_turn(tmp_path / "home", openai_env(server.base_url), tmp_path)

    assert failure_meta(response)["kind"] == "authentication"
    assert "OPENAI_API_KEY" in text_of_updates(updates)


async def test_cancel_closes_the_provider_stream_at_once(
    tmp_path: Path, server: FakeProviderServer
):
    opening = openai_stream(
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Thinking"}),
        done=False,
    )
    server.add(Exchange(chunks=[opening], hold=True))
    async with running_agent(tmp_path / "home", env=openai_env(server.base_url)) as client:
        session_id = await client.new_session(tmp_path)
        turn = asyncio.create_task(client.prompt(session_id))
        await client.wait_for_update(session_id)
        started = time.monotonic()
        client.cancel(session_id)
        response = await asyncio.wait_for(turn, timeout=10)
        waited_s = time.monotonic() - started
        disconnected = await asyncio.to_thread(server.disconnected.wait, 5)

    assert response.stop_reason == types.StopReason.CANCELLED
    assert waited_s < CANCEL_BOUND_S
    assert disconnected
