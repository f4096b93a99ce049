"""The store interface the runtime writes its timelines through, and its errors.

    StoreError
    ├── StoreConflict          another writer got there first
    │   ├── SeqTaken           the batch's seqs are taken, or are not the next ones
    │   └── SessionHeld        another acp-agent process holds the session's writer lease
    ├── StoreNotFound          no such session or branch (also a LookupError)
    ├── StoreUnavailable       the store cannot be used now: locked, I/O, disk full, newer schema
    └── StoreCorrupt           stored data cannot be read back

Every implementation (`acp_agent.store.SqliteStore`, `acp_agent.store.MemoryStore`)
raises these classes and nothing else, and passes `tests/store/contract.py`.

Layered by guarantee, like eventsourcing's recorders: a branch recorder
(`append_batch`, `read`, `last_durable_seq`), sessions and branches as rows,
result tracking (`has_result`, written in the result event's transaction),
per-session writer leases, restore snapshots (cache, never facts), the files
that follow a session wherever it is opened (checkpoints: what files held
before the agent changed them), its outputs (big texts kept in chunks, never
whole in memory: the full text of a tool result cut to its budget, a
background job's output so far), and the
permission rules a person chose to remember ("always allow", "always reject"),
which belong to that person and a workspace rather than to one session. Sessions
and rules carry their owner (a person's name); listing filters by it.

The store keeps its query tables in step with the events, in the batch's own
transaction, by the rules in `project_batch` (`_projection`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, Protocol

import attrs

from acp_agent.core._ids import NO_SEQ, BranchId, CallId, Seq, SessionId
from acp_agent.core._scopes import ScopeKind, ServiceKey
from acp_agent.values import Value

if TYPE_CHECKING:
    # Only in the interface's signatures: the records and errors load without the
    # events' vocabulary (a new session is written before the runtime loads).
    from acp_agent.core._events import Batch, Event

__all__ = (
    "STORE",
    "BranchRecord",
    "ForkOrigin",
    "LeaseHolder",
    "PermissionRule",
    "SeqTaken",
    "SessionHeld",
    "SessionPosition",
    "SessionRecord",
    "Snapshot",
    "Store",
    "StoreConflict",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreNotFound",
    "StoreUnavailable",
)


# --- errors ---------------------------------------------------------------------------


class StoreError(Exception):
    """A store could not do what was asked; the subclass says whose fault it is."""


class StoreConflict(StoreError):
    """Another writer got there first; retrying the same write will not help."""


class SeqTaken(StoreConflict):
    """The batch's first seq is not the branch's next one (taken, or leaving a gap)."""

    def __init__(self, branch_id: str, first_seq: int, expected_seq: int) -> None:
        super().__init__(
            f"branch {branch_id}: batch starts at seq {first_seq}, the next free seq is "
            f"{expected_seq}"
        )
        self.branch_id = branch_id
        self.first_seq = first_seq
        self.expected_seq = expected_seq


@attrs.frozen
class LeaseHolder(Value):
    """The process that holds a session's writer lease."""

    pid: int
    host: str


class SessionHeld(StoreConflict):
    """The session is written by another acp-agent process (or not leased to this one)."""

    def __init__(self, session_id: str, holder: LeaseHolder | None) -> None:
        if holder is None:
            message = f"session {session_id} is not open for writing in this process"
        else:
            message = (
                f"session {session_id} is open in another acp-agent process "
                f"(pid {holder.pid} on {holder.host})"
            )
        super().__init__(message)
        self.session_id = session_id
        self.holder = holder


class StoreNotFound(StoreError, LookupError):
    """No session or branch with that id."""


class StoreUnavailable(StoreError):
    """The store cannot be used now (locked, I/O error, disk full, newer schema)."""


class StoreFull(StoreUnavailable):
    """The disk (or quota) is full: nothing more can be recorded until there is room."""

    def __init__(self, message: str, *, location: str | None = None) -> None:
        super().__init__(message)
        #: Where the store keeps its data (for the person to free space there).
        self.location = location


class StoreCorrupt(StoreError):
    """Stored data cannot be read back as what it claims to be."""


# --- rows -----------------------------------------------------------------------------


@attrs.frozen
class ForkOrigin(Value):
    """Where a forked session's history was copied from."""

    session_id: SessionId
    branch_id: BranchId
    seq: Seq


@attrs.frozen
class SessionRecord(Value):
    """A session as stored: identity, workspace, title and times."""

    session_id: SessionId
    cwd: str
    main_branch_id: BranchId
    created_at: float
    #: Time of the session's latest batch (a store may move it in steps of about a
    #: second); sessions list most recent first.
    updated_at: float
    title: str | None = None
    fork_origin: ForkOrigin | None = None
    #: The other roots of the workspace the session was last given (absolute, resolved,
    #: in order; the cwd is never one of them).
    additional_directories: tuple[str, ...] = ()
    #: The person the session belongs to (`acp_agent.people`): only they see it.
    owner: str = ""


