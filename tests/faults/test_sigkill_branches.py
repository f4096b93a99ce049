"""kill -9 while branches and commands work: nothing of ours outlives the agent, and every
later load shows each branch ended.

The main line starts a branch and a background job, then runs a command of its own;
the branch runs a command too. Once all three commands run, the agent is SIGKILLed
and nothing restarts it: within 5 s no process it started is alive, checked by pid
and start mark (its reaper included: it exits once its work is done), and no note of
them is left on disk. Then a new agent loads the session, twice over two starts: each
time the branch's row replays as failed, interrupted, with the reason, never left in
progress; `/branches` and `branch_status` say interrupted; the main line is told
once; no command ran again.

That one moment runs by default. With `ACP_AGENT_SLOW_TESTS=1` the matrix adds a
real MCP stdio server and a language server (`ruff server`, started by a write of a
Python file) to what must end, and kills at random moments after the prompt is sent
(some before a command started: the gate keeps a command that was not yet
registered from ever running).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from protocol import types
from tests.mcp.support import SERVERS
from tests.support import EditorClient, agent_env, running_agent, write_script
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


def script(tmp_path: Path, *, servers: bool = False) -> Path:
    # A Python file written first starts a language server (when code intelligence is on).
    write = [tool("write", path="app.py", content="x = 1\n")] if servers else []
    return write_script(
        tmp_path / "script.json",
        [
            *write,
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


def mcp_servers(servers: bool) -> list[types.McpServerStdio]:
    if not servers:
        return []
    stdio = types.McpServerStdio(
        name="tools", command=sys.executable, args=[str(SERVERS / "tools_server.py")], env=[]
    )
    return [stdio]


def _cases() -> list[Any]:
    cases = [
        pytest.param(None, False, id="commands-running"),
        pytest.param(None, True, id="commands-and-servers-running", marks=pytest.mark.slow),
    ]
    rng = random.Random("branches")
    for _ in range(4):
        delay = round(rng.uniform(0.0, 1.5), 3)
        cases.append(pytest.param(delay, True, id=f"after-{delay}s", marks=pytest.mark.slow))
    return cases


@pytest.mark.parametrize(("delay_s", "servers"), _cases())
async def test_kill_9_with_branches_working_leaves_nothing_running_and_they_replay_ended(
    tmp_path: Path, delay_s: float | None, servers: bool
):
    """`delay_s`: kill that long after the prompt is sent (None: once all commands run)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    database = home / "data" / "sessions.sqlite3"
    pid_files = [workspace / f"{name}.pid" for name in ("main", "branch", "job")]
    env = agent_env(ACP_AGENT_LSP="1" if servers else "0", ACP_AGENT_LSP_SETTLE_S="1")
    started: dict[int, str] = {}
    try:
        async with running_agent(
            home,
            script=script(tmp_path, servers=servers),
            env=env,
            client=EditorClient(decide=allow_all),
        ) as client:
            session_id = await client.new_session(workspace, mcp_servers(servers))
            agent = client.process
            assert agent is not None
            turn = asyncio.get_running_loop().create_task(client.prompt(session_id))
            turn.add_done_callback(lambda task: task.cancelled() or task.exception())
            if delay_s is None:
                await wait_for(lambda: all(p.exists() and p.read_text().strip() for p in pid_files))
                if servers:
                    for name in ("tools_server.py", "ruff server"):
                        await wait_for(lambda n=name: n in str(_commands(agent.pid)))  # type: ignore[misc]
            else:
                await asyncio.sleep(delay_s)
            started = descendants_of(agent.pid)
            commands = _commands(agent.pid)
            os.kill(agent.pid, signal.SIGKILL)
            await agent.wait()

        if delay_s is None:
            # Every command (and server), plus the reaper that ended them.
            assert len(started) >= len(pid_files) + 1 + (2 if servers else 0), commands
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
            async with running_agent(home, script=script(tmp_path, servers=servers)) as again:
                await again.load(session_id, workspace)
                replays.append(list(again.updates_for(session_id)))
                if start == 0 and delay_s is None:
                    await again.prompt(session_id, "/branches")
                    table = again.updates_for(session_id)[len(replays[0]) :]
                    await again.prompt(session_id, "What happened?")
                    asked = again.updates_for(session_id)[len(replays[0]) + len(table) :]
    finally:
        for pid in still_running(started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    for name in ("main", "branch", "job"):
        runs = workspace / f"{name}.runs"
        assert not runs.exists() or runs.read_text() == "ran\n"  # never run again
    for replay in replays:
        for row in branch_rows(replay).values():
            assert last_status(row) in ("completed", "failed"), row  # never left in progress
    if delay_s is not None:
        return  # how far it got varies; what holds at any moment is checked above
    for replay in replays:
        rows = branch_rows(replay)
        assert rows, "the branch was shown in the main line's turn"
        for row in rows.values():
            assert last_status(row) == "failed", row
            assert row[-1].meta["branch"]["state"] == "interrupted"
            assert "The agent stopped while it worked; it is not re-run." in row_text(row)
    assert "- worker: interrupted: the agent stopped while it worked; it is not re-run," in "".join(
        u.content.text for u in table if isinstance(u, types.AgentMessageChunk)
    )
    assert "worker': interrupted" in tool_result(asked, "Branch status")
    assert len(notifications_to_main(database)) == 1


def _commands(pid: int) -> dict[int, str]:
    """The command lines of the processes below `pid`."""
    found = {}
    for child in descendants_of(pid):
        with contextlib.suppress(OSError):
            found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return found
