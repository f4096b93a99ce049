"""`session/fork` (unstable): a new session with the history, the original left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams
from tests.adapters.acp.session_support import after, kinds
from tests.support import AcpTestClient, EditorClient, running_agent, write_script
from tests.support.steps import initialize

pytestmark = pytest.mark.e2e


def script_of(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "s.json",
        [{"text": "First answer."}],
        [{"text": "Second answer."}],
        [{"text": "Third answer."}],
    )


async def fork(client: EditorClient, session_id: str, cwd: Path, **meta: object) -> str:
    response = await client.request(
        methods.SESSION_FORK,
        types.ForkSessionRequest(
            session_id=session_id, cwd=str(cwd), meta={"acp-agent": meta} if meta else None
        ),
    )
    return str(response.session_id)


async def replay_of(client: EditorClient, session_id: str, cwd: Path) -> list[types.SessionUpdate]:
    start = len(client.updates_for(session_id))
    await client.load(session_id, cwd)
    return client.updates_for(session_id)[start:]


async def test_fork_is_neither_advertised_nor_served_without_unstable(agent: AcpTestClient):
    response = await initialize(agent)
    raw = await agent.request_raw(
        methods.SESSION_FORK, {"sessionId": "sess_x", "cwd": "/tmp", "mcpServers": []}
    )

    assert response.agent_capabilities is not None
    assert response.agent_capabilities.session_capabilities is not None
    assert response.agent_capabilities.session_capabilities.fork is None
    assert raw["error"]["code"] == -32601


async def test_a_fork_has_the_history_and_settings_and_the_original_stays_unchanged(
    tmp_path: Path,
):
    home = tmp_path / "home"
    async with running_agent(home, script=script_of(tmp_path), unstable=True) as client:
        original = await client.new_session(tmp_path)
        await client.prompt(original, "Plan the release")
        await client.request(
            methods.SESSION_SET_MODE,
            types.SetSessionModeRequest(session_id=original, mode_id="plan"),
        )
        before_fork = await replay_of(client, original, tmp_path)
        raw = await client.request_raw(
            methods.SESSION_FORK, {"sessionId": original, "cwd": str(tmp_path)}
        )
        forked = raw["result"]["sessionId"]
        await client.wait_until(lambda: len(client.session_updates_for(forked)) == 2)
        announced = client.session_updates_for(forked)
        messages = client.messages
        in_fork = await client.prompt(forked, "Only in the fork")
        listed = await client.list_sessions()
    async with running_agent(home, script=script_of(tmp_path), unstable=True) as client:
        original_after = await replay_of(client, original, tmp_path)
        fork_after = await replay_of(client, forked, tmp_path)

    assert forked != original
    assert raw["result"]["modes"]["currentModeId"] == "plan"
    assert after(messages, raw["id"])[:2] == [
        "update:available_commands_update",
        "update:session_info_update",
    ]
    assert announced[1] == types.SessionInfoUpdate(title="Plan the release (fork)")
    assert in_fork.stop_reason == types.StopReason.END_TURN
    assert {s.session_id: s.title for s in listed.sessions} == {
        original: "Plan the release",
        forked: "Plan the release (fork)",
    }
    # The original is as it was before the fork, after a restart too.
    assert original_after == before_fork
    # The fork starts with the original's history, then goes its own way.
    assert fork_after[: len(before_fork)] == before_fork
    texts = [u.content.text for u in fork_after if isinstance(u, types.UserMessageChunk)]
    assert texts == ["Plan the release", "Only in the fork"]


async def test_a_fork_through_a_prompt_keeps_only_the_exchanges_up_to_it(tmp_path: Path):
    async with running_agent(
        tmp_path / "home", script=script_of(tmp_path), unstable=True
    ) as client:
        original = await client.new_session(tmp_path)
        await client.prompt(original, "One")
        await client.prompt(original, "Two")
        forked = await fork(client, original, tmp_path, throughPrompt=1)
        replayed = await replay_of(client, forked, tmp_path)
        with pytest.raises(InvalidParams) as too_far:
            await fork(client, original, tmp_path, throughPrompt=3)
        with pytest.raises(InvalidParams) as not_a_count:
            await fork(client, original, tmp_path, throughPrompt="one")

    assert kinds(replayed) == ["user_message_chunk", "agent_message_chunk", "usage_update"]
    assert replayed[0] == types.UserMessageChunk(content=types.TextContent(text="One"))
    assert too_far.value.message == (
        "Invalid params: _meta.acp-agent.throughPrompt: the session has 2 prompt(s)"
    )
    assert not_a_count.value.message == (
        "Invalid params: _meta.acp-agent.throughPrompt: must be a whole number >= 1"
    )
