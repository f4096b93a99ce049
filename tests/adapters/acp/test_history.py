"""History that survives the agent: restart the process, list the session, load it.

The live conversation (thoughts, text, tool calls with their final status and
content, plans, usage, the title) is recorded; a new process replays it before
answering `session/load`, and the replay equals what the editor saw live, with
the person's own messages in front of each turn. Real subprocesses, a real
SQLite file in the test's home.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import methods, types
from tests.adapters.acp.session_support import NOTES_TURNS, after, before, kinds
from tests.support import running_agent, write_script
from tests.support.conversation import shown

pytestmark = pytest.mark.e2e


#: The last reply, streamed a piece at a time.
PIECES = ["It ", "says: ", "remember ", "the ", "milk."]


def conversation_script(path: Path) -> Path:
    return write_script(
        path,
        *NOTES_TURNS,
        # Streamed in pieces far enough apart to be recorded one by one.
        [{"thought": "Easy."}, *[s for p in PIECES for s in ({"text": p}, {"sleep_ms": 20})]],
    )


def user(text: str, answer: types.PromptResponse) -> types.UserMessageChunk:
    """The replayed chunk of a person's message: named as the prompt's answer named it."""
    assert answer.meta is not None
    message_id = answer.meta["acp-agent"]["messageId"]
    return types.UserMessageChunk(content=types.TextContent(text=text), message_id=message_id)


async def test_a_restarted_agent_lists_the_session_and_its_replay_equals_the_live_stream(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("remember the milk\n")
    script = conversation_script(tmp_path / "conversation.json")
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_once"]
        first = await client.prompt(session_id, "Summarise notes.txt\nplease")
        second = await client.prompt(session_id, "What does it say?")
        live = client.session_updates_for(session_id)

    async with running_agent(home, script=script) as client:
        listed = await client.list_sessions(workspace)
        load = await client.request_raw(
            methods.SESSION_LOAD,
            {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []},
        )
        replayed = client.session_updates_for(session_id)
        messages = client.messages

    assert (first.stop_reason, second.stop_reason) == (types.StopReason.END_TURN,) * 2
    assert (workspace / "summary.txt").read_text() == "short"
    [info] = listed.sessions
    assert (info.session_id, info.cwd, info.title) == (
        session_id,
        str(workspace),
        "Summarise notes.txt",
    )
    # The live stream: commands after session/new, then each turn; the title after the first.
    commands, *turns = live
    assert isinstance(commands, types.AvailableCommandsUpdate)
    title_at = next(i for i, u in enumerate(turns) if isinstance(u, types.SessionInfoUpdate))
    assert turns[title_at] == types.SessionInfoUpdate(title="Summarise notes.txt")
    first_turn, second_turn = turns[: title_at + 1], turns[title_at + 1 :]
    assert kinds(first_turn) == [
        "agent_thought_chunk",
        "agent_message_chunk",
        "usage_update",  # the first reply ends with two calls: read and plan
        "tool_call",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "tool_call_update",
        "plan",
        "tool_call_update",
        "agent_message_chunk",
        "usage_update",  # the second reply ends with a write, allowed once
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",
        "usage_update",
        "session_info_update",
    ]
    # The replay shows what the live stream showed (the same message ids, the calls in their
    # last state), the person's messages in front of their turns, and the commands again at
    # the end (they never vanish after a reload).
    assert shown(replayed) == shown(
        [
            user("Summarise notes.txt\nplease", first),
            *first_turn,
            user("What does it say?", second),
            *second_turn,
            commands,
        ]
    )
    # In as few updates as that takes: a message in one chunk, a call once, in its last
    # state, the usage once (where it last grew).
    assert kinds(replayed) == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",  # read, completed
        "tool_call",  # plan, completed
        "plan",
        "agent_message_chunk",
        "tool_call",  # write, completed
        "agent_message_chunk",
        "session_info_update",
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "usage_update",
        "available_commands_update",
    ]
    assert [u.status for u in replayed if isinstance(u, types.ToolCall)] == [
        types.ToolCallStatus.COMPLETED
    ] * 3
    # A message that came in many chunks comes back whole, in one.
    pieces = [u for u in second_turn if isinstance(u, types.AgentMessageChunk)]
    assert len(pieces) > 1
    [whole] = [u for u in replayed if isinstance(u, types.AgentMessageChunk)][-1:]
    assert whole.content == types.TextContent(text="".join(PIECES))
    # All of it before the answer, which carries the settings; nothing after it.
    assert load["result"]["modes"]["currentModeId"] == "ask"
    assert before(messages, load["id"]).count("update:agent_message_chunk") == 4
    assert after(messages, load["id"]) == []


async def test_a_session_created_and_never_prompted_loads_and_resumes_after_a_restart(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "Hello."}])
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)

    async with running_agent(home, script=script) as client:
        loaded = await client.load(session_id, tmp_path)
        replayed = client.session_updates_for(session_id)
        response = await client.prompt(session_id, "Hi")
    async with running_agent(home, script=script) as client:
        resumed = await client.resume(session_id, tmp_path)
        again = await client.prompt(session_id, "Hi again")

    assert kinds(replayed) == ["available_commands_update"]
    assert loaded.modes is not None
    assert resumed.modes is not None
    assert (response.stop_reason, again.stop_reason) == (types.StopReason.END_TURN,) * 2


async def test_resume_reattaches_without_replay_and_sends_commands_and_title_after_its_answer(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "First."}], [{"text": "Second."}])
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)
        await client.prompt(session_id, "Name this session")

    async with running_agent(home, script=script) as client:
        resume = await client.request_raw(
            methods.SESSION_RESUME, {"sessionId": session_id, "cwd": str(tmp_path)}
        )
        await client.wait_until(lambda: len(client.session_updates_for(session_id)) == 2)
        after_resume = client.session_updates_for(session_id)
        await client.prompt(session_id, "Go on")
        messages = client.messages
        conversation = client.updates_for(session_id)

    assert "error" not in resume
    assert resume["result"]["configOptions"][0]["id"] == "mode"
    # Nothing of the session before the answer (no replay); its commands and title after.
    assert before(messages, resume["id"])[-1] == "response:1"  # only initialize before it
    assert kinds(after_resume) == ["available_commands_update", "session_info_update"]
    assert after_resume[1] == types.SessionInfoUpdate(title="Name this session")
    # The resumed session goes on with the script's next reply.
    assert [u.content.text for u in conversation if isinstance(u, types.AgentMessageChunk)] == [
        "Second."
    ]
