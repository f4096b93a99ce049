"""`session/prompt`: the scripted reply streamed as updates, then the stop reason."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams, ResourceNotFound
from tests.support import AcpTestClient, agent_env, running_agent, write_script
from tests.support.messages import message_ids, unnamed
from tests.support.steps import initialize, new_session, prompt_request, text_of

pytestmark = pytest.mark.e2e

GREETING = [
    types.AgentThoughtChunk(content=types.TextContent(text="The user says hello.")),
    types.AgentMessageChunk(content=types.TextContent(text="Hello")),
    types.AgentMessageChunk(content=types.TextContent(text=", ")),
    types.AgentMessageChunk(content=types.TextContent(text="world.")),
]


def chunks(updates: list[types.SessionUpdate]) -> list[types.SessionUpdate]:
    """The message and thought chunks among `updates` (usage updates left out), without
    their message ids."""
    return unnamed([u for u in updates if not isinstance(u, types.UsageUpdate)])


async def test_prompt_streams_the_scripted_reply_in_order_before_ending_the_turn(
    agent: AcpTestClient,
):
    await initialize(agent)
    session_id = await new_session(agent)

    response = await agent.request(methods.SESSION_PROMPT, prompt_request(session_id))

    assert response.stop_reason == types.StopReason.END_TURN
    # The answer names the person's message; the reply's thought and text are one message.
    assert response.meta is not None
    assert response.meta["acp-agent"]["messageId"].startswith("turn_")
    updates = agent.updates_for(session_id)
    assert unnamed(updates[:-1]) == GREETING
    [reply_id] = {message_id for _, message_id in message_ids(updates)}
    assert str(reply_id).startswith("req_")
    # The reply's usage closes it: the context used, in the script's window.
    usage = updates[-1]
    assert isinstance(usage, types.UsageUpdate)
    assert (usage.size, usage.cost) == (200_000, None)
    assert 0 < usage.used < usage.size
    # On the wire, every update of the turn precedes the prompt's response.
    kinds = [_kind(m) for m in agent.messages]
    assert kinds[-6:] == ["update"] * 5 + ["response"]


async def test_each_prompt_of_a_session_gets_the_next_reply_and_the_last_one_repeats(
    agent: AcpTestClient,
):
    await initialize(agent)
    first, second = await new_session(agent), await new_session(agent)

    for _ in range(3):
        await agent.request(methods.SESSION_PROMPT, prompt_request(first))
    await agent.request(methods.SESSION_PROMPT, prompt_request(second))

    texts = [text_of(u) for u in chunks(agent.updates_for(first))]
    assert texts == [u.content.text for u in GREETING] + ["Second reply."] * 2
    # Each reply is a message of its own.
    replies = [
        i for kind, i in message_ids(agent.updates_for(first)) if kind == "agent_message_chunk"
    ]
    assert len(set(replies)) == 3
    assert chunks(agent.updates_for(second)) == GREETING


async def test_prompt_without_a_provider_is_answered_with_how_to_configure_one(
    unscripted_agent: AcpTestClient, tmp_path: Path
):
    await initialize(unscripted_agent)
    session_id = await new_session(unscripted_agent)

    response = await unscripted_agent.request(methods.SESSION_PROMPT, prompt_request(session_id))

    assert response.stop_reason == types.StopReason.END_TURN
    [update] = unscripted_agent.updates_for(session_id)
    assert isinstance(update, types.AgentMessageChunk)
    message = text_of(update)
    assert message.startswith("No model is configured.")
    for hint in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ACP_AGENT_MODEL",
        f"{tmp_path / 'home'}/config/config.toml",  # the fixture's home
        "--script",
        "Run `acp-agent doctor` to check the set-up.",
    ):
        assert hint in message


async def test_the_model_command_without_a_provider_points_to_doctor(
    unscripted_agent: AcpTestClient,
):
    await initialize(unscripted_agent)
    session_id = await new_session(unscripted_agent)

    await unscripted_agent.request(
        methods.SESSION_PROMPT, prompt_request(session_id, types.TextContent(text="/model"))
    )

    answers = [text_of(u) for u in unscripted_agent.updates_for(session_id)]
    assert (
        "No model is configured for this session. Run `acp-agent doctor` to check the set-up."
        in answers
    )


async def test_prompt_to_an_unknown_session_is_resource_not_found_naming_the_session(
    agent: AcpTestClient,
):
    await initialize(agent)

    with pytest.raises(ResourceNotFound) as caught:
        await agent.request(methods.SESSION_PROMPT, prompt_request("sess_nope"))

    assert caught.value.data == {"sessionId": "sess_nope"}


async def test_prompt_accepts_resource_links_and_embedded_resources(agent: AcpTestClient):
    await initialize(agent)
    session_id = await new_session(agent)
    blocks = [
        types.TextContent(text="Look at these"),
        types.ResourceLink(uri="file:///tmp/a.py", name="a.py"),
        types.EmbeddedResource(
            resource=types.TextResourceContents(uri="file:///tmp/b.py", text="print('b')")
        ),
    ]

    response = await agent.request(methods.SESSION_PROMPT, prompt_request(session_id, *blocks))

    assert response.stop_reason == types.StopReason.END_TURN


async def test_prompt_with_an_image_for_a_model_without_images_is_invalid_params(
    tmp_path: Path,
):
    env = agent_env(ACP_AGENT_MODEL="ollama/qwen3")  # a local model, without images
    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(tmp_path)
        image = types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
        text = types.TextContent(text="What is this?")

        with pytest.raises(InvalidParams) as caught:
            await client.request(methods.SESSION_PROMPT, prompt_request(session_id, text, image))

    assert caught.value.message == (
        "Invalid params: prompt[1]: the session's model ollama/qwen3 does not take images"
    )
    assert client.updates_for(session_id) == []


async def test_a_prompt_with_no_content_block_is_invalid_params_and_runs_no_turn(
    tmp_path: Path,
):
    script = write_script(tmp_path / "script.json", [{"text": "Hello."}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        empty = await client.request_raw(
            methods.SESSION_PROMPT, {"sessionId": session_id, "prompt": []}
        )
        updates = client.updates_for(session_id)
        # The one scripted reply is still there for a prompt that has something in it.
        answered = await client.prompt(session_id, "Hi")

    assert empty["error"] == {
        "code": InvalidParams.CODE,
        "message": "Invalid params: prompt: must be a non-empty array of content blocks",
    }
    assert not any(isinstance(u, types.AgentMessageChunk) for u in updates)
    assert answered.stop_reason == types.StopReason.END_TURN


async def test_prompt_with_missing_session_id_is_invalid_params_naming_the_field(
    agent: AcpTestClient,
):
    await initialize(agent)

    response = await agent.request_raw(methods.SESSION_PROMPT, {"prompt": []})

    assert response["error"]["code"] == InvalidParams.CODE
    assert response["error"]["message"] == "Invalid params: sessionId: required field missing"


async def test_a_second_prompt_on_a_busy_session_waits_for_the_first_turn_to_end(
    agent: AcpTestClient,
):
    await initialize(agent)
    session_id = await new_session(agent)

    first, second = await asyncio.gather(
        agent.request(methods.SESSION_PROMPT, prompt_request(session_id)),
        agent.request(methods.SESSION_PROMPT, prompt_request(session_id)),
    )

    assert first.stop_reason == second.stop_reason == types.StopReason.END_TURN
    turn_lines = [m for m in agent.messages if _kind(m) in ("update", "response")][-9:]
    # The first turn's five updates and response, then the second turn's.
    assert [_kind(m) for m in turn_lines] == ["update"] * 5 + ["response"] + ["update"] * 2 + [
        "response"
    ]
    assert _text_on_wire(turn_lines[6]) == "Second reply."


def _kind(message: dict[str, Any]) -> str:
    if message.get("method") == methods.SESSION_UPDATE:
        return "update"
    return "response" if "id" in message and "method" not in message else "other"


def _text_on_wire(message: dict[str, Any]) -> str:
    return str(message["params"]["update"]["content"]["text"])
