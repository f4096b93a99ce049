"""Restore snapshots speed up reading and are skipped whenever they do not fit."""

from __future__ import annotations

import json

import attrs
import pytest

from acp_agent.core import (
    CompactionRecorded,
    Event,
    EventDraft,
    Seq,
    Snapshot,
    Timeline,
    restore_state,
    save_snapshot,
)
from acp_agent.store import MemoryStore

from .support import new_timeline, notes

pytestmark = pytest.mark.anyio

State = dict[str, int]


@attrs.define
class KindCounter:
    """Counts events by kind; counts the events it applied, to prove what was replayed."""

    name: str = "kind-counter"
    version: str = "1"
    applied: int = 0

    def initial(self) -> State:
        return {}

    def apply(self, state: State, event: Event) -> State:
        self.applied += 1
        return {**state, event.kind: state.get(event.kind, 0) + 1}

    def encode(self, state: State) -> bytes:
        return json.dumps(state).encode()

    def decode(self, data: bytes) -> State:
        decoded = json.loads(data)
        if not isinstance(decoded, dict):
            raise ValueError("not a kind count")
        return decoded


async def timeline_with_history(store: MemoryStore) -> Timeline:
    timeline = await new_timeline(store)
    for i in range(6):
        await timeline.append(notes(*(f"{i}.{j}" for j in range(3))))
    return timeline


async def snapshot_at(timeline: Timeline, store: MemoryStore, seq: int) -> Snapshot:
    counter = KindCounter()
    state = (await restore_state(timeline, store, counter, lte=Seq(seq))).state
    return await save_snapshot(timeline, store, counter, state, Seq(seq))


async def test_restoring_from_a_snapshot_equals_a_full_replay_and_replays_only_the_rest() -> None:
    store = MemoryStore()
    timeline = await timeline_with_history(store)
    full = await restore_state(timeline, store, KindCounter())
    assert full.state == {"notification": 18}
    assert full.snapshot is None

    await snapshot_at(timeline, store, 12)
    counter = KindCounter()
    restored = await restore_state(timeline, store, counter)
    assert restored.state == full.state
    assert restored.covered_seq == 18
    assert restored.snapshot is not None
    assert restored.snapshot.anchor_seq == 12
    assert counter.applied == 6


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda s: attrs.evolve(s, interpreter_version="0"), "interpreter version"),
        (lambda s: attrs.evolve(s, ancestry=(("br_elsewhere", 0),)), "ancestry"),
        (lambda s: attrs.evolve(s, anchor_digest="0" * 32), "history at the anchor"),
        (lambda s: attrs.evolve(s, state=s.state[:-1] + b"!"), "checksum"),
        (lambda s: attrs.evolve(s, anchor_seq=Seq(13)), "not a batch end"),
        (lambda s: attrs.evolve(s, anchor_seq=Seq(99)), "past"),
    ],
    ids=["version", "ancestry", "anchor", "corrupt", "mid-batch", "future"],
)
async def test_a_snapshot_that_does_not_fit_is_skipped_and_the_state_rebuilt(
    damage: object, reason: str
) -> None:
    store = MemoryStore()
    timeline = await timeline_with_history(store)
    good = await snapshot_at(timeline, store, 12)
    await store.delete_snapshots(timeline.branch_id)
    await store.put_snapshot(damage(good))  # type: ignore[operator]
    counter = KindCounter()
    restored = await restore_state(timeline, store, counter)
    assert restored.state == {"notification": 18}
    assert restored.snapshot is None
    assert counter.applied == 18
    assert reason in restored.skipped[0].reason


async def test_a_snapshot_that_cannot_be_decoded_is_skipped() -> None:
    store = MemoryStore()
    timeline = await timeline_with_history(store)
    counter = KindCounter()
    # A valid checksum over a blob the interpreter cannot read (e.g. written by a bug).
    await save_snapshot(timeline, store, counter, ["not", "a", "dict"], Seq(12))  # type: ignore[arg-type]
    restored = await restore_state(timeline, store, KindCounter())
    assert restored.state == {"notification": 18}
    assert "cannot decode" in restored.skipped[0].reason


async def test_the_newest_snapshot_that_fits_wins() -> None:
    store = MemoryStore()
    timeline = await timeline_with_history(store)
    await snapshot_at(timeline, store, 6)
    newest = await snapshot_at(timeline, store, 15)
    await store.put_snapshot(attrs.evolve(newest, interpreter_version="0"))
    restored = await restore_state(timeline, store, KindCounter())
    assert restored.snapshot is not None
    assert restored.snapshot.anchor_seq == 6
    assert [s.anchor_seq for s in restored.skipped] == [15]
    assert restored.state == {"notification": 18}


async def test_dropping_snapshots_keeps_compaction_records_which_are_facts() -> None:
    store = MemoryStore()
    timeline = await timeline_with_history(store)
    compaction = CompactionRecorded("cmp_1", Seq(18), "We counted notes.")
    await timeline.append([EventDraft(compaction, "capabilities.compaction")])
    await snapshot_at(timeline, store, 19)
    await store.delete_snapshots(timeline.branch_id)
    restored = await restore_state(timeline, store, KindCounter())
    assert restored.state == {"notification": 18, "compaction.recorded": 1}
    assert (await timeline.read(gt=Seq(18)))[0].payload == compaction
