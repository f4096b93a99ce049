"""The PostgreSQL store keeps the store contract, on a real server, and what only a server shows.

Each test gets a database of its own on this test process's throwaway cluster
(`tests.support.postgres`); without PostgreSQL's server programs they skip,
saying so.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from acp_agent.core import (
    CallId,
    SeqTaken,
    SessionHeld,
    StoreConflict,
    StoreCorrupt,
    StoreUnavailable,
)
from acp_agent.store import PG_MIGRATIONS, PostgresStore
from tests.core.support import new_session
from tests.support.postgres import PostgresCluster, fresh_database, skip_without_postgres

from .contract import StoreContract, batch_of, note

pytestmark = pytest.mark.anyio


class PostgresStores:
    """Handles on one database; each handle leases as its own process would."""

    def __init__(self, url: str) -> None:
        self.url = url

    @contextlib.asynccontextmanager
    async def open(self, **options: Any) -> AsyncIterator[PostgresStore]:
        store = await PostgresStore.open(self.url, **options)
        try:
            yield store
        finally:
            await store.aclose()

    def open_other_writer(self) -> contextlib.AbstractAsyncContextManager[PostgresStore]:
        return self.open()


@pytest.fixture
def cluster() -> PostgresCluster:
    return skip_without_postgres(pytest.skip)


@pytest.fixture
def database(cluster: PostgresCluster, anyio_backend: Any) -> Iterator[str]:
    if anyio_backend == "trio":
        pytest.skip("psycopg's async connections run on asyncio only (so does the agent)")
    with fresh_database(cluster) as url:
        yield url


class TestPostgresStore(StoreContract):
    @pytest.fixture
    def stores(self, database: str) -> PostgresStores:
        return PostgresStores(database)


async def test_a_new_database_gets_every_migration_once(
    database: str, cluster: PostgresCluster
) -> None:
    for _ in range(2):
        await (await PostgresStore.open(database)).aclose()
    name = database.split("/")[3].split("?")[0]
    rows = cluster.execute("SELECT version FROM schema_version ORDER BY version", name)
    assert [row[0] for row in rows] == [m.version for m in PG_MIGRATIONS]


async def test_sessions_and_rules_from_before_owners_become_the_openers(
    database: str, cluster: PostgresCluster
) -> None:
    name = database.split("/")[3].split("?")[0]
    # As acp-agent wrote it before migration 2: schema 1, a session and a rule.
    cluster.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
        " description TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)",
        name,
    )
    for statement in PG_MIGRATIONS[0].statements:
        cluster.execute(statement, name)
    cluster.execute("INSERT INTO schema_version VALUES (1, 'first', 0)", name)
    cluster.execute(
        "INSERT INTO sessions (session_id, cwd, main_branch_id, created_at, updated_at)"
        " VALUES ('sess_old', '/work/old', 'br_old', 1.0, 2.0)",
        name,
    )
    cluster.execute(
        "INSERT INTO permission_rules (rule_id, workspace, tool, scope, pattern, decision,"
        " created_at) VALUES ('rule_old', '/work/old', 'shell', 'tool', '', 'allow', 1.0)",
        name,
    )
    async with PostgresStores(database).open(person="carol") as store:
        assert [s.owner for s in await store.list_sessions(owner="carol")] == ["carol"]
        [kept] = await store.list_permission_rules(owner="carol")
        assert (kept.rule_id, kept.owner) == ("rule_old", "carol")
    async with PostgresStores(database).open(person="dave") as store:
        assert await store.list_sessions(owner="dave") == []


async def test_a_database_from_a_newer_acp_agent_is_refused(
    database: str, cluster: PostgresCluster
) -> None:
    await (await PostgresStore.open(database)).aclose()
    name = database.split("/")[3].split("?")[0]
    cluster.execute("INSERT INTO schema_version VALUES (99, 'from the future', 0)", name)
    with pytest.raises(StoreUnavailable, match="newer"):
        await PostgresStore.open(database)


async def test_a_damaged_event_row_reads_as_store_corrupt(
    database: str, cluster: PostgresCluster
) -> None:
    async with PostgresStores(database).open() as store:
        session = await new_session(store)
        await store.append_batch(batch_of(session, 1, note("fine")))
        name = database.split("/")[3].split("?")[0]
        cluster.execute("UPDATE events SET payload = '{\"truncat'", name)
        with pytest.raises(StoreCorrupt, match="seq 1"):
            await store.read(session.main_branch_id)


async def test_a_seq_taken_behind_our_back_is_a_conflict_not_an_overwrite(database: str) -> None:
    async with PostgresStores(database).open() as store:
        session = await new_session(store)
        await store.append_batch(batch_of(session, 1, note("ours")))
        with pytest.raises(SeqTaken):
            await store.append_batch(batch_of(session, 1, note("again")))
        events = await store.read(session.main_branch_id)
        assert [e.payload for e in events] == [note("ours")]
        assert not await store.has_result(session.main_branch_id, CallId("none"))


async def test_an_unreachable_server_is_store_unavailable_without_the_password() -> None:
    url = "postgresql://alice:s3cret-pw@127.0.0.1:1/nowhere"
    with pytest.raises(StoreUnavailable) as failed:
        await PostgresStore.open(url, reconnect_s=0.0)
    assert "s3cret-pw" not in str(failed.value)
    assert "postgresql://***@127.0.0.1:1/nowhere" in str(failed.value)


async def test_a_rule_id_taken_is_a_conflict_across_handles(database: str) -> None:
    stores = PostgresStores(database)
    async with stores.open() as store, stores.open_other_writer() as other:
        from .contract import rule

        await store.add_permission_rule(rule("rule_1", "/work/a"))
        with pytest.raises(StoreConflict):
            await other.add_permission_rule(rule("rule_1", "/work/b"))


async def test_a_lease_is_held_while_its_holders_connection_lives(database: str) -> None:
    stores = PostgresStores(database)
    async with stores.open() as store, stores.open_other_writer() as other:
        session = await new_session(store)
        with pytest.raises(SessionHeld, match="open in another acp-agent process"):
            await other.acquire_session(session.session_id)
    # Both closed: the lease went with its holder, and a new handle takes the session.
    async with stores.open() as third:
        await third.acquire_session(session.session_id)
        await third.append_batch(batch_of(session, 1, note("third")))
