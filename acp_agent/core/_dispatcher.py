"""Delivers a branch's published events, in order, to each subscriber.

Each subscription has its own delivery task and position, so a slow
subscriber delays only itself. A subscriber must not do slow work in
`handle`: it starts that work as a task of its own component's scope and
returns, and the work records its outcome as new events. That is why a
cancel event is never stuck behind a model request.

Rebuild, then live: `subscribe_rebuilt` lets the subscriber rebuild its state
from published history and learns the seq the rebuild covered; delivery then
starts right after it. Events published meanwhile wait in the timeline (its
in-memory tail, then the store), which is the buffer: the subscriber gets
every event after the covered seq exactly once, none before it.
"""

from __future__ import annotations

import logging
from typing import Final, Protocol

import anyio

from acp_agent.core._errors import BranchClosed, IllegalCut
from acp_agent.core._events import Event
from acp_agent.core._ids import Seq
from acp_agent.core._lifecycle import TaskSpawner
from acp_agent.core._scopes import ScopeKind, ServiceKey
from acp_agent.core._timeline import Timeline

__all__ = ("DISPATCHER", "Dispatcher", "RebuildingSubscriber", "Subscriber", "Subscription")

logger = logging.getLogger(__name__)


class Subscriber(Protocol):
    """Receives a branch's events in order."""

    @property
    def name(self) -> str: ...

    async def handle(self, event: Event) -> None:
        """Take one event; start slow work in your own scope and return at once."""
        ...


class RebuildingSubscriber(Subscriber, Protocol):
    """A subscriber that first rebuilds its state from published history."""

    async def rebuild(self, timeline: Timeline) -> Seq:
        """Rebuild from `timeline`'s published events; return the seq the rebuild covered.

        The covered seq must be a batch end no later than the published position.
        """
        ...


class Subscription:
    """One subscriber's delivery: its position, and how to end it."""

    def __init__(self, subscriber: Subscriber, after: Seq, timeline: Timeline) -> None:
        self.subscriber = subscriber
        #: The timeline delivered from.
        self.timeline = timeline
        #: The error `handle` raised, which ended delivery.
        self.error: Exception | None = None
        self._last_delivered_seq = after
        self._cancel_scope = anyio.CancelScope()
        self._started = False
        self._disconnected = False
        self._ended = anyio.Event()

    def __repr__(self) -> str:
        return f"<Subscription {self.name} delivered={self._last_delivered_seq}>"

    @property
    def name(self) -> str:
        return self.subscriber.name

    @property
    def last_delivered_seq(self) -> Seq:
        """The last seq this subscriber received (or the seq its rebuild covered)."""
        return self._last_delivered_seq

    @property
    def active(self) -> bool:
        """Delivery has not ended (by disconnect, closed timeline or subscriber error)."""
        return not self._ended.is_set()

    async def disconnect(self) -> None:
        """Stop delivering to this subscriber; the work it started keeps running."""
        self._disconnected = True
        self._cancel_scope.cancel()
        if self._started:
            await self._ended.wait()
        else:
            self._ended.set()

    async def wait_ended(self) -> None:
        """Wait until delivery has ended."""
        await self._ended.wait()


class Dispatcher:
    """Ordered delivery of one timeline's published events to its subscribers."""

    def __init__(self, timeline: Timeline, owner: TaskSpawner) -> None:
        """Delivery tasks run in `owner` (a branch scope holds them until it is ready)."""
        self.timeline = timeline
        self._owner = owner
        self._subscriptions: list[Subscription] = []

    @property
    def subscriptions(self) -> tuple[Subscription, ...]:
        """Subscriptions whose delivery has not ended."""
        return tuple(s for s in self._subscriptions if s.active)

    def subscribe(self, subscriber: Subscriber, *, after: Seq) -> Subscription:
        """Deliver every published event after `after` (a batch end) to `subscriber`."""
        if after > self.timeline.last_published_seq:
            raise IllegalCut(f"cannot deliver after {after}: not published yet")
        subscription = Subscription(subscriber, after, self.timeline)
        self._subscriptions = [s for s in self._subscriptions if s.active]
        self._subscriptions.append(subscription)
        self._owner.start_soon(
            lambda: self._deliver(subscription), name=f"deliver to {subscriber.name}"
        )
        return subscription

    async def subscribe_rebuilt(self, subscriber: RebuildingSubscriber) -> Subscription:
        """Let `subscriber` rebuild from history, then deliver what follows the rebuild."""
        covered = await subscriber.rebuild(self.timeline)
        if not await self.timeline.is_batch_end(covered):
            raise IllegalCut(
                f"{subscriber.name} rebuilt up to {covered}, which is not a published batch end"
            )
        return self.subscribe(subscriber, after=covered)

    async def _deliver(self, subscription: Subscription) -> None:
        subscription._started = True
        timeline = self.timeline
        handle = subscription.subscriber.handle
        cursor = subscription.last_delivered_seq  # always a batch end
        try:
            with subscription._cancel_scope:
                if subscription._disconnected:
                    return
                while True:
                    published = await timeline.wait_published(cursor)
                    async for batch in timeline.batches(gt=cursor, lte=published):
                        for event in batch:
                            await handle(event)
                            subscription._last_delivered_seq = event.seq
                        cursor = batch[-1].seq
        except BranchClosed:
            pass  # the timeline ended: nothing more will be published
        except Exception as exc:
            subscription.error = exc
            logger.error(
                "subscriber %s failed; delivery to it stopped", subscription.name, exc_info=exc
            )
        finally:
            subscription._ended.set()


#: A branch's dispatcher, as a branch-scope service.
DISPATCHER: Final[ServiceKey[Dispatcher]] = ServiceKey("dispatcher", ScopeKind.BRANCH)
