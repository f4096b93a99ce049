"""Following a session: several subscribers at once, each from its own position.

    subscription = await session.subscribe(viewer, after=cursor)
    await subscription.wait_ready()        # the replay up to `ready_at` is delivered
    outcome = await turn.outcome(seen_by=subscription)

Each subscription is a delivery of the branch's dispatcher: its own task and
its own position, reading what it has not seen from the timeline's
in-memory tail or, once that has moved on, from the store. So a subscriber
that falls behind (a slow client) never holds up the timeline, the model or
another subscriber, and buffers nothing: it catches up from the store.
Every event after `after` reaches it exactly once, in order, whatever is
published meanwhile (rebuild, then live: `acp_agent.core`'s dispatcher).

A subscription also keeps what it has delivered of each turn's end, so a
front end can answer a prompt only once the turn's last update went out
through it (`TurnHandle.outcome`): nothing of a turn follows its answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio
import attrs

from acp_agent.core import (
    Branch,
    Event,
    ModelRequestFailed,
    Payload,
    Seq,
    Subscriber,
    Subscription,
    Timeline,
    Turn,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    UserInputAdopted,
)

if TYPE_CHECKING:
    from acp_agent.capabilities.branches import ChildBranch

__all__ = (
    "DeliveryStopped",
    "SessionSubscription",
    "TurnOutcome",
    "child_history",
    "follow",
    "follow_child",
)

logger = logging.getLogger(__name__)

#: How long a turn whose end is off the record waits for its published events to go out.
_CATCH_UP_BUDGET_S: Final = 2.0


@attrs.define
class TurnOutcome:
    """How a turn ended, as a front end answers its prompt: the ending fact, and the
    model's failure if the turn's last request failed."""

    ending: Payload
    failure: ModelRequestFailed | None = None
    #: The store error that kept `ending` off the record (it was never published).
    unrecorded: Exception | None = None


class DeliveryStopped(RuntimeError):
    """The subscription stopped taking events, so a turn's end will never be delivered."""


class SessionSubscription:
    """One subscriber's delivery of a branch's events, and what it saw of turns' ends.

    Made by `SessionHandle.subscribe`. `ready_at` is the published position when
    it subscribed: what it receives up to there is a replay, what follows is live.
    """

    def __init__(self, subscriber: Subscriber, timeline: Timeline, ready_at: Seq) -> None:
        self.subscriber = subscriber
        self.timeline = timeline
        self.ready_at = ready_at
        self._delivery: Subscription | None = None
        self._turn: TurnId | None = None
        self._failure: ModelRequestFailed | None = None
        self._outcomes: dict[TurnId, TurnOutcome] = {}
        self._changed = anyio.Event()
        #: Waiters for every published event to be delivered (see `caught_up`).
        self._catching_up = 0

    def __repr__(self) -> str:
        return f"<SessionSubscription {self.name} delivered={self.last_delivered_seq}>"

    @property
    def name(self) -> str:
        return self.subscriber.name

    @property
    def last_delivered_seq(self) -> Seq:
        """The last seq this subscriber received: its cursor."""
        delivery = self._delivery
        return self.ready_at if delivery is None else delivery.last_delivered_seq

    @property
    def active(self) -> bool:
        """Delivery has not ended (by `disconnect`, a closed branch or a subscriber error)."""
        return self._delivery is not None and self._delivery.active

    @property
    def error(self) -> Exception | None:
        """What the subscriber raised, which ended its delivery."""
        return None if self._delivery is None else self._delivery.error

    def _started(self, delivery: Subscription) -> None:
        self._delivery = delivery

    async def handle(self, event: Event) -> None:
        """Deliver `event` to the subscriber, then note what it says of a turn's end."""
        await self.subscriber.handle(event)
        payload = event.payload
        if isinstance(payload, UserInputAdopted) and payload.begins_turn:
            self._turn, self._failure = TurnId(payload.input_id), None
            # An ending recorded late (owed after a store failure) has nobody waiting for it.
            self._outcomes.clear()
        elif isinstance(payload, ModelRequestFailed):
            self._failure = payload
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            failure = self._failure if self._turn == payload.turn_id else None
            self._outcomes[payload.turn_id] = TurnOutcome(payload, failure)
            self._wake()
            return
        if self._catching_up:
            self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def disconnect(self) -> None:
        """Deliver nothing more; what the session does goes on."""
        if self._delivery is not None:
            await self._delivery.disconnect()

    async def wait_ready(self) -> None:
        """Wait until the replay (everything up to `ready_at`) has been delivered."""
        self._catching_up += 1
        try:
            while self.active and self.last_delivered_seq < self.ready_at:
                await self._changed.wait()
        finally:
            self._catching_up -= 1

    async def caught_up(self, budget_s: float = _CATCH_UP_BUDGET_S) -> None:
        """Wait (at most `budget_s`) until every event published now has been delivered."""
        self._catching_up += 1
        try:
            with anyio.move_on_after(budget_s):
                while self.active and self.last_delivered_seq < self.timeline.last_published_seq:
                    await self._changed.wait()
        finally:
            self._catching_up -= 1

    async def turn_over(self, turn_id: TurnId, turn: Turn | None = None) -> TurnOutcome:
        """Wait until the turn's end (and so everything before it) has been delivered.

        With `turn`, a turn that settled without its end on record (the store
        failed) answers once what was published went out, with `unrecorded` set.
        `DeliveryStopped` if delivery ended first.
        """
        async with anyio.create_task_group() as watchers:
            if turn is not None:
                watchers.start_soon(self._wake_after, turn.wait_settled)
            if self._delivery is not None:
                watchers.start_soon(self._wake_after, self._delivery.wait_ended)
            try:
                outcome = await self._turn_outcome(turn_id, turn)
            finally:
                watchers.cancel_scope.cancel()
        return outcome

    async def _turn_outcome(self, turn_id: TurnId, turn: Turn | None) -> TurnOutcome:
        while True:
            outcome = self._outcomes.pop(turn_id, None)
            if outcome is not None:
                return outcome
            if turn is not None and turn.settled and turn.unrecorded_ending is not None:
                await self.caught_up()
                return TurnOutcome(turn.unrecorded_ending, unrecorded=turn.record_error)
            if self._delivery is not None and not self._delivery.active:
                raise DeliveryStopped(
                    f"the delivery to {self.name} stopped: {self._delivery.error!r}"
                )
            await self._changed.wait()

    async def _wake_after(self, wait: Callable[[], Awaitable[None]]) -> None:
        await wait()
        self._wake()


def follow(branch: Branch, subscriber: Subscriber, *, after: Seq | None) -> SessionSubscription:
    """Deliver `branch`'s events after `after` (a published batch end; None: from now) to
    `subscriber`, in order, then live."""
    ready_at = branch.timeline.last_published_seq
    subscription = SessionSubscription(subscriber, branch.timeline, ready_at)
    cursor = ready_at if after is None else after
    subscription._started(branch.dispatcher.subscribe(subscription, after=cursor))
    return subscription


def follow_child(
    child: ChildBranch, subscriber: Subscriber, *, after: Seq | None = None
) -> SessionSubscription:
    """`follow` a child line of work (a front end that shows it as a session of its own)."""
    return follow(child.branch, subscriber, after=after)


async def child_history(child: ChildBranch) -> tuple[Seq, list[Event]]:
    """A child line's own published events (not what it inherited) and their position."""
    branch = child.branch
    covered = branch.timeline.last_published_seq
    return covered, await branch.read(gt=branch.cut_seq, lte=covered)
