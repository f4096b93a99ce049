"""The process scope: the store, the service registry and the sessions open here.

    async with open_runtime(store, registry=registry) as runtime:
        session = await runtime.create_session(cwd="/work/project")
        turn = await session.main.begin_turn(turn_id, content)

Leaving the block closes every open session (each unloads its branches and
releases its lease), then the process scope.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import Final

import anyio
import attrs

from acp_agent.core._branch import Branch
from acp_agent.core._errors import IllegalCut, ScopeClosed
from acp_agent.core._events import Event, EventDraft
from acp_agent.core._first_write import main_branch_record, new_session_record
from acp_agent.core._ids import BatchId, BranchId, Seq, SessionId, new_id
from acp_agent.core._scopes import (
    Assembler,
    Scope,
    ScopeKind,
    ScopeState,
    ServiceKey,
    ServiceRegistry,
)
from acp_agent.core._session import SESSION, Session, SessionContext
from acp_agent.core._store import (
    STORE,
    ForkOrigin,
    SessionPosition,
    SessionRecord,
    Store,
)
from acp_agent.core._timeline import DEFAULT_TAIL_EVENTS

__all__ = (
    "RUNTIME",
    "Runtime",
    "create_stored_session",
    "open_runtime",
)


class Runtime:
    """Opens, forks and closes sessions in this process; owns the process scope."""

    #: Set while the runtime opens, before anyone else can see it.
    scope: Scope

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], float] = time.time,
        tail_events: int = DEFAULT_TAIL_EVENTS,
    ) -> None:
        """`tail_events`: how many of the newest published events each branch keeps in
        memory for its readers (older ones are read from the store)."""
        self.store = store
        self.clock = clock
        self._tail_events = tail_events
        self._sessions: dict[SessionId, Session] = {}
        self._opening = anyio.Lock()

    @property
    def sessions(self) -> Mapping[SessionId, Session]:
        """The sessions open in this process."""
        return MappingProxyType(self._sessions)

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        limit: int = 100,
        after: SessionPosition | None = None,
        owner: str | None = None,
    ) -> list[SessionRecord]:
        """Stored sessions, most recently updated first, optionally only those in `cwd`,
        only `owner`'s, and only those after position `after` (the next page)."""
        return await self.store.list_sessions(cwd=cwd, limit=limit, after=after, owner=owner)

    async def delete_session(self, session_id: SessionId) -> None:
        """Close the session if it is open here, then delete it from the store.

        An unknown session is nothing to do; `SessionHeld` if another live process has it.
        """
        await self.close_session(session_id)
        await self.store.delete_session(session_id)

    async def create_session(
        self,
        cwd: str,
        *,
        title: str | None = None,
        additional_directories: Sequence[str] = (),
        provide: Assembler | None = None,
        owner: str = "",
    ) -> Session:
        """A new session in `cwd` with an empty main branch, leased to this process.

        `additional_directories` are the workspace's other roots, kept with the session;
        `owner` the person it belongs to.
        `provide`, here and wherever a session opens, provides session services of the
        opener's (a front end's side) before the registry's factories run.
        """
        record = new_session_record(
            cwd,
            at=self.clock(),
            title=title,
            additional_directories=additional_directories,
            owner=owner,
        )
        await create_stored_session(self.store, record)
        return await self._open(record, provide)

    async def open_created(
        self, record: SessionRecord, *, provide: Assembler | None = None
    ) -> Session:
        """Open a session `create_stored_session` wrote (and leased to this process).

        How an answer can wait only for the write, not for the session's assembly; if
        it cannot be opened, its lease is given back.
        """
        async with self._opening:
            return await self._open(record, provide)

    async def load_session(
        self, session_id: SessionId, *, provide: Assembler | None = None
    ) -> Session:
        """Open a stored session: lease it, then rebuild its open branches.

        Raises `StoreNotFound` for an unknown id and `SessionHeld` when another
        live acp-agent process has it open. Returns the open session if it is already
        (as it was opened: `provide` is not run again).
        """
        async with self._opening:
            if session_id in self._sessions:
                return self._sessions[session_id]
            await self.store.acquire_session(session_id)
            try:
                record = await self.store.get_session(session_id)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self.store.release_session(session_id)
                raise
            return await self._open(record, provide)

    async def fork_session(
        self,
        branch: Branch,
        *,
        at: Seq | None = None,
        title: str | None = None,
        additional_directories: Sequence[str] | None = None,
        provide: Assembler | None = None,
        owner: str | None = None,
    ) -> Session:
        """A new, independent session whose main branch starts with `branch`'s history.

        History up to `at` (a batch end; default: all published) is copied with its
        seqs and batches intact, in the same transaction that creates the session.
        The fork keeps the source's additional directories unless given its own, and
        belongs to `owner` (default: the source's owner).
        """
        cut = branch.timeline.last_published_seq if at is None else at
        if not await branch.timeline.is_batch_end(cut):
            raise IllegalCut(f"cannot fork {branch.id} at {cut}: not a published batch end")
        source = self._sessions[branch.session_id].record
        now = self.clock()
        record = SessionRecord(
            session_id=SessionId(new_id("sess")),
            cwd=source.cwd,
            main_branch_id=BranchId(new_id("br")),
            created_at=now,
            updated_at=now,
            title=source.title if title is None else title,
            fork_origin=ForkOrigin(source.session_id, branch.id, cut),
            additional_directories=(
                source.additional_directories
                if additional_directories is None
                else tuple(additional_directories)
            ),
            owner=source.owner if owner is None else owner,
        )
        history = [
            attrs.evolve(event, branch_id=record.main_branch_id)
            for event in await branch.timeline.read(lte=cut)
        ]
        await self.store.create_session(record, main_branch_record(record), history=history)
        return await self._open(record, provide)

    async def close_session(self, session_id: SessionId) -> None:
        """Close the session if it is open here (see `Session.aclose`)."""
        session = self._sessions.get(session_id)
        if session is not None:
            await session.aclose()

    async def aclose(self) -> None:
        """Close every open session, give their leases back in one write, then close the
        process scope. Idempotent."""
        sessions = list(self._sessions.values())
        try:
            async with anyio.create_task_group() as task_group:
                for session in sessions:
                    task_group.start_soon(session._close_at_exit)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self.store.release_sessions([session.id for session in sessions])
                finally:
                    await self.scope.aclose()

    async def _open(self, record: SessionRecord, provide: Assembler | None) -> Session:
        """Assemble a leased session's scope and open its branches, parents first."""
        if self.scope.state is not ScopeState.READY:
            raise ScopeClosed("the runtime is closing")
        context = SessionContext(
            store=self.store,
            clock=self.clock,
            host=self.scope,
            on_closed=self._forget_session,
            tail_events=self._tail_events,
        )
        session = Session(record, context)

        async def assemble(scope: Scope) -> None:
            session.scope = scope
            scope.provide(SESSION, session)
            if provide is not None:
                await provide(scope)

        try:
            await self.scope.open_child(ScopeKind.SESSION, record.session_id, assemble=assemble)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.store.release_session(record.session_id)
            raise
        self._sessions[record.session_id] = session
        try:
            await session.open_branches(await self.store.list_branches(record.session_id))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.aclose()
            raise
        return session

    def _forget_session(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]


