"""A look at a PostgreSQL store without changing it: for `acp-agent doctor`.

One short read-only transaction: the server's version, the schema version,
whether this role may create the schema (a new database), how many sessions,
who holds leases and whether each holder's heartbeat is fresh, and how many
permission rules a workspace has. Nothing is created, migrated or locked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from acp_agent.core import StoreUnavailable
from acp_agent.store._location import redact_store_url
from acp_agent.store._pg_errors import translate
from acp_agent.values import Value

if TYPE_CHECKING:
    import psycopg

__all__ = ("LeaseHolderState", "PostgresInspection", "inspect_postgres")

_HOLDERS: Final = (
    "SELECT h.pid, h.host, h.timeout_s,"
    " extract(epoch FROM clock_timestamp() - h.heartbeat_at),"
    " (SELECT count(*) FROM session_leases l WHERE l.owner_token = h.owner_token)"
    " FROM lease_holders h ORDER BY h.started_at"
)


@attrs.frozen
class LeaseHolderState(Value):
    """A process that holds (or held) leases, as its heartbeat shows it."""

    pid: int
    host: str
    timeout_s: float
    #: Seconds since its last heartbeat, on the server's clock.
    silent_s: float
    leases: int

    @property
    def stale(self) -> bool:
        """Its heartbeat is older than its timeout: its leases may be taken over."""
        return self.silent_s > self.timeout_s


@attrs.frozen
class PostgresInspection(Value):
    """What `inspect_postgres` found."""

    server_version: str
    #: 0 for a database acp-agent has not used yet.
    schema_version: int
    #: Whether this role may create the tables (only asked of a new database).
    can_create: bool
    sessions: int = 0
    #: Leases whose row names no known holder (a holder cleaned up; taken over on open).
    orphan_leases: int = 0
    holders: tuple[LeaseHolderState, ...] = ()
    #: Rules in force for the workspace asked about (None: not asked).
    workspace_rules: int | None = None


def inspect_postgres(
    url: str, *, workspace: str | None = None, timeout_s: float = 5.0
) -> PostgresInspection:
    """Look at the store at `url`; `StoreUnavailable` when it cannot be reached or read."""
    location = redact_store_url(url)
    try:
        import psycopg
    except ImportError as exc:
        raise StoreUnavailable(
            "the PostgreSQL store needs psycopg; install acp-coding-agent[postgresql]"
        ) from exc
    try:
        with psycopg.connect(
            url, connect_timeout=max(1, int(timeout_s)), application_name="acp-agent doctor"
        ) as db:
            db.read_only = True
            return _inspect(db, workspace)
    except psycopg.Error as exc:
        raise translate(exc, f"reach {location}", location=location) from exc


def _inspect(db: psycopg.Connection[Any], workspace: str | None) -> PostgresInspection:
    version = str(_one(db, "SHOW server_version"))
    if not _one(db, "SELECT to_regclass('schema_version') IS NOT NULL"):
        can_create = bool(_one(db, "SELECT has_schema_privilege(current_schema(), 'CREATE')"))
        return PostgresInspection(version, 0, can_create)
    schema = int(_one(db, "SELECT coalesce(max(version), 0) FROM schema_version"))
    sessions = int(_one(db, "SELECT count(*) FROM sessions"))
    orphans = int(
        _one(
            db,
            "SELECT count(*) FROM session_leases l WHERE NOT EXISTS"
            " (SELECT 1 FROM lease_holders h WHERE h.owner_token = l.owner_token)",
        )
    )
    holders = tuple(
        LeaseHolderState(pid, host, float(timeout), float(silent), int(leases))
        for pid, host, timeout, silent, leases in db.execute(_HOLDERS).fetchall()
    )
    rules = None
    if workspace is not None:
        rules = int(
            _one(
                db,
                "SELECT count(*) FROM permission_rules WHERE workspace = %s AND revoked_at IS NULL",
                (workspace,),
            )
        )
    return PostgresInspection(version, schema, True, sessions, orphans, holders, rules)


def _one(db: psycopg.Connection[Any], query: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(query, params).fetchone()
    return None if row is None else row[0]
