"""One branch's ordered, durable record of facts.

An appended batch passes through the stages of the naming contract:

    assigned   `append` gave each draft the next seq, under the write lock
    accepted   the store took the batch (inside `Store.append_batch`)
    durable    the store committed it; it survives SIGKILL
    published  the publish step released it to readers and the dispatcher
    delivered  a subscriber received it (tracked per subscriber by the dispatcher)

and the positions keep `delivered <= published <= durable <= assigned`.

The write lock spans assignment, the store write and publication. A batch
is atomic: if a draft's registration or the store write fails, every
registration is undone and its seqs are released, so nothing of it is
published and the next batch reuses the same seqs (no gap). One lock per
branch costs little, since the store writes one transaction per batch anyway.

Reads and cut points stop only at batch ends, so no reader sees half of a
piece of business (a tool batch from "requested" to "all results").
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Final

import anyio

from acp_agent.core._bulk import gc_paused
from acp_agent.core._errors import BranchClosed, IllegalCut
from acp_agent.core._events import Batch, Event, EventDraft
from acp_agent.core._ids import NO_SEQ, BatchId, BranchId, Seq, SessionId
from acp_agent.core._lineage import Lineage
from acp_agent.core._scopes import ScopeKind, ServiceKey
from acp_agent.core._store import Store

__all__ = ("DEFAULT_PAGE_EVENTS", "DEFAULT_TAIL_EVENTS", "TIMELINE", "Timeline")

#: How many of the newest published events a timeline keeps in memory for readers.
DEFAULT_TAIL_EVENTS: Final = 4096
#: How many events `batches()` asks the store for at a time.
DEFAULT_PAGE_EVENTS: Final = 2048


class Timeline:
    """A branch's append-only, dense sequence of events, and its positions."""

    def __init__(
        self,
        *,
        session_id: SessionId,
        lineage: Lineage,
        store: Store,
        last_durable_seq: Seq,
        clock: Callable[[], float] = time.time,
        tail_events: int = DEFAULT_TAIL_EVENTS,
    ) -> None:
        """A timeline over events already durable up to `last_durable_seq` (all published)."""
        self.session_id = session_id
        self.lineage = lineage
        self.clock = clock
        self._store = store
        self._last_assigned_seq = last_durable_seq
        self._last_durable_seq = last_durable_seq
        self._last_published_seq = last_durable_seq
        self._write_lock = anyio.Lock()
        self._published = anyio.Event()
        self._closed = False
        # The newest published events, dense, starting at a batch start.
        self._tail: list[Event] = []
        self._tail_events = tail_events

    # --- positions --------------------------------------------------------------------

    @property
    def branch_id(self) -> BranchId:
        return self.lineage.branch_id

    @property
    def last_assigned_seq(self) -> Seq:
        """The last seq handed out, including batches not yet durable."""
        return self._last_assigned_seq

    @property
    def last_durable_seq(self) -> Seq:
        """The last seq the store has committed."""
        return self._last_durable_seq

    @property
    def last_published_seq(self) -> Seq:
        """The last seq released to readers and the dispatcher; always a batch end."""
        return self._last_published_seq

    @property
    def closed(self) -> bool:
        return self._closed

    # --- writing ----------------------------------------------------------------------

    async def append(self, drafts: Sequence[EventDraft]) -> Batch:
        """Record `drafts` as one batch; returns it once durable and published.

        Raises `BranchClosed` after `close()`, the registration's error, or the
        store's `StoreError`; in every failure nothing of the batch is published.
        A caller cancelled while waiting for the lock appends nothing; once the
        write has begun it finishes (shielded) and the cancellation lands after.
        """
        if not drafts:
            raise ValueError("a batch needs at least one event")
        async with self._write_lock:
            if self._closed:
                raise BranchClosed(self.branch_id)
            first = self._last_assigned_seq + 1
            now = self.clock()
            branch_id = self.branch_id
            batch = Batch(
                self.session_id,
                branch_id,
                tuple(
                    Event(branch_id, Seq(first + i), BatchId(first), d.payload, d.producer, now)
                    for i, d in enumerate(drafts)
                ),
            )
            self._last_assigned_seq = batch.last_seq
            undos: list[Callable[[], None]] = []
            try:
                with anyio.CancelScope(shield=True):
                    for draft, event in zip(drafts, batch.events, strict=True):
                        if draft.register is not None:
                            undo = draft.register(event)
                            if undo is not None:
                                undos.append(undo)
                    await self._store.append_batch(batch)
            except BaseException:
                for undo in reversed(undos):
                    undo()
                self._last_assigned_seq = Seq(first - 1)
                raise
            self._on_durable(batch)
        return batch

    def _on_durable(self, batch: Batch) -> None:
        """The publish callback: the store committed `batch`, so release it."""
        self._last_durable_seq = batch.last_seq
        self._tail.extend(batch.events)
        self.trim()
        self._last_published_seq = batch.last_seq
        self._wake()

    def trim(self) -> None:
        """Keep no more than `tail_events` of the newest events in memory (from a batch
        start), once twice that many are kept: each append trims, and whoever read a
        loaded history whole (it stays as the tail until the next append) may trim it
        sooner, so its freeing (~70 ms for 5,000 turns) is not that append's to wait for."""
        tail = self._tail
        if len(tail) > 2 * self._tail_events:
            start = len(tail) - self._tail_events
            while start > 0 and not tail[start].starts_batch:
                start -= 1
            del tail[:start]

    def close(self) -> None:
        """Take no more appends; readers and waiters see `BranchClosed` at the end."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        self._published.set()
        self._published = anyio.Event()

    async def wait_published(self, after: Seq) -> Seq:
        """Wait until something after `after` is published; returns the published position.

        Raises `BranchClosed` when the timeline is closed with nothing more to publish.
        """
        while self._last_published_seq <= after:
            if self._closed:
                raise BranchClosed(self.branch_id)
            await self._published.wait()
        return self._last_published_seq

    # --- reading ----------------------------------------------------------------------

    async def is_batch_end(self, seq: Seq) -> bool:
        """Whether `seq` is a legal read bound or cut point: 0 or a published batch's end."""
        if seq == NO_SEQ or seq == self._last_published_seq:
            return True
        if not NO_SEQ < seq < self._last_published_seq:
            return False
        following = await self.event_at(Seq(seq + 1))
        return following is not None and following.starts_batch

    async def event_at(self, seq: Seq) -> Event | None:
        """The published event at `seq` (its own or inherited), or None."""
        if not NO_SEQ < seq <= self._last_published_seq:
            return None
        events = await self._read_range(Seq(seq - 1), seq)
        return events[0] if events else None

    async def read(self, *, gt: Seq = NO_SEQ, lte: Seq | None = None) -> list[Event]:
        """Published events with `gt < seq <= lte` (default: to the published end).

        Both bounds must be batch ends (`IllegalCut` otherwise).
        """
        lte = await self._check_bounds(gt, lte)
        return await self._read_range(gt, lte)

    async def batches(
        self, *, gt: Seq = NO_SEQ, lte: Seq | None = None, page_events: int = DEFAULT_PAGE_EVENTS
    ) -> AsyncIterator[tuple[Event, ...]]:
        """Published batches after `gt` up to `lte`, whole, fetched a page at a time."""
        lte = await self._check_bounds(gt, lte)
        cursor = gt
        pending: list[Event] = []
        while cursor < lte:
            page_end = Seq(min(lte, cursor + page_events))
            pending.extend(await self._read_range(cursor, page_end))
            cursor = page_end
            # Yield every batch known to be whole; the last may continue on the next page.
            start = 0
            for i in range(1, len(pending)):
                if pending[i].starts_batch:
                    yield tuple(pending[start:i])
                    start = i
            del pending[:start]
        if pending:
            yield tuple(pending)

    async def _check_bounds(self, gt: Seq, lte: Seq | None) -> Seq:
        end = self._last_published_seq if lte is None else lte
        if not NO_SEQ <= gt <= end <= self._last_published_seq:
            raise IllegalCut(
                f"branch {self.branch_id}: ({gt}, {end}] is not within the published "
                f"history (0, {self._last_published_seq}]"
            )
        for bound in (gt, end):
            if not await self.is_batch_end(bound):
                raise IllegalCut(f"branch {self.branch_id}: seq {bound} is inside a batch")
        return end

    async def _read_range(self, gt: Seq, lte: Seq) -> list[Event]:
        """Events `gt < seq <= lte` (published), from memory when it has them."""
        tail = self._tail
        if tail and gt >= tail[0].seq - 1:
            offset = tail[0].seq
            return tail[gt + 1 - offset : lte + 1 - offset]
        events: list[Event] = []
        with gc_paused():  # a long history read back: many objects that stay
            for part in self.lineage.split(gt, lte):
                events.extend(await self._store.read(part.branch_id, gt=part.gt, lte=part.lte))
        if gt == NO_SEQ and lte == self._last_published_seq and events and not self._tail:
            # A loaded timeline's whole history, before anything was appended: it stays as
            # the tail, so the branch's next readers (its subscribers' rebuilds, a front
            # end's replay, the context's first fold) share one decoding. The tail's bound
            # applies again from the next append, or once they are done (`trim`).
            self._tail = list(events)
        return events


#: A branch's timeline, as a branch-scope service.
TIMELINE: Final[ServiceKey[Timeline]] = ServiceKey("timeline", ScopeKind.BRANCH)
