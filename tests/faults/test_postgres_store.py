"""Agents sharing one PostgreSQL database: one writer per session, takeover, a server restart.

Real agent processes over real pipes, each with a home of its own, all with
`ACP_AGENT_STORE` naming one database on this test process's throwaway
cluster (`tests.support.postgres`; without PostgreSQL's programs these skip,
saying so).

- Two agents, one session: the one that holds it keeps it while it lives; the
  other's load is refused, naming the holder's pid and host. The holder is
  killed with SIGKILL mid-command: its connection goes with it, so the lease is
  free at once (at most the lease timeout for a holder whose machine vanished),
  and the other agent loads the session: the cut command shows failed,
  interrupted, it never runs again, and the next prompt works.
- The database is restarted while a turn waits on the model: the turn ends,
  completed (its writes after the restart retried on new connections) or with
  a storage error, nothing is torn, and the session loads in a new agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import methods, types
from tests.faults.support import store_problems
from tests.support import agent_env, running_agent, write_script
from tests.support.postgres import PostgresCluster, fresh_database, skip_without_postgres

pytestmark = pytest.mark.e2e

COMMAND = "echo $$ > pid.txt; echo ran >> counter.txt; sleep 30"


@pytest.fixture
def cluster() -> PostgresCluster:
    return skip_without_postgres(pytest.skip)


@pytest.fixture
def database(cluster: PostgresCluster) -> Iterator[str]:
    with fresh_database(cluster) as url:
        yield url


async def _until(predicate: object, timeout_s: float = 15.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():  # type: ignore[operator]  # noqa: ASYNC110 - a file
            await asyncio.sleep(0.02)


def _statuses(updates: list[types.SessionUpdate]) -> dict[str, types.ToolCallStatus]:
    statuses = {}
    for update in updates:
        if isinstance(update, types.ToolCall | types.ToolCallProgress) and update.status:
            statuses[update.tool_call_id] = update.status
    return statuses


async def test_one_agent_holds_a_session_the_other_is_refused_then_takes_over_after_a_kill(
    tmp_path: Path, database: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    counter, pid_file = workspace / "counter.txt", workspace / "pid.txt"
    run = {"tool_call": {"name": "shell", "arguments": {"command": COMMAND}, "id": "k1"}}
    script = write_script(tmp_path / "script.json", [run], [{"text": "After."}])
    env = agent_env(ACP_AGENT_STORE=database)
    try:
        async with running_agent(tmp_path / "home-a", script=script, env=env) as holder:
            session_id = await holder.new_session(workspace)
            holder.answers = ["allow_once"]
            turn = asyncio.get_running_loop().create_task(holder.prompt(session_id, "Run it."))
            # The kill cuts this prompt off; its outcome is not the point.
            turn.add_done_callback(lambda task: task.cancelled() or task.exception())
            await _until(counter.exists)
            assert holder.process is not None
            holder_pid = holder.process.pid

            async with running_agent(tmp_path / "home-b", script=script, env=env) as other:
                params = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
                refused = await other.request_raw(methods.SESSION_LOAD, params)
                error = refused["error"]
                assert f"pid {holder_pid} on " in error["message"], error
                assert error["data"]["acp-agent"]["heldBy"]["pid"] == holder_pid

                holder.process.send_signal(signal.SIGKILL)
                await asyncio.wait_for(holder.process.wait(), 10)
                assert store_problems(database, ended=False) == []

                await other.load(session_id, workspace)
                replay = other.updates_for(session_id)
                after = await other.prompt(session_id, "And now?")
            assert _statuses(replay) == {"k1": types.ToolCallStatus.FAILED}
            assert after.stop_reason == types.StopReason.END_TURN
    finally:
        if pid_file.exists():  # the killed agent's command, if its reaper missed it
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
    assert counter.read_text().splitlines() == ["ran"]
    assert store_problems(database) == []


async def test_a_database_restarted_mid_turn_ends_the_turn_whole_and_the_session_loads(
    tmp_path: Path, database: str, cluster: PostgresCluster
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = write_script(
        tmp_path / "script.json",
        [{"text": "Before the restart"}, {"sleep_ms": 1500}, {"text": " and after it."}],
        [{"text": "Next."}],
    )
    env = agent_env(ACP_AGENT_STORE=database)
    async with running_agent(tmp_path / "home", script=script, env=env) as agent:
        session_id = await agent.new_session(workspace)
        turn = asyncio.get_running_loop().create_task(agent.prompt(session_id, "Go."))
        await agent.wait_for_update(session_id, lambda u: isinstance(u, types.AgentMessageChunk))
        cluster.restart()
        response = await asyncio.wait_for(turn, 30)
        assert response.stop_reason == types.StopReason.END_TURN
        error = ((response.meta or {}).get("acp-agent") or {}).get("error")
        # Completed (the writes after the restart retried on new connections), or the
        # other allowed ending: a storage error said as such, never a hang.
        assert error is None or error["kind"] == "storage_unavailable", error
    assert store_problems(database) == []
    async with running_agent(tmp_path / "home", script=script, env=env) as again:
        await again.load(session_id, workspace)
        texts = [
            u.content.text
            for u in again.updates_for(session_id)
            if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
        ]
        assert "Before the restart" in "".join(texts)
        after = await again.prompt(session_id, "Still there?")
        assert after.stop_reason == types.StopReason.END_TURN
