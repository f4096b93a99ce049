"""Group commit: drafts that arrive during an append go together in the next, in order."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from acp_agent.capabilities.execution import CoalescingRecorder
from acp_agent.core import EventDraft, NotificationReceived


def draft(n: int) -> EventDraft:
    return EventDraft(NotificationReceived("test", str(n)), "test")


class SlowAppends:
    """Appends that each wait to be let through, recording the batches they got."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate = anyio.Event()
        self.in_flight = anyio.Event()

    async def __call__(self, drafts: Sequence[EventDraft]) -> None:
        self.in_flight.set()
        await self.gate.wait()
        self.batches.append([d.payload.text for d in drafts])  # type: ignore[attr-defined]


async def test_drafts_added_during_an_append_go_together_in_the_next_batch_in_order():
    appends = SlowAppends()
    recorder = CoalescingRecorder(appends)
    async with anyio.create_task_group() as group:
        group.start_soon(recorder.run)
        recorder.add(draft(0))
        await appends.in_flight.wait()
        for n in range(1, 5):
            recorder.add(draft(n))
        appends.gate.set()
        await recorder.flush()
        recorder.close()

    assert appends.batches == [["0"], ["1", "2", "3", "4"]]
    assert recorder.batches == 2


async def test_a_long_backlog_is_split_into_batches_of_the_maximum_size():
    appends = SlowAppends()
    appends.gate.set()
    recorder = CoalescingRecorder(appends, max_batch_events=3)
    for n in range(7):
        recorder.add(draft(n))
    await recorder.flush()

    assert appends.batches == [["0", "1", "2"], ["3", "4", "5"], ["6"]]


async def test_flush_after_the_runner_was_cancelled_records_what_was_left():
    appends = SlowAppends()
    recorder = CoalescingRecorder(appends)
    async with anyio.create_task_group() as group:
        group.start_soon(recorder.run)
        recorder.add(draft(0))
        await appends.in_flight.wait()
        recorder.add(draft(1))
        group.cancel_scope.cancel()  # the append in flight finishes (shielded)
        appends.gate.set()
    await recorder.flush()

    assert appends.batches == [["0"], ["1"]]
    assert recorder.pending == 0


class Growing:
    """A queued item that grows until its batch is taken."""

    def __init__(self, text: str) -> None:
        self.texts = [text]

    def draft(self) -> EventDraft:
        return EventDraft(NotificationReceived("test", "+".join(self.texts)), "test")


async def test_the_waiting_item_may_grow_until_an_append_takes_it():
    appends = SlowAppends()
    recorder = CoalescingRecorder(appends)
    async with anyio.create_task_group() as group:
        group.start_soon(recorder.run)
        first = Growing("0")
        recorder.add(first)
        await appends.in_flight.wait()
        assert recorder.waiting() is None  # taken: in flight, it cannot grow
        second = Growing("1")
        recorder.add(second)
        waiting = recorder.waiting()
        assert waiting is second
        second.texts += ["2", "3"]
        appends.gate.set()
        await recorder.flush()
        recorder.close()

    assert appends.batches == [["0"], ["1+2+3"]]
