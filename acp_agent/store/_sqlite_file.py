"""The SQLite database file, open and migrated, before the store around it loads.

`SqliteFile.open(path)` opens (creating it and its folder if needed), configures
(WAL, `synchronous`, foreign keys) and migrates the database on one connection,
in a worker thread. `run` is how anything uses the connection: one call at a
time, on a worker thread, sqlite3's errors raised as the store error tree.
`SqliteStore` (`_sqlite`) is the `Store` over it; before that module loads, the
file can already write a new session (`write_first`): the answer to `session/new`
waits for that write, not for the runtime's modules: this module needs only the
ids, records and errors of the core.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeVar

import anyio
import anyio.to_thread

from acp_agent.core import StoreError, StoreFull, StoreUnavailable
from acp_agent.people import local_person
from acp_agent.store._leases import LeaseOwner, this_process
from acp_agent.store._migrations import migrate
from acp_agent.store._rules import check_new_session
from acp_agent.store._sqlite_sql import insert_session, transaction, translated
from acp_agent.store._wal import WalBound, bound_wal

if TYPE_CHECKING:
    from acp_agent.core import FirstWrite, SessionId

__all__ = ("DATABASE_FILE_NAME", "SqliteFile", "Synchronous", "default_database_path")

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: The database's file name inside the data directory.
DATABASE_FILE_NAME: Final = "sessions.sqlite3"

Synchronous = Literal["FULL", "NORMAL"]


def default_database_path(data_dir: Path) -> Path:
    """Where the store lives inside acp-agent's data directory."""
    return data_dir / DATABASE_FILE_NAME


class SqliteFile:
    """One open connection to the database file; open it with `await SqliteFile.open(path)`."""

    def __init__(self, connection: sqlite3.Connection, path: Path, owner: LeaseOwner) -> None:
        """Use `open()`; this takes a connection already configured and migrated."""
        self.path = path
        #: Who this process's leases name (one identity per open file).
        self.owner = owner
        self._connection: sqlite3.Connection | None = connection
        # One call at a time on the connection, whichever worker thread runs it.
        self._limiter = anyio.CapacityLimiter(1)
        # A truncating checkpoint owed since a write failed for room (see `_wal`).
        self._wal = WalBound()

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_s: float = 5.0,
        person: str | None = None,
    ) -> SqliteFile:
        """Open (creating it and its folder if needed) and migrate the database at `path`.

        `person`: who opens it (default: `local_person()`); sessions and rules stored
        before owners existed become theirs.
        """
        opener = local_person() if person is None else person
        connect = partial(_connect, path, synchronous, busy_timeout_s, opener)
        connection = await anyio.to_thread.run_sync(connect)
        return cls(connection, path, this_process())

    @property
    def connection(self) -> sqlite3.Connection | None:
        """The connection, None once closed (for inspection; use `run`)."""
        return self._connection

    async def run(self, func: Callable[[sqlite3.Connection], T], what: str) -> T:
        """`func(connection)` on a worker thread, alone on the connection; sqlite3's
        errors raised as the store's (`what` says what was being done)."""

        def guarded() -> T:
            connection = self._connection
            if connection is None:
                raise StoreUnavailable(f"{what}: the store is closed")
            try:
                with translated(what, self.path):
                    result = func(connection)
            except StoreFull:
                self._wal.out_of_room()
                raise
            self._wal.after_call(connection)
            return result

        return await anyio.to_thread.run_sync(guarded, limiter=self._limiter)

    async def write_first(self, first: FirstWrite) -> None:
        """Store a new session, leased to this file's owner, as `first` says (see
        `acp_agent.core.FirstWrite`), in one transaction."""
        check_new_session(first.record, first.main, ())
        row = first.fact_row()

        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                insert_session(db, first.record, first.main, [row])
                self.write_lease(db, first.record.session_id)

        await self.run(write, f"create session {first.record.session_id}")

    async def release_session(self, session_id: SessionId) -> None:
        """Give back this owner's lease of `session_id` (a store's `release_session`)."""

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "DELETE FROM session_leases WHERE session_id = ? AND owner_token = ?",
                (session_id, self.owner.token),
            )

        await self.run(write, f"release session {session_id}")

    def write_lease(self, db: sqlite3.Connection, session_id: SessionId) -> None:
        """Name this file's owner as the holder of `session_id`'s lease (in `db`'s
        current transaction)."""
        owner = self.owner
        db.execute(
            "INSERT OR REPLACE INTO session_leases VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, owner.token, owner.pid, owner.host, owner.process_start, time.time()),
        )

    async def aclose(self) -> None:
        """Release this owner's leases and close the connection; idempotent."""

        def close() -> None:
            connection = self._connection
            if connection is None:
                return
            self._connection = None
            try:
                with translated("close", self.path):
                    connection.execute(
                        "DELETE FROM session_leases WHERE owner_token = ?", (self.owner.token,)
                    )
            except StoreError as exc:
                # The leases stay behind (a full disk, say); the next process takes them
                # over once this one has exited, so closing goes on.
                logger.warning("leases not released at close: %s", exc)
            finally:
                connection.close()

        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(close, limiter=self._limiter)


# --- helpers (run on the worker thread) --------------------------------------------------


def _connect(
    path: Path, synchronous: Synchronous, busy_timeout_s: float, person: str
) -> sqlite3.Connection:
    with translated(f"open {path}", path):
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(
            path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreUnavailable(f"{path}: cannot use WAL journaling (got {mode})")
            connection.execute(f"PRAGMA synchronous = {synchronous}")
            connection.execute("PRAGMA foreign_keys = ON")
            # 256 KiB of pages, not SQLite's 2 MiB: the store appends, and a load reads a
            # timeline once, in order; a big tool result written through the default
            # cache stayed resident in it (`benchmarks/big_inputs.py`: a 1 MB MCP result
            # raised the peak 1.2x the floor's, against 1.55x).
            connection.execute("PRAGMA cache_size = -256")
            migrate(connection, person=person)
            bound_wal(connection, path)
        except BaseException:
            connection.close()
            raise
        return connection
