"""Sessions from the editor's side: new, list, close and delete, and what goes when.

Real subprocesses over real pipes, a real SQLite file in the test's home; the
wire is checked against the schema when each agent stops.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path

import pytest

from acp_agent.adapters.acp import PAGE_SIZE
from protocol import methods, types
from protocol.errors import AcpError, InvalidParams, ResourceNotFound
from tests.adapters.acp.session_support import after, before, kinds
from tests.support import agent_env, running_agent, write_script

pytestmark = pytest.mark.e2e


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return write_script(tmp_path / "s.json", [{"text": "Hello."}])


async def test_a_new_sessions_commands_follow_its_answer_never_precede_it(
    tmp_path: Path, script: Path
):
    async with running_agent(tmp_path / "home", script=script) as client:
        new = await client.request_raw(
            methods.SESSION_NEW, {"cwd": str(tmp_path), "mcpServers": []}
        )
        session_id = new["result"]["sessionId"]
        await client.wait_until(lambda: len(client.session_updates_for(session_id)) == 1)
        messages = client.messages

    assert before(messages, new["id"]) == ["response:1"]  # initialize, nothing of the session
    assert after(messages, new["id"]) == ["update:available_commands_update"]
    [update] = client.session_updates_for(session_id)
    assert isinstance(update, types.AvailableCommandsUpdate)
    names = [command.name for command in update.available_commands]
    assert names[:7] == ["help", "compact", "model", "mode", "permissions", "rules", "title"]
    # Every answer carries the complete settings: the modes and the config options.
    result = new["result"]
    assert result["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in result["modes"]["availableModes"]] == [
        "sandboxed",
        "ask",
        "accept-edits",
        "plan",
        "bypass",
    ]
    assert [(o["id"], o["category"], o["currentValue"]) for o in result["configOptions"]] == [
        ("mode", "mode", "ask"),
        ("model", "model", "scripted/s"),
        ("thought_level", "thought_level", "default"),
    ]


async def test_sessions_list_newest_first_with_titles_iso_times_and_a_cwd_filter(
    tmp_path: Path, script: Path
):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    started = time.time()
    async with running_agent(tmp_path / "home", script=script) as client:
        older = await client.new_session(here)
        elsewhere = await client.new_session(there)
        await asyncio.sleep(1.1)  # the store orders by recency in steps of about a second
        await client.prompt(older, "Fix the parser")
        everything = await client.list_sessions()
        only_here = await client.list_sessions(here)
        nowhere = await client.list_sessions(tmp_path / "nowhere")

    assert [s.session_id for s in everything.sessions] == [older, elsewhere]
    assert everything.next_cursor is None
    first = everything.sessions[0]
    assert (first.cwd, first.title) == (str(here), "Fix the parser")
    assert everything.sessions[1].title is None
    updated = datetime.datetime.fromisoformat(str(first.updated_at).replace("Z", "+00:00"))
    assert str(first.updated_at).endswith("Z")
    assert started - 1 <= updated.timestamp() <= time.time() + 1
    assert [s.session_id for s in only_here.sessions] == [older]
    assert nowhere.sessions == []


async def test_sessions_list_in_pages_whose_cursors_lose_and_repeat_nothing(
    tmp_path: Path, script: Path
):
    async with running_agent(tmp_path / "home", script=script) as client:
        created = {await client.new_session(tmp_path) for _ in range(PAGE_SIZE + 3)}
        first = await client.list_sessions(tmp_path)
        assert first.next_cursor is not None
        second = await client.list_sessions(tmp_path, cursor=first.next_cursor)
        with pytest.raises(InvalidParams) as caught:
            await client.list_sessions(tmp_path, cursor="not-a-cursor")

    assert len(first.sessions) == PAGE_SIZE
    assert len(second.sessions) == 3
    assert second.next_cursor is None
    listed = [s.session_id for s in [*first.sessions, *second.sessions]]
    assert set(listed) == created
    assert len(listed) == len(created)
    assert caught.value.message == "Invalid params: cursor: not a cursor from session/list"


async def test_close_cancels_the_running_prompt_which_answers_first_then_unloads(
    tmp_path: Path,
):
    script = write_script(tmp_path / "slow.json", [{"text": "Working"}, {"sleep_ms": 30000}])
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)
        turn = asyncio.create_task(client.prompt(session_id))
        await client.wait_for_update(session_id)
        close = await client.request_raw(methods.SESSION_CLOSE, {"sessionId": session_id})
        prompt = await asyncio.wait_for(turn, timeout=5)
        messages = client.messages
        with pytest.raises(ResourceNotFound):
            await client.prompt(session_id)
        again = await client.request_raw(methods.SESSION_CLOSE, {"sessionId": session_id})
        # Closed here, not gone: it loads again, its cancelled turn recorded.
        live = len(client.updates_for(session_id))
        await client.load(session_id, tmp_path)
        replayed = client.updates_for(session_id)[live:]

    assert close["result"] == {}
    assert again["result"] == {}
    assert prompt.stop_reason == types.StopReason.CANCELLED
    prompt_answer = next(
        i for i, m in enumerate(messages) if m.get("result", {}).get("stopReason") == "cancelled"
    )
    close_answer = next(i for i, m in enumerate(messages) if m.get("id") == close["id"])
    assert prompt_answer < close_answer
    assert all(m.get("method") != methods.SESSION_UPDATE for m in messages[prompt_answer:])
    assert kinds(replayed) == ["user_message_chunk", "agent_message_chunk"]


async def test_a_deleted_session_is_gone_from_lists_and_loads_and_unknown_ids_delete_quietly(
    tmp_path: Path, script: Path
):
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        kept = await client.new_session(tmp_path)
        deleted = await client.new_session(tmp_path)
        await client.prompt(deleted, "Soon gone")
        response = await client.request_raw(methods.SESSION_DELETE, {"sessionId": deleted})
        unknown = await client.request_raw(methods.SESSION_DELETE, {"sessionId": "sess_nope"})
        listed = await client.list_sessions()
        with pytest.raises(ResourceNotFound):
            await client.prompt(deleted)
    async with running_agent(home, script=script) as client:
        after_restart = await client.list_sessions()
        with pytest.raises(ResourceNotFound) as caught:
            await client.load(deleted, tmp_path)

    assert response["result"] == {}
    assert unknown["result"] == {}
    assert [s.session_id for s in listed.sessions] == [kept]
    assert [s.session_id for s in after_restart.sessions] == [kept]
    assert caught.value.data == {"sessionId": deleted}


async def test_list_with_a_relative_cwd_is_invalid_params(tmp_path: Path, script: Path):
    async with running_agent(tmp_path / "home", script=script) as client:
        response = await client.request_raw(methods.SESSION_LIST, {"cwd": "relative"})

    assert response["error"] == {
        "code": InvalidParams.CODE,
        "message": "Invalid params: cwd: must be an absolute path",
    }


async def test_the_title_comes_after_the_first_exchange_before_its_answer_and_nothing_after(
    tmp_path: Path, script: Path
):
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        first = await client.request_raw(
            methods.SESSION_PROMPT,
            {
                "sessionId": session_id,
                "prompt": [{"type": "text", "text": "  Sort the imports\nin every module"}],
            },
        )
        second = await client.request_raw(
            methods.SESSION_PROMPT,
            {"sessionId": session_id, "prompt": [{"type": "text", "text": "Another"}]},
        )
        await client.stop()  # everything the agent will ever write is on the wire now
        messages = client.messages

    assert before(messages, first["id"])[-2:] == [
        "update:usage_update",
        "update:session_info_update",
    ]
    assert after(messages, first["id"])[0] == "update:agent_message_chunk"  # the next turn's
    assert "update:session_info_update" not in before(messages, second["id"])[-3:]
    assert after(messages, second["id"]) == []
    titles = [
        u for u in client.session_updates_for(session_id) if isinstance(u, types.SessionInfoUpdate)
    ]
    assert titles == [types.SessionInfoUpdate(title="Sort the imports")]


async def test_a_loaded_session_whose_model_is_gone_says_so_when_prompted(
    tmp_path: Path, script: Path
):
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)
    env = agent_env(ACP_AGENT_MODEL="ollama/qwen3")  # another model; the script is not loaded
    async with running_agent(home, env=env) as client:
        await client.load(session_id, tmp_path)
        response = await client.prompt(session_id, "Still there?")
        [update] = client.updates_for(session_id)

    assert response.stop_reason == types.StopReason.END_TURN
    assert isinstance(update, types.AgentMessageChunk)
    message = update.content.text  # type: ignore[union-attr]
    assert message.startswith("model 'scripted/s' is a script that is not loaded")
    assert response.meta is not None
    assert response.meta["acp-agent"]["error"] == {"kind": "not_configured", "message": message}


async def test_a_store_that_cannot_open_answers_session_new_with_an_error_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    # The database path is a directory: SQLite cannot open it (while the
    # capabilities are being assembled, since the two overlap).
    (home / "data" / "sessions.sqlite3").mkdir()
    async with running_agent(home, env=agent_env()) as client:
        for _ in range(2):  # asked again, it answers again: nothing is left waiting
            with pytest.raises(AcpError, match="the session store could not be opened"):
                await client.new_session(tmp_path)
        listed = await client.request_raw(methods.SESSION_LIST, {})
        assert listed["error"]["code"] == -32603


async def test_a_session_whose_workspace_is_missing_loads_read_only_saying_why(
    tmp_path: Path, script: Path
):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(work)
        await client.prompt(session_id, "First")
    work.rmdir()  # another machine, without the checkout

    async with running_agent(home, script=script) as client:
        await client.load(session_id, work)
        replayed = len(client.updates_for(session_id))
        refused = await client.prompt(session_id, "Second")
        said = client.updates_for(session_id)[replayed:]
        work.mkdir()  # the checkout is back: turns run again
        answered = await client.prompt(session_id, "Third")
    async with running_agent(home, script=script) as client:
        await client.load(session_id, work)
        people = [
            u.content.text  # type: ignore[union-attr]
            for u in client.updates_for(session_id)
            if isinstance(u, types.UserMessageChunk)
        ]

    assert refused.stop_reason == types.StopReason.END_TURN
    assert refused.meta is not None
    error = refused.meta["acp-agent"]["error"]
    assert error["kind"] == "read_only"
    assert f"its workspace {work} is not on this machine" in error["message"]
    [message] = [u for u in said if isinstance(u, types.AgentMessageChunk)]
    assert message.content.text.startswith("This message was not sent: its workspace")  # type: ignore[union-attr]
    assert answered.meta is None or "error" not in answered.meta.get("acp-agent", {})
    assert people == ["First", "Third"]  # the refused prompt was never recorded
