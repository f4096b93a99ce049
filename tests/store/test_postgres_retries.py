"""A lost connection is retried, and a commit whose answer was lost is never written twice.

The server is real; the fault is injected where no server can be made to
fail on cue: `LosingPool` hands the store its real connections, and once
armed, closes the one in use and raises libpq's "connection lost" either
just before the write's COMMIT (the server rolls it back) or just after it
(the batch is durable, the answer never came). Either way the store tries
again on a new connection and the batch is there exactly once. A server
restart between two calls is the real thing (`cluster.restart()`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest

from acp_agent.core import SeqTaken, StoreUnavailable
from acp_agent.store import PostgresStore
from tests.core.support import new_session
from tests.support.postgres import PostgresCluster, fresh_database, skip_without_postgres

from .contract import batch_of, note, result

pytestmark = pytest.mark.anyio


@pytest.fixture
def cluster() -> PostgresCluster:
    return skip_without_postgres(pytest.skip)


@pytest.fixture
def database(cluster: PostgresCluster, anyio_backend: Any) -> Iterator[str]:
    if anyio_backend == "trio":
        pytest.skip("psycopg's async connections run on asyncio only (so does the agent)")
    with fresh_database(cluster) as url:
        yield url


class _Losing:
    """A connection whose next transaction loses the connection before or after COMMIT."""

    def __init__(self, real: psycopg.AsyncConnection[Any], pool: LosingPool) -> None:
        self._real = real
        self._pool = pool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        moment, self._pool.armed = self._pool.armed, None
        if moment is None:
            async with self._real.transaction():
                yield
            return
        self._pool.lost += 1
        if moment == "before commit":
            with contextlib.suppress(psycopg.Error):  # the server rolls it back
                async with self._real.transaction():
                    yield
                    await self._real.close()
        else:
            async with self._real.transaction():
                yield
            await self._real.close()
        raise psycopg.OperationalError("server closed the connection unexpectedly")


class LosingPool:
    """Wraps the store's pool; `armed` names the moment the next write loses its connection."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.armed: str | None = None
        self.lost = 0

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        async with self._inner.connection() as real:
            yield _Losing(real, self)

    async def discard_idle(self) -> None:
        await self._inner.discard_idle()

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.mark.parametrize("moment", ["before commit", "after commit"])
async def test_a_batch_whose_connection_was_lost_is_stored_once(database: str, moment: str) -> None:
    store = await PostgresStore.open(database)
    try:
        session = await new_session(store)
        pool = LosingPool(store._pool)
        store._pool = pool  # type: ignore[assignment]
        pool.armed = moment
        batch = batch_of(session, 1, note("once"), result("call_1"))
        await store.append_batch(batch)
        assert pool.lost == 1
        assert await store.read(session.main_branch_id) == list(batch.events)
        assert await store.has_result(session.main_branch_id, batch.events[1].payload.call_id)  # type: ignore[attr-defined]
        # The store goes on from there; a stale repeat of the batch is still a conflict.
        await store.append_batch(batch_of(session, 3, note("next")))
        with pytest.raises(SeqTaken):
            await store.append_batch(batch)
    finally:
        await store.aclose()


@pytest.mark.parametrize("moment", ["before commit", "after commit"])
async def test_a_session_created_over_a_lost_connection_is_created_once(
    database: str, moment: str
) -> None:
    store = await PostgresStore.open(database)
    try:
        pool = LosingPool(store._pool)
        store._pool = pool  # type: ignore[assignment]
        pool.armed = moment
        session = await new_session(store)
        assert pool.lost == 1
        assert await store.list_sessions() == [session]
        await store.append_batch(batch_of(session, 1, note("leased to us")))
    finally:
        await store.aclose()


async def test_calls_go_on_after_the_server_restarts_between_them(
    database: str, cluster: PostgresCluster
) -> None:
    store = await PostgresStore.open(database)
    try:
        session = await new_session(store)
        await store.append_batch(batch_of(session, 1, note("before")))
        cluster.restart()
        await store.append_batch(batch_of(session, 2, note("after")))
        assert [e.payload for e in await store.read(session.main_branch_id)] == [
            note("before"),
            note("after"),
        ]
    finally:
        await store.aclose()


async def test_a_server_gone_for_longer_than_the_retries_is_store_unavailable(
    database: str, cluster: PostgresCluster
) -> None:
    store = await PostgresStore.open(database, reconnect_s=0.3)
    try:
        session = await new_session(store)
        cluster.stop_server()
        try:
            with pytest.raises(StoreUnavailable, match="unreachable"):
                await store.append_batch(batch_of(session, 1, note("lost")))
        finally:
            cluster.start_server()
        # Nothing of the failed batch is there, and the next try stores it.
        assert await store.read(session.main_branch_id) == []
        await store.append_batch(batch_of(session, 1, note("stored")))
    finally:
        await store.aclose()
