"""Cancelling a turn wherever it is: in the model stream, in a tool run, in a question.

Each answers `cancelled` within the 1 s ACP promptness bound, after every update
of the turn, and leaves the timeline saying what happened.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from protocol import methods, types
from tests.adapters.acp.support import calls_of
from tests.support import EditorClient, running_agent, write_script
from tests.support.messages import unnamed

pytestmark = pytest.mark.e2e

#: ACP promptness bound for a cancelled turn to answer (stated by the issue).
CANCEL_BOUND_S = 1.0


def shell(command: str, call_id: str) -> dict[str, object]:
    return {"tool_call": {"name": "shell", "arguments": {"command": command}, "id": call_id}}


async def cancel_and_time(
    client: EditorClient, session_id: str, turn: asyncio.Task[types.PromptResponse]
) -> tuple[types.PromptResponse, float]:
    started = time.monotonic()
    client.cancel(session_id)
    response = await asyncio.wait_for(turn, timeout=10)
    return response, time.monotonic() - started


def assert_nothing_after_the_response(client: EditorClient) -> None:
    messages = client.messages
    response_at = max(
        i for i, m in enumerate(messages) if m.get("result", {}).get("stopReason") == "cancelled"
    )
    assert all(m.get("method") != methods.SESSION_UPDATE for m in messages[response_at:])


async def test_cancel_during_the_model_stream_answers_cancelled_and_keeps_what_arrived(
    tmp_path: Path,
):
    script = write_script(
        tmp_path / "slow.json",
        [{"text": "Working on it"}, {"sleep_ms": 30000}, {"text": "never sent"}],
    )
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)
        turn = asyncio.create_task(client.prompt(session_id))
        await client.wait_for_update(session_id)
        response, waited_s = await cancel_and_time(client, session_id, turn)
        await client.stop()
        assert_nothing_after_the_response(client)
    # What was streamed stays in the timeline: a new process replays it.
    async with running_agent(home, script=script) as client:
        await client.request(
            methods.SESSION_LOAD,
            types.LoadSessionRequest(session_id=session_id, cwd=str(tmp_path), mcp_servers=[]),
        )
        replayed = client.updates_for(session_id)

    assert response.stop_reason == types.StopReason.CANCELLED
    assert waited_s < CANCEL_BOUND_S
    assert unnamed(replayed) == [
        types.UserMessageChunk(content=types.TextContent(text="Go")),
        types.AgentMessageChunk(content=types.TextContent(text="Working on it")),
    ]


async def test_cancel_during_a_tool_run_interrupts_it_and_answers_cancelled(tmp_path: Path):
    script = write_script(tmp_path / "run.json", [shell("sleep 30", "s1")], [{"text": "next"}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        client.answers = ["allow_once"]
        turn = asyncio.create_task(client.prompt(session_id))
        await client.wait_for_update(
            session_id, lambda u: getattr(u, "status", None) == types.ToolCallStatus.IN_PROGRESS
        )
        response, waited_s = await cancel_and_time(client, session_id, turn)
        updates = client.updates_for(session_id)
        await client.stop()
        assert_nothing_after_the_response(client)

    assert response.stop_reason == types.StopReason.CANCELLED
    assert waited_s < CANCEL_BOUND_S
    last = calls_of(updates, "s1")[-1]
    assert last.status == types.ToolCallStatus.FAILED
    text = last.content[0].content.text  # type: ignore[index,union-attr]
    assert text.startswith("Interrupted: the turn was cancelled while this ran")


async def test_cancel_during_a_permission_question_settles_it_and_runs_nothing(tmp_path: Path):
    script = write_script(tmp_path / "ask.json", [shell("touch ran.txt", "p1")], [{"text": "next"}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        client.answers = [None]  # no answer until the cancel
        turn = asyncio.create_task(client.prompt(session_id))
        await asyncio.wait_for(client.asked.wait(), timeout=10)
        response, waited_s = await cancel_and_time(client, session_id, turn)
        updates = client.updates_for(session_id)
        await client.stop()
        assert_nothing_after_the_response(client)

    assert response.stop_reason == types.StopReason.CANCELLED
    assert waited_s < CANCEL_BOUND_S
    assert not (tmp_path / "ran.txt").exists()
    last = calls_of(updates, "p1")[-1]
    assert last.status == types.ToolCallStatus.FAILED
    text = last.content[0].content.text  # type: ignore[index,union-attr]
    assert text == "Not run: the turn was cancelled while you were being asked."


async def test_after_a_cancelled_turn_the_next_prompt_runs_normally(tmp_path: Path):
    script = write_script(
        tmp_path / "again.json",
        [{"text": "slow"}, {"sleep_ms": 30000}],
        [{"text": "The next turn."}],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        turn = asyncio.create_task(client.prompt(session_id))
        await client.wait_for_update(session_id)
        await cancel_and_time(client, session_id, turn)
        before = len(client.updates_for(session_id))
        response = await client.prompt(session_id)
        after = client.updates_for(session_id)[before:]

    assert response.stop_reason == types.StopReason.END_TURN
    assert unnamed(after)[0] == types.AgentMessageChunk(
        content=types.TextContent(text="The next turn.")
    )
