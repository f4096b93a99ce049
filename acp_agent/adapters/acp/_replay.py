"""A replay's steps (`acp_agent.agent.replay_steps`) as ACP v1 updates, as few as it takes.

`replayed(events, translator, ...)` groups the events into steps and translates
each step's events, merging what they make into the updates a person needs:

- a **text** step is one chunk of its deltas' joined text (the fast path's
  `TextChunks`, one piece);
- an **item** step's updates are merged by what they update: a tool call's
  `tool_call` and every later `tool_call_update` of it become one `tool_call`
  in its last state (a later field replaces an earlier one, as the client would
  apply them; content and locations are whole collections); a compaction's
  `compaction_update`s become its last; anything else of the step (a plan, a
  notice) stays, in order;
- a **single** step's updates are the live stream's (those the client has, if
  it resumes inside the event, left out).

The session's usage is shown once, in its last state, where it last grew: the
replay's translator makes no `usage_update` for each request. Each update comes
with the cursor it leaves the client at (`ReplayStep.cursor`), which the app
server sends with it; a `session/load` sends none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import attrs

from acp_agent.adapters.acp._stream import Translator
from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.agent import Event, ReplayStep, StepKind, replay_steps
from protocol import types
from protocol.text_chunks import ChunkKind, TextChunks

__all__ = ("Replayed", "merged", "replayed", "replayed_apart")

#: What a replay sends: a typed update, or text for the fast path.
Shown: TypeAlias = "types.SessionUpdate | TextChunks"


@attrs.frozen
class Replayed:
    """One update of a replay and the cursor `(seq, part)` the client is at once it has it."""

    update: types.SessionUpdate | TextChunks
    cursor: tuple[int, int | None]


def replayed(
    events: Sequence[Event],
    translator: Translator,
    usage: UpdateTranslator,
    *,
    after: tuple[int, int | None] | None = None,
) -> list[tuple[ReplayStep, list[Replayed]]]:
    """The steps that show `events` after cursor `after` (None: all of them), each with the
    updates that show it, through `translator`, which learns every event (those the
    client has, before the replay's first, without making their updates).

    `usage` is the translator whose usage updates the replay shows once (`translator`
    itself, or the one it wraps).
    """
    steps, shown, last_parts, grown = _translated(events, translator, usage, after)
    if grown:
        shown[grown[-1]].extend(usage.usage_update())
    return _with_cursors(steps, shown, last_parts)


def replayed_apart(
    events: Sequence[Event],
    translator: Translator,
    usage: UpdateTranslator,
    *,
    after: tuple[int, int | None] | None = None,
) -> tuple[list[tuple[ReplayStep, list[Replayed]]], list[int]]:
    """As `replayed`, without the usage update, and the indexes of the steps that grew the
    usage: for a replay whose usage update may stand in lines kept from an earlier one."""
    steps, shown, last_parts, grown = _translated(events, translator, usage, after)
    return _with_cursors(steps, shown, last_parts), grown


def _translated(
    events: Sequence[Event],
    translator: Translator,
    usage: UpdateTranslator,
    after: tuple[int, int | None] | None,
) -> tuple[list[ReplayStep], list[list[Shown]], list[int], list[int]]:
    """The steps, the updates of each, how many updates each step's last event made (for
    the cursor that covers it), and the indexes of the steps that grew the usage."""
    steps = replay_steps(events, after=after)
    start = steps[0].first_seq if steps else None
    for event in events:
        if start is not None and event.seq >= start:
            break
        translator.learn(event)
    shown: list[list[Shown]] = []
    last_parts: list[int] = []
    grown: list[int] = []
    usage.usage_updates = False
    try:
        for step in steps:
            growths = usage.usage_growths
            updates, parts = _step_updates(step, translator)
            shown.append(updates)
            last_parts.append(parts)
            if usage.usage_growths != growths:
                grown.append(len(shown) - 1)
    finally:
        usage.usage_updates = True
    return steps, shown, last_parts, grown


def _with_cursors(
    steps: Sequence[ReplayStep], shown: Sequence[list[Shown]], last_parts: Sequence[int]
) -> list[tuple[ReplayStep, list[Replayed]]]:
    """Each step with its updates and the cursor each leaves the client at."""
    # Which steps show something: an item whose life no other update interrupts covers it
    # all with its last update's cursor.
    showing = [i for i, updates in enumerate(shown) if updates]
    following = dict(zip(showing, [steps[i].first_seq for i in showing[1:]], strict=False))
    result: list[tuple[ReplayStep, list[Replayed]]] = []
    for i, (step, updates) in enumerate(zip(steps, shown, strict=True)):
        next_seq = following.get(i)
        alone = next_seq is None or next_seq > step.last_seq
        last = len(updates) - 1
        result.append(
            (
                step,
                [
                    Replayed(
                        update,
                        step.cursor(
                            part, last=part == last, alone=alone, last_event_parts=last_parts[i]
                        ),
                    )
                    for part, update in enumerate(updates)
                ],
            )
        )
    return result


def _step_updates(step: ReplayStep, translator: Translator) -> tuple[list[Shown], int]:
    """The updates that show `step`, and how many its last event made."""
    if step.kind is StepKind.TEXT:
        return _joined_text(step, translator)
    updates: list[types.SessionUpdate] = []
    made: list[types.SessionUpdate] = []
    for n, event in enumerate(step.events):
        made = translator.translate(event)
        updates.extend(made[step.seen :] if n == 0 else made)
    if step.kind is StepKind.ITEM:
        updates = merged(updates)
    return [_as_text(update) for update in updates], len(made)


def _as_text(update: types.SessionUpdate) -> Shown:
    """A chunk of plain text as the fast path writes it (the same line); others as they are."""
    if (
        isinstance(
            update, types.UserMessageChunk | types.AgentMessageChunk | types.AgentThoughtChunk
        )
        and update.meta is None
        and isinstance(update.content, types.TextContent)
        and update.content.meta is None
        and update.content.annotations is None
    ):
        return TextChunks(update.session_update, update.message_id, [update.content.text])
    return update


def _joined_text(step: ReplayStep, translator: Translator) -> tuple[list[Shown], int]:
    """One chunk of a text step's deltas (after those the client has), and how many
    pieces its last delta held."""
    texts: list[str] = []
    kind: ChunkKind = "agent_message_chunk"
    message_id: str | None = None
    pieces = 0
    for n, event in enumerate(step.events):
        chunks = translator.streamed_text(event)
        if chunks is None:  # pragma: no cover - a text step holds deltas only
            continue
        kind, message_id, pieces = chunks.kind, chunks.message_id, len(chunks.texts)
        texts.extend(chunks.texts[step.seen :] if n == 0 else chunks.texts)
    joined = "".join(texts)
    return ([TextChunks(kind, message_id, [joined])] if joined else []), pieces


def merged(updates: Sequence[types.SessionUpdate]) -> list[types.SessionUpdate]:
    """`updates` with those of one tool call (or one compaction) folded into the first,
    in its last state (see the module docstring)."""
    result: list[types.SessionUpdate] = []
    where: dict[tuple[str, str], int] = {}
    for update in updates:
        key: tuple[str, str] | None = None
        if isinstance(update, types.ToolCall | types.ToolCallProgress):
            key = ("call", str(update.tool_call_id))
        elif isinstance(update, types.CompactionUpdate):
            key = ("compaction", str(update.compaction_id))
        if key is None:
            result.append(update)
            continue
        at = where.get(key)
        if at is None:
            where[key] = len(result)
            result.append(update)
        else:
            result[at] = _later(result[at], update)
    return result


def _later(earlier: types.SessionUpdate, later: types.SessionUpdate) -> types.SessionUpdate:
    """`earlier` with every field `later` sets (the discriminator and the id aside)."""
    changes = {
        name: value
        for name in _shared_fields(type(earlier), type(later))
        if (value := getattr(later, name)) is not None
    }
    return types.evolve(earlier, **changes)


#: The fields two update classes share, less the discriminator, by the pair.
_SHARED_FIELDS: dict[tuple[type, type], tuple[str, ...]] = {}


def _shared_fields(earlier: type, later: type) -> tuple[str, ...]:
    """The names of `later`'s fields that `earlier` has too (`session_update` aside), in
    `later`'s order; worked out once per pair (a long load merges a call per turn)."""
    names = _SHARED_FIELDS.get((earlier, later))
    if names is None:
        own = {field.name for field in attrs.fields(earlier)}
        names = _SHARED_FIELDS[(earlier, later)] = tuple(
            field.name
            for field in attrs.fields(later)
            if field.name in own and field.name != "session_update"
        )
    return names
