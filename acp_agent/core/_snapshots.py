"""Restore snapshots: cached derived state that only speeds up reading.

A snapshot holds what an interpreter (a component that folds events into
state) had derived after some seq. It is used only when it matches the
interpreter and its version, the branch's ancestry and the history anchor
(a digest of the event at the snapshot's seq) and its checksum; otherwise
it is skipped and the state is rebuilt from events. Snapshots are cache and
may be deleted at will; compaction records are events (facts) and never are.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import attrs

from acp_agent.core._codec import encode_event
from acp_agent.core._ids import NO_SEQ, Seq
from acp_agent.core._store import Snapshot, Store
from acp_agent.values import Value

if TYPE_CHECKING:
    from acp_agent.core._events import Event
    from acp_agent.core._timeline import Timeline

__all__ = (
    "Interpreter",
    "Restored",
    "SkippedSnapshot",
    "anchor_digest",
    "restore_state",
    "save_snapshot",
)

S = TypeVar("S")


class Interpreter(Protocol[S]):
    """Folds a branch's events into derived state; snapshots cache its output."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str:
        """Changes whenever `apply` or the encoding changes; old snapshots are skipped."""
        ...

    def initial(self) -> S: ...

    def apply(self, state: S, event: Event) -> S: ...

    def encode(self, state: S) -> bytes: ...

    def decode(self, data: bytes) -> S: ...


@attrs.frozen
class SkippedSnapshot(Value):
    """A candidate snapshot that was not used, and why."""

    anchor_seq: Seq
    reason: str


@attrs.frozen
class Restored(Value, Generic[S]):
    """Derived state after `covered_seq`, and which snapshot (if any) it started from."""

    state: S
    covered_seq: Seq
    snapshot: Snapshot | None
    skipped: tuple[SkippedSnapshot, ...]


def anchor_digest(event: Event | None) -> str:
    """A digest of an event's stored form: equal digests mean the same recorded fact."""
    if event is None:
        return ""
    _, seq, batch_id, kind, payload, producer, recorded_at, _ = encode_event(event)
    text = f"{seq}|{batch_id}|{kind}|{producer}|{recorded_at!r}|{payload}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _checksum(state: bytes) -> str:
    return hashlib.blake2b(state, digest_size=16).hexdigest()


async def save_snapshot(
    timeline: Timeline, store: Store, interpreter: Interpreter[S], state: S, covered_seq: Seq
) -> Snapshot:
    """Store `state` (derived from the branch's events up to `covered_seq`) as a snapshot."""
    blob = interpreter.encode(state)
    snapshot = Snapshot(
        branch_id=timeline.branch_id,
        interpreter=interpreter.name,
        interpreter_version=interpreter.version,
        anchor_seq=covered_seq,
        anchor_digest=anchor_digest(await timeline.event_at(covered_seq)),
        ancestry=timeline.lineage.key(),
        state=blob,
        checksum=_checksum(blob),
        created_at=timeline.clock(),
    )
    await store.put_snapshot(snapshot)
    return snapshot


async def restore_state(
    timeline: Timeline, store: Store, interpreter: Interpreter[S], *, lte: Seq | None = None
) -> Restored[S]:
    """The interpreter's state after `lte` (default: all published events).

    Starts from the newest usable snapshot and applies the events after it; falls
    back to a full replay when no snapshot fits.
    """
    target = timeline.last_published_seq if lte is None else lte
    skipped: list[SkippedSnapshot] = []
    used: Snapshot | None = None
    state = interpreter.initial()
    start = NO_SEQ
    for candidate in await store.get_snapshots(timeline.branch_id, interpreter.name):
        reason = await _unusable_because(candidate, timeline, interpreter, target)
        if reason is None:
            try:
                state = interpreter.decode(candidate.state)
            except Exception as exc:  # a damaged or foreign blob: cache, so skip it
                reason = f"cannot decode: {exc!r}"
            else:
                used, start = candidate, candidate.anchor_seq
                break
        skipped.append(SkippedSnapshot(candidate.anchor_seq, reason))
    async for batch in timeline.batches(gt=start, lte=target):
        for event in batch:
            state = interpreter.apply(state, event)
    return Restored(state, target, used, tuple(skipped))


async def _unusable_because(
    snapshot: Snapshot, timeline: Timeline, interpreter: Interpreter[S], target: Seq
) -> str | None:
    if snapshot.interpreter_version != interpreter.version:
        return f"interpreter version {snapshot.interpreter_version} != {interpreter.version}"
    if snapshot.ancestry != timeline.lineage.key():
        return "branch ancestry differs"
    if snapshot.anchor_seq > target:
        return f"anchor {snapshot.anchor_seq} is past {target}"
    if _checksum(snapshot.state) != snapshot.checksum:
        return "checksum mismatch"
    if not await timeline.is_batch_end(snapshot.anchor_seq):
        return f"anchor {snapshot.anchor_seq} is not a batch end"
    if anchor_digest(await timeline.event_at(snapshot.anchor_seq)) != snapshot.anchor_digest:
        return "history at the anchor differs"
    return None
