"""`session/fork` (unstable): a new session with the history, the original left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams
from tests.adapters.acp.session_support import after, kinds
from tests.support import AcpTestClient, EditorClient, running_agent, write_script
from tests.support.messages import unnamed
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


def without_usage(updates: list[types.SessionUpdate]) -> list[types.SessionUpdate]:
    return [u for u in updates if not isinstance(u, types.UsageUpdate)]


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
    # The fork starts with the original's history, then goes its own way (a replay shows
    # the usage once, as it ended: the fork's is its own turn's).
    history = without_usage(before_fork)
    assert without_usage(fork_after)[: len(history)] == history
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
    assert unnamed(replayed)[0] == types.UserMessageChunk(content=types.TextContent(text="One"))
    assert too_far.value.message == (
        "Invalid params: _meta.acp-agent.throughPrompt: the session has 2 prompt(s)"
    )
    assert not_a_count.value.message == (
        "Invalid params: _meta.acp-agent.throughPrompt: must be a whole number >= 1"
    )


def message_id_of(answer: types.PromptResponse) -> str:
    """The person's message a prompt's answer names."""
    assert answer.meta is not None
    return str(answer.meta["acp-agent"]["messageId"])


def user_texts(updates: list[types.SessionUpdate]) -> list[str]:
    return [
        u.content.text
        for u in updates
        if isinstance(u, types.UserMessageChunk) and isinstance(u.content, types.TextContent)
    ]


async def test_a_fork_at_a_message_id_keeps_its_turn_or_what_came_before_it(tmp_path: Path):
    async with running_agent(
        tmp_path / "home", script=script_of(tmp_path), unstable=True
    ) as client:
        original = await client.new_session(tmp_path)
        one = await client.prompt(original, "One")
        first_turn = client.updates_for(original)
        two = await client.prompt(original, "Two")
        [reply_two] = {
            u.message_id
            for u in client.updates_for(original)[len(first_turn) :]
            if isinstance(u, types.AgentMessageChunk)
        }
        await client.prompt(original, "Three")
        assert reply_two is not None
        through_reply = await fork(client, original, tmp_path, throughMessage=reply_two)
        through_one = await fork(client, original, tmp_path, throughMessage=message_id_of(one))
        before_two = await fork(client, original, tmp_path, beforeMessage=message_id_of(two))
        before_one = await fork(client, original, tmp_path, beforeMessage=message_id_of(one))
        replays = {
            name: await replay_of(client, session_id, tmp_path)
            for name, session_id in [
                ("through_reply", through_reply),
                ("through_one", through_one),
                ("before_two", before_two),
                ("before_one", before_one),
            ]
        }
        # The message is sent anew in the fork that stopped before it.
        again = await client.prompt(before_two, "Two, said differently")
        errors: dict[str, InvalidParams] = {}
        for name, anchor in [
            ("before_a_reply", {"beforeMessage": reply_two}),
            ("unknown", {"throughMessage": "turn_nope"}),
            ("two_anchors", {"throughPrompt": 1, "throughMessage": message_id_of(one)}),
            ("not_an_id", {"beforeMessage": 5}),
        ]:
            with pytest.raises(InvalidParams) as caught:
                await fork(client, original, tmp_path, **anchor)
            errors[name] = caught.value

    assert user_texts(replays["through_reply"]) == ["One", "Two"]
    # A fork keeps the messages' ids: its replay is the original's first turn as it was live.
    assert replays["through_one"] == [
        types.UserMessageChunk(
            content=types.TextContent(text="One"), message_id=message_id_of(one)
        ),
        *first_turn,
    ]
    assert replays["before_two"] == replays["through_one"]
    assert replays["before_one"] == []
    assert again.stop_reason == types.StopReason.END_TURN
    assert message_id_of(again) != message_id_of(two)
    assert {name: error.message for name, error in errors.items()} == {
        "before_a_reply": (
            f"Invalid params: _meta.acp-agent.beforeMessage: {reply_two} is a reply, "
            "not a person's message"
        ),
        "unknown": "Invalid params: _meta.acp-agent.throughMessage: "
        "the session has no message turn_nope",
        "two_anchors": "Invalid params: _meta.acp-agent: must name one of "
        "throughPrompt, throughMessage, beforeMessage",
        "not_an_id": "Invalid params: _meta.acp-agent.beforeMessage: must be a message id",
    }
