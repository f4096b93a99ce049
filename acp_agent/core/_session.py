"""A session: a workspace, its branches, and this process's writer lease on it.

Opening a session (create, load, fork) takes its writer lease in the store,
so one process at a time writes it. Closing it unloads every open branch
(each waits for its own work), runs the session's cleanups and gives the
lease back; the session stays in the store and can be loaded again.

Imports run one way, runtime -> session -> branch: a session is handed what
it needs of the runtime as a `SessionContext`, and hands its branches a
`BranchContext`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Final

import anyio
import attrs

from acp_agent.core._branch import CORE_PRODUCER, Branch, BranchContext
from acp_agent.core._errors import BranchClosed, IllegalCut, SessionClosed
from acp_agent.core._events import Batch, BranchCreated, Event, SessionMetadataChanged
from acp_agent.core._ids import BatchId, BranchId, Seq, SessionId, new_id
from acp_agent.core._lifecycle import CloseOnce
from acp_agent.core._lineage import Lineage
from acp_agent.core._scopes import Scope, ScopeKind, ServiceKey
from acp_agent.core._store import BranchRecord, SessionRecord, Store, StoreCorrupt
from acp_agent.core._timeline import DEFAULT_TAIL_EVENTS
from acp_agent.values import Value

__all__ = ("SESSION", "Session", "SessionContext", "SessionState")


@attrs.frozen
class SessionContext(Value):
    """What a session is given by the runtime, so it never reaches up to it."""

    store: Store
    clock: Callable[[], float]
    #: The process scope: it hosts the session's scope and its close.
    host: Scope
    #: Called once the session is closed (the runtime forgets it).
    on_closed: Callable[[Session], None]
    #: How many of the newest published events each branch keeps in memory.
    tail_events: int = DEFAULT_TAIL_EVENTS


class SessionState(enum.Enum):
    """Where an open session object is in its life."""

    #: Branches can be opened, forked and closed.
    OPEN = "open"
    #: Close began: branches are unloading, then cleanups run and the lease is released.
    CLOSING = "closing"
    #: Unloaded here; the stored session remains and can be loaded again.
    CLOSED = "closed"


class Session:
    """An open session: its record, its open branches and its scope."""

    #: Set while the session opens, before anyone else can see it.
    scope: Scope

    def __init__(self, record: SessionRecord, context: SessionContext) -> None:
        self.record = record
        self._context = context
        self._state = SessionState.OPEN
        self._branches: dict[BranchId, Branch] = {}
        self._closer = CloseOnce(self._close, name=f"session {record.session_id}")
        self._release_lease = True

    def __repr__(self) -> str:
        return f"<Session {self.id} {self._state.value}>"

    @property
    def id(self) -> SessionId:
        return self.record.session_id

    @property
    def cwd(self) -> str:
        return self.record.cwd

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def branches(self) -> Mapping[BranchId, Branch]:
        """The branches open in this process (ended ones are not reopened)."""
        return MappingProxyType(self._branches)

    @property
    def main(self) -> Branch:
        """The session's main branch; `BranchClosed` if its line of work ended."""
        main_id = self.record.main_branch_id
        if main_id not in self._branches:
            raise BranchClosed(main_id)
        return self._branches[main_id]

    def _require_open(self) -> None:
        if self._state is not SessionState.OPEN:
            raise SessionClosed(self.id)

    # --- branches ---------------------------------------------------------------------

    async def create_branch(
        self,
        parent: Branch,
        *,
        at: Seq | None = None,
        label: str | None = None,
        task: str | None = None,
    ) -> Branch:
        """Open a child of `parent` inheriting its history up to `at` (a batch end).

        `at` defaults to the parent's published end. The child's first event,
        `BranchCreated` (with its `label` and `task`), and its stored row are
        written in one transaction.
        """
        self._require_open()
        cut = parent.timeline.last_published_seq if at is None else at
        if not await parent.timeline.is_batch_end(cut):
            raise IllegalCut(f"cannot branch {parent.id} at {cut}: not a published batch end")
        branch_id = BranchId(new_id("br"))
        first = Event(
            branch_id=branch_id,
            seq=Seq(cut + 1),
            batch_id=BatchId(cut + 1),
            payload=BranchCreated(branch_id, parent.id, cut, label, task),
            producer=CORE_PRODUCER,
            recorded_at=self._context.clock(),
        )
        await self._context.store.append_batch(Batch(self.id, branch_id, (first,)))
        record = BranchRecord(branch_id, self.id, parent.id, cut, label, first.recorded_at)
        return await self._open_branch(record, parent.lineage.child(branch_id, cut))

    async def close_branch(self, branch: Branch, *, reason: str = "closed") -> None:
        """End `branch`'s line of work (`Branch.end`); its siblings keep running."""
        await branch.end(reason)

    async def set_title(self, title: str | None) -> None:
        """Record the new title on the main branch; the stored session row follows."""
        await self.main.record_fact(SessionMetadataChanged(title))
        self.record = attrs.evolve(self.record, title=title)

    async def set_additional_directories(self, directories: Sequence[str]) -> None:
        """Keep `directories` as the session's other roots (the whole list, in order)."""
        kept = tuple(directories)
        if kept == self.record.additional_directories:
            return
        await self._context.store.set_additional_directories(self.id, kept)
        self.record = attrs.evolve(self.record, additional_directories=kept)

    async def open_branches(self, records: Sequence[BranchRecord]) -> None:
        """Open the stored branches that have not ended, parents first (a load)."""
        lineages: dict[BranchId, Lineage] = {}
        for branch in records:
            if branch.parent_id is None:
                lineage = Lineage.root(branch.branch_id)
            elif branch.parent_id in lineages:
                lineage = lineages[branch.parent_id].child(branch.branch_id, branch.cut_seq)
            else:
                raise StoreCorrupt(
                    f"branch {branch.branch_id}: parent {branch.parent_id} is unknown"
                )
            lineages[branch.branch_id] = lineage
            if branch.closed_at is None:
                await self._open_branch(branch, lineage)

    async def _open_branch(self, record: BranchRecord, lineage: Lineage) -> Branch:
        self._require_open()
        context = BranchContext(
            store=self._context.store,
            clock=self._context.clock,
            tail_events=self._context.tail_events,
            cwd=self.cwd,
            host=self.scope,
            on_closed=self._forget_branch,
        )
        branch = Branch(record, lineage, context)
        self._branches[record.branch_id] = branch
        try:
            await branch._open()
        except BaseException:
            self._branches.pop(record.branch_id, None)
            raise
        return branch

    def _forget_branch(self, branch: Branch) -> None:
        if self._branches.get(branch.id) is branch:
            del self._branches[branch.id]

    # --- closing ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Unload every branch (each waits for its own work), then release the lease.

        Idempotent; a caller that stops waiting cancels nothing.
        """
        await self._closer.close(self._context.host)

    async def _close_at_exit(self) -> None:
        """Close from the runtime's own close (shielded, to the end), leaving the lease
        for the runtime to give back with all the others, in one write."""
        if not self._closer.started:
            self._release_lease = False
        await self._closer.close_here()

    async def _close(self) -> None:
        self._state = SessionState.CLOSING
        try:
            branches = list(self._branches.values())
            if len(branches) == 1:  # most sessions: no task group needed to wait for one
                await branches[0]._close_here()
            else:
                async with anyio.create_task_group() as task_group:
                    for branch in branches:
                        task_group.start_soon(branch._close_here)
            await self.scope.aclose()
        finally:
            self._state = SessionState.CLOSED
            try:
                if self._release_lease:
                    await self._context.store.release_session(self.id)
            finally:
                self._context.on_closed(self)


#: The session a session-scope service belongs to.
SESSION: Final[ServiceKey[Session]] = ServiceKey("session", ScopeKind.SESSION)
