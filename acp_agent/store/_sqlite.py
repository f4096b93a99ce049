"""The default store: one SQLite database file, in WAL mode.

Durability: WAL with `synchronous=FULL` by default, so a batch is durable
when its commit returns, even across a power cut (an agent's record of tool
results is what keeps a restart from repeating side effects). `NORMAL`
(survives a killed process, may lose the last commits on power loss) is an
option for those who prefer speed.

Every call runs on a worker thread (`anyio.to_thread`), one at a time per
store, over one connection in autocommit mode (the open file, `_sqlite_file`,
which can write a new session before this module loads); each write is one
`BEGIN IMMEDIATE` transaction, so a batch, its projections and its lease
check commit together or not at all. Sessions are leased per process (see
`acp_agent.store._leases`): a second process gets `SessionHeld`, and a lease
of a process that is gone is taken over. The write-ahead log is kept bounded
(`_wal`): a disk freed after it filled is not filled again by the log. A full
disk is `StoreFull`, also where SQLite reports it as an I/O error.

One module past 600 lines on purpose: it is the one implementation of the
`Store` protocol over one schema, each method a transaction; leases and the
schema's migrations are their own modules.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs

from acp_agent.core import (
    NO_SEQ,
    Batch,
    BranchId,
    BranchRecord,
    CallId,
    Event,
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
    decode_branch_rows,
    encode_event,
    project_batch,
)
from acp_agent.store._leases import LeaseOwner, is_running
from acp_agent.store._rows import (
    BRANCH_COLUMNS,
    BRANCH_EVENT_COLUMNS,
    EVENT_COLUMNS,
    RULE_COLUMNS,
    SESSION_COLUMNS,
    SNAPSHOT_COLUMNS,
    rule_record,
    session_record,
    snapshot_record,
    snapshot_row,
)
from acp_agent.store._rules import check_new_session
from acp_agent.store._sqlite_file import SqliteFile, Synchronous
from acp_agent.store._sqlite_sql import insert_branch, insert_session, transaction

__all__ = ("RECENCY_STEP_S", "SqliteStore")

T = TypeVar("T")

logger = logging.getLogger(__name__)

_BRANCH_AND_LAST_SEQ: Final = (
    "SELECT session_id, cut_seq, closed_at, (SELECT max(seq) FROM events WHERE branch_id = ?)"
    " FROM branches WHERE branch_id = ?"
)

#: A session's `updated_at` (its place in the recency order) moves at most this often.
RECENCY_STEP_S: Final = 1.0


class SqliteStore:
    """A `Store` in one SQLite file; open it with `await SqliteStore.open(path)`."""

    def __init__(self, file: SqliteFile) -> None:
        """Use `open()`, or take over a `SqliteFile` already open (its leases, its
        connection: a session it wrote is this store's)."""
        self._file = file
        # Session -> the `updated_at` this handle last wrote.
        self._recency: dict[SessionId, float] = {}

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        synchronous: Synchronous = "FULL",
        busy_timeout_s: float = 5.0,
        person: str | None = None,
    ) -> SqliteStore:
        """Open (creating it and its folder if needed) and migrate the database at `path`.

        `person`: who opens it (default: `local_person()`); sessions and rules stored
        before owners existed become theirs.
        """
        file = await SqliteFile.open(
            path, synchronous=synchronous, busy_timeout_s=busy_timeout_s, person=person
        )
        return cls(file)

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def _owner(self) -> LeaseOwner:
        return self._file.owner

    async def _run(self, func: Callable[[sqlite3.Connection], T], what: str) -> T:
        return await self._file.run(func, what)

    # --- sessions and leases -----------------------------------------------------------

    async def create_session(
        self, session: SessionRecord, main: BranchRecord, *, history: Sequence[Event] = ()
    ) -> None:
        check_new_session(session, main, history)

        def write(db: sqlite3.Connection) -> None:
            rows = [encode_event(event) for event in history]
            with transaction(db):
                insert_session(db, session, main, rows)
                if history:
                    copied = project_batch(
                        Batch(session.session_id, main.branch_id, tuple(history))
                    )
                    _insert_results(db, main.branch_id, copied.results)
                self._file.write_lease(db, session.session_id)

        await self._run(write, f"create session {session.session_id}")

    async def get_session(self, session_id: SessionId) -> SessionRecord:
        def fetch(db: sqlite3.Connection) -> SessionRecord:
            row = db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
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
        def fetch(db: sqlite3.Connection) -> list[SessionRecord]:
            where: list[str] = []
            values: list[Any] = []
            if cwd is not None:
                where.append("cwd = ?")
                values.append(cwd)
            if owner is not None:
                where.append("owner = ?")
                values.append(owner)
            if after is not None:
                where.append("(updated_at, session_id) < (?, ?)")
                values += [after.updated_at, after.session_id]
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            rows = db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions{clause}"
                " ORDER BY updated_at DESC, session_id DESC LIMIT ?",
                (*values, limit),
            )
            return [session_record(row) for row in rows]

        return await self._run(fetch, "list sessions")

    async def set_additional_directories(
        self, session_id: SessionId, directories: Sequence[str]
    ) -> None:
        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                holder = _lease_owner(db, session_id)
                if holder is None or holder.token != self._owner.token:
                    _require_session(db, session_id)
                    raise SessionHeld(session_id, None if holder is None else holder.holder)
                db.execute(
                    "UPDATE sessions SET additional_directories = ? WHERE session_id = ?",
                    (json.dumps(list(directories)), session_id),
                )

        await self._run(write, f"set the additional directories of {session_id}")

    async def delete_session(self, session_id: SessionId) -> None:
        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                holder = _lease_owner(db, session_id)
                if holder is not None and holder.token != self._owner.token and is_running(holder):
                    raise SessionHeld(session_id, holder.holder)
                branches = "SELECT branch_id FROM branches WHERE session_id = ?"
                for table in ("events", "tool_results", "snapshots"):
                    db.execute(
                        f"DELETE FROM {table} WHERE branch_id IN ({branches})", (session_id,)
                    )
                db.execute("DELETE FROM branches WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM session_files WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM session_outputs WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM session_leases WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            self._recency.pop(session_id, None)

        await self._run(write, f"delete session {session_id}")

    async def list_branches(self, session_id: SessionId) -> list[BranchRecord]:
        def fetch(db: sqlite3.Connection) -> list[BranchRecord]:
            _require_session(db, session_id)
            rows = db.execute(
                f"SELECT {BRANCH_COLUMNS} FROM branches WHERE session_id = ? ORDER BY rowid",
                (session_id,),
            )
            return [BranchRecord(*row) for row in rows]

        return await self._run(fetch, f"list branches of {session_id}")

    async def acquire_session(self, session_id: SessionId) -> None:
        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                _require_session(db, session_id)
                holder = _lease_owner(db, session_id)
                if holder is not None and holder.token != self._owner.token and is_running(holder):
                    raise SessionHeld(session_id, holder.holder)
                self._file.write_lease(db, session_id)

        await self._run(write, f"acquire session {session_id}")

    async def release_session(self, session_id: SessionId) -> None:
        await self._file.release_session(session_id)

    async def release_sessions(self, session_ids: Sequence[SessionId]) -> None:
        if not session_ids:
            return

        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                db.executemany(
                    "DELETE FROM session_leases WHERE session_id = ? AND owner_token = ?",
                    [(session_id, self._owner.token) for session_id in session_ids],
                )

        await self._run(write, f"release {len(session_ids)} sessions")

    # --- events --------------------------------------------------------------------------

    async def append_batch(self, batch: Batch) -> None:
        await self._run(partial(self._append, batch), f"append to branch {batch.branch_id}")

    def _append(self, batch: Batch, db: sqlite3.Connection) -> None:
        rows = [encode_event(event) for event in batch.events]
        projection = project_batch(batch)
        session_id, branch_id = batch.session_id, batch.branch_id
        recorded_at = batch.events[-1].recorded_at
        with transaction(db):
            holder = _lease_owner(db, session_id)
            if holder is None or holder.token != self._owner.token:
                _require_session(db, session_id)
                raise SessionHeld(session_id, None if holder is None else holder.holder)
            row = db.execute(_BRANCH_AND_LAST_SEQ, (branch_id, branch_id)).fetchone()
            if row is None:
                created = projection.created_branch
                if created is None:
                    raise StoreNotFound(f"no branch {branch_id}")
                parent = db.execute(
                    "SELECT session_id FROM branches WHERE branch_id = ?", (created.parent_id,)
                ).fetchone()
                if parent is None or parent[0] != session_id:
                    raise StoreNotFound(f"no parent branch {created.parent_id} in {session_id}")
                insert_branch(db, created)
                last_seq = created.cut_seq
            else:
                branch_session, cut_seq, closed_at, last = row
                if branch_session != session_id:
                    raise StoreNotFound(f"no branch {branch_id} in session {session_id}")
                if closed_at is not None:
                    raise StoreConflict(f"branch {branch_id} has ended")
                last_seq = cut_seq if last is None else last
            if batch.first_seq != last_seq + 1:
                raise SeqTaken(branch_id, batch.first_seq, last_seq + 1)
            db.executemany(f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", rows)
            _insert_results(db, branch_id, projection.results)
            if projection.closed_at is not None:
                db.execute(
                    "UPDATE branches SET closed_at = ? WHERE branch_id = ?",
                    (projection.closed_at, branch_id),
                )
            if projection.title_changed:
                db.execute(
                    "UPDATE sessions SET title = ? WHERE session_id = ?",
                    (projection.title, session_id),
                )
            # Recency orders the session list; rewriting its row and both indices on every
            # batch would cost more than the batch for small ones, so it moves in steps.
            if recorded_at - self._recency.get(session_id, -RECENCY_STEP_S) >= RECENCY_STEP_S:
                db.execute(
                    "UPDATE sessions SET updated_at = max(updated_at, ?) WHERE session_id = ?",
                    (recorded_at, session_id),
                )
                self._recency[session_id] = recorded_at

    async def read(
        self, branch_id: BranchId, *, gt: Seq = NO_SEQ, lte: Seq | None = None
    ) -> list[Event]:
        def fetch(db: sqlite3.Connection) -> list[Event]:
            if lte is None:
                rows = db.execute(
                    f"SELECT {BRANCH_EVENT_COLUMNS} FROM events WHERE branch_id = ? AND seq > ?"
                    " ORDER BY seq",
                    (branch_id, gt),
                )
            else:
                rows = db.execute(
                    f"SELECT {BRANCH_EVENT_COLUMNS} FROM events WHERE branch_id = ? AND seq > ?"
                    " AND seq <= ? ORDER BY seq",
                    (branch_id, gt, lte),
                )
            events = decode_branch_rows(branch_id, rows)
            if not events:
                _require_branch(db, branch_id)
            return events

        return await self._run(fetch, f"read branch {branch_id}")

    async def last_durable_seq(self, branch_id: BranchId) -> Seq:
        def fetch(db: sqlite3.Connection) -> Seq:
            row = db.execute(
                "SELECT cut_seq, (SELECT max(seq) FROM events WHERE branch_id = ?)"
                " FROM branches WHERE branch_id = ?",
                (branch_id, branch_id),
            ).fetchone()
            if row is None:
                raise StoreNotFound(f"no branch {branch_id}")
            return Seq(row[0] if row[1] is None else row[1])

        return await self._run(fetch, f"last seq of {branch_id}")

    async def has_result(
        self, branch_id: BranchId, call_id: CallId, *, lte: Seq | None = None
    ) -> bool:
        def fetch(db: sqlite3.Connection) -> bool:
            row = db.execute(
                "SELECT seq FROM tool_results WHERE branch_id = ? AND call_id = ?",
                (branch_id, call_id),
            ).fetchone()
            return row is not None and (lte is None or row[0] <= lte)

        return await self._run(fetch, f"result of {call_id}")

    # --- permission rules --------------------------------------------------------------

    async def add_permission_rule(self, rule: PermissionRule) -> PermissionRule:
        def write(db: sqlite3.Connection) -> PermissionRule:
            # One transaction: two answers at once (two sessions, two processes) keep one rule.
            with transaction(db):
                same = db.execute(
                    f"SELECT {RULE_COLUMNS} FROM permission_rules"
                    " WHERE workspace = ? AND tool = ? AND scope = ? AND pattern = ?"
                    " AND decision = ? AND owner = ? AND revoked_at IS NULL"
                    " ORDER BY rowid LIMIT 1",
                    (
                        rule.workspace,
                        rule.tool,
                        rule.scope,
                        rule.pattern,
                        rule.decision,
                        rule.owner,
                    ),
                ).fetchone()
                if same is not None:
                    return rule_record(same)
                db.execute(
                    f"INSERT INTO permission_rules ({RULE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    attrs.astuple(rule),
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
        def fetch(db: sqlite3.Connection) -> list[PermissionRule]:
            where, values = [], []
            if workspace is not None:
                where.append("workspace = ?")
                values.append(workspace)
            if owner is not None:
                where.append("owner = ?")
                values.append(owner)
            if not include_revoked:
                where.append("revoked_at IS NULL")
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            rows = db.execute(
                f"SELECT {RULE_COLUMNS} FROM permission_rules{clause} ORDER BY rowid", values
            )
            return [rule_record(row) for row in rows]

        return await self._run(fetch, "list permission rules")

    async def revoke_permission_rule(self, rule_id: str, *, revoked_at: float) -> PermissionRule:
        def write(db: sqlite3.Connection) -> PermissionRule:
            with transaction(db):
                db.execute(
                    "UPDATE permission_rules SET revoked_at = ?"
                    " WHERE rule_id = ? AND revoked_at IS NULL",
                    (revoked_at, rule_id),
                )
                row = db.execute(
                    f"SELECT {RULE_COLUMNS} FROM permission_rules WHERE rule_id = ?", (rule_id,)
                ).fetchone()
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

        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                db.executemany(
                    "INSERT OR IGNORE INTO session_files VALUES (?, ?, ?, ?)",
                    [(session_id, kind, key, data) for key, data in files],
                )

        await self._run(write, f"keep {len(files)} files of {session_id}")

    async def get_file(self, session_id: SessionId, kind: str, key: str) -> bytes | None:
        def fetch(db: sqlite3.Connection) -> bytes | None:
            row = db.execute(
                "SELECT data FROM session_files WHERE session_id = ? AND kind = ? AND key = ?",
                (session_id, kind, key),
            ).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(fetch, f"read a file of {session_id}")

    async def list_files(self, session_id: SessionId) -> list[tuple[str, str]]:
        def fetch(db: sqlite3.Connection) -> list[tuple[str, str]]:
            rows = db.execute(
                "SELECT kind, key FROM session_files WHERE session_id = ? ORDER BY kind, key",
                (session_id,),
            )
            return [(str(kind), str(key)) for kind, key in rows]

        return await self._run(fetch, f"list the files of {session_id}")

    async def copy_files(self, source_id: SessionId, target_id: SessionId) -> None:
        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                db.execute(
                    "INSERT OR IGNORE INTO session_files"
                    " SELECT ?, kind, key, data FROM session_files WHERE session_id = ?",
                    (target_id, source_id),
                )
                db.execute(
                    "INSERT OR IGNORE INTO session_outputs"
                    " SELECT ?, key, chunk, data FROM session_outputs WHERE session_id = ?",
                    (target_id, source_id),
                )

        await self._run(write, f"copy the files of {source_id}")

    # --- session outputs --------------------------------------------------------------

    async def put_output(
        self, session_id: SessionId, key: str, chunks: Iterable[bytes], *, start: int = 0
    ) -> None:
        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                db.execute(
                    "DELETE FROM session_outputs WHERE session_id = ? AND key = ? AND chunk >= ?",
                    (session_id, key, start),
                )
                # A generator of rows: sqlite3 binds one chunk at a time.
                db.executemany(
                    "INSERT INTO session_outputs VALUES (?, ?, ?, ?)",
                    (
                        (session_id, key, index, chunk)
                        for index, chunk in enumerate(chunks, start=start)
                    ),
                )

        await self._run(write, f"keep output {key} of {session_id}")

    async def get_output(self, session_id: SessionId, key: str, index: int) -> bytes | None:
        def fetch(db: sqlite3.Connection) -> bytes | None:
            row = db.execute(
                "SELECT data FROM session_outputs WHERE session_id = ? AND key = ? AND chunk = ?",
                (session_id, key, index),
            ).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(fetch, f"read output {key} of {session_id}")

    async def read_output(self, session_id: SessionId, key: str) -> list[bytes]:
        def fetch(db: sqlite3.Connection) -> list[bytes]:
            rows = db.execute(
                "SELECT data FROM session_outputs WHERE session_id = ? AND key = ? ORDER BY chunk",
                (session_id, key),
            )
            return [bytes(data) for (data,) in rows]

        return await self._run(fetch, f"read output {key} of {session_id}")

    async def list_outputs(self, session_id: SessionId) -> list[tuple[str, int]]:
        def fetch(db: sqlite3.Connection) -> list[tuple[str, int]]:
            rows = db.execute(
                "SELECT key, sum(length(data)) FROM session_outputs WHERE session_id = ?"
                " GROUP BY key ORDER BY key",
                (session_id,),
            )
            return [(str(key), int(size)) for key, size in rows]

        return await self._run(fetch, f"list the outputs of {session_id}")

    # --- snapshots -----------------------------------------------------------------------

    async def put_snapshot(self, snapshot: Snapshot, *, keep: int = 2) -> None:
        def write(db: sqlite3.Connection) -> None:
            key = (snapshot.branch_id, snapshot.interpreter)
            with transaction(db):
                db.execute(
                    f"INSERT OR REPLACE INTO snapshots ({SNAPSHOT_COLUMNS})"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    snapshot_row(snapshot),
                )
                db.execute(
                    "DELETE FROM snapshots WHERE branch_id = ? AND interpreter = ?"
                    " AND anchor_seq NOT IN (SELECT anchor_seq FROM snapshots WHERE"
                    " branch_id = ? AND interpreter = ? ORDER BY anchor_seq DESC LIMIT ?)",
                    (*key, *key, keep),
                )

        await self._run(write, f"put snapshot of {snapshot.branch_id}")

    async def get_snapshots(self, branch_id: BranchId, interpreter: str) -> list[Snapshot]:
        def fetch(db: sqlite3.Connection) -> list[Snapshot]:
            rows = db.execute(
                f"SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE branch_id = ?"
                " AND interpreter = ? ORDER BY anchor_seq DESC",
                (branch_id, interpreter),
            )
            return [snapshot_record(row) for row in rows]

        return await self._run(fetch, f"get snapshots of {branch_id}")

    async def delete_snapshots(self, branch_id: BranchId) -> None:
        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM snapshots WHERE branch_id = ?", (branch_id,))

        await self._run(write, f"delete snapshots of {branch_id}")

    async def aclose(self) -> None:
        """Release this handle's leases and close the connection; idempotent."""
        await self._file.aclose()


# --- helpers (run on the worker thread) --------------------------------------------------


def _require_session(db: sqlite3.Connection, session_id: SessionId) -> None:
    if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone() is None:
        raise StoreNotFound(f"no session {session_id}")


def _require_branch(db: sqlite3.Connection, branch_id: BranchId) -> None:
    if db.execute("SELECT 1 FROM branches WHERE branch_id = ?", (branch_id,)).fetchone() is None:
        raise StoreNotFound(f"no branch {branch_id}")


def _lease_owner(db: sqlite3.Connection, session_id: SessionId) -> LeaseOwner | None:
    row = db.execute(
        "SELECT owner_token, pid, host, process_start FROM session_leases WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return None if row is None else LeaseOwner(*row)


def _insert_results(
    db: sqlite3.Connection, branch_id: BranchId, results: Sequence[tuple[CallId, Seq]]
) -> None:
    if results:
        db.executemany(
            "INSERT OR IGNORE INTO tool_results VALUES (?, ?, ?)",
            [(branch_id, call_id, seq) for call_id, seq in results],
        )
