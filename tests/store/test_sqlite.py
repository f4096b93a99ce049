"""The SQLite store keeps the store contract, and what only a real file can show."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from acp_agent.core import (
    CallId,
    SessionHeld,
    SessionId,
    StoreConflict,
    StoreCorrupt,
    StoreUnavailable,
)
from acp_agent.store import (
    MIGRATIONS,
    Migration,
    SqliteFile,
    SqliteStore,
    default_database_path,
    migrate,
    schema_version,
    this_process,
)
from tests.core.support import new_session

from .contract import StoreContract, batch_of, note

pytestmark = pytest.mark.anyio

CRASH_WRITER = Path(__file__).with_name("crash_writer.py")


class SqliteStores:
    """Handles on one database file; each handle leases as its own process would."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[SqliteStore]:
        store = await SqliteStore.open(self.path)
        try:
            yield store
        finally:
            await store.aclose()

    def open_other_writer(self) -> contextlib.AbstractAsyncContextManager[SqliteStore]:
        return self.open()


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def stores(self, tmp_path: Path) -> SqliteStores:
        return SqliteStores(tmp_path / "data" / "sessions.sqlite3")


@contextlib.contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        yield connection
    finally:
        connection.close()


def test_the_default_database_lives_in_the_data_dir(tmp_path: Path) -> None:
    assert default_database_path(tmp_path / "data") == tmp_path / "data" / "sessions.sqlite3"


async def test_the_database_is_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    file = await SqliteFile.open(tmp_path / "a.sqlite3")
    try:
        assert file.connection is not None
        assert file.connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        await file.aclose()
    with raw(tmp_path / "a.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_new_database_gets_every_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    for _ in range(2):
        store = await SqliteStore.open(path)
        await store.aclose()
    with raw(path) as db:
        assert schema_version(db) == MIGRATIONS[-1].version
        assert db.execute("SELECT count(*) FROM schema_version").fetchone()[0] == len(MIGRATIONS)
        indices = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }
        assert {"sessions_by_recency", "sessions_by_cwd_recency"} <= indices


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    steps = (
        *MIGRATIONS,
        Migration(2, "broken", ("CREATE TABLE extra (x)", "CREATE TABLE extra (x)")),
    )
    with raw(tmp_path / "a.sqlite3") as db:
        with pytest.raises(sqlite3.OperationalError):
            migrate(db, steps)
        assert schema_version(db) == 0
        assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        assert migrate(db, steps[:1]) == 1
        assert migrate(db, (*steps[:1], Migration(2, "extra", ("CREATE TABLE extra (x)",)))) == 2


