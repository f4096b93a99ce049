"""The app server's connections: each a client exactly as over stdio, on a shared runtime.

One real server per module (`acp-agent server` over its Unix socket, a real
SQLite store, the scripted model); clients are real socket connections.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from protocol import types
from protocol.errors import AcpError, PeerDisconnected
from tests.support import write_script
from tests.support.app_server import ServerProcess, SocketClient, running_server, socket_client
from tests.support.editor_client import allow_all

pytestmark = pytest.mark.e2e

#: Each session's first request streams, pauses, streams again: a turn to leave mid-way.
#: Its second prompt starts a branch (in `ask` mode, which asks first).
REPLIES = [
    [{"text": "Working"}, {"sleep_ms": 600}, {"text": " on it."}],
    [{"tool_call": {"name": "branch", "arguments": {"task": "Look around", "title": "look"}}}],
    [{"text": "Started it."}],
]
BRANCHES = [{"title": "look", "replies": [[{"text": "Looked."}]]}]


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServerProcess]:
    home = tmp_path_factory.mktemp("server-home")
    script = write_script(home / "script.json", *REPLIES, branches=BRANCHES)
    async with running_server(home, script=script) as running:
        yield running


def texts(updates: list[types.SessionUpdate]) -> str:
    return "".join(
        update.content.text
        for update in updates
        if isinstance(update, types.AgentMessageChunk)
        and isinstance(update.content, types.TextContent)
    )


async def test_a_socket_connection_is_an_acp_client_as_over_stdio(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with socket_client(server.socket) as client:
        session_id = await client.new_session(tmp_path)
        response = await client.prompt(session_id, "Hi")

        assert response.stop_reason == types.StopReason.END_TURN
        assert texts(client.updates_for(session_id)) == "Working on it."


async def test_the_socket_is_private_to_its_owner(server: ServerProcess) -> None:
    folder = os.stat(server.socket.parent)
    socket = os.lstat(server.socket)

    assert stat.S_ISSOCK(socket.st_mode)
    assert stat.S_IMODE(socket.st_mode) == 0o600
    assert stat.S_IMODE(folder.st_mode) == 0o700


async def test_a_client_that_did_not_attach_gets_nothing_of_another_clients_turn(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with socket_client(server.socket) as first, socket_client(server.socket) as second:
        session_id = await first.new_session(tmp_path)
        await second.load(session_id, tmp_path)
        seen_before = len(second.received)

        await first.prompt(session_id, "Hi")
        await anyio.sleep(0.2)  # anything wrongly sent would have arrived by now

        assert second.received[seen_before:] == []
        # Another client's turn reaches it at its next load.
        await second.load(session_id, tmp_path)
        assert texts(second.updates_for(session_id)).endswith("Working on it.")


async def test_a_client_leaving_mid_turn_leaves_the_turn_running(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with socket_client(server.socket) as first:
        session_id = await first.new_session(tmp_path)

        async def prompt() -> None:
            with contextlib.suppress(PeerDisconnected):
                await first.prompt(session_id, "Hi")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(prompt)
            await first.wait_for_update(session_id)  # "Working": the turn runs
            await first.stop()  # gone, as an editor that quits: no cancel sent
    # `first` has left mid-turn; the turn finishes on the server.
    async with socket_client(server.socket) as later:
        with anyio.fail_after(10):
            while True:
                later.updates.clear()
                await later.load(session_id, tmp_path)
                if texts(later.updates_for(session_id)).endswith("Working on it."):
                    break
                await anyio.sleep(0.1)
        stored = [json.loads(line) for line in later.received]
        assert not any(m.get("error") for m in stored)


async def test_each_client_sees_branches_as_it_negotiated_them(
    server: ServerProcess, tmp_path: Path
) -> None:
    # A session on the server belongs to no client: a client that never attached sees
    # branches as rows of its turns, even one that takes subagents; an attached client
    # that takes them gets each branch as a child session (live, and in a replay from the
    # start); an attached observer that does not take them still sees the rows.
    subagents = types.ClientCapabilities(subagents=types.SubagentCapabilities())
    async with (
        socket_client(server.socket, capabilities=subagents, decide=allow_all) as editor,
        socket_client(server.socket, capabilities=subagents) as lanes,
        socket_client(server.socket) as rows,
    ):
        session_id = await editor.new_session(tmp_path)
        await editor.prompt(session_id, "Hi")
        await lanes.attach(session_id, role="observer")
        await rows.attach(session_id, role="observer")
        await editor.prompt(session_id, "Look around in a branch")

        def branch_rows(client: SocketClient) -> list[types.ToolCall]:
            return [
                update
                for update in client.updates_for(session_id)
                if isinstance(update, types.ToolCall) and update.title == "Branch: look"
            ]

        assert len(branch_rows(editor)) == 1
        assert not [n for n in editor.updates if n.session_id != session_id]
        await rows.wait_until(lambda: len(branch_rows(rows)) == 1)
        assert not [n for n in rows.updates if n.session_id != session_id]

        [child_id] = await _child_of(lanes, session_id)
        assert branch_rows(lanes) == []
        # Its own updates on its id, its report as a message to the parent, its state idle.
        await lanes.wait_until(lambda: texts(lanes.updates_for(child_id)) == "Looked.")
        await lanes.wait_until(lambda: _states(lanes, session_id, child_id)[-1:] == ["idle"])
        report = [
            u
            for u in lanes.updates_for(session_id)
            if isinstance(u, types.SessionMessage) and u.sender_session_id == child_id
        ]
        assert [b.text for b in report[0].content or [] if isinstance(b, types.TextContent)] == [
            "Looked."
        ]
        # A child's id takes no prompt (only session/cancel).
        with pytest.raises(AcpError):
            await lanes.request(
                "session/prompt",
                types.PromptRequest(session_id=child_id, prompt=[types.TextContent(text="Hi")]),
            )

        # A client attaching now gets the child in its replay, after the parent's.
        async with socket_client(server.socket, capabilities=subagents) as late:
            await late.attach(session_id, role="observer", replay="start")
            assert await _child_of(late, session_id) == [child_id]
            assert texts(late.updates_for(child_id)) == "Looked."
            assert branch_rows(late) == []


async def _child_of(client: SocketClient, session_id: str) -> list[str]:
    """The children announced on `session_id` (`subagent_update`), once there is one."""

    def announced() -> list[str]:
        found: list[str] = []
        for update in client.session_updates_for(session_id):
            if isinstance(update, types.SubagentUpdate) and update.session_id not in found:
                found.append(str(update.session_id))
        return found

    await client.wait_until(lambda: bool(announced()))
    return announced()


def _states(client: SocketClient, session_id: str, child_id: str) -> list[str]:
    return [
        update.state.state
        for update in client.session_updates_for(session_id)
        if isinstance(update, types.SubagentUpdate)
        and update.session_id == child_id
        and update.state is not None
    ]
