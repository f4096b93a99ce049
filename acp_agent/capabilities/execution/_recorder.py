"""Group commit for streamed facts: many small events, few durable batches, order kept.

A model streams deltas far faster than a durable commit completes (about
0.3 ms each on SQLite with `synchronous=FULL`). A `CoalescingRecorder` takes
drafts without waiting; while one append is in flight, the drafts that
arrive meanwhile wait in a buffer and are appended together as the next
batch when it completes. Nothing is reordered, nothing is dropped, and an
idle recorder appends a lone draft at once, so latency stays one commit.

    async with anyio.create_task_group() as group:
        recorder = CoalescingRecorder(branch.append)
        group.start_soon(recorder.run)
        recorder.add(EventDraft(ModelTextDelta(request_id, text), PRODUCER))
        ...
        await recorder.flush()  # everything added is durable and published
        recorder.close()

Each append is shielded: once a batch is taken from the buffer it is
recorded whole, even if the recorder's task is cancelled meanwhile, and
drafts still buffered at cancellation are recorded by `flush()` (call it
shielded from the cancelled task's cleanup).

What is queued is an `EventDraft` or a `PendingDraft`, an item that becomes
its draft only when its batch is taken, so a producer may still grow the
last item while it waits (`waiting()`): many small facts recorded together
become one event. The model loop grows the waiting text delta of a request
piece by piece, one `ModelTextDelta` that keeps each delta as a piece.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol

import anyio

from acp_agent.core import EventDraft, ModelReasoningDelta, ModelTextDelta

__all__ = (
    "MAX_BATCH_EVENTS",
    "MAX_PIECES",
    "CoalescingRecorder",
    "DeltaPieces",
    "PendingDraft",
    "record_delta",
)

#: The most drafts one batch takes; a longer backlog is split in batches of this size.
MAX_BATCH_EVENTS: Final = 2048
#: The most streamed deltas folded into one recorded event (see `DeltaPieces`).
MAX_PIECES: Final = 256


class PendingDraft(Protocol):
    """A queued item that becomes its draft when its batch is taken (it may grow till then)."""

    def draft(self) -> EventDraft: ...


class CoalescingRecorder:
    """Appends drafts in order, coalescing those that arrive during an append."""

    def __init__(
        self,
        append: Callable[[Sequence[EventDraft]], Awaitable[Any]],
        *,
        max_batch_events: int = MAX_BATCH_EVENTS,
    ) -> None:
        self._append = append
        self._max_batch = max_batch_events
        self._buffer: list[EventDraft | PendingDraft] = []
        #: How many drafts at the front of the buffer an append has taken (in flight).
        self._taken = 0
        self._wakeup = anyio.Event()
        self._drained = anyio.Event()
        self._drained.set()
        self._lock = anyio.Lock()
        self._closed = False
        #: Appends made (batches), for tests and benchmarks.
        self.batches = 0

    @property
    def pending(self) -> int:
        """Drafts added and not yet recorded."""
        return len(self._buffer)

    def add(self, draft: EventDraft | PendingDraft) -> None:
        """Queue a draft; it is recorded after every draft added before it."""
        if self._closed:
            raise RuntimeError("the recorder is closed")
        self._buffer.append(draft)
        if self._drained.is_set():
            self._drained = anyio.Event()
        self._wakeup.set()

    def waiting(self) -> EventDraft | PendingDraft | None:
        """The last item queued if no append has taken it yet (it may still grow), else None."""
        buffer = self._buffer
        return buffer[-1] if len(buffer) > self._taken else None

    async def run(self) -> None:
        """Append what is buffered, batch after batch, until closed (a task of its owner)."""
        while True:
            while not self._buffer:
                if self._closed:
                    return
                self._wakeup = anyio.Event()
                await self._wakeup.wait()
            await self._append_some()

    async def flush(self) -> None:
        """Record everything added so far (appending it here if the runner cannot)."""
        while self._buffer:
            await self._append_some()
        await self._drained.wait()

    def close(self) -> None:
        """Take no more drafts; `run` returns once the buffer is empty."""
        self._closed = True
        self._wakeup.set()

    async def _append_some(self) -> None:
        with anyio.CancelScope(shield=True):
            async with self._lock:
                items = self._buffer[: self._max_batch]
                if not items:
                    return
                self._taken = len(items)
                drafts = [item if isinstance(item, EventDraft) else item.draft() for item in items]
                try:
                    await self._append(drafts)
                finally:
                    self._taken = 0
                del self._buffer[: len(items)]
                self.batches += 1
                if not self._buffer:
                    self._drained.set()


class DeltaPieces:
    """Streamed deltas of one kind and request, waiting in the recorder as one event.

    `add` grows it while no append has taken it; it becomes a `ModelTextDelta` (or
    `ModelReasoningDelta`) whose `text` is the deltas joined and whose `pieces`
    are the deltas as they came, at most `MAX_PIECES`.
    """

    __slots__ = ("kind", "pieces", "producer", "request_id")

    def __init__(
        self,
        kind: type[ModelTextDelta | ModelReasoningDelta],
        request_id: str,
        text: str,
        producer: str,
    ) -> None:
        self.kind = kind
        self.request_id = request_id
        self.pieces = [text]
        self.producer = producer

    def draft(self) -> EventDraft:
        pieces = self.pieces
        if len(pieces) == 1:
            return EventDraft(self.kind(self.request_id, pieces[0]), self.producer)
        payload = self.kind(self.request_id, "".join(pieces), list(pieces))
        return EventDraft(payload, self.producer)


def record_delta(
    recorder: CoalescingRecorder,
    kind: type[ModelTextDelta | ModelReasoningDelta],
    request_id: str,
    text: str,
    producer: str,
) -> None:
    """Queue a delta: into the waiting event of its kind and request, or as a new one."""
    waiting = recorder.waiting()
    if (
        type(waiting) is DeltaPieces
        and waiting.kind is kind
        and waiting.request_id == request_id
        and len(waiting.pieces) < MAX_PIECES
    ):
        waiting.pieces.append(text)
    else:
        recorder.add(DeltaPieces(kind, request_id, text, producer))
