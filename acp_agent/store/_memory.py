"""The in-memory store, for unit tests: the same contract as SQLite, nothing kept.

Events are kept encoded, as SQLite keeps them, so a payload that would not
survive the real store fails here too. Several `MemoryStore` handles may
share one `MemoryDatabase` to stand for several processes sharing a file;
each handle holds its own writer leases.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Sequence

import anyio
import attrs

from acp_agent.core import (
    NO_SEQ,
    Batch,
    BranchId,
    BranchRecord,
    CallId,
    Event,
    EventRow,
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
    new_id,
    project_batch,
)
from acp_agent.store._rules import check_new_session

__all__ = ("MemoryDatabase", "MemoryStore")


@attrs.define
class MemoryDatabase:
    """What a `MemoryStore` keeps; share it between handles to share a "file"."""

    sessions: dict[SessionId, SessionRecord] = attrs.field(factory=dict)
    #: In insertion order, so parents come before their children.
    branches: dict[BranchId, BranchRecord] = attrs.field(factory=dict)
    #: Each branch's own events, dense: index 0 holds seq `cut_seq + 1`.
    events: dict[BranchId, list[EventRow]] = attrs.field(factory=dict)
    results: dict[tuple[BranchId, CallId], Seq] = attrs.field(factory=dict)
    #: Session -> (handle token, holder) of its writer lease.
    leases: dict[SessionId, tuple[str, LeaseHolder]] = attrs.field(factory=dict)
    snapshots: dict[tuple[BranchId, str], list[Snapshot]] = attrs.field(factory=dict)
    #: In the order they were added.
    rules: dict[str, PermissionRule] = attrs.field(factory=dict)
    #: (session, kind, key) -> content.
    files: dict[tuple[SessionId, str, str], bytes] = attrs.field(factory=dict)
    #: (session, key) -> its chunks.
    outputs: dict[tuple[SessionId, str], tuple[bytes, ...]] = attrs.field(factory=dict)


class MemoryStore:
    """A `Store` in memory; see the module docstring."""

    def __init__(
        self, database: MemoryDatabase | None = None, *, holder: LeaseHolder | None = None
    ) -> None:
        self.database = MemoryDatabase() if database is None else database
        self._token = new_id("lease")
        self._holder = holder or LeaseHolder(os.getpid(), socket.gethostname())
        self._closed = False

    async def _enter(self) -> MemoryDatabase:
        # Yield like a real store would, so tests see realistic interleavings.
        await anyio.lowlevel.checkpoint()
        if self._closed:
            raise StoreUnavailable("the store is closed")
        return self.database

    # --- sessions and leases ----------------------------------------------------------

    async def create_session(
        self, session: SessionRecord, main: BranchRecord, *, history: Sequence[Event] = ()
    ) -> None:
        db = await self._enter()
        check_new_session(session, main, history)
        rows = [encode_event(event) for event in history]
        if session.session_id in db.sessions or main.branch_id in db.branches:
            raise StoreConflict(f"session {session.session_id} already exists")
        db.sessions[session.session_id] = session
        db.branches[main.branch_id] = main
        db.events[main.branch_id] = rows
        if history:
            copied = project_batch(Batch(session.session_id, main.branch_id, tuple(history)))
            for call_id, seq in copied.results:
                db.results.setdefault((main.branch_id, call_id), seq)
        db.leases[session.session_id] = (self._token, self._holder)

    async def get_session(self, session_id: SessionId) -> SessionRecord:
        db = await self._enter()
        try:
            return db.sessions[session_id]
        except KeyError:
            raise StoreNotFound(f"no session {session_id}") from None

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        limit: int = 100,
        after: SessionPosition | None = None,
        owner: str | None = None,
    ) -> list[SessionRecord]:
        db = await self._enter()
        found = [
            s
            for s in db.sessions.values()
            if (cwd is None or s.cwd == cwd)
            and (owner is None or s.owner == owner)
            and (after is None or SessionPosition.of(s) < after)
        ]
        found.sort(key=SessionPosition.of, reverse=True)
        return found[:limit]

    async def set_additional_directories(
        self, session_id: SessionId, directories: Sequence[str]
    ) -> None:
        db = await self._enter()
        session = db.sessions.get(session_id)
        if session is None:
            raise StoreNotFound(f"no session {session_id}")
        lease = db.leases.get(session_id)
        if lease is None or lease[0] != self._token:
            raise SessionHeld(session_id, None if lease is None else lease[1])
        db.sessions[session_id] = attrs.evolve(session, additional_directories=tuple(directories))

    async def delete_session(self, session_id: SessionId) -> None:
        db = await self._enter()
        if session_id not in db.sessions:
            return
        lease = db.leases.get(session_id)
        if lease is not None and lease[0] != self._token:
            raise SessionHeld(session_id, lease[1])
        branches = {b for b, record in db.branches.items() if record.session_id == session_id}
        for branch_id in branches:
            del db.branches[branch_id]
            db.events.pop(branch_id, None)
        db.results = {k: v for k, v in db.results.items() if k[0] not in branches}
        db.snapshots = {k: v for k, v in db.snapshots.items() if k[0] not in branches}
        db.leases.pop(session_id, None)
        db.files = {k: v for k, v in db.files.items() if k[0] != session_id}
        db.outputs = {k: v for k, v in db.outputs.items() if k[0] != session_id}
        del db.sessions[session_id]

    async def list_branches(self, session_id: SessionId) -> list[BranchRecord]:
        db = await self._enter()
        if session_id not in db.sessions:
            raise StoreNotFound(f"no session {session_id}")
        return [b for b in db.branches.values() if b.session_id == session_id]

    async def acquire_session(self, session_id: SessionId) -> None:
        db = await self._enter()
        if session_id not in db.sessions:
            raise StoreNotFound(f"no session {session_id}")
        lease = db.leases.get(session_id)
        if lease is not None and lease[0] != self._token:
            raise SessionHeld(session_id, lease[1])
        db.leases[session_id] = (self._token, self._holder)

    async def release_session(self, session_id: SessionId) -> None:
        db = await self._enter()
        lease = db.leases.get(session_id)
        if lease is not None and lease[0] == self._token:
            del db.leases[session_id]

    async def release_sessions(self, session_ids: Sequence[SessionId]) -> None:
        for session_id in session_ids:
            await self.release_session(session_id)

    # --- events -----------------------------------------------------------------------

    async def append_batch(self, batch: Batch) -> None:
        db = await self._enter()
        rows = [encode_event(event) for event in batch.events]
        projection = project_batch(batch)
        session = db.sessions.get(batch.session_id)
        if session is None:
            raise StoreNotFound(f"no session {batch.session_id}")
        lease = db.leases.get(batch.session_id)
        if lease is None or lease[0] != self._token:
            raise SessionHeld(batch.session_id, None if lease is None else lease[1])
        branch = db.branches.get(batch.branch_id)
        if branch is None:
            branch = projection.created_branch
            if branch is None:
                raise StoreNotFound(f"no branch {batch.branch_id}")
            parent = db.branches.get(branch.parent_id) if branch.parent_id else None
            if parent is None or parent.session_id != batch.session_id:
                raise StoreNotFound(f"no parent branch {branch.parent_id} in {batch.session_id}")
        elif branch.session_id != batch.session_id:
            raise StoreNotFound(f"no branch {batch.branch_id} in session {batch.session_id}")
        if branch.closed_at is not None:
            raise StoreConflict(f"branch {batch.branch_id} has ended")
        own = db.events.get(batch.branch_id, [])
        expected = (own[-1][1] if own else branch.cut_seq) + 1
        if batch.first_seq != expected:
            raise SeqTaken(batch.branch_id, batch.first_seq, expected)
        # Everything is checked: apply the batch and its projections together.
        db.branches[batch.branch_id] = branch
        db.events[batch.branch_id] = own
        own.extend(rows)
        for call_id, seq in projection.results:
            db.results.setdefault((batch.branch_id, call_id), seq)
        if projection.closed_at is not None:
            db.branches[batch.branch_id] = attrs.evolve(branch, closed_at=projection.closed_at)
        recorded_at = batch.events[-1].recorded_at
        session = attrs.evolve(session, updated_at=max(session.updated_at, recorded_at))
        if projection.title_changed:
            session = attrs.evolve(session, title=projection.title)
        db.sessions[batch.session_id] = session

    async def read(
        self, branch_id: BranchId, *, gt: Seq = NO_SEQ, lte: Seq | None = None
    ) -> list[Event]:
        db = await self._enter()
        branch = db.branches.get(branch_id)
        if branch is None:
            raise StoreNotFound(f"no branch {branch_id}")
        own = db.events.get(branch_id, [])
        start = max(gt - branch.cut_seq, 0)
        stop = len(own) if lte is None else max(min(lte - branch.cut_seq, len(own)), 0)
        return decode_branch_rows(branch_id, [row[1:] for row in own[start:stop]])

    async def last_durable_seq(self, branch_id: BranchId) -> Seq:
        db = await self._enter()
        branch = db.branches.get(branch_id)
        if branch is None:
            raise StoreNotFound(f"no branch {branch_id}")
        own = db.events.get(branch_id)
        return Seq(own[-1][1]) if own else branch.cut_seq

    async def has_result(
        self, branch_id: BranchId, call_id: CallId, *, lte: Seq | None = None
    ) -> bool:
        db = await self._enter()
        seq = db.results.get((branch_id, call_id))
        return seq is not None and (lte is None or seq <= lte)

    # --- permission rules ---------------------------------------------------------------

    async def add_permission_rule(self, rule: PermissionRule) -> PermissionRule:
        db = await self._enter()
        if rule.rule_id in db.rules:
            raise StoreConflict(f"permission rule {rule.rule_id} already exists")
        for kept in db.rules.values():
            if kept.revoked_at is None and _what_it_says(kept) == _what_it_says(rule):
                return kept
        db.rules[rule.rule_id] = rule
        return rule

    async def list_permission_rules(
        self,
        *,
        workspace: str | None = None,
        include_revoked: bool = False,
        owner: str | None = None,
    ) -> list[PermissionRule]:
        db = await self._enter()
        return [
            rule
            for rule in db.rules.values()
            if (workspace is None or rule.workspace == workspace)
            and (owner is None or rule.owner == owner)
            and (include_revoked or rule.revoked_at is None)
        ]

    async def revoke_permission_rule(self, rule_id: str, *, revoked_at: float) -> PermissionRule:
        db = await self._enter()
        rule = db.rules.get(rule_id)
        if rule is None:
            raise StoreNotFound(f"no permission rule {rule_id}")
        if rule.revoked_at is None:
            rule = db.rules[rule_id] = attrs.evolve(rule, revoked_at=revoked_at)
        return rule

    # --- session files ----------------------------------------------------------------

    async def put_files(
        self, session_id: SessionId, kind: str, files: Sequence[tuple[str, bytes]]
    ) -> None:
        db = await self._enter()
        for key, data in files:
            db.files.setdefault((session_id, kind, key), bytes(data))

    async def get_file(self, session_id: SessionId, kind: str, key: str) -> bytes | None:
        db = await self._enter()
        return db.files.get((session_id, kind, key))

    async def list_files(self, session_id: SessionId) -> list[tuple[str, str]]:
        db = await self._enter()
        return sorted((k[1], k[2]) for k in db.files if k[0] == session_id)

    async def copy_files(self, source_id: SessionId, target_id: SessionId) -> None:
        db = await self._enter()
        for (session_id, kind, key), data in list(db.files.items()):
            if session_id == source_id:
                db.files.setdefault((target_id, kind, key), data)
        for (session_id, key), chunks in list(db.outputs.items()):
            if session_id == source_id:
                db.outputs.setdefault((target_id, key), chunks)

    # --- session outputs --------------------------------------------------------------

    async def put_output(
        self, session_id: SessionId, key: str, chunks: Iterable[bytes], *, start: int = 0
    ) -> None:
        db = await self._enter()
        before = db.outputs.get((session_id, key), ())[: max(start, 0)]
        kept = before + tuple(bytes(chunk) for chunk in chunks)
        if kept:
            db.outputs[(session_id, key)] = kept
        else:
            db.outputs.pop((session_id, key), None)

    async def get_output(self, session_id: SessionId, key: str, index: int) -> bytes | None:
        db = await self._enter()
        chunks = db.outputs.get((session_id, key), ())
        return chunks[index] if 0 <= index < len(chunks) else None

    async def read_output(self, session_id: SessionId, key: str) -> list[bytes]:
        db = await self._enter()
        return list(db.outputs.get((session_id, key), ()))

    async def list_outputs(self, session_id: SessionId) -> list[tuple[str, int]]:
        db = await self._enter()
        return sorted(
            (key, sum(len(chunk) for chunk in chunks))
            for (owner, key), chunks in db.outputs.items()
            if owner == session_id
        )

    # --- snapshots --------------------------------------------------------------------

    async def put_snapshot(self, snapshot: Snapshot, *, keep: int = 2) -> None:
        db = await self._enter()
        key = (snapshot.branch_id, snapshot.interpreter)
        kept = [s for s in db.snapshots.get(key, []) if s.anchor_seq != snapshot.anchor_seq]
        kept.append(snapshot)
        kept.sort(key=lambda s: s.anchor_seq, reverse=True)
        db.snapshots[key] = kept[:keep]

    async def get_snapshots(self, branch_id: BranchId, interpreter: str) -> list[Snapshot]:
        db = await self._enter()
        return list(db.snapshots.get((branch_id, interpreter), []))

    async def delete_snapshots(self, branch_id: BranchId) -> None:
        db = await self._enter()
        for key in [k for k in db.snapshots if k[0] == branch_id]:
            del db.snapshots[key]

    async def aclose(self) -> None:
        if self._closed:
            return
        for session_id, lease in list(self.database.leases.items()):
            if lease[0] == self._token:
                del self.database.leases[session_id]
        self._closed = True


def _what_it_says(rule: PermissionRule) -> tuple[str, ...]:
    """What a rule says, and for whom, without where and when it was chosen: the store keeps
    such a rule once."""
    return (rule.owner, rule.workspace, rule.tool, rule.scope, rule.pattern, rule.decision)
