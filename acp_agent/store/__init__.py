"""Stores for the runtime's timelines: SQLite (the default), PostgreSQL (a team's), in-memory.

Each implements `acp_agent.core.Store` and raises its error tree. The SQLite
store takes a path; `default_database_path(data_dir)` names the file inside
acp-agent's data directory (resolved by the caller, e.g. from `--home`). The
PostgreSQL store takes a URL.

Every module under this package is private (`_sqlite`, `_postgres`, `_memory`,
`_migrations`, `_pg_schema`, `_leases`, `_pg_leases`, ...): this is its whole
public surface. The in-memory and PostgreSQL stores and the copying between
stores load on first use: the agent opens neither store unless asked, and an
editor's start must not pay for their modules (nor for psycopg). So does the
SQLite store itself: the agent opens its file first (`SqliteFile`, through
`open_in_steps`), enough to write a new session, and the store over it loads with
the runtime (`StoreOpening.store()`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from acp_agent.lazy_face import lazy_face as _lazy_face
from acp_agent.store._leases import LeaseOwner, is_running, this_process
from acp_agent.store._location import (
    LEASE_TIMEOUT_ENV,
    STORE_ENV,
    StoreLocation,
    StoreUrlInvalid,
    open_store,
    parse_store_url,
    redact_store_url,
    store_location,
)
from acp_agent.store._migrations import MIGRATIONS, Migration, migrate, schema_version
from acp_agent.store._opening import StoreOpening, open_in_steps
from acp_agent.store._sqlite_file import (
    DATABASE_FILE_NAME,
    SqliteFile,
    Synchronous,
    default_database_path,
)

__all__ = (
    "DATABASE_FILE_NAME",
    "DEFAULT_CHUNK_EVENTS",
    "DEFAULT_LEASE_TIMEOUT_S",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_RECONNECT_S",
    "LEASE_TIMEOUT_ENV",
    "MIGRATIONS",
    "PG_MIGRATIONS",
    "RECENCY_STEP_S",
    "STORE_ENV",
    "CopyReport",
    "CopyVerification",
    "LeaseHolderState",
    "LeaseOwner",
    "MemoryDatabase",
    "MemoryStore",
    "Migration",
    "PostgresInspection",
    "PostgresStore",
    "SqliteFile",
    "SqliteStore",
    "StoreLocation",
    "StoreOpening",
    "StoreUrlInvalid",
    "Synchronous",
    "connection_settings",
    "copy_sessions",
    "default_database_path",
    "inspect_postgres",
    "is_running",
    "migrate",
    "migrate_postgres",
    "open_in_steps",
    "open_store",
    "parse_store_url",
    "postgres_schema_version",
    "redact_store_url",
    "schema_version",
    "store_location",
    "this_process",
    "verify_copy",
)

if TYPE_CHECKING:
    from acp_agent.store._copy import (
        DEFAULT_CHUNK_EVENTS,
        CopyReport,
        CopyVerification,
        copy_sessions,
        verify_copy,
    )
    from acp_agent.store._memory import MemoryDatabase, MemoryStore
    from acp_agent.store._pg_inspect import LeaseHolderState, PostgresInspection, inspect_postgres
    from acp_agent.store._pg_leases import DEFAULT_LEASE_TIMEOUT_S
    from acp_agent.store._pg_schema import (
        PG_MIGRATIONS,
        migrate_postgres,
        postgres_schema_version,
    )
    from acp_agent.store._postgres import (
        DEFAULT_POOL_SIZE,
        DEFAULT_RECONNECT_S,
        PostgresStore,
        connection_settings,
    )
    from acp_agent.store._sqlite import RECENCY_STEP_S, SqliteStore

#: Names whose module the default start never needs: loaded on first use.
_LAZY_NAMES: Final = {
    "DEFAULT_CHUNK_EVENTS": "_copy",
    "CopyReport": "_copy",
    "CopyVerification": "_copy",
    "copy_sessions": "_copy",
    "verify_copy": "_copy",
    "MemoryDatabase": "_memory",
    "MemoryStore": "_memory",
    "DEFAULT_LEASE_TIMEOUT_S": "_pg_leases",
    "LeaseHolderState": "_pg_inspect",
    "PostgresInspection": "_pg_inspect",
    "inspect_postgres": "_pg_inspect",
    "PG_MIGRATIONS": "_pg_schema",
    "migrate_postgres": "_pg_schema",
    "postgres_schema_version": "_pg_schema",
    "DEFAULT_POOL_SIZE": "_postgres",
    "DEFAULT_RECONNECT_S": "_postgres",
    "PostgresStore": "_postgres",
    "connection_settings": "_postgres",
    # The SQLite store over the open file: with the runtime, after a new session's first
    # write (`StoreOpening`), which needs only the file.
    "RECENCY_STEP_S": "_sqlite",
    "SqliteStore": "_sqlite",
}


__getattr__, __dir__ = _lazy_face(__name__, _LAZY_NAMES)
