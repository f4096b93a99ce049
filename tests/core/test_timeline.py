"""A timeline assigns, stores durably, then publishes; batches are atomic and whole."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_agent.core import (
    NO_SEQ,
    BranchClosed,
    BranchCreated,
    BranchId,
    Event,
    EventDraft,
    IllegalCut,
    Lineage,
    Seq,
    StoreUnavailable,
    Timeline,
)
from acp_agent.store import MemoryStore

from .support import GatedStore, new_timeline, note, notes, texts_of, unavailable

pytestmark = pytest.mark.anyio


async def test_append_assigns_consecutive_seqs_from_one_and_names_batches_by_their_first() -> None:
    timeline = await new_timeline(MemoryStore())
    first = await timeline.append(notes("a", "b", "c"))
    second = await timeline.append(notes("d"))
    assert [(e.seq, e.batch_id) for e in (*first.events, *second.events)] == [
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 4),
    ]
    assert texts_of(await timeline.read()) == ["a", "b", "c", "d"]


async def test_a_batch_is_published_only_once_the_store_made_it_durable() -> None:
    store = GatedStore()
    timeline = await new_timeline(store)
    store.gated = True
    async with anyio.create_task_group() as tg:
        tg.start_soon(timeline.append, notes("a", "b", "c"))
        while store.writes_waiting == 0:
            await anyio.lowlevel.checkpoint()
        # Assigned, accepted by the store, not yet durable: nobody may see it.
        assert (timeline.last_assigned_seq, timeline.last_durable_seq) == (3, 0)
        assert timeline.last_published_seq == 0
        assert await timeline.read() == []
        with anyio.move_on_after(0.05) as waited:
            await timeline.wait_published(NO_SEQ)
        assert waited.cancelled_caught
        store.release()
        assert await timeline.wait_published(NO_SEQ) == 3
    positions = (timeline.last_assigned_seq, timeline.last_durable_seq, timeline.last_published_seq)
    assert positions == (3, 3, 3)


async def test_a_failed_registration_publishes_nothing_and_leaves_no_seq_used() -> None:
    store = MemoryStore()
    timeline = await new_timeline(store)
    linked: list[int] = []

    def link(event: Event) -> object:
        linked.append(event.seq)
        return lambda: linked.remove(event.seq)

    def refuse(event: Event) -> object:
        raise LookupError("no handler bound for this request")

    await timeline.append(notes("before"))
    with pytest.raises(LookupError):
        await timeline.append([note("a", register=link), note("b", register=refuse), note("c")])
    assert linked == []  # the first registration was undone
    positions = (timeline.last_assigned_seq, timeline.last_durable_seq, timeline.last_published_seq)
    assert positions == (1, 1, 1)
    assert await store.last_durable_seq(timeline.branch_id) == 1
    after = await timeline.append([note("after", register=link)])
    assert after.first_seq == 2
    assert linked == [2]
    assert texts_of(await timeline.read()) == ["before", "after"]


async def test_a_failed_store_write_publishes_nothing_and_undoes_registrations() -> None:
    store = GatedStore()
    timeline = await new_timeline(store)
    undone: list[str] = []
    store.fail_next = unavailable()
    with pytest.raises(StoreUnavailable):
        await timeline.append([note("a", register=lambda e: lambda: undone.append("a"))])
    assert undone == ["a"]
    assert timeline.last_assigned_seq == timeline.last_published_seq == 0
    assert (await timeline.append(notes("b"))).first_seq == 1


async def test_reads_and_cuts_stop_only_at_batch_ends() -> None:
    timeline = await new_timeline(MemoryStore())
    await timeline.append(notes("a", "b", "c"))  # 1-3
    await timeline.append(notes("d", "e"))  # 4-5
    assert texts_of(await timeline.read(gt=Seq(3), lte=Seq(5))) == ["d", "e"]
    assert [await timeline.is_batch_end(Seq(s)) for s in range(7)] == [
        True,
        False,
        False,
        True,
        False,
        True,
        False,
    ]
    for gt, lte in [(1, 5), (0, 4), (3, 6)]:
        with pytest.raises(IllegalCut):
            await timeline.read(gt=Seq(gt), lte=Seq(lte))


async def test_paged_reads_never_split_a_batch() -> None:
    timeline = await new_timeline(MemoryStore(), tail_events=1)
    sizes = [3, 1, 5, 2, 4]
    for size in sizes:
        await timeline.append(notes(*(f"x{i}" for i in range(size))))
    batches = [batch async for batch in timeline.batches(page_events=2)]
    assert [len(b) for b in batches] == sizes
    assert [b[0].seq for b in batches] == [1, 4, 5, 10, 12]


async def test_reads_past_the_memory_tail_come_from_the_store() -> None:
    timeline = await new_timeline(MemoryStore(), tail_events=2)
    for i in range(10):
        await timeline.append(notes(f"n{i}"))
    assert texts_of(await timeline.read()) == [f"n{i}" for i in range(10)]
    assert texts_of(await timeline.read(gt=Seq(8))) == ["n8", "n9"]


class _CountedReads(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def read(self, branch_id: BranchId, **bounds: Any) -> list[Event]:
        self.reads += 1
        return await super().read(branch_id, **bounds)


async def test_a_loaded_history_stays_in_memory_until_trimmed() -> None:
    store = _CountedReads()
    written = await new_timeline(store, tail_events=2)
    for i in range(10):
        await written.append(notes(f"n{i}"))
    loaded = Timeline(
        session_id=written.session_id,
        lineage=written.lineage,
        store=store,
        last_durable_seq=Seq(10),
        tail_events=2,
    )
    assert texts_of(await loaded.read()) == [f"n{i}" for i in range(10)]
    reads = store.reads
    assert texts_of(await loaded.read()) == [f"n{i}" for i in range(10)]
    assert store.reads == reads  # the whole history, from memory: its readers share it
    loaded.trim()  # its readers are done (a session's context has folded it)
    assert texts_of(await loaded.read(gt=Seq(8))) == ["n8", "n9"]
    assert store.reads == reads  # the newest stay in memory
    assert texts_of(await loaded.read()) == [f"n{i}" for i in range(10)]
    assert store.reads > reads  # the rest comes from the store again
    loaded.trim()
    await loaded.append(notes("n10"))
    assert texts_of(await loaded.read(gt=Seq(8))) == ["n8", "n9", "n10"]


async def test_a_child_reads_its_parent_up_to_the_cut_then_its_own_events() -> None:
    store = MemoryStore()
    parent = await new_timeline(store)
    await parent.append(notes("p1", "p2"))
    await parent.append(notes("p3"))
    child_id = BranchId("br_child")
    child = Timeline(
        session_id=parent.session_id,
        lineage=parent.lineage.child(child_id, Seq(2)),
        store=store,
        last_durable_seq=Seq(2),
    )
    await child.append([EventDraft(BranchCreated(child_id, parent.branch_id, Seq(2)), "test")])
    await child.append(notes("c1"))
    await parent.append(notes("p4"))  # later parent progress stays with the parent
    assert [e.kind for e in await child.read()] == [
        "notification",
        "notification",
        "branch.created",
        "notification",
    ]
    assert texts_of((await child.read())[:2]) == ["p1", "p2"]
    assert texts_of(await child.read(gt=Seq(3))) == ["c1"]
    assert child.lineage == Lineage.root(parent.branch_id).child(child_id, Seq(2))


async def test_a_closed_timeline_takes_no_appends_and_ends_waiters() -> None:
    timeline = await new_timeline(MemoryStore())
    await timeline.append(notes("a"))
    async with anyio.create_task_group() as tg:

        async def wait() -> None:
            with pytest.raises(BranchClosed):
                await timeline.wait_published(Seq(1))

        tg.start_soon(wait)
        await anyio.lowlevel.checkpoint()
        timeline.close()
    with pytest.raises(BranchClosed):
        await timeline.append(notes("b"))
    assert texts_of(await timeline.read()) == ["a"]


async def test_a_cancelled_append_lands_whole_or_not_at_all() -> None:
    store = GatedStore()
    timeline = await new_timeline(store)
    store.gated = True
    writer_scope = anyio.CancelScope()

    async def append_in_scope() -> None:
        with writer_scope:
            await timeline.append(notes("written", "whole"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(append_in_scope)
        while store.writes_waiting == 0:
            await anyio.lowlevel.checkpoint()
        # Cancelled while waiting for the write lock: nothing is assigned.
        with anyio.CancelScope() as waiting_for_lock:
            waiting_for_lock.cancel()
            await timeline.append(notes("never"))
        # Cancelled during its store write: the write finishes, then it is published.
        writer_scope.cancel()
        await anyio.sleep(0.01)
        assert timeline.last_published_seq == 0
        store.release()
    assert texts_of(await timeline.read()) == ["written", "whole"]
    assert timeline.last_assigned_seq == timeline.last_published_seq == 2
