"""Writer leases across processes on one PostgreSQL database, with a real holder process.

`crash_writer.py hold URL SESSION` loads the session through the runtime and
holds it; each line sent to it appends a note ("appended <seq>" or
"refused <why>"). Its lease timeout is short here (1.5 s, so a heartbeat
every 0.5 s) to keep the tests fast; the store's default is 30 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from acp_agent.core import SessionHeld
from acp_agent.store import LEASE_TIMEOUT_ENV, PostgresStore
from tests.core.support import new_session
from tests.support.postgres import PostgresCluster, fresh_database, skip_without_postgres

from .contract import batch_of, note

pytestmark = pytest.mark.anyio

CRASH_WRITER = Path(__file__).with_name("crash_writer.py")
LEASE_TIMEOUT_S = 1.5


@pytest.fixture
def cluster() -> PostgresCluster:
    return skip_without_postgres(pytest.skip)


@pytest.fixture
def database(cluster: PostgresCluster, anyio_backend: Any) -> Iterator[str]:
    if anyio_backend == "trio":
        pytest.skip("psycopg's async connections run on asyncio only (so does the agent)")
    with fresh_database(cluster) as url:
        yield url


class Holder:
    """A real acp-agent process holding a session (see the module docstring)."""

    def __init__(self, url: str, session_id: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(CRASH_WRITER), "hold", url, session_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, LEASE_TIMEOUT_ENV: str(LEASE_TIMEOUT_S)},
        )
        assert self.readline() == f"held {self.process.pid}"

    def readline(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def append(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write("append\n")
        self.process.stdin.flush()
        return self.readline()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


async def _acquire_within(store: PostgresStore, session_id: Any, timeout_s: float) -> None:
    """Acquire, trying again while held, for up to `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await store.acquire_session(session_id)
            return
        except SessionHeld:
            if time.monotonic() > deadline:
                raise
            await anyio.sleep(0.1)


async def test_a_holder_whose_heartbeat_stopped_is_taken_over_and_its_writes_refused(
    database: str,
) -> None:
    store = await PostgresStore.open(database)
    holder = None
    try:
        session = await new_session(store)
        await store.release_session(session.session_id)
        holder = await anyio.to_thread.run_sync(Holder, database, session.session_id)
        assert await anyio.to_thread.run_sync(holder.append) == "appended 1"
        with pytest.raises(SessionHeld, match=rf"pid {holder.process.pid} "):
            await store.acquire_session(session.session_id)
        # Frozen: its connection stays open, its heartbeat stops.
        holder.process.send_signal(signal.SIGSTOP)
        await _acquire_within(store, session.session_id, timeout_s=10 * LEASE_TIMEOUT_S)
        await store.append_batch(batch_of(session, 2, note("the new holder's")))
        holder.process.send_signal(signal.SIGCONT)
        refused = await anyio.to_thread.run_sync(holder.append)
        assert refused.startswith("refused ")
        assert "open in another acp-agent process" in refused
        assert [e.seq for e in await store.read(session.main_branch_id)] == [1, 2]
    finally:
        if holder is not None:
            holder.kill()
        await store.aclose()


async def test_a_live_holder_keeps_its_lease_across_a_server_restart(
    database: str, cluster: PostgresCluster
) -> None:
    store = await PostgresStore.open(database)
    holder = None
    try:
        session = await new_session(store)
        await store.release_session(session.session_id)
        holder = await anyio.to_thread.run_sync(Holder, database, session.session_id)
        cluster.restart()
        # At once (its lock gone with the old server) and after more than its timeout
        # (it reconnected, took its lock back and beats), the holder keeps the session.
        for wait_s in (0.0, 2 * LEASE_TIMEOUT_S):
            await anyio.sleep(wait_s)
            with pytest.raises(SessionHeld, match=rf"pid {holder.process.pid} "):
                await store.acquire_session(session.session_id)
        assert await anyio.to_thread.run_sync(holder.append) == "appended 1"
        holder.kill()
        await _acquire_within(store, session.session_id, timeout_s=5.0)
    finally:
        if holder is not None:
            holder.kill()
        await store.aclose()
