"""Stores for the runtime's timelines: SQLite (the default) and in-memory (tests).

Both implement `acp_agent.core.Store` and raise its error tree. The SQLite
store takes a path; `default_database_path(data_dir)` names the file inside
acp-agent's data directory (resolved by the caller, e.g. from `--home`).

Every module under this package is private (`_sqlite`, `_memory`,
`_migrations`, `_leases`, `_rules`): this is its whole public surface. The
in-memory store loads on first use: the agent never opens one, and its
module would cost the first session request milliseconds for nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from acp_agent.store._leases import LeaseOwner, is_running, this_process
from acp_agent.store._migrations import MIGRATIONS, Migration, migrate, schema_version
from acp_agent.store._sqlite import (
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

if TYPE_CHECKING:
    from acp_agent.store._memory import MemoryDatabase, MemoryStore

#: Names whose module only tests need: loaded on first use.
_LAZY_NAMES: Final = {
    "MemoryDatabase": "_memory",
    "MemoryStore": "_memory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