@attrs.frozen(order=True)
class SessionPosition:
    """Where a session stands in the session list: most recent first, then by id, descending.

    A page of `list_sessions` continues `after` the position of the last session
    of the page before.
    """

    updated_at: float
    session_id: SessionId

    @classmethod
    def of(cls, session: SessionRecord) -> SessionPosition:
        return cls(session.updated_at, session.session_id)


@attrs.frozen
class BranchRecord(Value):
    """A branch as stored: its parent and the cut it inherits history up to."""

    branch_id: BranchId
    session_id: SessionId
    #: None for a session's main branch.
    parent_id: BranchId | None
    #: The parent's last inherited seq; the branch's own events start after it.
    cut_seq: Seq
    label: str | None
    created_at: float
    #: When the branch's line of work ended (`BranchEnded`); None while it may continue.
    closed_at: float | None = None


@attrs.frozen
class PermissionRule(Value):
    """A remembered answer to a permission question, for one person, workspace and tool.

    `scope` says what `pattern` matches: `tool` (every call of the tool; pattern
    empty), `command_prefix` (a command and its leading words, e.g. `git status`),
    `path_glob` (paths relative to the workspace, e.g. `src/**`) or `mcp_tool`.
    `decision` is `allow` or `deny`. A revoked rule is kept, with `revoked_at`.
    """

    rule_id: str
    #: The workspace root (absolute) the rule holds in.
    workspace: str
    tool: str
    scope: str
    pattern: str
    decision: str
    created_at: float
    #: Where the person chose it: the session and the call asked about.
    session_id: SessionId | None = None
    call_id: CallId | None = None
    revoked_at: float | None = None
    #: The person who chose it: it holds in their sessions only.
    owner: str = ""


@attrs.frozen
class Snapshot(Value):
    """A restore snapshot: an interpreter's state after `anchor_seq` of one branch.

    Cache, never a fact: see `acp_agent.core._snapshots`.
    """

    branch_id: BranchId
    interpreter: str
    interpreter_version: str
    anchor_seq: Seq
    #: Digest of the event at `anchor_seq` (empty for NO_SEQ): the history it was cut from.
    anchor_digest: str
    #: The branch's lineage key (`Lineage.key()`): which ancestors, cut where.
    ancestry: tuple[tuple[str, int], ...]
    state: bytes
    #: Digest of `state`, to tell a damaged blob from a good one.
    checksum: str
    created_at: float


# --- the interface --------------------------------------------------------------------


