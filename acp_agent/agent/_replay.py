"""A replay in as few updates as the person needs: a timeline's events grouped into steps.

A live turn streams every delta and every step of a tool call as it happens; a
replay (a load, an attach, a v2 resume) shows the same conversation at rest, so
`replay_steps(events)` groups the events a front end shows as one update:

- **text**: consecutive deltas of one reply's text (or of its reasoning), shown
  as one chunk of their joined text, where the last of them stands;
- **item**: the life of one thing shown in place (a tool call from its proposal
  to its result, a branch shown in its parent's turn, a compaction), shown once
  in its last state, where it first appeared;
- **single**: any other event, shown as the live stream shows it.

Each front end translates a step's events into its own updates and merges them
(`adapters/acp/_replay.py` for ACP v1; v2 merges its upserts by id the same way).

**Cursors.** A replay can start after a cursor a client got from a live stream
or an earlier replay, `(seq, part)`: the client has every update of the events
before `seq` and event `seq`'s updates up to `part` (None: all of them). Events
before it are left out; the event at it keeps its updates after `part`
(`ReplayStep.seen`), so a cursor inside a message resumes with the rest of it
as one chunk: no gap, nothing twice. A step's updates leave the client at the
cursor `ReplayStep.cursor` says, a place the next replay can resume after.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final

import attrs

from acp_agent.core import (
    BranchShown,
    CompactionCancelled,
    CompactionFailed,
    CompactionRecorded,
    CompactionStarted,
    Event,
    ModelReasoningDelta,
    ModelTextDelta,
    PermissionAnswered,
    PermissionAsked,
    Seq,
    ToolCallAdmitted,
    ToolCallCompleted,
    ToolCallInterrupted,
    ToolCallOutputDelta,
    ToolCallProgressed,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultRecorded,
)
from acp_agent.values import Value

__all__ = ("ReplayStep", "StepKind", "item_key", "replay_steps")

_COMPACTION: Final = (CompactionStarted, CompactionRecorded, CompactionFailed, CompactionCancelled)
#: The rest of a tool call's life after its proposal.
_CALL_LIFE: Final = (
    ToolCallAdmitted,
    ToolCallStarted,
    ToolCallProgressed,
    ToolCallOutputDelta,
    ToolCallCompleted,
    ToolCallInterrupted,
    ToolResultRecorded,
    PermissionAsked,
    PermissionAnswered,
)
#: Every fact that is part of a shown thing.
_ITEM_FACTS: Final = frozenset({ToolCallRequested, BranchShown, *_COMPACTION, *_CALL_LIFE})


class StepKind(enum.Enum):
    """How a replay shows a step's events."""

    #: One event, shown as the live stream shows it.
    SINGLE = "single"
    #: Consecutive deltas of one reply's text or reasoning: one chunk of the joined text.
    TEXT = "text"
    #: The life of one shown thing (a tool call, a branch's showing, a compaction): one
    #: update in its last state, where it first appeared.
    ITEM = "item"


@attrs.frozen
class ReplayStep(Value):
    """Events a replay shows together (see the module docstring).

    `events` are in timeline order; the step stands where its first event is.
    `seen`: how many of the first event's updates the client already has (a replay
    after a cursor inside that event); 0: none.
    """

    kind: StepKind
    events: tuple[Event, ...]
    seen: int = 0

    @property
    def first_seq(self) -> Seq:
        return self.events[0].seq

    @property
    def last_seq(self) -> Seq:
        return self.events[-1].seq

    def cursor(
        self, part: int, *, last: bool, alone: bool, last_event_parts: int
    ) -> tuple[int, int]:
        """The cursor a client is at after update `part` (of this step's updates, from 0)
        of this step, as `(seq, part)`: after update `part` of event `seq`, as the live
        stream numbers an event's updates.

        `last`: it is the step's last update; `alone`: no update of another step stands
        between this step's first event and its last (a single call, not one of a batch
        shown interleaved); `last_event_parts`: how many updates the step's last event
        makes (a cursor at its last covers all of it). Text stands at its last delta, so
        its chunk covers it all; an item's last update covers the item's whole life only
        when it is alone (the client is then exactly at the item's last event);
        otherwise it covers the event where it stands, and a replay after it shows the
        item's later state again, in one update (never a gap, never a second
        announcement).
        """
        if self.kind is StepKind.TEXT or (self.kind is StepKind.ITEM and last and alone):
            return int(self.last_seq), max(last_event_parts - 1, 0)
        return int(self.first_seq), self.seen + part


def replay_steps(
    events: Sequence[Event], *, after: tuple[int, int | None] | None = None
) -> list[ReplayStep]:
    """The steps that show `events` (in timeline order), after cursor `after` if given."""
    steps: list[_Step] = []
    items: dict[tuple[str, str], _Step] = {}
    text: _Step | None = None
    previous: Event | None = None
    for event in events:
        seen = 0
        if after is not None:
            seq, part = after
            if event.seq < seq or (event.seq == seq and part is None):
                continue
            if event.seq == seq and part is not None:
                seen = part + 1
        payload = event.payload
        # Two checks: faster than one against their union, and most events are deltas.
        if isinstance(payload, ModelTextDelta) or isinstance(payload, ModelReasoningDelta):  # noqa: SIM101
            if (
                text is not None
                and previous is text.events[-1]
                and type(payload) is type(text.events[-1].payload)
                and payload.request_id == getattr(text.events[-1].payload, "request_id", None)
            ):
                text.events.append(event)
            else:
                text = _Step(StepKind.TEXT, [event], seen)
                steps.append(text)
            previous = event
            continue
        previous = event
        key = item_key(event)
        if key is None:
            steps.append(_Step(StepKind.SINGLE, [event], seen))
            continue
        item = items.get(key)
        if item is None:
            item = items[key] = _Step(StepKind.ITEM, [event], seen)
            steps.append(item)
        else:
            item.events.append(event)
    return [ReplayStep(step.kind, tuple(step.events), step.seen) for step in steps]


def item_key(event: Event) -> tuple[str, str] | None:
    """What shown thing `event` is part of, if it is part of one: an item step gathers
    the events of one key wherever they stand."""
    payload = event.payload
    kind = type(payload)
    if kind not in _ITEM_FACTS:
        return None
    if isinstance(payload, (ToolCallRequested, *_CALL_LIFE)):
        return "call", str(payload.call_id)
    if isinstance(payload, BranchShown):
        return "branch", payload.display_id
    if isinstance(payload, _COMPACTION):
        return "compaction", payload.compaction_id
    return None  # pragma: no cover - every kind of `_ITEM_FACTS` is above


@attrs.define
class _Step:
    kind: StepKind
    events: list[Event]
    seen: int
