"""A team's store: sessions in PostgreSQL, written by any number of acp-agent processes.

The driver is psycopg 3 (`psycopg[binary]`: its wheels bring libpq, so
nothing needs compiling or a system library), on its asyncio connections:
the agent's loop is asyncio. Calls run on a few connections of their own
(`_pg_pool`); writer leases live on one more, with a heartbeat
(`_pg_leases`, which says how takeover works). Selected by a URL,
`postgresql://user@host/dbname` (see `acp_agent.store._location`);
credentials in it are never shown.

Each write is one transaction that checks what it needs (the session's
lease row, locked `FOR SHARE`; the branch's next seq) and keeps the query
tables in step, as the SQLite store does: a batch, its projections and its
lease check commit together or not at all, and `append_batch` returns only
once the commit did (`synchronous_commit` is raised to `on` where the server
has it `off`).

When a call fails, psycopg's error becomes the store error tree (`_pg_errors`).
Two kinds are tried again: a transaction the server rolled back to keep
transactions apart (serialization failure, deadlock), at once; and a lost
connection (a server restarting or failing over, the network), on a new
connection, for up to `reconnect_s` (10 s), after which the call fails with
`StoreUnavailable`. A write whose connection was lost may have committed
before the answer was lost, so its retry first looks: a batch whose seqs are
taken by the very same events, a session that exists with our lease, landed,
and count as done, never as written twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.to_thread
import attrs

from acp_agent.core import (
    NO_SEQ,
    Batch,
    BranchId,
    BranchRecord,
    CallId,
    Event,
    LeaseHolder,
    PermissionRule,
    Seq,
    SeqTaken,
    SessionHeld,
    SessionId,
    SessionPosition,
    SessionRecord,
    Snapshot,
    StoreConflict,
    StoreNotFound,
    StoreUnavailable,
    decode_branch_rows,
    encode_event,
    project_batch,
)
from acp_agent.people import local_person
from acp_agent.store._leases import this_process
from acp_agent.store._location import redact_store_url
from acp_agent.store._pg_errors import Failure, classify, translate
from acp_agent.store._pg_leases import DEFAULT_LEASE_TIMEOUT_S, LeaseKeeper, lease_lock_key
from acp_agent.store._pg_pool import ConnectionPool
from acp_agent.store._pg_schema import migrate_postgres
from acp_agent.store._rows import (
    BRANCH_COLUMNS,
    BRANCH_EVENT_COLUMNS,
    EVENT_COLUMNS,
    RULE_COLUMNS,
    SESSION_COLUMNS,
    SNAPSHOT_COLUMNS,
    rule_record,
    session_record,
    session_row,
    snapshot_record,
    snapshot_row,
)
from acp_agent.store._rules import check_new_session

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = (
    "DEFAULT_POOL_SIZE",
    "DEFAULT_RECONNECT_S",
    "PostgresStore",
    "connection_settings",
)

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: Connections one store handle uses at most for its calls (the lease connection aside).
DEFAULT_POOL_SIZE: Final = 8
#: How long a call keeps trying to reach a server it lost before it fails.
DEFAULT_RECONNECT_S: Final = 10.0
#: A session's `updated_at` moves at most this often (as in the SQLite store).
_RECENCY_STEP_S: Final = 1.0
#: Tries of a transaction the server rolled back to keep transactions apart.
_MAX_RETRIES: Final = 5
_FIRST_DELAY_S: Final = 0.05
_MAX_DELAY_S: Final = 1.0
#: How long libpq waits for a server to answer a connection.
_CONNECT_TIMEOUT_S: Final = 10

_INSERT_EVENTS: Final = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)"
_INSERT_RESULTS: Final = (
    "INSERT INTO tool_results (branch_id, call_id, seq) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
)
_INSERT_BRANCH: Final = f"INSERT INTO branches ({BRANCH_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s)"
#: What an append checks, in one statement: the lease (locked against a takeover until
#: the batch commits), the branch and its last seq.
_APPEND_CHECK: Final = (
    "SELECT (SELECT owner_token FROM session_leases WHERE session_id = %(session)s FOR SHARE),"
    " b.session_id, b.cut_seq, b.closed_at,"
    " (SELECT max(seq) FROM events WHERE branch_id = %(branch)s)"
    " FROM (VALUES (1)) AS one (x) LEFT JOIN branches b ON b.branch_id = %(branch)s"
)
_LEASE_TOKEN: Final = "SELECT owner_token FROM session_leases WHERE session_id = %s FOR SHARE"
_HOLDER: Final = (
    "SELECT h.pid, h.host FROM session_leases l JOIN lease_holders h USING (owner_token)"
    " WHERE l.session_id = %s"
)


def connection_settings(lease_timeout_s: float = DEFAULT_LEASE_TIMEOUT_S) -> dict[str, Any]:
    """libpq settings for every connection of the store (TCP keepalives: a vanished server
    is noticed within about the lease timeout)."""
    idle = max(1, int(lease_timeout_s / 3))
    return {
        "autocommit": True,
        "application_name": "acp-agent",
        "connect_timeout": _CONNECT_TIMEOUT_S,
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": max(1, idle // 2),
        "keepalives_count": 3,
        "tcp_user_timeout": int(lease_timeout_s * 1000),
    }


class PostgresStore:
    """A `Store` in a PostgreSQL database; open it with `await PostgresStore.open(url)`."""

    def __init__(
        self, pool: ConnectionPool, keeper: LeaseKeeper, *, location: str, reconnect_s: float
    ) -> None:
        """Use `open()`; this takes a pool on a migrated database."""
        #: The database's URL without its credentials, for messages.
        self.location = location
        self._pool = pool
        self._keeper = keeper
        self._token = keeper.owner.token
        self._reconnect_s = reconnect_s
        self._closed = False
        # Session -> the `updated_at` this handle last wrote.
        self._recency: dict[SessionId, float] = {}

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        lease_timeout_s: float = DEFAULT_LEASE_TIMEOUT_S,
        reconnect_s: float = DEFAULT_RECONNECT_S,
        person: str | None = None,
    ) -> PostgresStore:
        """Connect to the database at `url` and migrate it (retrying a server that is starting).

        `person`: who opens it (default: `local_person()`); sessions and rules stored
        before owners existed become theirs.
        """
        opener = local_person() if person is None else person
        location = redact_store_url(url)
        try:
            import psycopg
        except ImportError as exc:
            raise StoreUnavailable(
                f"{location}: the PostgreSQL store needs psycopg; install "
                "acp-coding-agent[postgresql]"
            ) from exc
        settings = connection_settings(lease_timeout_s)

        async def connect() -> AsyncConnection[Any]:
            db = await psycopg.AsyncConnection.connect(url, **settings)
            try:
                await _configure(db, lease_timeout_s)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await db.close()
                raise
            return db

        keeper = LeaseKeeper(
            partial(psycopg.Connection.connect, url, **settings),
            this_process(),
            timeout_s=lease_timeout_s,
            location=location,
        )
        store = cls(
            ConnectionPool(connect, pool_size), keeper, location=location, reconnect_s=reconnect_s
        )
        try:
            await store._run(lambda db, _: migrate_postgres(db, person=opener), "open the store")
        except BaseException:
            await store.aclose()
            raise
        return store

    async def _run(
        self, work: Callable[[AsyncConnection[Any], bool], Awaitable[T]], what: str
    ) -> T:
        """Run `work(connection, in_doubt)`, retrying what a retry may cure (see the module
        docstring); `in_doubt` is true once a connection was lost under it."""
        import psycopg

        if self._closed:
            raise StoreUnavailable(f"{what}: the store is closed")
        deadline = anyio.current_time() + self._reconnect_s
        in_doubt, retries, delay = False, 0, _FIRST_DELAY_S
        while True:
            try:
                async with self._pool.connection() as db:
                    return await work(db, in_doubt)
            except psycopg.Error as exc:
                failure = classify(exc)
                if failure is Failure.RETRY and retries < _MAX_RETRIES:
                    retries += 1
                    continue
                if failure is Failure.LOST:
                    await self._pool.discard_idle()
                    if not self._closed and anyio.current_time() + delay <= deadline:
                        logger.warning(
                            "%s: the connection to %s was lost (%s); trying again",
                            what,
                            self.location,
                            redact_store_url(str(exc).strip()),
                        )
                        in_doubt = True
                        await anyio.sleep(delay)
                        delay = min(delay * 2, _MAX_DELAY_S)
                        continue
                raise translate(exc, what, location=self.location) from exc

    async def _keep(self, func: Callable[[], T]) -> T:
        """Run a lease operation (blocking: the lease connection) on a worker thread."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        return await anyio.to_thread.run_sync(func)

    # --- sessions and leases -----------------------------------------------------------

    async def create_session(
        self, session: SessionRecord, main: BranchRecord, *, history: Sequence[Event] = ()
    ) -> None:
        check_new_session(session, main, history)
        session_id = session.session_id
        rows = [encode_event(event) for event in history]
        copied = (
            project_batch(Batch(session_id, main.branch_id, tuple(history))) if history else None
        )

        async def write(db: AsyncConnection[Any], in_doubt: bool) -> None:
            async with db.transaction():
                if in_doubt and await _lease_token(db, session_id) == self._token:
                    return  # the first try committed before its answer was lost
                await db.execute(
                    f"INSERT INTO sessions ({SESSION_COLUMNS})"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    _text_row(session_row(session)),
                )
                await db.execute(_INSERT_BRANCH, _branch_row(main))
                async with db.cursor() as cursor:
                    if rows:
                        await cursor.executemany(_INSERT_EVENTS, rows)
                    if copied is not None and copied.results:
                        await cursor.executemany(
                            _INSERT_RESULTS,
                            [(main.branch_id, call, seq) for call, seq in copied.results],
                        )
                await db.execute(
                    "INSERT INTO session_leases (session_id, owner_token, acquired_at)"
                    " VALUES (%s, %s, clock_timestamp())",
                    (session_id, self._token),
                )

        await self._keep(partial(self._keeper.lock_new, session_id))
        try:
            await self._run(write, f"create session {session_id}")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._keeper.forget, [session_id])
            raise

    async def get_session(self, session_id: SessionId) -> SessionRecord:
        async def fetch(db: AsyncConnection[Any], _: bool) -> SessionRecord:
            cursor = await db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = %s", (session_id,)
            )
            row = await cursor.fetchone()
            if row is None:
                raise StoreNotFound(f"no session {session_id}")
            return session_record(row)

        return await self._run(fetch, f"get session {session_id}")

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        limit: int = 100,
        after: SessionPosition | None = None,
        owner: str | None = None,
    ) -> list[SessionRecord]:
        where: list[str] = []
        values: list[Any] = []
        if cwd is not None:
            where.append("cwd = %s")
            values.append(cwd)
        if owner is not None:
            where.append("owner = %s")
            values.append(owner)
        if after is not None:
            where.append("(updated_at, session_id) < (%s, %s)")
            values += [after.updated_at, after.session_id]
        clause = f" WHERE {' AND '.join(where)}" if where else ""

        async def fetch(db: AsyncConnection[Any], _: bool) -> list[SessionRecord]:
            cursor = await db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions{clause}"
                " ORDER BY updated_at DESC, session_id DESC LIMIT %s",
                (*values, limit),
            )
            return [session_record(row) for row in await cursor.fetchall()]

        return await self._run(fetch, "list sessions")

    async def set_additional_directories(
        self, session_id: SessionId, directories: Sequence[str]
    ) -> None:
        import json

        encoded = json.dumps(list(directories))

        async def write(db: AsyncConnection[Any], _: bool) -> None:
            async with db.transaction():
                await self._require_lease(db, session_id)
                await db.execute(
                    "UPDATE sessions SET additional_directories = %s WHERE session_id = %s",
                    (encoded, session_id),
                )

        await self._run(write, f"set the additional directories of {session_id}")

    async def delete_session(self, session_id: SessionId) -> None:
        try:
            await self._keep(partial(self._keeper.acquire, session_id))
        except StoreNotFound:
            return

        async def write(db: AsyncConnection[Any], _: bool) -> None:
            branches = "SELECT branch_id FROM branches WHERE session_id = %s"
            async with db.transaction():
                await self._require_lease(db, session_id)
                for table in ("events", "tool_results", "snapshots"):
                    await db.execute(
                        f"DELETE FROM {table} WHERE branch_id IN ({branches})",
                        (session_id,),
                    )
                for table in (
                    "branches",
                    "session_files",
                    "session_outputs",
                    "session_leases",
                    "sessions",
                ):
                    await db.execute(
                        f"DELETE FROM {table} WHERE session_id = %s",
                        (session_id,),
                    )

        await self._run(write, f"delete session {session_id}")
        self._recency.pop(session_id, None)
        await self._keep(partial(self._keeper.forget, [session_id]))

    async def list_branches(self, session_id: SessionId) -> list[BranchRecord]:
        async def fetch(db: AsyncConnection[Any], _: bool) -> list[BranchRecord]:
            await _require_session(db, session_id)
            cursor = await db.execute(
                f"SELECT {BRANCH_COLUMNS} FROM branches WHERE session_id = %s ORDER BY position",
                (session_id,),
            )
            return [BranchRecord(*row) for row in await cursor.fetchall()]

        return await self._run(fetch, f"list branches of {session_id}")

    async def acquire_session(self, session_id: SessionId) -> None:
        await self._keep(partial(self._keeper.acquire, session_id))

    async def release_session(self, session_id: SessionId) -> None:
        await self._keep(partial(self._keeper.release, [session_id]))

    async def release_sessions(self, session_ids: Sequence[SessionId]) -> None:
        if session_ids:
            await self._keep(partial(self._keeper.release, list(session_ids)))

    async def _require_lease(self, db: AsyncConnection[Any], session_id: SessionId) -> None:
        """Inside a write's transaction: the session is leased to us, and stays so until it
        commits (its lease row is locked against a takeover)."""
        if await _lease_token(db, session_id) != self._token:
            await _require_session(db, session_id)
            raise SessionHeld(session_id, await _holder(db, session_id))

    # --- events --------------------------------------------------------------------------

    async def append_batch(self, batch: Batch) -> None:
        rows = [encode_event(event) for event in batch.events]
        projection = project_batch(batch)
        session_id, branch_id = batch.session_id, batch.branch_id
        recorded_at = batch.events[-1].recorded_at
        moves_recency = (
            recorded_at - self._recency.get(session_id, -_RECENCY_STEP_S) >= _RECENCY_STEP_S
        )

        async def write(db: AsyncConnection[Any], in_doubt: bool) -> None:
            # Two round trips: BEGIN with the checks, then the rows, updates and COMMIT.
            async with db.pipeline(), db.transaction():
                cursor = await db.execute(
                    _APPEND_CHECK, {"session": session_id, "branch": branch_id}
                )
                check = await cursor.fetchone()
                assert check is not None
                token, branch_session, cut_seq, closed_at, last = check
                if token != self._token:
                    await _require_session(db, session_id)
                    raise SessionHeld(session_id, await _holder(db, session_id))
                if branch_session is None:
                    created = projection.created_branch
                    if created is None:
                        raise StoreNotFound(f"no branch {branch_id}")
                    parent = await db.execute(
                        "SELECT session_id FROM branches WHERE branch_id = %s",
                        (created.parent_id,),
                    )
                    parent_row = await parent.fetchone()
                    if parent_row is None or parent_row[0] != session_id:
                        raise StoreNotFound(f"no parent branch {created.parent_id} in {session_id}")
                    await db.execute(_INSERT_BRANCH, _branch_row(created))
                    last_seq = created.cut_seq
                else:
                    if branch_session != session_id:
                        raise StoreNotFound(f"no branch {branch_id} in session {session_id}")
                    last_seq = cut_seq if last is None else last
                    taken = batch.first_seq != last_seq + 1
                    if taken and in_doubt and await _landed(db, batch, rows):
                        return  # the first try committed before its answer was lost
                    if closed_at is not None:
                        raise StoreConflict(f"branch {branch_id} has ended")
                if batch.first_seq != last_seq + 1:
                    raise SeqTaken(branch_id, batch.first_seq, last_seq + 1)
                async with db.cursor() as many:
                    await many.executemany(_INSERT_EVENTS, rows)
                    if projection.results:
                        await many.executemany(
                            _INSERT_RESULTS,
                            [(branch_id, call, seq) for call, seq in projection.results],
                        )
                if projection.closed_at is not None:
                    await db.execute(
                        "UPDATE branches SET closed_at = %s WHERE branch_id = %s",
                        (projection.closed_at, branch_id),
                    )
                if projection.title_changed:
                    await db.execute(
                        "UPDATE sessions SET title = %s WHERE session_id = %s",
                        (_text(projection.title), session_id),
                    )
                # Recency orders the session list; it moves in steps, as in the SQLite store.
                if moves_recency:
                    await db.execute(
                        "UPDATE sessions SET updated_at = greatest(updated_at, %s)"
                        " WHERE session_id = %s",
                        (recorded_at, session_id),
                    )

        await self._run(write, f"append to branch {branch_id}")
        if moves_recency:
            self._recency[session_id] = recorded_at

    async def read(
        self, branch_id: BranchId, *, gt: Seq = NO_SEQ, lte: Seq | None = None
    ) -> list[Event]:
        async def fetch(db: AsyncConnection[Any], _: bool) -> list[Event]:
            if lte is None:
                cursor = await db.execute(
                    f"SELECT {BRANCH_EVENT_COLUMNS} FROM events WHERE branch_id = %s AND seq > %s"
                    " ORDER BY seq",
                    (branch_id, gt),
                )
            else:
                cursor = await db.execute(
                    f"SELECT {BRANCH_EVENT_COLUMNS} FROM events WHERE branch_id = %s AND seq > %s"
                    " AND seq <= %s ORDER BY seq",
                    (branch_id, gt, lte),
                )
            events = decode_branch_rows(branch_id, await cursor.fetchall())
            if not events:
                await _require_branch(db, branch_id)
            return events

        return await self._run(fetch, f"read branch {branch_id}")

    async def last_durable_seq(self, branch_id: BranchId) -> Seq:
        async def fetch(db: AsyncConnection[Any], _: bool) -> Seq:
            cursor = await db.execute(
                "SELECT cut_seq, (SELECT max(seq) FROM events WHERE branch_id = %s)"
                " FROM branches WHERE branch_id = %s",
                (branch_id, branch_id),
            )
            row = await cursor.fetchone()
            if row is None:
                raise StoreNotFound(f"no branch {branch_id}")
            return Seq(row[0] if row[1] is None else row[1])

        return await self._run(fetch, f"last seq of {branch_id}")

    async def has_result(
        self, branch_id: BranchId, call_id: CallId, *, lte: Seq | None = None
    ) -> bool:
        async def fetch(db: AsyncConnection[Any], _: bool) -> bool:
            cursor = await db.execute(
                "SELECT seq FROM tool_results WHERE branch_id = %s AND call_id = %s",
                (branch_id, call_id),
            )
            row = await cursor.fetchone()
            return row is not None and (lte is None or row[0] <= lte)

        return await self._run(fetch, f"result of {call_id}")

    # --- permission rules --------------------------------------------------------------

    async def add_permission_rule(self, rule: PermissionRule) -> PermissionRule:
        said = (rule.workspace, rule.tool, rule.scope, rule.pattern, rule.decision, rule.owner)

        async def write(db: AsyncConnection[Any], _: bool) -> PermissionRule:
            async with db.transaction():
                # Two answers at once (two sessions, two app servers) keep one rule: adding
                # the same rule is serialized on a lock named by what it says.
                await db.execute(
                    "SELECT pg_advisory_xact_lock(%s)", (lease_lock_key("\x1f".join(said)),)
                )
                cursor = await db.execute(
                    f"SELECT {RULE_COLUMNS} FROM permission_rules"
                    " WHERE workspace = %s AND tool = %s AND scope = %s AND pattern = %s"
                    " AND decision = %s AND owner = %s AND revoked_at IS NULL"
                    " ORDER BY position LIMIT 1",
                    said,
                )
                same = await cursor.fetchone()
                if same is not None:
                    return rule_record(same)
                await db.execute(
                    f"INSERT INTO permission_rules ({RULE_COLUMNS})"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    _text_row(attrs.astuple(rule)),
                )
            return rule

        return await self._run(write, f"add permission rule {rule.rule_id}")

    async def list_permission_rules(
        self,
        *,
        workspace: str | None = None,
        include_revoked: bool = False,
        owner: str | None = None,
    ) -> list[PermissionRule]:
        where: list[str] = []
        values: list[Any] = []
        if workspace is not None:
            where.append("workspace = %s")
            values.append(workspace)
        if owner is not None:
            where.append("owner = %s")
            values.append(owner)
        if not include_revoked:
            where.append("revoked_at IS NULL")
        clause = f" WHERE {' AND '.join(where)}" if where else ""

        async def fetch(db: AsyncConnection[Any], _: bool) -> list[PermissionRule]:
            cursor = await db.execute(
                f"SELECT {RULE_COLUMNS} FROM permission_rules{clause} ORDER BY position",
                values,
            )
            return [rule_record(row) for row in await cursor.fetchall()]

        return await self._run(fetch, "list permission rules")

    async def revoke_permission_rule(self, rule_id: str, *, revoked_at: float) -> PermissionRule:
        async def write(db: AsyncConnection[Any], _: bool) -> PermissionRule:
            async with db.transaction():
                await db.execute(
                    "UPDATE permission_rules SET revoked_at = %s"
                    " WHERE rule_id = %s AND revoked_at IS NULL",
                    (revoked_at, rule_id),
                )
                cursor = await db.execute(
                    f"SELECT {RULE_COLUMNS} FROM permission_rules WHERE rule_id = %s", (rule_id,)
                )
                row = await cursor.fetchone()
            if row is None:
                raise StoreNotFound(f"no permission rule {rule_id}")
            return rule_record(row)

        return await self._run(write, f"revoke permission rule {rule_id}")

    # --- session files ----------------------------------------------------------------

    async def put_files(
        self, session_id: SessionId, kind: str, files: Sequence[tuple[str, bytes]]
    ) -> None:
        if not files:
            return
        rows = [(session_id, kind, key, data) for key, data in files]

        async def write(db: AsyncConnection[Any], _: bool) -> None:
            async with db.transaction(), db.cursor() as cursor:
                await cursor.executemany(
                    "INSERT INTO session_files VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    rows,
                )

        await self._run(write, f"keep {len(files)} files of {session_id}")

    async def get_file(self, session_id: SessionId, kind: str, key: str) -> bytes | None:
        async def fetch(db: AsyncConnection[Any], _: bool) -> bytes | None:
            cursor = await db.execute(
                "SELECT data FROM session_files WHERE session_id = %s AND kind = %s AND key = %s",
                (session_id, kind, key),
            )
            row = await cursor.fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(fetch, f"read a file of {session_id}")

    async def list_files(self, session_id: SessionId) -> list[tuple[str, str]]:
        async def fetch(db: AsyncConnection[Any], _: bool) -> list[tuple[str, str]]:
            cursor = await db.execute(
                "SELECT kind, key FROM session_files WHERE session_id = %s"
                ' ORDER BY kind COLLATE "C", key COLLATE "C"',
                (session_id,),
            )
            return [(str(kind), str(key)) for kind, key in await cursor.fetchall()]

        return await self._run(fetch, f"list the files of {session_id}")

    async def copy_files(self, source_id: SessionId, target_id: SessionId) -> None:
        async def write(db: AsyncConnection[Any], _: bool) -> None:
            async with db.transaction():
                await db.execute(
                    "INSERT INTO session_files SELECT %s, kind, key, data FROM session_files"
                    " WHERE session_id = %s ON CONFLICT DO NOTHING",
                    (target_id, source_id),
                )
                await db.execute(
                    "INSERT INTO session_outputs SELECT %s, key, chunk, data FROM session_outputs"
                    " WHERE session_id = %s ON CONFLICT DO NOTHING",
                    (target_id, source_id),
                )

        await self._run(write, f"copy the files of {source_id}")

    # --- session outputs --------------------------------------------------------------

    async def put_output(
        self, session_id: SessionId, key: str, chunks: Iterable[bytes], *, start: int = 0
    ) -> None:
        async def write(db: AsyncConnection[Any], _: bool) -> None:
            # Replacing is idempotent: a retry after a lost answer writes the same again.
            async with db.transaction(), db.cursor() as cursor:
                await cursor.execute(
                    "DELETE FROM session_outputs"
                    " WHERE session_id = %s AND key = %s AND chunk >= %s",
                    (session_id, key, start),
                )
                # One statement per chunk, each sent before the next is made (executemany
                # would queue them all in the pipeline): one chunk in memory at a time.
                for index, chunk in enumerate(chunks, start=start):
                    await cursor.execute(
                        "INSERT INTO session_outputs VALUES (%s, %s, %s, %b)",
                        (session_id, key, index, chunk),
                    )

        await self._run(write, f"keep output {key} of {session_id}")

    async def get_output(self, session_id: SessionId, key: str, index: int) -> bytes | None:
        async def fetch(db: AsyncConnection[Any], _: bool) -> bytes | None:
            # Binary results: the chunk comes as its bytes, not as hex text twice its size.
            async with db.cursor(binary=True) as cursor:
                await cursor.execute(
                    "SELECT data FROM session_outputs"
                    " WHERE session_id = %s AND key = %s AND chunk = %s",
                    (session_id, key, index),
                )
                row = await cursor.fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(fetch, f"read output {key} of {session_id}")

    async def read_output(self, session_id: SessionId, key: str) -> list[bytes]:
        async def fetch(db: AsyncConnection[Any], _: bool) -> list[bytes]:
            async with db.cursor(binary=True) as cursor:
                await cursor.execute(
                    "SELECT data FROM session_outputs"
                    " WHERE session_id = %s AND key = %s ORDER BY chunk",
                    (session_id, key),
                )
                rows = await cursor.fetchall()
            return [bytes(row[0]) for row in rows]

        return await self._run(fetch, f"read output {key} of {session_id}")

    async def list_outputs(self, session_id: SessionId) -> list[tuple[str, int]]:
        async def fetch(db: AsyncConnection[Any], _: bool) -> list[tuple[str, int]]:
            cursor = await db.execute(
                "SELECT key, sum(length(data)) FROM session_outputs WHERE session_id = %s"
                ' GROUP BY key ORDER BY key COLLATE "C"',
                (session_id,),
            )
            return [(str(key), int(size)) for key, size in await cursor.fetchall()]

        return await self._run(fetch, f"list the outputs of {session_id}")

    # --- snapshots -----------------------------------------------------------------------

    async def put_snapshot(self, snapshot: Snapshot, *, keep: int = 2) -> None:
        key = (snapshot.branch_id, snapshot.interpreter)

        async def write(db: AsyncConnection[Any], _: bool) -> None:
            async with db.transaction():
                await db.execute(
                    f"INSERT INTO snapshots ({SNAPSHOT_COLUMNS})"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)"
                    " ON CONFLICT (branch_id, interpreter, anchor_seq) DO UPDATE SET"
                    " interpreter_version = EXCLUDED.interpreter_version,"
                    " anchor_digest = EXCLUDED.anchor_digest, ancestry = EXCLUDED.ancestry,"
                    " state = EXCLUDED.state, checksum = EXCLUDED.checksum,"
                    " created_at = EXCLUDED.created_at",
                    snapshot_row(snapshot),
                )
                await db.execute(
                    "DELETE FROM snapshots WHERE branch_id = %s AND interpreter = %s"
                    " AND anchor_seq NOT IN (SELECT anchor_seq FROM snapshots WHERE"
                    " branch_id = %s AND interpreter = %s ORDER BY anchor_seq DESC LIMIT %s)",
                    (*key, *key, keep),
                )

        await self._run(write, f"put snapshot of {snapshot.branch_id}")

    async def get_snapshots(self, branch_id: BranchId, interpreter: str) -> list[Snapshot]:
        async def fetch(db: AsyncConnection[Any], _: bool) -> list[Snapshot]:
            cursor = await db.execute(
                f"SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE branch_id = %s"
                " AND interpreter = %s ORDER BY anchor_seq DESC",
                (branch_id, interpreter),
            )
            return [snapshot_record(row) for row in await cursor.fetchall()]

        return await self._run(fetch, f"get snapshots of {branch_id}")

    async def delete_snapshots(self, branch_id: BranchId) -> None:
        async def write(db: AsyncConnection[Any], _: bool) -> None:
            await db.execute("DELETE FROM snapshots WHERE branch_id = %s", (branch_id,))

        await self._run(write, f"delete snapshots of {branch_id}")

    async def aclose(self) -> None:
        """Give this handle's leases back and close its connections; idempotent."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._keeper.close)
            await self._pool.aclose()


# --- helpers -------------------------------------------------------------------------------


async def _configure(db: AsyncConnection[Any], lease_timeout_s: float) -> None:
    """A new connection's session settings."""
    # A transaction left open by a frozen process must not hold a session's lease row
    # locked for ever: the server ends such a connection after the lease timeout.
    await db.execute(f"SET idle_in_transaction_session_timeout = {int(lease_timeout_s * 1000)}")
    cursor = await db.execute("SHOW synchronous_commit")
    row = await cursor.fetchone()
    if row is not None and row[0] == "off":
        # A batch is published once committed: that commit must survive a server crash.
        await db.execute("SET synchronous_commit = on")


