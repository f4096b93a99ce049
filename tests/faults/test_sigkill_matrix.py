"""SIGKILL at any moment leaves a store that loads, is whole, and never runs a tool twice.

The agent is killed while a reply streams, while a tool runs, while the
person is being asked, while a compaction's summary is being written and
while a session loads. Then a new agent on the same home loads the session:
the load answers, the store is whole (integrity, dense seqs, every prompt
ended once), the side effect happened at most once, and the next prompt works.

By default each moment is tried once, at a fixed point. With
`ACP_AGENT_SLOW_TESTS=1` each is tried at several random delays as well.

The same matrix runs on a PostgreSQL store (both agents with `ACP_AGENT_STORE`
naming one database of the test process's throwaway cluster): by default a
sample, the moments in `POSTGRES_SAMPLE` at once; the rest with the slow tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from tests.faults.support import store_problems
from tests.support import EditorClient, agent_env, openai_env, running_agent, write_script
from tests.support.fake_provider import Exchange, FakeProviderServer, openai_chunk, openai_stream
from tests.support.postgres import fresh_database, skip_without_postgres

pytestmark = pytest.mark.e2e

MOMENTS = ("stream", "tool", "permission", "compaction", "load")
#: The delays (seconds, after the moment is reached) of the thorough run.
RANDOM_DELAYS = 6
#: The moments tried on PostgreSQL by default (the rest are slow there).
POSTGRES_SAMPLE = ("tool", "permission")
COMMAND = "echo $$ > pid.txt; echo ran >> counter.txt; sleep 30"


def _cases() -> Iterator[Any]:
    for store in ("sqlite", "postgresql"):
        prefix = "" if store == "sqlite" else "postgresql-"
        for moment in MOMENTS:
            sampled = store == "sqlite" or moment in POSTGRES_SAMPLE
            marks = () if sampled else (pytest.mark.slow,)
            yield pytest.param(store, moment, 0.0, id=f"{prefix}{moment}-at-once", marks=marks)
            rng = random.Random(moment)
            for _ in range(RANDOM_DELAYS):
                delay = round(rng.uniform(0.0, 0.3), 3)
                yield pytest.param(
                    store,
                    moment,
                    delay,
                    id=f"{prefix}{moment}-after-{delay}s",
                    marks=pytest.mark.slow,
                )


@contextlib.contextmanager
def _store(store: str, home: Path) -> Iterator[tuple[str | Path, dict[str, str]]]:
    """Where the agents keep the session, and the environment that says so."""
    if store == "sqlite":
        yield home / "data" / "sessions.sqlite3", {}
        return
    skip_without_postgres(pytest.skip)
    with fresh_database() as url:
        yield url, {"ACP_AGENT_STORE": url}


def _reply(text: str) -> Exchange:
    return Exchange(
        chunks=[openai_stream(openai_chunk({"content": text}), openai_chunk({}, "stop"))]
    )


async def _until(predicate: Any, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():  # noqa: ASYNC110 - what we wait for is a file or a list
            await asyncio.sleep(0.01)


def _kill(client: EditorClient) -> None:
    assert client.process is not None
    client.process.send_signal(signal.SIGKILL)


async def _reach(moment: str, client: EditorClient, session_id: str, workspace: Path) -> None:
    """Drive the agent to `moment` (the prompt it needs runs in the background)."""
    if moment == "load":
        await client.prompt(session_id, "Some history first.")
        client.send_raw(
            {
                "jsonrpc": "2.0",
                "id": "the-load",
                "method": "session/load",
                "params": {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []},
            }
        )
        return
    text = {"compaction": "/compact", "permission": "Run it.", "tool": "Run it."}.get(
        moment, "Stream."
    )
    if moment == "compaction":
        await client.prompt(session_id, "Some history first.")
    client.answers = {"tool": ["allow_once"], "permission": [None]}.get(moment, [])
    turn = asyncio.get_running_loop().create_task(client.prompt(session_id, text))
    # The kill cuts this prompt off (`PeerDisconnected`); its outcome is not the point, and
    # anyio's runner fails a test whose task exception is never retrieved.
    turn.add_done_callback(lambda task: task.cancelled() or task.exception())
    if moment == "stream":
        await client.wait_for_update(session_id, lambda u: isinstance(u, types.AgentMessageChunk))
    elif moment == "tool":
        await _until(lambda: (workspace / "counter.txt").exists())
    elif moment == "permission":
        await asyncio.wait_for(client.asked.wait(), 10)
    elif moment == "compaction":
        await client.wait_for_update(
            session_id, lambda u: isinstance(u, types.ToolCall) and u.kind == types.ToolKind.THINK
        )


def _script(tmp_path: Path, moment: str) -> Path:
    run = {"tool_call": {"name": "shell", "arguments": {"command": COMMAND}, "id": "k1"}}
    first = {
        "stream": [{"text": "Streaming"}, {"sleep_ms": 30_000}],
        "tool": [run],
        "permission": [run],
    }.get(moment, [{"text": "History."}])
    return write_script(tmp_path / "script.json", first, [{"text": "After."}])


@pytest.mark.parametrize(("store", "moment", "delay_s"), list(_cases()))
async def test_sigkill_leaves_a_whole_store_that_loads_and_goes_on(
    tmp_path: Path, store: str, moment: str, delay_s: float
):
    with _store(store, tmp_path / "home") as (database, store_env):
        await _kill_and_load(tmp_path, moment, delay_s, database, store_env)


async def _kill_and_load(
    tmp_path: Path, moment: str, delay_s: float, database: str | Path, store_env: dict[str, str]
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    counter, pid_file = workspace / "counter.txt", workspace / "pid.txt"
    script = None if moment == "compaction" else _script(tmp_path, moment)
    server = FakeProviderServer().start()
    # Compaction needs a summary request to hold: the OpenAI wire, held open.
    server.add(_reply("History."), Exchange(hold=True), _reply("Summary."), _reply("After."))
    env = openai_env(server.base_url) if moment == "compaction" else agent_env()
    env = {**env, **store_env}
    try:
        async with running_agent(home, script=script, env=env) as client:
            session_id = await client.new_session(workspace)
            await _reach(moment, client, session_id, workspace)
            await asyncio.sleep(delay_s)
            _kill(client)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.process.wait(), 10)  # type: ignore[union-attr]
        assert store_problems(database, ended=False) == []

        async with running_agent(home, script=script, env=env) as client:
            loaded = await client.request(
                methods.SESSION_LOAD,
                types.LoadSessionRequest(session_id=session_id, cwd=str(workspace), mcp_servers=[]),
            )
            replay = list(client.updates_for(session_id))
            after = await client.prompt(session_id, "And now?")
        assert loaded is not None
        # Nothing is left in progress: what the kill cut short is shown ended.
        open_calls = {}
        for update in replay:
            if isinstance(update, types.ToolCall | types.ToolCallProgress) and update.status:
                open_calls[update.tool_call_id] = update.status
        assert all(
            status in (types.ToolCallStatus.COMPLETED, types.ToolCallStatus.FAILED)
            for status in open_calls.values()
        ), open_calls
        assert after.stop_reason == types.StopReason.END_TURN
        assert store_problems(database) == []
        runs = counter.read_text().splitlines() if counter.exists() else []
        assert len(runs) <= (1 if moment == "tool" else 0)
    finally:
        server.close()
        if pid_file.exists():  # the killed agent's command, orphaned: stop it
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
