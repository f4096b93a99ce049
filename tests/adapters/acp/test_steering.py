"""Steering (`_session/steering`): a message sent during a turn joins it at a step boundary.

End to end through the stdio agent: the message reaches the turn's next model
request (the fake provider's request log says what the model was sent), is
shown once where the turn took it in, live and on `session/load`; a prompt
sent meanwhile is queued as a turn of its own; with no turn running the
answer is `promptRequired` and nothing happens; a turn cancelled before its
next request keeps the message on record. Every line is checked against the
schema on exit.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams, ResourceNotFound
from tests.adapters.acp.session_support import openai_text
from tests.support import EditorClient, openai_env, running_agent, write_script
from tests.support.fake_provider import Exchange, FakeProviderServer, openai_tool_calls

pytestmark = pytest.mark.e2e

STEERING = "_session/steering"


class HeldEditor(EditorClient):
    """An editor whose person answers permission questions only once `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.answers = ["allow_once"]

    async def _answer(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        self.asked.set()
        await self.release.wait()
        return await super()._answer(params)


def steering(session_id: str, text: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    if meta:
        params["_meta"] = meta
    return params


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user messages of an OpenAI request body, as text."""
    return [
        m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
        for m in body["messages"]
        if m["role"] == "user"
    ]


def conversation(updates: list[types.SessionUpdate]) -> list[tuple[str, str]]:
    """(kind, text or id) of the person's and the agent's messages and the tool calls."""
    shown = []
    for update in updates:
        if isinstance(update, types.UserMessageChunk):
            assert isinstance(update.content, types.TextContent)
            shown.append(("user", update.content.text))
        elif isinstance(update, types.AgentMessageChunk):
            assert isinstance(update.content, types.TextContent)
            shown.append(("agent", update.content.text))
        elif isinstance(update, types.ToolCall):
            shown.append(("tool", str(update.tool_call_id)))
    return shown


async def test_a_message_sent_during_a_tool_batch_reaches_the_next_request_once_in_place(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with FakeProviderServer() as server:
        server.add(
            openai_tool_calls(("call_ls", "shell", {"command": "ls"})),
            openai_text("Listed. En français : listé."),
            openai_text("Stopped."),
        )
        client = HeldEditor()
        async with running_agent(
            tmp_path / "home", env=openai_env(server.base_url), client=client
        ) as agent:
            session_id = await agent.new_session(workspace)
            first = asyncio.create_task(agent.prompt(session_id, "List the files."))
            await asyncio.wait_for(agent.asked.wait(), 10)  # the turn waits on its tool batch
            steered = await agent.request_raw(STEERING, steering(session_id, "Also in French."))
            # A prompt sent during the turn is queued, as a turn of its own.
            second = asyncio.create_task(agent.prompt(session_id, "Then stop."))
            agent.release.set()
            first_answer, second_answer = await first, await second
            live = agent.updates_for(session_id)
            replayed_from = len(agent.updates)
            await agent.load(session_id, workspace)
            replay = [n.update for n in agent.updates[replayed_from:]]
        bodies = [request.json() for request in server.requests]

    message_id = steered["result"]["_meta"]["acp-agent"]["messageId"]
    assert steered["result"] == {
        "outcome": "injected",
        "_meta": {"acp-agent": {"messageId": message_id}},
    }
    assert first_answer.stop_reason == second_answer.stop_reason == types.StopReason.END_TURN
    # The model's request after the tool batch reads it, after the result; not before.
    assert "Also in French." not in json.dumps(bodies[0])
    assert user_texts(bodies[1])[-1] == "Also in French."
    assert bodies[1]["messages"][-2]["role"] == "tool"
    assert user_texts(bodies[2])[-2:] == ["Also in French.", "Then stop."]
    # Shown once, live, where the turn took it in: after the tool call, before the reply.
    assert conversation(live) == [
        ("tool", "call_ls"),
        ("user", "Also in French."),
        ("agent", "Listed. En français : listé."),
        ("agent", "Stopped."),
    ]
    [chunk] = [u for u in live if isinstance(u, types.UserMessageChunk)]
    assert chunk.message_id == message_id
    # The queued prompt's turn began only once the first one was answered.
    kinds = [_wire_kind(m) for m in agent.messages]
    first_id = next(m["id"] for m in agent.sent_messages() if _is_prompt(m, "List the files."))
    assert kinds.index(f"response:{first_id}") < _index_of_text(agent.messages, "Stopped.")
    # A load replays it in the same place, once.
    assert conversation(replay) == [
        ("user", "List the files."),
        ("tool", "call_ls"),
        ("user", "Also in French."),
        ("agent", "Listed. En français : listé."),
        ("user", "Then stop."),
        ("agent", "Stopped."),
    ]


async def test_a_message_sent_during_the_last_reply_gets_one_more_request_in_the_turn(
    tmp_path: Path,
):
    replying = threading.Event()
    steered = threading.Event()

    def held_reply(body: Any) -> Exchange:
        replying.set()
        steered.wait(10)  # the reply ends once the test's message is queued
        return openai_text("All done.")

    with FakeProviderServer() as server:
        server.add(held_reply, openai_text("Sure: shorter."))
        async with running_agent(tmp_path / "home", env=openai_env(server.base_url)) as client:
            session_id = await client.new_session(tmp_path)
            turn = asyncio.create_task(client.prompt(session_id, "Write a poem."))
            await asyncio.to_thread(replying.wait, 10)
            answer = await client.request_raw(STEERING, steering(session_id, "Make it short."))
            steered.set()
            response = await turn
            live = client.updates_for(session_id)
        bodies = [request.json() for request in server.requests]

    assert answer["result"]["outcome"] == "injected"
    assert response.stop_reason == types.StopReason.END_TURN
    assert len(bodies) == 2  # one turn, two requests
    assert bodies[1]["messages"][-2:] == [
        {"role": "assistant", "content": "All done."},
        {"role": "user", "content": "Make it short."},
    ]
    assert conversation(live) == [
        ("agent", "All done."),
        ("user", "Make it short."),
        ("agent", "Sure: shorter."),
    ]


async def test_steering_with_no_turn_running_answers_prompt_required_and_does_nothing(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "First reply."}])
    async with running_agent(tmp_path / "home", script=script) as client:
        advertised = next(m for m in client.messages if m.get("id") == 1)["result"]["_meta"]
        session_id = await client.new_session(tmp_path)
        await client.wait_for_update(
            session_id, lambda update: isinstance(update, types.AvailableCommandsUpdate)
        )
        lines_before = len(client.received)
        idle = await client.request_raw(
            STEERING, steering(session_id, "Hello?", steering={"idleBehavior": "promptRequired"})
        )
        plain = await client.request_raw(STEERING, steering(session_id, "Hello again?"))
        said_after = client.received[lines_before:]
        bogus = await client.request_raw(
            STEERING, steering(session_id, "x", steering={"idleBehavior": "startNewTurn"})
        )
        empty = await client.request_raw(STEERING, {"sessionId": session_id, "prompt": []})
        unknown = await client.request_raw(STEERING, steering("sess_nope", "x"))
        answer = await client.prompt(session_id, "Hi")
        replay_from = len(client.updates)
        await client.load(session_id, tmp_path)
        replay = [n.update for n in client.updates[replay_from:]]

    assert advertised == {"steering": {"supported": True}}
    prompt_required = {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert idle["result"] == plain["result"] == prompt_required
    # Only the two answers: no update, no turn.
    assert [json.loads(line).get("method") for line in said_after] == [None, None]
    assert bogus["error"]["code"] == empty["error"]["code"] == InvalidParams.CODE
    assert unknown["error"]["code"] == ResourceNotFound.CODE
    # The next prompt is the session's first turn: it gets the first reply.
    assert answer.stop_reason == types.StopReason.END_TURN
    assert conversation(replay) == [("user", "Hi"), ("agent", "First reply.")]


async def test_a_turn_cancelled_before_its_next_request_keeps_the_message_on_record(
    tmp_path: Path,
):
    script = write_script(
        tmp_path / "s.json",
        [{"tool_call": {"name": "shell", "arguments": {"command": "ls"}, "id": "call_ls"}}],
        [{"text": "Later."}],
    )
    client = EditorClient(unstable=True)
    async with running_agent(tmp_path / "home", script=script, client=client, unstable=True):
        session_id = await client.new_session(tmp_path)
        turn = asyncio.create_task(client.prompt(session_id, "List."))
        await asyncio.wait_for(client.asked.wait(), 10)  # no answer: it waits for a cancel
        steered = await client.request_raw(STEERING, steering(session_id, "Never mind."))
        client.cancel(session_id)
        answer = await turn
        replay_from = len(client.updates)
        await client.load(session_id, tmp_path)
        replay = [n.update for n in client.updates[replay_from:]]
        # It belongs to its turn: not a prompt of its own, and no place to cut before.
        message_id = steered["result"]["_meta"]["acp-agent"]["messageId"]
        through_first = await fork(client, session_id, tmp_path, throughPrompt=1)
        before = await client.request_raw(
            methods.SESSION_FORK,
            {"sessionId": session_id, "cwd": str(tmp_path), "_meta": fork_meta(message_id)},
        )
        forked_from = len(client.updates)
        await client.load(through_first, tmp_path)
        forked = [n.update for n in client.updates[forked_from:]]

    assert steered["result"]["outcome"] == "injected"
    assert answer.stop_reason == types.StopReason.CANCELLED
    assert conversation(replay) == [
        ("user", "List."),
        ("tool", "call_ls"),
        ("user", "Never mind."),
    ]
    assert conversation(forked) == conversation(replay)
    assert before["error"]["code"] == InvalidParams.CODE


async def fork(client: EditorClient, session_id: str, cwd: Path, **meta: object) -> str:
    response = await client.request(
        methods.SESSION_FORK,
        types.ForkSessionRequest(session_id=session_id, cwd=str(cwd), meta={"acp-agent": meta}),
    )
    return str(response.session_id)


def fork_meta(message_id: str) -> dict[str, Any]:
    return {"acp-agent": {"beforeMessage": message_id}}


def _wire_kind(message: dict[str, Any]) -> str:
    if "id" in message and "method" not in message:
        return f"response:{message['id']}"
    return str(message.get("method"))


def _is_prompt(message: dict[str, Any], text: str) -> bool:
    if message.get("method") != methods.SESSION_PROMPT:
        return False
    return bool(message["params"]["prompt"][0]["text"] == text)


def _index_of_text(messages: list[dict[str, Any]], text: str) -> int:
    for index, message in enumerate(messages):
        content = ((message.get("params") or {}).get("update") or {}).get("content")
        if isinstance(content, dict) and content.get("text") == text:
            return index
    raise AssertionError(f"{text!r} was never shown")
