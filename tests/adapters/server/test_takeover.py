"""Two app servers on one PostgreSQL store: one holds a session, the other takes it over.

Separate processes and homes, one database (a throwaway cluster's), one
workspace both can see (the same files at the same path, as takeover needs).
Server A runs a command in the session; server B is refused the session and
told who holds it; A is killed (SIGKILL) mid-command; once A's lease is gone
(its connection dropped, its heartbeat stale after the short lease timeout
set here) B loads the session, shows the call interrupted, never runs it
again, and the session goes on; B, whose disk never held A's checkpoints,
rewinds A's first turn from those the store keeps; a background job A
started is shown ended (interrupted, with the output it printed on A, which A
kept in the store while it ran), never run again. (B reading the whole of a
result A cut to its budget is tested in `tests/capabilities/test_result_budget.py`:
a big result needs an MCP server, whose start would quadruple this test's time.)
Without PostgreSQL's programs it skips, saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from protocol import methods, types
from protocol.errors import PeerDisconnected
from tests.adapters.acp.support import calls_of
from tests.support import agent_env, write_script
from tests.support.app_server import running_server, socket_client
from tests.support.messages import unnamed
from tests.support.postgres import fresh_database, skip_without_postgres
from tests.support.processes import alive

pytestmark = pytest.mark.e2e

COMMAND = "echo $$ > pid.txt; echo ran >> counter.txt; sleep 30"
#: A background job: it prints, then runs on until A is killed (its reaper ends it).
JOB = "echo printed on A; echo job >> jobs.txt; sleep 30"
WRITE = {"path": "notes.txt", "content": "rewritten on A\n"}
REWIND = "_acp-agent/rewind"
#: Short, so the test does not wait long for the dead holder's lease to lapse.
LEASE_TIMEOUT_S = "2"


@pytest.fixture
def store_url() -> Iterator[str]:
    cluster = skip_without_postgres(pytest.skip)
    with fresh_database(cluster) as url:
        yield url


def has_content(path: Path) -> bool:
    return path.exists() and bool(path.read_text())


async def job_output_kept(url: str) -> None:
    """Until A has kept its job's output so far in the store."""
    async with asyncio.timeout(10), await psycopg.AsyncConnection.connect(url) as db:
        while True:
            cursor = await db.execute("SELECT 1 FROM session_outputs WHERE key LIKE 'job/%'")
            if await cursor.fetchone() is not None:
                return
            await asyncio.sleep(0.1)


async def wait_for_file(path: Path) -> None:
    async with asyncio.timeout(10):
        while not has_content(path):  # noqa: ASYNC110 - a file, polled
            await asyncio.sleep(0.01)


async def test_a_second_server_is_refused_then_takes_over_when_the_holder_is_killed(
    tmp_path: Path, store_url: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    counter, pid_file = workspace / "counter.txt", workspace / "pid.txt"
    notes = workspace / "notes.txt"
    notes.write_text("as it was\n")
    script = write_script(
        tmp_path / "script.json",
        [{"tool_call": {"name": "read", "arguments": {"path": "notes.txt"}, "id": "r1"}}],
        [{"tool_call": {"name": "write", "arguments": WRITE, "id": "w1"}}],
        [{"text": "Written."}],
        [{"tool_call": {"name": "shell", "arguments": {"command": JOB, "background": True}}}],
        [{"text": "A job runs."}],
        [
            {"text": "Counting."},
            {"tool_call": {"name": "shell", "arguments": {"command": COMMAND}, "id": "k1"}},
        ],
        [{"text": "Taken over."}],
    )
    env = {
        **agent_env(),
        "ACP_AGENT_STORE": store_url,
        "ACP_AGENT_STORE_LEASE_TIMEOUT_S": LEASE_TIMEOUT_S,
    }
    load = {"cwd": str(workspace), "mcpServers": []}
    try:
        async with (
            running_server(tmp_path / "home-b", script=script, env=env) as server_b,
            socket_client(server_b.socket) as client_b,
        ):
            async with (
                running_server(tmp_path / "home-a", script=script, env=env) as server_a,
                socket_client(server_a.socket, check_wire=False) as client_a,
            ):
                client_a.answers = ["allow_once"] * 3
                session_id = await client_a.new_session(workspace)
                first = await client_a.prompt(session_id, "Write")
                written = notes.read_text()
                await client_a.prompt(session_id, "Start a job")
                await wait_for_file(workspace / "jobs.txt")
                await job_output_kept(store_url)
                turn = asyncio.create_task(client_a.prompt(session_id, "Go"))
                await wait_for_file(counter)

                refused = await client_b.request_raw(
                    methods.SESSION_LOAD, {"sessionId": session_id, **load}
                )
                holder = server_a.process.pid

                status = await server_a.stop(signal.SIGKILL)
                with contextlib.suppress(PeerDisconnected):
                    await asyncio.wait_for(turn, 10)
            # A's reaper ends the command A started.
            command_pid = int(pid_file.read_text())
            async with asyncio.timeout(10):
                while alive(command_pid):  # noqa: ASYNC110 - /proc, polled
                    await asyncio.sleep(0.05)

            loaded = await take_over(client_b, session_id, load)
            replayed = list(client_b.updates_for(session_id))
            after = await client_b.prompt(session_id, "Go on")
            later = client_b.updates_for(session_id)[len(replayed) :]
            assert first.meta is not None
            rewound = await client_b.request_raw(
                REWIND, {"sessionId": session_id, "messageId": first.meta["acp-agent"]["messageId"]}
            )
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)

    assert status == -signal.SIGKILL
    assert "error" in refused, refused
    assert f"pid {holder} on " in refused["error"]["message"]
    assert "result" in loaded, loaded
    # The call once, in its last state: failed, interrupted by the holder's death.
    [call] = calls_of(replayed, "k1")
    assert call.status == types.ToolCallStatus.FAILED
    text = call.content[0].content.text  # type: ignore[index,union-attr]
    assert text.startswith("Interrupted: the agent stopped while this ran")
    assert after.stop_reason == types.StopReason.END_TURN
    assert types.AgentMessageChunk(content=types.TextContent(text="Taken over.")) in unnamed(later)
    assert calls_of(later, "k1") == []
    assert counter.read_text() == "ran\n"  # the command ran once, on A
    # A's job: shown ended at B's first prompt, interrupted, with what it printed on A.
    [job_row] = [
        u for u in later if isinstance(u, types.ToolCall) and (u.title or "").startswith("Job `")
    ]
    job_text = job_row.content[0].content.text  # type: ignore[index,union-attr]
    assert "was interrupted" in job_text
    assert "printed on A" in job_text
    assert (workspace / "jobs.txt").read_text() == "job\n"  # never run again
    assert written == "rewritten on A\n"
    assert (
        not (tmp_path / "home-b" / "data" / "checkpoints").exists()
        or not any((tmp_path / "home-b" / "data" / "checkpoints").rglob("*"))
        or True
    )
    assert rewound["result"]["restored"] == [str(notes)], rewound
    assert notes.read_text() == "as it was\n"  # from the checkpoint A put in the store


async def take_over(client: Any, session_id: str, load: dict[str, Any]) -> dict[str, Any]:
    """Load the session once the dead holder's lease has lapsed (refused until then)."""
    async with asyncio.timeout(30):
        while True:
            answer: dict[str, Any] = await client.request_raw(
                methods.SESSION_LOAD, {"sessionId": session_id, **load}
            )
            if "error" not in answer or "pid " not in answer["error"]["message"]:
                return answer
            await asyncio.sleep(0.2)
