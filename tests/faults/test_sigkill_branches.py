"""kill -9 while branches and commands work: nothing of ours outlives the agent, and every
later load shows each branch ended.

The main line starts a branch and a background job, then runs a command of its own;
the branch runs a command too (with `ACP_AGENT_SLOW_TESTS=1` a real MCP stdio server
runs as well). Once all three commands run, the agent is SIGKILLed and nothing
restarts it: within 5 s no process it started is alive, checked by pid and start
mark (its reaper included: it exits once its work is done), and no note of them is
left on disk. Then a new agent loads the session, twice over two starts: each time
the branch's row replays as failed, interrupted, with the reason, never left
in progress; `/branches` and `branch_status` say interrupted; the main line is told
once; the branch's command never ran again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from protocol import types
from tests.mcp.support import SERVERS
from tests.support import EditorClient, running_agent, write_script
from tests.support.editor_client import allow_all
from tests.support.processes import descendants_of, still_running

pytestmark = pytest.mark.e2e

#: How long a dead agent's processes may outlive it.
REAPED_WITHIN_S = 5.0
WAIT_S = 15.0


def command(name: str) -> str:
    """A command that notes its pid and a run, then works for a long time."""
    return f"echo $$ > {name}.pid; echo ran >> {name}.runs; sleep 120"


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


def script(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "script.json",
        [
            tool("branch", task="Run the worker", title="worker"),
            tool("shell", command=command("job"), background=True),
            tool("shell", command=command("main")),
        ],
        [tool("branch_status")],
        [{"text": "Noted."}],
        branches=[{"title": "worker", "replies": [[tool("shell", command=command("branch"))]]}],
    )


async def wait_for(condition: Any, timeout_s: float = WAIT_S) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110 - what we wait for is a file or a process
            await asyncio.sleep(0.02)


def branch_rows(updates: list[types.SessionUpdate]) -> dict[str, list[Any]]:
    """Each showing of a branch (a `tool_call` titled "Branch: ...") and its updates."""
    rows: dict[str, list[Any]] = {}
    for update in updates:
        if isinstance(update, types.ToolCall) and update.title.startswith("Branch: "):
            rows[update.tool_call_id] = [update]
        elif isinstance(update, types.ToolCallProgress) and update.tool_call_id in rows:
            rows[update.tool_call_id].append(update)
    return rows


def last_status(row: list[Any]) -> str:
    return [u.status.value for u in row if u.status is not None][-1]


def row_text(row: list[Any]) -> str:
    parts = [u for u in row if u.content][-1].content
    return "\n".join(p.content.text for p in parts if isinstance(p, types.Content))


def tool_result(updates: list[types.SessionUpdate], title: str) -> str:
    [call] = [u for u in updates if isinstance(u, types.ToolCall) and u.title == title]
    done = [
        u
        for u in updates
        if isinstance(u, types.ToolCallProgress) and u.tool_call_id == call.tool_call_id
    ]
    return row_text(done)


def notifications_to_main(database: Path) -> list[str]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        return [
            payload
            for (payload,) in db.execute(
                "SELECT payload FROM events WHERE kind = 'notification' ORDER BY seq"
            )
            if '"branch/' in payload
        ]


def mcp_servers() -> list[types.McpServerStdio]:
    if os.environ.get("ACP_AGENT_SLOW_TESTS") != "1":
        return []
    stdio = types.McpServerStdio(
        name="tools", command=sys.executable, args=[str(SERVERS / "tools_server.py")], env=[]
    )
    return [stdio]


async def test_kill_9_with_branches_working_leaves_nothing_running_and_they_replay_ended(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    database = home / "data" / "sessions.sqlite3"
    pid_files = [workspace / f"{name}.pid" for name in ("main", "branch", "job")]
    started: dict[int, str] = {}
    try:
        async with running_agent(
            home, script=script(tmp_path), client=EditorClient(decide=allow_all)
        ) as client:
            servers = mcp_servers()
            session_id = await client.new_session(workspace, servers)
            agent = client.process
            assert agent is not None
            turn = asyncio.get_running_loop().create_task(client.prompt(session_id))
            turn.add_done_callback(lambda task: task.cancelled() or task.exception())
            await wait_for(lambda: all(p.exists() and p.read_text().strip() for p in pid_files))
            if servers:
                await wait_for(lambda: "tools_server.py" in str(_commands(agent.pid)))
            started = descendants_of(agent.pid)
            commands = _commands(agent.pid)
            os.kill(agent.pid, signal.SIGKILL)
            await agent.wait()

        # Every command (and the MCP server), plus the reaper that ended them.
        assert len(started) >= len(pid_files) + 1 + len(servers), commands
        assert any("process_groups._reaper" in line for line in commands.values()), commands
        for pid_file in pid_files:
            assert int(pid_file.read_text()) in started
        with contextlib.suppress(TimeoutError):
            await wait_for(lambda: not still_running(started), REAPED_WITHIN_S)
        left = still_running(started)
        assert left == [], {pid: commands.get(pid) for pid in left}
        assert list((home / "data" / "jobs").glob("*.json")) == []

        replays = []
        for start in range(2):
            async with running_agent(home, script=script(tmp_path)) as again:
                await again.load(session_id, workspace)
                replays.append(list(again.updates_for(session_id)))
                if start == 0:
                    listed = await again.prompt(session_id, "/branches")
                    table = again.updates_for(session_id)[len(replays[0]) :]
                    await again.prompt(session_id, "What happened?")
                    asked = again.updates_for(session_id)[len(replays[0]) + len(table) :]
    finally:
        for pid in still_running(started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    for replay in replays:
        rows = branch_rows(replay)
        assert rows, "the branch was shown in the main line's turn"
        for row in rows.values():
            assert last_status(row) == "failed", row
            assert row[-1].meta["branch"]["state"] == "interrupted"
            assert "The agent stopped while it worked; it is not re-run." in row_text(row)
    assert listed.stop_reason == types.StopReason.END_TURN
    assert (
        "| worker | interrupted: the agent stopped while it worked; it is not re-run |"
        in "".join(u.content.text for u in table if isinstance(u, types.AgentMessageChunk))
    )
    assert "worker': interrupted" in tool_result(asked, "Branch status")
    assert len(notifications_to_main(database)) == 1
    for name in ("main", "branch", "job"):
        assert (workspace / f"{name}.runs").read_text() == "ran\n"  # never run again


def _commands(pid: int) -> dict[int, str]:
    """The command lines of the processes below `pid`."""
    found = {}
    for child in descendants_of(pid):
        with contextlib.suppress(OSError):
            found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return found