async def create_stored_session(
    store: Store, record: SessionRecord, facts: Sequence[EventDraft] = ()
) -> None:
    """Write a new session with its main branch, leased to this process, and `facts` as
    the branch's first batch, in one transaction: from then on it survives a crash and
    `session/load` finds it as it was answered."""
    history = [
        Event(record.main_branch_id, Seq(seq), BatchId(1), d.payload, d.producer, record.created_at)
        for seq, d in enumerate(facts, start=1)
    ]
    await store.create_session(record, main_branch_record(record), history=history)


@asynccontextmanager
async def open_runtime(
    store: Store,
    *,
    registry: ServiceRegistry | None = None,
    clock: Callable[[], float] = time.time,
    tail_events: int = DEFAULT_TAIL_EVENTS,
) -> AsyncIterator[Runtime]:
    """Open the process scope over `store`; on exit close every session, then the scope.

    The store stays open: whoever opened it closes it. `tail_events`: see `Runtime`.
    """
    runtime = Runtime(store, clock=clock, tail_events=tail_events)

    async def assemble(scope: Scope) -> None:
        runtime.scope = scope
        scope.provide(STORE, store)
        scope.provide(RUNTIME, runtime)

    async with anyio.create_task_group() as task_group:
        await Scope.open_root(task_group, registry or ServiceRegistry(), assemble=assemble)
        try:
            yield runtime
        finally:
            with anyio.CancelScope(shield=True):
                await runtime.aclose()


#: The runtime, as a process-scope service.
RUNTIME: Final[ServiceKey[Runtime]] = ServiceKey("runtime", ScopeKind.PROCESS)
