"""Stores for the runtime's timelines: SQLite (the default) and in-memory (tests).

Both implement `acp_agent.core.Store` and raise its error tree. The SQLite
store takes a path; `default_database_path(data_dir)` names the file inside
acp-agent's data directory (resolved by the caller, e.g. from `--home`).
"""

from acp_agent.store.leases import LeaseOwner, is_running, this_process
from acp_agent.store.memory import MemoryDatabase, MemoryStore
from acp_agent.store.migrations import MIGRATIONS, Migration, migrate, schema_version
from acp_agent.store.sqlite import (
    DATABASE_FILE_NAME,
    RECENCY_STEP_S,
    SqliteStore,
    Synchronous,
    default_database_path,
)

__all__ = (
    "DATABASE_FILE_NAME",
    "MIGRATIONS",
    "RECENCY_STEP_S",
    "LeaseOwner",
    "MemoryDatabase",
    "MemoryStore",
    "Migration",
    "SqliteStore",
    "Synchronous",
    "default_database_path",
    "is_running",
    "migrate",
    "schema_version",
    "this_process",
)