async def _lease_token(db: AsyncConnection[Any], session_id: SessionId) -> str | None:
    cursor = await db.execute(_LEASE_TOKEN, (session_id,))
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def _holder(db: AsyncConnection[Any], session_id: SessionId) -> LeaseHolder | None:
    cursor = await db.execute(_HOLDER, (session_id,))
    row = await cursor.fetchone()
    return None if row is None else LeaseHolder(row[0], row[1])


async def _require_session(db: AsyncConnection[Any], session_id: SessionId) -> None:
    cursor = await db.execute("SELECT 1 FROM sessions WHERE session_id = %s", (session_id,))
    if await cursor.fetchone() is None:
        raise StoreNotFound(f"no session {session_id}")


async def _require_branch(db: AsyncConnection[Any], branch_id: BranchId) -> None:
    cursor = await db.execute("SELECT 1 FROM branches WHERE branch_id = %s", (branch_id,))
    if await cursor.fetchone() is None:
        raise StoreNotFound(f"no branch {branch_id}")


async def _landed(db: AsyncConnection[Any], batch: Batch, rows: list[tuple[Any, ...]]) -> bool:
    """Whether the batch's seqs hold exactly its events (an earlier try committed)."""
    cursor = await db.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE branch_id = %s AND seq >= %s AND seq <= %s"
        " ORDER BY seq",
        (batch.branch_id, batch.first_seq, batch.last_seq),
    )
    return [tuple(row) for row in await cursor.fetchall()] == [tuple(row) for row in rows]


def _branch_row(branch: BranchRecord) -> tuple[Any, ...]:
    return (
        branch.branch_id,
        branch.session_id,
        branch.parent_id,
        branch.cut_seq,
        _text(branch.label),
        branch.created_at,
        branch.closed_at,
    )


def _text(value: str | None) -> str | None:
    """PostgreSQL's text holds no NUL character (SQLite's does): it becomes U+FFFD."""
    return value.replace("\x00", "\ufffd") if value is not None and "\x00" in value else value


def _text_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_text(value) if isinstance(value, str) else value for value in row)
