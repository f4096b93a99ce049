"""JSON nested too deeply never wedges a session: it is refused where it enters.

A message, a model's tool arguments or an MCP result nested a few hundred
levels deep used to raise `RecursionError` deep inside the agent: the turn
was never answered, and every later `session/load` of the session failed.
Now each edge refuses what nests deeper than 100 levels, naming the limit,
and a session an earlier version recorded with such input still loads.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from tests.adapters.acp.support import calls_of, text_of_updates
from tests.mcp.support import SERVERS
from tests.support import openai_env, running_agent, write_script
from tests.support.fake_provider import Exchange, FakeProviderServer, openai_chunk, openai_stream
from tests.support.messages import unnamed

pytestmark = pytest.mark.e2e

LIMIT_TEXT = "nested deeper than 100 levels (the limit)"
#: The sessions in `data/legacy_deep.sqlite3` (see `data/make_legacy_store.py`).
LEGACY_STORE = Path(__file__).parent / "data" / "legacy_deep.sqlite3"
LEGACY_META_SESSION = "sess_8a48ed8318d745e4a4f899242d057868"
LEGACY_ARGS_SESSION = "sess_ed99e5e847bc4391a54e7f4fc7287736"


def nested(depth: int) -> Any:
    """A JSON array nested `depth` levels: `[[...]]`."""
    return json.loads("[" * depth + "]" * depth)


def deep_arguments(depth: int = 326) -> str:
    return json.dumps({"path": "a.txt", "x": nested(depth)})


async def test_a_prompt_nested_too_deep_is_refused_naming_the_limit_and_nothing_is_stored(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "Fine."}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        block = {"type": "text", "text": "hi", "_meta": {"deep": nested(150)}}
        refused = await client.request_raw(
            "session/prompt", {"sessionId": session_id, "prompt": [block]}
        )
        after = await client.prompt(session_id, "Still there?")
        history = await client.request_raw(
            "session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []}
        )

    assert refused["error"]["code"] == -32602
    assert LIMIT_TEXT in refused["error"]["message"]
    assert after.stop_reason == types.StopReason.END_TURN
    # The refused prompt left nothing behind: the only prompt on record is the second one.
    assert "result" in history
    replayed = [
        u.content.text
        for u in client.updates_for(session_id)
        if isinstance(u, types.UserMessageChunk) and isinstance(u.content, types.TextContent)
    ]
    assert replayed == ["Still there?"]


async def test_a_line_too_deep_to_parse_is_an_invalid_request_and_the_agent_serves_on(
    tmp_path: Path,
):
    async with running_agent(tmp_path / "home") as client:
        line = '{"jsonrpc":"2.0","id":"deep","method":"session/list","params":{"x":'
        client.protocol.writer.write((line + "[" * 100_000 + "]" * 100_000 + "}}").encode())
        listed = await client.request_raw("session/list", {})
        rejected = [m for m in client.messages if "error" in m and m.get("id") is None]

    assert [m["error"]["code"] for m in rejected] == [-32600]
    assert LIMIT_TEXT in rejected[0]["error"]["message"]
    assert listed["result"]["sessions"] == []


async def test_a_notification_nested_too_deep_is_dropped_unanswered(tmp_path: Path):
    async with running_agent(tmp_path / "home") as client:
        session_id = await client.new_session(tmp_path)
        client.send_raw(
            {
                "jsonrpc": "2.0",
                "method": "session/cancel",
                "params": {"sessionId": session_id, "_meta": {"x": nested(150)}},
            }
        )
        listed = await client.request_raw("session/list", {})

    assert len(listed["result"]["sessions"]) == 1
    # Nothing answered the notification: every response is to one of our requests.
    ours = {m.get("id") for m in client.sent_messages()}
    assert all(m["id"] in ours for m in client.messages if "method" not in m)
    assert any("Dropped notification 'session/cancel'" in line for line in client.stderr_lines)


async def test_scripted_tool_arguments_nested_too_deep_get_an_error_result_and_the_turn_ends(
    tmp_path: Path,
):
    script = write_script(
        tmp_path / "s.json",
        [{"tool_call": {"name": "read", "arguments": deep_arguments(), "id": "deep"}}],
        [{"text": "I see."}],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        response = await client.prompt(session_id, "Read it.")
        updates = client.updates_for(session_id)

    assert response.stop_reason == types.StopReason.END_TURN
    call = calls_of(updates, "deep")
    assert [u.status for u in call] == [types.ToolCallStatus.PENDING, types.ToolCallStatus.FAILED]
    failed = call[-1].content[0].content.text  # type: ignore[index,union-attr]
    assert failed == f"Not run: the arguments are {LIMIT_TEXT}."
    assert "I see." in text_of_updates(updates)


async def test_provider_tool_arguments_nested_too_deep_reach_the_model_as_an_error_result(
    tmp_path: Path,
):
    call = {
        "index": 0,
        "id": "call_deep",
        "type": "function",
        "function": {"name": "read", "arguments": deep_arguments()},
    }
    with FakeProviderServer() as server:
        server.add(
            Exchange(
                chunks=[
                    openai_stream(
                        openai_chunk({"role": "assistant", "tool_calls": [call]}),
                        openai_chunk({}, "tool_calls"),
                    )
                ]
            ),
            Exchange(
                chunks=[
                    openai_stream(openai_chunk({"content": "Noted."}), openai_chunk({}, "stop"))
                ]
            ),
        )
        env = openai_env(server.base_url)
        async with running_agent(tmp_path / "home", env=env) as client:
            session_id = await client.new_session(tmp_path)
            response = await client.prompt(session_id, "Read it.")
        second = server.requests[1].json()

    assert response.stop_reason == types.StopReason.END_TURN
    [result] = [m for m in second["messages"] if m["role"] == "tool"]
    assert result["tool_call_id"] == "call_deep"
    assert result["content"] == f"Error: Not run: the arguments are {LIMIT_TEXT}."


async def test_an_mcp_result_nested_too_deep_is_an_error_result(tmp_path: Path):
    script = write_script(
        tmp_path / "s.json",
        [{"tool_call": {"name": "mcp__tools__deep", "arguments": {}, "id": "deep"}}],
        [{"text": "Done."}],
    )
    server = types.McpServerStdio(
        name="tools", command=sys.executable, args=[str(SERVERS / "tools_server.py")], env=[]
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        created = await client.request(
            methods.SESSION_NEW, types.NewSessionRequest(cwd=str(tmp_path), mcp_servers=[server])
        )
        session_id = str(created.session_id)
        client.answers = ["allow_once"]
        response = await client.prompt(session_id, "Go deep.")
        updates = client.updates_for(session_id)

    assert response.stop_reason == types.StopReason.END_TURN
    call = calls_of(updates, "deep")
    assert call[-1].status == types.ToolCallStatus.FAILED
    text = call[-1].content[0].content.text  # type: ignore[index,union-attr]
    assert text == f"The tool's structured result is {LIMIT_TEXT}; it was not used."


async def test_sessions_an_earlier_version_recorded_with_deep_input_load_and_go_on(
    tmp_path: Path,
):
    """The store 9e9b174 wrote (data/make_legacy_store.py): its loads failed with -32603."""
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    shutil.copy(LEGACY_STORE, home / "data" / "sessions.sqlite3")
    script = write_script(tmp_path / "s.json", [{"text": "Back."}])
    answers = {}
    async with running_agent(home, script=script) as client:
        for session_id in (LEGACY_META_SESSION, LEGACY_ARGS_SESSION):
            answers[session_id] = await client.request_raw(
                "session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []}
            )
        replays = {sid: list(client.updates_for(sid)) for sid in answers}
        prompts = {sid: await client.prompt(sid, "And now?") for sid in answers}

    for session_id, answer in answers.items():
        assert "result" in answer, (session_id, answer)
        assert prompts[session_id].stop_reason == types.StopReason.END_TURN
    # The prompt with the deep `_meta` is shown without it; its reply is intact.
    meta_replay = replays[LEGACY_META_SESSION]
    assert unnamed(meta_replay)[0] == types.UserMessageChunk(content=types.TextContent(text="hi"))
    assert "Fine." in text_of_updates(meta_replay)
    # The call whose arguments could never be shown is shown without them, with its outcome
    # (once, in its last state) and what it said.
    [call] = [
        u
        for u in replays[LEGACY_ARGS_SESSION]
        if isinstance(u, types.ToolCall | types.ToolCallProgress)
    ]
    assert isinstance(call, types.ToolCall)
    assert call.raw_input is None
    assert call.status == types.ToolCallStatus.FAILED  # a.txt was never there
    assert call.content is not None
    assert "a.txt" in call.content[0].content.text  # type: ignore[union-attr]
