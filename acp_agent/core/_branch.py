"""A branch: one line of work in a session, with its own timeline and scope.

A branch inherits its parent's history up to a cut (a batch end) and then
records its own events. Its scope owns its services and their work. Two
ways to close it, both waiting for its own work and leaving siblings alone:
`end()` ends the line of work (records `BranchEnded`; it is not reopened on
load), `aclose()` only unloads it (the session is closing).

A branch never reaches up to its session: what it needs of it (the store,
the clock, the scope that hosts its own, who to tell when it closed) is
handed in as a `BranchContext`.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from typing import Final, Protocol

import attrs

from acp_agent.content import ContentPart
from acp_agent.core._dispatcher import DISPATCHER, Dispatcher
from acp_agent.core._errors import AlreadyStarted
from acp_agent.core._events import (
    Batch,
    BranchEnded,
    Event,
    EventDraft,
    Payload,
    TurnStopReason,
    UserInputAdopted,
)
from acp_agent.core._ids import NO_SEQ, BranchId, CallId, Seq, SessionId, TurnId
from acp_agent.core._lifecycle import CloseOnce
from acp_agent.core._lineage import Lineage
from acp_agent.core._scopes import Scope, ScopeKind, ServiceKey
from acp_agent.core._store import BranchRecord, Store
from acp_agent.core._timeline import DEFAULT_TAIL_EVENTS, TIMELINE, Timeline
from acp_agent.core._turns import Turn, TurnState
from acp_agent.values import Value

__all__ = ("BRANCH", "CORE_PRODUCER", "Branch", "BranchContext", "BranchState", "TurnObserver")

logger = logging.getLogger(__name__)

#: The producer of the facts the runtime records itself.
CORE_PRODUCER: Final = "core"


class TurnObserver(Protocol):
    """Told when a turn of a branch starts and right before it ends (a component that
    shows other work inside the branch's turns, and must stop before the turn ends)."""

    async def turn_started(self, turn: Turn) -> None:
        """The turn's input is on record and its work is about to start."""
        ...

    async def turn_ending(self, turn: Turn) -> None:
        """The turn's ending is about to be recorded (whether it ended or was cut short)."""
        ...


@attrs.frozen
class BranchContext(Value):
    """What a branch is given by its session, so it never reaches up to it."""

    store: Store
    clock: Callable[[], float]
    #: The session's workspace.
    cwd: str
    #: The session's scope: it hosts the branch's scope and its close.
    host: Scope
    #: Called once the branch is closed (the session forgets it).
    on_closed: Callable[[Branch], None]
    #: How many of the newest published events its timeline keeps in memory.
    tail_events: int = DEFAULT_TAIL_EVENTS


class BranchState(enum.Enum):
    """Where an open branch object is in its life."""

    #: Assembled: it takes events, turns and commands.
    OPEN = "open"
    #: A close began: its work is being cancelled and its cleanups run.
    CLOSING = "closing"
    #: Unloaded or ended: it takes nothing more.
    CLOSED = "closed"


class Branch:
    """One line of work: a timeline, a dispatcher and a scope for its services."""

    #: Set while the branch opens, before anyone else can see it.
    scope: Scope
    timeline: Timeline
    dispatcher: Dispatcher

    def __init__(self, record: BranchRecord, lineage: Lineage, context: BranchContext) -> None:
        self.record = record
        self.lineage = lineage
        self._context = context
        self._state = BranchState.OPEN
        self._turn: Turn | None = None
        #: A turn is being begun (its input recorded, its task started).
        self._beginning = False
        self._ending_reason: str | None = None
        self._turn_observers: list[TurnObserver] = []
        self._closer = CloseOnce(self._close, name=f"branch {record.branch_id}")

    def __repr__(self) -> str:
        return f"<Branch {self.id} {self._state.value}>"

    @property
    def id(self) -> BranchId:
        return self.record.branch_id

    @property
    def session_id(self) -> SessionId:
        return self.record.session_id

    @property
    def cwd(self) -> str:
        """The session's workspace, which every branch of it shares."""
        return self._context.cwd

    @property
    def parent_id(self) -> BranchId | None:
        return self.record.parent_id

    @property
    def cut_seq(self) -> Seq:
        """The parent's last seq this branch inherits."""
        return self.record.cut_seq

    @property
    def state(self) -> BranchState:
        return self._state

    @property
    def turn(self) -> Turn | None:
        """The turn that has not ended yet, if any."""
        turn = self._turn
        return turn if turn is not None and turn.state is not TurnState.ENDED else None

    # --- assembly ---------------------------------------------------------------------

    async def _open(self) -> None:
        """Build the branch scope: timeline, dispatcher, then the registry's services."""
        store = self._context.store
        last_durable_seq = await store.last_durable_seq(self.id)

        async def assemble(scope: Scope) -> None:
            self.scope = scope
            self.timeline = Timeline(
                session_id=self.session_id,
                lineage=self.lineage,
                store=store,
                last_durable_seq=last_durable_seq,
                clock=self._context.clock,
                tail_events=self._context.tail_events,
            )
            self.dispatcher = Dispatcher(self.timeline, scope)
            scope.provide(BRANCH, self)
            scope.provide(TIMELINE, self.timeline)
            scope.provide(DISPATCHER, self.dispatcher)
            # Registered first, so it runs last, after every service's cleanup.
            scope.add_cleanup(self._after_scope_closed)

        await self._context.host.open_child(ScopeKind.BRANCH, self.id, assemble=assemble)

    # --- events -----------------------------------------------------------------------

    async def append(self, drafts: Sequence[EventDraft]) -> Batch:
        """Record `drafts` as one batch of this branch (see `Timeline.append`)."""
        return await self.timeline.append(drafts)

    async def record_fact(self, payload: Payload, *, producer: str = CORE_PRODUCER) -> Event:
        """Record one fact as a batch of its own."""
        batch = await self.timeline.append([EventDraft(payload, producer)])
        return batch.events[0]

    async def read(self, *, gt: Seq = NO_SEQ, lte: Seq | None = None) -> list[Event]:
        """Published history, inherited then own (see `Timeline.read`)."""
        return await self.timeline.read(gt=gt, lte=lte)

    async def has_result(self, call_id: CallId) -> bool:
        """Whether this branch's history records a result for the call."""
        store = self._context.store
        for part in self.lineage.parts:
            if await store.has_result(part.branch_id, call_id, lte=part.lte):
                return True
        return False

    async def _record_payload(self, payload: Payload) -> None:
        await self.record_fact(payload)

    # --- turns -----------------------------------------------------------

    def observe_turns(self, observer: TurnObserver) -> None:
        """Tell `observer` when each later turn starts and right before it ends."""
        self._turn_observers.append(observer)

    async def begin_turn(
        self,
        turn_id: TurnId,
        content: Sequence[ContentPart],
        *,
        sent: Sequence[ContentPart | None] = (),
    ) -> Turn:
        """Adopt the input and open a turn for its work; `AlreadyStarted` if one runs or is
        being begun.

        It never waits for the turn before: whoever starts turns queues them (a
        session's handle, `acp_agent.agent`, queues its prompts; the branch manager
        its children's). `content` may be empty: a branch's turn whose input is
        already on record (its task, a message from another branch). `sent`:
        `UserInputAdopted.sent`.
        """
        if self._beginning or self.turn is not None:
            running = self.turn.turn_id if self.turn is not None else "another turn"
            raise AlreadyStarted(f"branch {self.id} is running {running}")
        self._beginning = True
        try:
            await self._record_owed_ending()
            turn = Turn(turn_id, self._record_payload, before_ending=self._turn_ending)
            await self.record_fact(UserInputAdopted(turn_id, content, sent))
            await self.scope.start(turn.host, name=f"turn {turn_id}")
            self._turn = turn
        finally:
            self._beginning = False
        for observer in self._turn_observers:
            try:
                await observer.turn_started(turn)
            except Exception:
                logger.exception("a turn observer of %s failed at its start", self.id)
        return turn

    async def _turn_ending(self, turn: Turn) -> None:
        for observer in self._turn_observers:
            await observer.turn_ending(turn)

    async def _record_owed_ending(self) -> None:
        """Record the ending the last turn could not (the store failed then); raises if it
        still cannot, so no new turn begins on top of an open one."""
        previous = self._turn
        if previous is None:
            return
        await previous.wait_settled()
        ending = previous.unrecorded_ending
        if ending is not None:
            previous.unrecorded_ending = None  # taken: a concurrent caller records nothing
            try:
                await self.record_fact(ending)
            except BaseException:
                previous.unrecorded_ending = ending
                raise

    async def record_owed_ending(self) -> None:
        """Record the ending the last turn could not (the store failed then); nothing if
        none is owed or a turn runs or is being begun (which records it first). Raises
        what the store raises if it still cannot."""
        previous = self._turn
        if not self._beginning and previous is not None and previous.settled:
            await self._record_owed_ending()

    async def end_turn(self, turn_id: TurnId, stop_reason: TurnStopReason) -> None:
        """Record that the turn finished; its leftover work is cancelled. Idempotent."""
        turn = self._turn
        if turn is not None and turn.turn_id == turn_id:
            await turn.end(stop_reason)

    async def cancel_turn(self, turn_id: TurnId) -> None:
        """Record the request, cancel the turn's work, wait until it is interrupted.

        Leaving early cancels nothing: the turn records its interruption itself.
        """
        turn = self._turn
        if turn is not None and turn.turn_id == turn_id:
            await turn.cancel()

    # --- closing ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Unload the branch: cancel its work, wait for it and its cleanups. Idempotent."""
        await self._closer.close(self._context.host)

    async def end(self, reason: str = "closed") -> None:
        """End the line of work: cancel and await its work, record `BranchEnded`.

        Its siblings and the session keep running; it is not reopened on load.
        Idempotent (a branch already closing just closes).
        """
        if not self._closer.started:
            self._ending_reason = reason
        await self.aclose()

    async def _close_here(self) -> None:
        """`aclose` run in the calling task: only for its session's close body."""
        await self._closer.close_here()

    async def _close(self) -> None:
        self._state = BranchState.CLOSING
        try:
            await self.scope.aclose()
            if self._ending_reason is not None:
                await self.record_fact(BranchEnded(self.id, self._ending_reason))
        finally:
            self.timeline.close()
            self._state = BranchState.CLOSED
            self._context.on_closed(self)

    async def _after_scope_closed(self) -> None:
        # The scope ended without our close (its work failed, or the process is tearing
        # down): take no more events. Otherwise `_close` does this after its last record.
        if not self._closer.started:
            self.timeline.close()
            self._state = BranchState.CLOSED
            self._context.on_closed(self)


#: The branch a branch-scope service belongs to.
BRANCH: Final[ServiceKey[Branch]] = ServiceKey("branch", ScopeKind.BRANCH)
