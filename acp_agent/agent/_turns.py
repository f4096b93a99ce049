"""A session's turn queue: prompts wait their turn in order, one turn at a time.

    async with session.turn_slot() as slot:      # registered at once, then waits
        if slot.cancelled:
            return "cancelled"
        turn = await slot.start(content)         # `UserInputAdopted` is on record
        outcome = await turn.outcome(seen_by=subscription)

The queue is the session's one turn lock: a slot holds it from its turn in
the queue until the block ends, so a front end can do its own work around
the turn (read the prompt's content, run a slash command, title the
session) with no other turn in between. `SessionHandle.cancel` cancels every
slot: a waiting one stops waiting, a running command or turn is cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import anyio

from acp_agent.agent._errors import SessionReadOnly
from acp_agent.content import ContentPart
from acp_agent.core import Branch, Turn, TurnId, new_id

if TYPE_CHECKING:
    from acp_agent.agent._subscriptions import SessionSubscription, TurnOutcome
    from acp_agent.capabilities.loop import ModelLoop

__all__ = ("TurnHandle", "TurnSlot")

logger = logging.getLogger(__name__)

T = TypeVar("T")


class TurnHandle:
    """One started turn: how to cancel it, and how it ended.

    Answered by `UserInputAdopted` (recorded before it is returned), then
    exactly one of `TurnEnded` (its `stop_reason`; a `ModelRequestFailed` before
    it says why the model stopped) or `TurnInterrupted` (cancelled, or the
    session closed under it).
    """

    def __init__(self, branch: Branch, turn: Turn) -> None:
        self._branch = branch
        self.turn = turn
        #: How it ended, once a subscription delivered its end (`outcome`).
        self.ended: TurnOutcome | None = None

    def __repr__(self) -> str:
        return f"<TurnHandle {self.turn_id} {self.turn.state.value}>"

    @property
    def turn_id(self) -> TurnId:
        """The turn's id, which is also the person's message id."""
        return self.turn.turn_id

    @property
    def settled(self) -> bool:
        """Its work is over and its ending is recorded (or owed: the store failed)."""
        return self.turn.settled

    @property
    def failure(self) -> BaseException | None:
        """The error that ended its work, if it failed."""
        return self.turn.failure

    async def wait_settled(self) -> None:
        await self.turn.wait_settled()

    async def outcome(self, *, seen_by: SessionSubscription) -> TurnOutcome:
        """How the turn ended, once `seen_by` delivered its end (nothing of it follows).

        Raises `DeliveryStopped` if `seen_by` stopped first."""
        self.ended = await seen_by.turn_over(self.turn_id, self.turn)
        return self.ended

    async def cancel(self) -> None:
        """Record `TurnCancelRequested`, cancel the work, wait until it is interrupted."""
        await self._branch.cancel_turn(self.turn_id)


class TurnSlot:
    """One prompt's place in its session's queue (see the module docstring)."""

    def __init__(
        self,
        *,
        lock: anyio.Lock,
        branch: Branch,
        loop: ModelLoop,
        before_waiting: Callable[[], Awaitable[None]],
        on_done: Callable[[TurnSlot], None],
        read_only: Callable[[], str | None] = lambda: None,
    ) -> None:
        """`read_only`: why no turn may start in the session now (None: it may)."""
        self._read_only = read_only
        self._lock = lock
        self._branch = branch
        self._loop = loop
        self._before_waiting = before_waiting
        self._on_done = on_done
        #: `SessionHandle.cancel` reached it: it answers as cancelled whatever happens.
        self.cancelled = False
        #: Set once its turn is being started.
        self.turn_id: TurnId | None = None
        self._wait_scope = anyio.CancelScope()
        self._command_scope: anyio.CancelScope | None = None
        self._holding = False

    async def __aenter__(self) -> TurnSlot:
        """Wait for the turns before (and for tool servers still starting); a cancel
        while waiting returns at once, with `cancelled` set."""
        try:
            with self._wait_scope:
                await self._before_waiting()
                await self._lock.acquire()
                self._holding = True
        except BaseException:
            self._done()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._done()

    def _done(self) -> None:
        if self._holding:
            self._holding = False
            self._lock.release()
        self._on_done(self)

    async def start(
        self, content: Sequence[ContentPart], *, sent: Sequence[ContentPart | None] = ()
    ) -> TurnHandle:
        """Start the turn of `content` on the session's main line (`sent`: what the person
        sent for each part the agent changed, `UserInputAdopted.sent`).

        Raises `PromptTooLarge` (nothing recorded) for a message the model cannot
        take, `SessionReadOnly` (nothing recorded) when the session's workspace is
        not on this machine, the store's error if the input cannot be recorded. A slot cancelled
        while the turn was starting cancels it at once.
        """
        if not self._holding:
            raise RuntimeError("a turn slot starts a turn only while it holds the queue")
        why = self._read_only()
        if why is not None:
            raise SessionReadOnly(why)
        turn_id = self.turn_id = TurnId(new_id("turn"))
        turn = TurnHandle(self._branch, await self._loop.start_turn(turn_id, content, sent=sent))
        if self.cancelled:  # a cancel came while the turn was starting
            await turn.cancel()
        return turn

    async def cancel_turn(self) -> None:
        """Cancel the turn this slot started, if it started one."""
        if self.turn_id is not None:
            await self._branch.cancel_turn(self.turn_id)

    async def cancel(self) -> None:
        """Cancel this prompt alone (not the session's others): its wait, its command, its
        turn (a front end with several clients cancels only the one that asked)."""
        self._cancel()
        await self.cancel_turn()

    async def run(self, work: Callable[[], Awaitable[T]]) -> T | None:
        """Run `work` (a slash command) in place of a turn; None if cancelled first or
        meanwhile."""
        result: T | None = None
        with anyio.CancelScope() as scope:
            self._command_scope = scope
            if not self.cancelled:
                result = await work()
        self._command_scope = None
        return None if self.cancelled else result

    def _cancel(self) -> None:
        """Mark it cancelled, stop its wait and its command (its turn: `cancel_turn`)."""
        self.cancelled = True
        self._wait_scope.cancel()
        if self._command_scope is not None:
            self._command_scope.cancel()
