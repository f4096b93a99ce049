"""The PostgreSQL schema, as numbered migrations applied in order, each once.

The same tables as the SQLite store's (`_migrations`), in PostgreSQL's types,
plus who holds leases (`lease_holders`: one row per store handle, with its
heartbeat). Numbered on their own: version 1 here is the whole schema SQLite
reached in three steps.

Opening a store runs the missing migrations in one transaction under a
transaction-level advisory lock, so app servers starting at once against a new
database do not both create it (PostgreSQL's DDL is transactional: a failed
migration leaves nothing). A database from a newer acp-agent is refused, never
downgraded. The functions here take a plain psycopg connection and raise
psycopg's errors; the store translates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from acp_agent.core import StoreUnavailable
from acp_agent.store._migrations import Migration

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ("PG_MIGRATIONS", "migrate_postgres", "postgres_schema_version")

#: The advisory lock (a transaction's) that migrations run under: one key, this store's.
_MIGRATION_LOCK: Final = 0x0AC9_A6E7_5C4E_0001

PG_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, branches, events, tool results, leases and their holders, snapshots, "
        "permission rules",
        (
            """
            CREATE TABLE sessions (
                session_id TEXT PRIMARY KEY,
                cwd TEXT NOT NULL,
                main_branch_id TEXT NOT NULL,
                title TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL,
                fork_session_id TEXT,
                fork_branch_id TEXT,
                fork_seq BIGINT,
                additional_directories TEXT NOT NULL DEFAULT '[]'
            )
            """,
            "CREATE INDEX sessions_by_recency ON sessions (updated_at DESC, session_id DESC)",
            "CREATE INDEX sessions_by_cwd_recency"
            " ON sessions (cwd, updated_at DESC, session_id DESC)",
            """
            CREATE TABLE branches (
                position BIGINT GENERATED ALWAYS AS IDENTITY,
                branch_id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions (session_id),
                parent_id TEXT REFERENCES branches (branch_id),
                cut_seq BIGINT NOT NULL,
                label TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                closed_at DOUBLE PRECISION
            )
            """,
            "CREATE INDEX branches_by_session ON branches (session_id, position)",
            # The payload stays text, not jsonb: it reads back byte for byte as written
            # (jsonb reorders keys), so a copy between stores compares equal.
            """
            CREATE TABLE events (
                branch_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                batch_id BIGINT NOT NULL,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                producer TEXT NOT NULL,
                recorded_at DOUBLE PRECISION NOT NULL,
                format_version INTEGER NOT NULL,
                PRIMARY KEY (branch_id, seq)
            )
            """,
            """
            CREATE TABLE tool_results (
                branch_id TEXT NOT NULL,
                call_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                PRIMARY KEY (branch_id, call_id)
            )
            """,
            # A store handle (one per process) that holds leases: who it is, the server
            # backend of its lease connection, and when it last showed it was alive.
            """
            CREATE TABLE lease_holders (
                owner_token TEXT PRIMARY KEY,
                pid INTEGER NOT NULL,
                host TEXT NOT NULL,
                process_start TEXT NOT NULL,
                backend_pid INTEGER NOT NULL,
                timeout_s DOUBLE PRECISION NOT NULL,
                started_at TIMESTAMPTZ NOT NULL,
                heartbeat_at TIMESTAMPTZ NOT NULL
            )
            """,
            """
            CREATE TABLE session_leases (
                session_id TEXT PRIMARY KEY REFERENCES sessions (session_id),
                owner_token TEXT NOT NULL,
                acquired_at TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX session_leases_by_owner ON session_leases (owner_token)",
            """
            CREATE TABLE snapshots (
                branch_id TEXT NOT NULL,
                interpreter TEXT NOT NULL,
                anchor_seq BIGINT NOT NULL,
                interpreter_version TEXT NOT NULL,
                anchor_digest TEXT NOT NULL,
                ancestry TEXT NOT NULL,
                state BYTEA NOT NULL,
                checksum TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (branch_id, interpreter, anchor_seq)
            )
            """,
            """
            CREATE TABLE permission_rules (
                position BIGINT GENERATED ALWAYS AS IDENTITY,
                rule_id TEXT PRIMARY KEY,
                workspace TEXT NOT NULL,
                tool TEXT NOT NULL,
                scope TEXT NOT NULL,
                pattern TEXT NOT NULL,
                decision TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                session_id TEXT,
                call_id TEXT,
                revoked_at DOUBLE PRECISION
            )
            """,
            "CREATE INDEX permission_rules_by_workspace ON permission_rules (workspace)",
        ),
    ),
    Migration(
        2,
        "owners: a session and a permission rule belong to a person",
        (
            "ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE permission_rules ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
            "CREATE INDEX sessions_by_owner_recency"
            " ON sessions (owner, updated_at DESC, session_id DESC)",
        ),
        adopt=(
            "UPDATE sessions SET owner = %s WHERE owner = ''",
            "UPDATE permission_rules SET owner = %s WHERE owner = ''",
        ),
    ),
    # bytea, not large objects: a checkpoint is at most 64 MiB (MAX_KEPT_BYTES), well
    # under bytea's 1 GB; a row is written, copied and deleted with the session in plain
    # transactions (large objects need lo_unlink and their own privileges), and TOAST
    # compresses and stores it out of line.
    Migration(
        3,
        "files that follow a session (checkpoints)",
        (
            """
            CREATE TABLE session_files (
                session_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                key TEXT NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (session_id, kind, key)
            )
            """,
        ),
    ),
    # Chunks, not one value: an output (a tool's full result: tens of MB) is written and
    # read a chunk at a time, never whole in memory, on either side of the connection.
    Migration(
        4,
        "outputs that follow a session, in chunks (full tool results, jobs' output)",
        (
            """
            CREATE TABLE session_outputs (
                session_id TEXT NOT NULL,
                key TEXT NOT NULL,
                chunk INTEGER NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (session_id, key, chunk)
            )
            """,
        ),
    ),
)


async def postgres_schema_version(connection: AsyncConnection[Any]) -> int:
    """The highest migration applied to the database; 0 for a new one."""
    cursor = await connection.execute("SELECT to_regclass('schema_version') IS NOT NULL")
    exists = await cursor.fetchone()
    if exists is None or not exists[0]:
        return 0
    cursor = await connection.execute("SELECT max(version) FROM schema_version")
    row = await cursor.fetchone()
    return int(row[0] or 0) if row is not None else 0


async def migrate_postgres(
    connection: AsyncConnection[Any],
    migrations: Sequence[Migration] = PG_MIGRATIONS,
    *,
    person: str = "",
) -> int:
    """Apply the missing migrations in one transaction; returns the resulting version.

    `connection` must be in autocommit mode (the transaction is this function's);
    `person` is who opens the store (the owner rows from before owners are given).
    """
    latest = migrations[-1].version if migrations else 0
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        current = await postgres_schema_version(connection)
        if current > latest:
            raise StoreUnavailable(
                f"the database has schema version {current}, newer than this acp-agent "
                f"knows ({latest}); upgrade acp-agent to open it"
            )
        if current == latest:
            return current
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
            " description TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
        )
        for migration in migrations:
            if migration.version > current:
                for statement in migration.statements:
                    await connection.execute(statement)
                for statement in migration.adopt:
                    await connection.execute(statement, (person,))
                await connection.execute(
                    "INSERT INTO schema_version VALUES (%s, %s, extract(epoch FROM now()))",
                    (migration.version, migration.description),
                )
    return max(current, latest)