class Store(Protocol):
    """Where sessions, branches and their timelines are kept.

    Every method may raise `StoreUnavailable`; reads may raise `StoreCorrupt`.
    """

    # sessions and leases

    async def create_session(
        self, session: SessionRecord, main: BranchRecord, *, history: Sequence[Event] = ()
    ) -> None:
        """Insert the session, its main branch and `history` (for forks); lease it to us.

        One transaction. `history` events must belong to `main` and be dense from 1.
        """
        ...

    async def get_session(self, session_id: SessionId) -> SessionRecord:
        """The session row; `StoreNotFound` if there is none."""
        ...

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        limit: int = 100,
        after: SessionPosition | None = None,
        owner: str | None = None,
    ) -> list[SessionRecord]:
        """Sessions, most recently updated first (ties by id, descending), at most `limit`.

        Optionally only those in `cwd`, only `owner`'s, and only those listed after
        position `after`.
        """
        ...

    async def set_additional_directories(
        self, session_id: SessionId, directories: Sequence[str]
    ) -> None:
        """Replace the session's additional directories (the whole list, in order).

        `StoreNotFound` for an unknown session; `SessionHeld` unless it is leased to us.
        """
        ...

    async def delete_session(self, session_id: SessionId) -> None:
        """Delete the session with its branches, events, results, snapshots, files, outputs
        and lease.

        An unknown session is nothing to do. `SessionHeld` if another live process
        holds its lease (a lease of our own is dropped with it). Permission rules
        belong to the workspace and stay.
        """
        ...

    async def list_branches(self, session_id: SessionId) -> list[BranchRecord]:
        """The session's branches, parents before children."""
        ...

    async def acquire_session(self, session_id: SessionId) -> None:
        """Take the session's writer lease; `SessionHeld` if a live process holds it.

        A lease held by a process that no longer runs is taken over. Idempotent.
        """
        ...

    async def release_session(self, session_id: SessionId) -> None:
        """Give the writer lease back, if we hold it. Idempotent."""
        ...

    async def release_sessions(self, session_ids: Sequence[SessionId]) -> None:
        """`release_session` for many sessions, in one write (closing a whole runtime)."""
        ...

    # events

    async def append_batch(self, batch: Batch) -> None:
        """Store a batch atomically; when this returns the batch is durable.

        The first seq must be the branch's next (`SeqTaken` otherwise); the session
        must be leased to us (`SessionHeld` otherwise); the branch must exist, unless
        the batch carries its `BranchCreated`, and must not have ended.
        Projections (see `project_batch`) are applied in the same transaction.
        """
        ...

    async def read(
        self, branch_id: BranchId, *, gt: Seq = NO_SEQ, lte: Seq | None = None
    ) -> list[Event]:
        """The branch's own stored events with `gt < seq <= lte`, in order."""
        ...

    async def last_durable_seq(self, branch_id: BranchId) -> Seq:
        """The branch's last stored seq: its cut when it has no events of its own."""
        ...

    async def has_result(
        self, branch_id: BranchId, call_id: CallId, *, lte: Seq | None = None
    ) -> bool:
        """Whether the branch recorded a result for the call (at or before `lte`)."""
        ...

    # permission rules: per person and workspace, not per session; no lease needed

    async def add_permission_rule(self, rule: PermissionRule) -> PermissionRule:
        """Keep a new rule and return it; `StoreConflict` if its id is taken.

        A rule in force that says the same (owner, workspace, tool, scope, pattern
        and decision) is kept once: that one is returned and nothing is added.
        """
        ...

    async def list_permission_rules(
        self,
        *,
        workspace: str | None = None,
        include_revoked: bool = False,
        owner: str | None = None,
    ) -> list[PermissionRule]:
        """Rules, oldest first, optionally only one workspace's and one owner's; revoked
        ones on request."""
        ...

    async def revoke_permission_rule(self, rule_id: str, *, revoked_at: float) -> PermissionRule:
        """Mark a rule revoked (kept as a record) and return it; `StoreNotFound` if unknown.

        Revoking a revoked rule changes nothing and returns it as it is.
        """
        ...

    # session files: contents that follow a session (checkpoints); no lease needed

    async def put_files(
        self, session_id: SessionId, kind: str, files: Sequence[tuple[str, bytes]]
    ) -> None:
        """Keep each `(key, data)` of `kind` for the session, in one write. A key kept
        already is left as it is (keys name their content: a checkpoint's digest)."""
        ...

    async def get_file(self, session_id: SessionId, kind: str, key: str) -> bytes | None:
        """The content kept under `(kind, key)` for the session; None if there is none."""
        ...

    async def list_files(self, session_id: SessionId) -> list[tuple[str, str]]:
        """The `(kind, key)` of every file the session keeps, in order."""
        ...

    async def copy_files(self, source_id: SessionId, target_id: SessionId) -> None:
        """Give `target_id` every file and output `source_id` keeps (a fork), in one write."""
        ...

    # session outputs: big texts in chunks (full tool results, jobs' output); no lease needed

    async def put_output(
        self, session_id: SessionId, key: str, chunks: Iterable[bytes], *, start: int = 0
    ) -> None:
        """Keep `chunks` as the session's output `key` from chunk `start` on, in one write:
        the chunks kept before `start` stay, any from `start` on are replaced (by nothing,
        when there are no chunks). `start=0` (the default) replaces the whole output.

        The chunks are taken one at a time, so a big output is never whole in memory;
        `chunks` is iterated again from its start if the write is retried, so give a
        re-iterable (a list, or an object whose `__iter__` starts over), not a generator.
        """
        ...

    async def get_output(self, session_id: SessionId, key: str, index: int) -> bytes | None:
        """Chunk `index` (from 0) of the output kept under `key`, as it was put; None past
        its last chunk, or if the session keeps no such output."""
        ...

    async def read_output(self, session_id: SessionId, key: str) -> list[bytes]:
        """Every chunk of the output kept under `key`, in order, in one read; [] if none
        (for outputs kept in small chunks: a big one is read with `get_output`)."""
        ...

    async def list_outputs(self, session_id: SessionId) -> list[tuple[str, int]]:
        """`(key, size in bytes)` of every output the session keeps, by key."""
        ...

    # restore snapshots: cache, safe to lose

    async def put_snapshot(self, snapshot: Snapshot, *, keep: int = 2) -> None:
        """Store a snapshot, keeping the `keep` newest per branch and interpreter."""
        ...

    async def get_snapshots(self, branch_id: BranchId, interpreter: str) -> list[Snapshot]:
        """Candidate snapshots for a branch and interpreter, newest anchor first."""
        ...

    async def delete_snapshots(self, branch_id: BranchId) -> None:
        """Drop every snapshot of a branch (events, compaction records included, stay)."""
        ...

    async def aclose(self) -> None:
        """Release leases and close; idempotent."""
        ...


#: The store, as a process-scope service.
STORE: Final[ServiceKey[Store]] = ServiceKey("store", ScopeKind.PROCESS)