async def test_a_database_from_before_additional_directories_opens_with_its_sessions(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.sqlite3"
    with raw(path) as db:  # as acp-agent wrote it before migration 3
        assert migrate(db, MIGRATIONS[:2]) == 2
        db.execute(
            "INSERT INTO sessions (session_id, cwd, main_branch_id, title, created_at,"
            " updated_at) VALUES ('sess_old', '/work/old', 'br_old', 'Old work', 1.0, 2.0)"
        )
        db.execute(
            "INSERT INTO branches (branch_id, session_id, cut_seq, label, created_at)"
            " VALUES ('br_old', 'sess_old', 0, 'main', 1.0)"
        )
    store = await SqliteStore.open(path)
    try:
        [old] = await store.list_sessions()
        assert (old.session_id, old.cwd, old.title) == ("sess_old", "/work/old", "Old work")
        assert old.additional_directories == ()
        await store.acquire_session(old.session_id)
        await store.set_additional_directories(old.session_id, ["/work/lib"])
        assert (await store.get_session(old.session_id)).additional_directories == ("/work/lib",)
    finally:
        await store.aclose()
    with raw(path) as db:
        assert schema_version(db) == MIGRATIONS[-1].version


async def test_sessions_and_rules_from_before_owners_become_the_openers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.sqlite3"
    with raw(path) as db:  # as acp-agent wrote it before migration 4
        assert migrate(db, MIGRATIONS[:3]) == 3
        db.execute(
            "INSERT INTO sessions (session_id, cwd, main_branch_id, created_at, updated_at)"
            " VALUES ('sess_old', '/work/old', 'br_old', 1.0, 2.0)"
        )
        db.execute(
            "INSERT INTO branches (branch_id, session_id, cut_seq, label, created_at)"
            " VALUES ('br_old', 'sess_old', 0, 'main', 1.0)"
        )
        db.execute(
            "INSERT INTO permission_rules (rule_id, workspace, tool, scope, pattern, decision,"
            " created_at) VALUES ('rule_old', '/work/old', 'shell', 'tool', '', 'allow', 1.0)"
        )
    store = await SqliteStore.open(path, person="carol")
    try:
        assert [s.owner for s in await store.list_sessions(owner="carol")] == ["carol"]
        [kept] = await store.list_permission_rules(owner="carol")
        assert (kept.rule_id, kept.owner) == ("rule_old", "carol")
    finally:
        await store.aclose()
    store = await SqliteStore.open(path, person="dave")  # migrated once: carol's stay hers
    try:
        assert await store.list_sessions(owner="dave") == []
        assert (await store.get_session(SessionId("sess_old"))).owner == "carol"
    finally:
        await store.aclose()


async def test_unreadable_additional_directories_read_as_none(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    store = await SqliteStore.open(path)
    try:
        session = await new_session(store)
        with raw(path) as db:
            db.execute("UPDATE sessions SET additional_directories = '{not json'")
        [listed] = await store.list_sessions()
        assert listed.session_id == session.session_id
        assert listed.additional_directories == ()
    finally:
        await store.aclose()


async def test_a_database_from_a_newer_acp_agent_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    await (await SqliteStore.open(path)).aclose()
    with raw(path) as db:
        db.execute("INSERT INTO schema_version VALUES (99, 'from the future', 0)")
    with pytest.raises(StoreUnavailable, match="newer"):
        await SqliteStore.open(path)


async def test_a_file_that_is_not_a_database_is_store_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    path.write_bytes(b"this is not a database, just some text " * 100)
    with pytest.raises(StoreCorrupt):
        await SqliteStore.open(path)


async def test_a_damaged_event_row_reads_as_store_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    store = await SqliteStore.open(path)
    try:
        session = await new_session(store)
        await store.append_batch(batch_of(session, 1, note("fine")))
        with raw(path) as db:
            db.execute("UPDATE events SET payload = '{\"truncat'")
        with pytest.raises(StoreCorrupt, match="seq 1"):
            await store.read(session.main_branch_id)
    finally:
        await store.aclose()


async def test_a_locked_database_is_store_unavailable_and_the_batch_absent(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    store = await SqliteStore.open(path, busy_timeout_s=0.05)
    try:
        session = await new_session(store)
        with raw(path) as db:
            db.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreUnavailable, match="locked"):
                await store.append_batch(batch_of(session, 1, note("x")))
            db.execute("ROLLBACK")
        assert await store.read(session.main_branch_id) == []
        await store.append_batch(batch_of(session, 1, note("x")))
    finally:
        await store.aclose()


async def test_a_seq_taken_behind_our_back_is_a_conflict_not_an_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    store = await SqliteStore.open(path)
    try:
        session = await new_session(store)
        await store.append_batch(batch_of(session, 1, note("ours")))
        with pytest.raises(StoreConflict):
            await store.append_batch(batch_of(session, 1, note("again")))
        events = await store.read(session.main_branch_id)
        assert [e.payload for e in events] == [note("ours")]
        assert not await store.has_result(session.main_branch_id, CallId("none"))
    finally:
        await store.aclose()


async def test_a_session_open_in_another_live_process_is_held_until_it_dies(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    store = await SqliteStore.open(path)
    try:
        session = await new_session(store)
        await store.release_session(session.session_id)
        command = [sys.executable, str(CRASH_WRITER), "hold", str(path), session.session_id]
        async with await anyio.open_process(command) as holder:
            assert holder.stdout is not None
            try:
                line = await BufferedByteReceiveStream(holder.stdout).receive_until(b"\n", 100)
                assert line.decode() == f"held {holder.pid}"
                with pytest.raises(
                    SessionHeld, match=rf"another acp-agent process \(pid {holder.pid} "
                ):
                    await store.acquire_session(session.session_id)
            finally:
                holder.kill()
                await holder.wait()
        await store.acquire_session(session.session_id)  # its owner is gone
        await store.append_batch(batch_of(session, 1, note("after the takeover")))
    finally:
        await store.aclose()


async def test_a_lease_whose_pid_was_reused_by_another_process_is_taken_over(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.sqlite3"
    store = await SqliteStore.open(path)
    try:
        session = await new_session(store)
        me = this_process()
        with raw(path) as db:  # a lease naming a pid that now runs a different process
            db.execute(
                "UPDATE session_leases SET owner_token = 'gone', pid = ?, process_start = 'x:1'",
                (os.getppid(),),
            )
        assert me.pid != os.getppid()
        await store.acquire_session(session.session_id)
    finally:
        await store.aclose()
