"""Sessions outlive connections and servers: a server stopped, or killed, and started again.

Each test runs servers of its own over one home (a real SQLite file): stopping
one mid-turn records the turn as interrupted, as stopping the stdio agent
does; killing one (SIGKILL) mid-tool-run keeps the crash guarantees: the
session loads, the call is shown interrupted and never re-run, and the
command it ran does not outlive the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from protocol import types
from protocol.errors import PeerDisconnected
from tests.adapters.acp.support import calls_of
from tests.support import write_script
from tests.support.app_server import running_server, socket_client
from tests.support.messages import unnamed
from tests.support.processes import alive

pytestmark = pytest.mark.e2e

COMMAND = "echo $$ > pid.txt; echo ran >> counter.txt; sleep 30"


def stored_kinds(home: Path, session_id: str) -> list[str]:
    """The kinds of the session's main-line events, in order, read from the store."""
    with contextlib.closing(sqlite3.connect(home / "data" / "sessions.sqlite3")) as db:
        [(branch,)] = db.execute(
            "SELECT main_branch_id FROM sessions WHERE session_id = ?", (session_id,)
        )
        return [
            kind
            for (kind,) in db.execute(
                "SELECT kind FROM events WHERE branch_id = ? ORDER BY seq", (branch,)
            )
        ]


def has_content(path: Path) -> bool:
    return path.exists() and bool(path.read_text())


async def wait_for_file(path: Path) -> None:
    async with asyncio.timeout(10):
        while not has_content(path):  # noqa: ASYNC110 - a file, polled
            await asyncio.sleep(0.01)


async def test_stopping_the_server_mid_turn_records_the_turn_interrupted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = write_script(
        tmp_path / "script.json",
        [{"text": "Working"}, {"sleep_ms": 30000}, {"text": "never sent"}],
        [{"text": "After the restart."}],
    )
    async with (
        running_server(home, script=script) as server,
        socket_client(server.socket) as client,
    ):
        session_id = await client.new_session(tmp_path)
        turn = asyncio.create_task(client.prompt(session_id, "Hi"))
        await client.wait_for_update(session_id)
        status = await server.stop(signal.SIGTERM)
        with contextlib.suppress(PeerDisconnected):
            await asyncio.wait_for(turn, 10)
    assert status == 0
    kinds = stored_kinds(home, session_id)
    assert kinds[-1] == "turn.interrupted"
    assert "turn.ended" not in kinds

    async with (
        running_server(home, script=script) as server,
        socket_client(server.socket) as client,
    ):
        await client.load(session_id, tmp_path)
        replayed = unnamed(client.updates_for(session_id))
        response = await client.prompt(session_id, "Again")
    assert types.AgentMessageChunk(content=types.TextContent(text="Working")) in replayed
    assert types.AgentMessageChunk(content=types.TextContent(text="never sent")) not in replayed
    assert response.stop_reason == types.StopReason.END_TURN


async def test_killing_the_server_mid_tool_run_keeps_the_crash_guarantees(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    counter, pid_file = workspace / "counter.txt", workspace / "pid.txt"
    home = tmp_path / "home"
    script = write_script(
        tmp_path / "script.json",
        [
            {"text": "Counting."},
            {"tool_call": {"name": "shell", "arguments": {"command": COMMAND}, "id": "k1"}},
        ],
        [{"text": "After the restart."}],
    )
    try:
        async with (
            running_server(home, script=script) as server,
            socket_client(server.socket, check_wire=False) as client,
        ):
            client.answers = ["allow_once"]
            session_id = await client.new_session(workspace)
            turn = asyncio.create_task(client.prompt(session_id, "Go"))
            await wait_for_file(counter)
            status = await server.stop(signal.SIGKILL)
            with contextlib.suppress(PeerDisconnected):
                await asyncio.wait_for(turn, 10)
        assert status == -signal.SIGKILL
        # The server's reaper ends the command it started.
        command_pid = int(pid_file.read_text())
        async with asyncio.timeout(10):
            while alive(command_pid):  # noqa: ASYNC110 - /proc, polled
                await asyncio.sleep(0.05)

        async with (
            running_server(home, script=script) as server,
            socket_client(server.socket) as client,
        ):
            await client.load(session_id, workspace)
            replayed = list(client.updates_for(session_id))
            after = await client.prompt(session_id, "Go on")
            later = client.updates_for(session_id)[len(replayed) :]
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)

    # The call once, in its last state: failed, interrupted by the server's death.
    [call] = calls_of(replayed, "k1")
    assert call.status == types.ToolCallStatus.FAILED
    text = call.content[0].content.text  # type: ignore[index,union-attr]
    assert text.startswith("Interrupted: the agent stopped while this ran")
    assert after.stop_reason == types.StopReason.END_TURN
    assert types.AgentMessageChunk(content=types.TextContent(text="After the restart.")) in unnamed(
        later
    )
    assert calls_of(later, "k1") == []
    assert counter.read_text() == "ran\n"
