"""The SQLite schema, as numbered migrations applied in order, each once.

`schema_version` records every applied migration. Opening a database runs
the missing ones in one `BEGIN IMMEDIATE` transaction (two processes opening
a new file at once do not both create it); a database from a newer
acp-agent is refused, never downgraded.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

import attrs

from acp_agent.core import StoreUnavailable
from acp_agent.values import Value

__all__ = ("MIGRATIONS", "Migration", "migrate", "schema_version")


@attrs.frozen
class Migration(Value):
    """One step of the schema: statements run in order, inside the caller's transaction."""

    version: int
    description: str
    statements: tuple[str, ...]
    #: Statements run after `statements` with one parameter, the person opening the
    #: store: rows written before owners existed become theirs (the local user's).
    adopt: tuple[str, ...] = ()


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, branches, events, tool results, leases, snapshots",
        (
            """
            CREATE TABLE sessions (
                session_id TEXT PRIMARY KEY,
                cwd TEXT NOT NULL,
                main_branch_id TEXT NOT NULL,
                title TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                fork_session_id TEXT,
                fork_branch_id TEXT,
                fork_seq INTEGER
            )
            """,
            "CREATE INDEX sessions_by_recency ON sessions (updated_at DESC)",
            "CREATE INDEX sessions_by_cwd_recency ON sessions (cwd, updated_at DESC)",
            """
            CREATE TABLE branches (
                branch_id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions (session_id),
                parent_id TEXT REFERENCES branches (branch_id),
                cut_seq INTEGER NOT NULL,
                label TEXT,
                created_at REAL NOT NULL,
                closed_at REAL
            )
            """,
            "CREATE INDEX branches_by_session ON branches (session_id)",
            """
            CREATE TABLE events (
                branch_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                batch_id INTEGER NOT NULL,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                producer TEXT NOT NULL,
                recorded_at REAL NOT NULL,
                format_version INTEGER NOT NULL,
                PRIMARY KEY (branch_id, seq)
            )
            """,
            """
            CREATE TABLE tool_results (
                branch_id TEXT NOT NULL,
                call_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                PRIMARY KEY (branch_id, call_id)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE session_leases (
                session_id TEXT PRIMARY KEY REFERENCES sessions (session_id),
                owner_token TEXT NOT NULL,
                pid INTEGER NOT NULL,
                host TEXT NOT NULL,
                process_start TEXT NOT NULL,
                acquired_at REAL NOT NULL
            )
            """,
            """
            CREATE TABLE snapshots (
                branch_id TEXT NOT NULL,
                interpreter TEXT NOT NULL,
                anchor_seq INTEGER NOT NULL,
                interpreter_version TEXT NOT NULL,
                anchor_digest TEXT NOT NULL,
                ancestry TEXT NOT NULL,
                state BLOB NOT NULL,
                checksum TEXT NOT NULL,
                created_at REAL NOT NULL,
                PRIMARY KEY (branch_id, interpreter, anchor_seq)
            )
            """,
        ),
    ),
    Migration(
        2,
        "permission rules per workspace",
        (
            """
            CREATE TABLE permission_rules (
                rule_id TEXT PRIMARY KEY,
                workspace TEXT NOT NULL,
                tool TEXT NOT NULL,
                scope TEXT NOT NULL,
                pattern TEXT NOT NULL,
                decision TEXT NOT NULL,
                created_at REAL NOT NULL,
                session_id TEXT,
                call_id TEXT,
                revoked_at REAL
            )
            """,
            "CREATE INDEX permission_rules_by_workspace ON permission_rules (workspace)",
        ),
    ),
    Migration(
        3,
        "a session's additional directories (other workspace roots)",
        (
            # A JSON array of absolute paths; the sessions of older databases have none.
            "ALTER TABLE sessions ADD COLUMN additional_directories TEXT NOT NULL DEFAULT '[]'",
        ),
    ),
    Migration(
        4,
        "owners: a session and a permission rule belong to a person",
        (
            "ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE permission_rules ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
            "CREATE INDEX sessions_by_owner_recency ON sessions (owner, updated_at DESC)",
        ),
        adopt=(
            "UPDATE sessions SET owner = ? WHERE owner = ''",
            "UPDATE permission_rules SET owner = ? WHERE owner = ''",
        ),
    ),
    Migration(
        5,
        "files that follow a session (checkpoints)",
        (
            """
            CREATE TABLE session_files (
                session_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                key TEXT NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (session_id, kind, key)
            )
            """,
        ),
    ),
    Migration(
        6,
        "outputs that follow a session, in chunks (full tool results, jobs' output)",
        (
            """
            CREATE TABLE session_outputs (
                session_id TEXT NOT NULL,
                key TEXT NOT NULL,
                chunk INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (session_id, key, chunk)
            )
            """,
        ),
    ),
)


def schema_version(connection: sqlite3.Connection) -> int:
    """The highest migration applied to the database; 0 for a new one."""
    exists = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = connection.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(
    connection: sqlite3.Connection,
    migrations: Sequence[Migration] = MIGRATIONS,
    *,
    person: str = "",
) -> int:
    """Apply the missing migrations in one transaction; returns the resulting version.

    `connection` must be in autocommit mode (`isolation_level=None`); `person` is who
    opens the store (the owner that rows from before owners are given).
    """
    latest = migrations[-1].version if migrations else 0
    connection.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(connection)
        if current > latest:
            raise StoreUnavailable(
                f"the database has schema version {current}, newer than this acp-agent "
                f"knows ({latest}); upgrade acp-agent to open it"
            )
        connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        for migration in migrations:
            if migration.version > current:
                for statement in migration.statements:
                    connection.execute(statement)
                for statement in migration.adopt:
                    connection.execute(statement, (person,))
                connection.execute(
                    "INSERT INTO schema_version VALUES (?, ?, ?)",
                    (migration.version, migration.description, time.time()),
                )
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return max(current, latest)
