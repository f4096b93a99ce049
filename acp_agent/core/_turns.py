"""A turn: one prompt's work on a branch, in a task group of its own.

Turn work (model requests, tool runs) starts with `Turn.start_soon` and is
owned by the turn, which the branch scope hosts. A turn ends in exactly one
recorded way: `TurnEnded` (its loop finished, or its work failed with
`stop_reason="error"`) or `TurnInterrupted` (cancelled, or its branch closed
under it; recorded once the work has settled). Ending a turn closes nothing
else: the branch stays open for the next prompt.

If the store cannot take the ending (a full disk), the turn still settles:
`unrecorded_ending` holds the fact it owes and `record_error` why it is not
on record, so whoever waits for the turn can answer anyway, and the branch
records the owed ending before its next turn begins.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from acp_agent.core._errors import ScopeClosed
from acp_agent.core._events import (
    Payload,
    TurnCancelRequested,
    TurnEnded,
    TurnInterrupted,
    TurnStopReason,
)
from acp_agent.core._ids import TurnId

__all__ = ("Turn", "TurnState")

logger = logging.getLogger(__name__)


class TurnState(enum.Enum):
    """Where a turn is in its life."""

    #: Work may be started and is running.
    RUNNING = "running"
    #: Cancel was asked for and recorded; the work is being cancelled.
    CANCEL_REQUESTED = "cancel_requested"
    #: The turn's ending is recorded (ended or interrupted); it takes no more work.
    ENDED = "ended"


class Turn:
    """One prompt's work: a task group the branch hosts, and how the turn ended."""

    def __init__(
        self,
        turn_id: TurnId,
        record: Callable[[Payload], Awaitable[None]],
        *,
        before_ending: Callable[[Turn], Awaitable[None]] | None = None,
    ) -> None:
        """`record` appends a fact to the branch's timeline; `before_ending` runs (shielded,
        its failures logged) right before the ending is recorded, whichever way it ends."""
        self.turn_id = turn_id
        self._before_ending = before_ending
        #: The error that ended the turn's work, if it failed.
        self.failure: Exception | None = None
        #: The ending the turn could not record (the store failed), owed to the timeline.
        self.unrecorded_ending: Payload | None = None
        #: Why it could not be recorded.
        self.record_error: Exception | None = None
        self._record = record
        self._state = TurnState.RUNNING
        self._cancel_scope = anyio.CancelScope()
        self._task_group: TaskGroup | None = None
        self._settled = anyio.Event()
        self._cancel_recorded = anyio.Event()

    def __repr__(self) -> str:
        return f"<Turn {self.turn_id} {self._state.value}>"

    @property
    def state(self) -> TurnState:
        return self._state

    @property
    def settled(self) -> bool:
        """Every task of the turn has finished and its ending is recorded."""
        return self._settled.is_set()

    def start_soon(
        self, func: Callable[[], Coroutine[Any, Any, Any]], /, *, name: object = None
    ) -> None:
        """Run `func` as part of the turn; cancelled when the turn is cancelled or ends."""
        if self._state is not TurnState.RUNNING or self._task_group is None:
            raise ScopeClosed(f"turn {self.turn_id} is over")
        self._task_group.start_soon(func, name=name)

    async def wait_settled(self) -> None:
        await self._settled.wait()

    async def end(self, stop_reason: TurnStopReason) -> None:
        """Record `TurnEnded` and cancel leftover work (without waiting: the caller may be it)."""
        if self._state is not TurnState.RUNNING:
            return
        self._state = TurnState.ENDED
        ending = TurnEnded(self.turn_id, stop_reason)
        try:
            with anyio.CancelScope(shield=True):  # once ENDED, the fact must land
                await self._ending_soon()
                await self._record(ending)
        except Exception as exc:
            self.unrecorded_ending, self.record_error = ending, exc
            raise
        finally:
            self._cancel_scope.cancel()

    async def cancel(self) -> None:
        """Record `TurnCancelRequested`, cancel the work, wait until the turn settled.

        The request is recorded before the work is cancelled, so it always precedes
        `TurnInterrupted`. A turn that already ended is only waited for.
        """
        if self._state is TurnState.RUNNING:
            self._state = TurnState.CANCEL_REQUESTED
            try:
                with anyio.CancelScope(shield=True):
                    await self._record(TurnCancelRequested(self.turn_id))
            except Exception as exc:
                # Off the record (the store failed), the work is cancelled all the same.
                logger.error("could not record the cancel of turn %s: %s", self.turn_id, exc)
            finally:
                self._cancel_recorded.set()
                self._cancel_scope.cancel()
        await self._settled.wait()

    async def host(self, *, task_status: TaskStatus[None]) -> None:
        """Own the turn's work; once it settles, record how the turn ended."""
        try:
            with self._cancel_scope:
                async with anyio.create_task_group() as task_group:
                    self._task_group = task_group
                    task_status.started()
                    await anyio.sleep_forever()
        except Exception as exc:
            self.failure = exc
            logger.error("turn %s failed", self.turn_id, exc_info=exc)
        finally:
            self._task_group = None
            with anyio.CancelScope(shield=True):
                await self._record_ending()
            self._settled.set()

    async def _record_ending(self) -> None:
        if self._state is TurnState.ENDED:
            return  # `end()` recorded it
        if self._state is TurnState.CANCEL_REQUESTED:
            await self._cancel_recorded.wait()  # the request goes on record first
        ending: Payload
        if self.failure is not None and self._state is TurnState.RUNNING:
            ending = TurnEnded(self.turn_id, TurnStopReason.ERROR)
        else:
            ending = TurnInterrupted(self.turn_id)  # cancelled, or the branch closed under it
        self._state = TurnState.ENDED
        try:
            await self._ending_soon()
            await self._record(ending)
        except Exception as exc:
            self.unrecorded_ending, self.record_error = ending, exc
            logger.error("could not record the end of turn %s: %s", self.turn_id, exc)

    async def _ending_soon(self) -> None:
        if self._before_ending is None:
            return
        try:
            await self._before_ending(self)
        except Exception:
            logger.exception("a hook before the end of turn %s failed", self.turn_id)
