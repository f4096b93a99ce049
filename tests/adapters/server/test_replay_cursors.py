"""A replay in few updates, and resuming it after any cursor: no gap, nothing twice.

In-process, over a history of facts as turns record them (a reply streamed in
deltas, some merged into one event with pieces; reasoning; a batch of two tool
calls, one making a plan; a request that failed after some text): the replay
`replayed` makes for an attached client, next to the live stream the app
server's view makes of the same events. From every cursor either of them gave,
what the client had plus the replay after the cursor shows the conversation the
whole replay shows: no message loses or repeats text, no call is updated before
it is announced or announced twice, and what is left of a message comes in one
chunk.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from acp_agent.adapters.acp._replay import replayed
from acp_agent.adapters.acp._updates import ModelFacts, UpdateTranslator
from acp_agent.adapters.server._views import AttachedTranslator
from acp_agent.agent import (
    BranchId,
    Event,
    FailureKind,
    ModelReasoningDelta,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelTextDelta,
    Seq,
    StepKind,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultRecorded,
    TurnEnded,
    TurnId,
    Usage,
    UserInputAdopted,
    replay_steps,
)
from acp_agent.content import PlanContent, PlanEntry, PlanPriority, PlanStatus, TextContent
from acp_agent.core import BatchId, CallId, ModelStopReason, TurnStopReason
from protocol import types
from protocol.text_chunks import TextChunks
from tests.support.conversation import shown


def history() -> list[Event]:
    """Two turns, batch by batch, as the loop and the tools record them."""
    first, second = TurnId("turn_1"), TurnId("turn_2")
    plan = PlanContent((PlanEntry("Read the notes", PlanPriority.HIGH, PlanStatus.PENDING),))
    batches: list[list[Any]] = [
        [UserInputAdopted("turn_1", (TextContent("Read the notes"),))],
        [ModelRequestStarted("req_1", first, "scripted/s")],
        [ModelReasoningDelta("req_1", "Notes ")],
        [ModelReasoningDelta("req_1", "first.")],
        [ModelTextDelta("req_1", "Let me "), ModelTextDelta("req_1", "read", ["re", "ad"])],
        [ModelTextDelta("req_1", " them.", [" the", "m."])],
        [
            ModelRequestFinished("req_1", ModelStopReason.TOOL_USE, Usage(100, 10)),
            ToolCallRequested("req_1", CallId("c1"), "read", {"path": "notes.txt"}, "Read"),
            ToolCallRequested("req_1", CallId("c2"), "plan", {}, "Plan"),
        ],
        [ToolCallStarted(CallId("c1"))],
        [ToolResultRecorded(CallId("c1"), "req_1", (TextContent("milk"),), False)],
        [ToolCallStarted(CallId("c2"))],
        [ToolResultRecorded(CallId("c2"), "req_1", (plan,), False)],
        [ModelRequestStarted("req_2", first, "scripted/s")],
        [ModelTextDelta("req_2", "It says "), ModelTextDelta("req_2", "milk.")],
        [ModelRequestFinished("req_2", ModelStopReason.END_TURN, Usage(120, 4))],
        [TurnEnded(first, TurnStopReason.END_TURN)],
        [UserInputAdopted("turn_2", (TextContent("And?"),))],
        [ModelRequestStarted("req_3", second, "scripted/s")],
        [ModelTextDelta("req_3", "Half")],
        [ModelTextDelta("req_3", " an answer")],
        [ModelRequestFailed("req_3", FailureKind.STREAM_BROKEN, "the line dropped")],
        [TurnEnded(second, TurnStopReason.END_TURN)],
    ]
    events, seq = [], 0
    for batch in batches:
        start = seq + 1
        for payload in batch:
            seq += 1
            events.append(Event(BranchId("br_1"), Seq(seq), BatchId(start), payload, "test", 0.0))
    return events


def translator() -> UpdateTranslator:
    return UpdateTranslator(replay=True, model_facts=lambda model: ModelFacts(200_000))


def typed(updates: Iterable[Any]) -> list[types.SessionUpdate]:
    return [
        u
        for update in updates
        for u in (update.updates() if isinstance(update, TextChunks) else [update])
    ]


def replay(after: tuple[int, int | None] | None = None) -> list[tuple[Any, tuple[int, int | None]]]:
    """(update, cursor) of a replay of the history after `after`."""
    shows = translator()
    return [
        (shown_.update, shown_.cursor)
        for _, updates in replayed(history(), shows, shows, after=after)
        for shown_ in updates
    ]


def live() -> list[tuple[types.SessionUpdate, tuple[int, int | None]]]:
    """(update, cursor) of the live stream an attached client got (`SessionView`)."""
    view = AttachedTranslator(
        UpdateTranslator(model_facts=lambda model: ModelFacts(200_000)), translator()
    )
    return [
        (update, (int(event.seq), part))
        for event in history()
        for part, update in enumerate(view.translate(event))
    ]


def call_problems(updates: list[types.SessionUpdate]) -> list[str]:
    announced: set[str] = set()
    problems = []
    for update in updates:
        if isinstance(update, types.ToolCall):
            if update.tool_call_id in announced:
                problems.append(f"{update.tool_call_id} announced twice")
            announced.add(update.tool_call_id)
        elif isinstance(update, types.ToolCallProgress) and update.tool_call_id not in announced:
            problems.append(f"{update.tool_call_id} updated, never announced")
    return problems


def test_a_replay_shows_each_message_in_one_chunk_and_each_call_once_in_its_last_state() -> None:
    whole = typed(update for update, _ in replay())

    assert [u.session_update for u in whole] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call",
        "plan",
        "agent_message_chunk",
        "usage_update",  # once, where it last grew (the second turn's request failed)
        "user_message_chunk",
        "agent_message_chunk",
        "agent_message_chunk",  # why the reply stopped
    ]
    assert shown(whole) == shown(update for update, _ in live())
    assert [u.content.text for u in whole if isinstance(u, types.AgentMessageChunk)] == [
        "Let me read them.",
        "It says milk.",
        "Half an answer",
        "\n\nThe model request failed: the line dropped",
    ]
    calls = [u for u in whole if isinstance(u, types.ToolCall)]
    assert [(c.tool_call_id, c.status) for c in calls] == [
        ("c1", types.ToolCallStatus.COMPLETED),
        ("c2", types.ToolCallStatus.COMPLETED),
    ]
    assert calls[0].content == [types.Content(content=types.TextContent(text="milk"))]
    [usage] = [u for u in whole if isinstance(u, types.UsageUpdate)]
    assert usage.meta is not None
    assert usage.meta["usage"]["totalTokens"] == 234  # both requests


@pytest.mark.parametrize("source", ["live", "replay"])
def test_after_any_cursor_the_rest_shows_the_whole_with_no_gap_and_nothing_twice(
    source: str,
) -> None:
    got = live() if source == "live" else replay()
    whole = shown(typed(update for update, _ in replay()))
    cursors = [cursor for _, cursor in got]
    assert cursors == sorted(cursors, key=lambda c: (c[0], 1 << 30 if c[1] is None else c[1]))
    for at, (_, cursor) in enumerate(got):
        rest = typed(update for update, _ in replay(after=cursor))
        both = typed(update for update, _ in got[: at + 1]) + rest
        assert shown(both).entries == whole.entries, cursor
        assert shown(both).latest.keys() == whole.latest.keys(), cursor
        assert call_problems(both) == [], cursor
        # What is left of a message comes in one chunk (why a reply stopped is its own).
        chunks = [
            (u.session_update, u.message_id)
            for u in rest
            if isinstance(u, types.AgentMessageChunk | types.AgentThoughtChunk)
            and not u.content.text.startswith("\n\nThe model request failed")  # type: ignore[union-attr]
        ]
        assert len(chunks) == len(set(chunks)), cursor


def test_steps_group_deltas_of_one_reply_and_the_life_of_each_call() -> None:
    steps = replay_steps(history())
    kinds = [(step.kind, [int(e.seq) for e in step.events]) for step in steps]

    assert (StepKind.TEXT, [3, 4]) in kinds  # the reasoning
    assert (StepKind.TEXT, [5, 6, 7]) in kinds  # the reply, pieces and all
    assert (StepKind.ITEM, [9, 11, 12]) in kinds  # c1: requested, started, its result
    assert (StepKind.ITEM, [10, 13, 14]) in kinds
    # After a cursor inside an event: the rest of that event's pieces.
    [first, *_] = replay_steps(history(), after=(6, 0))
    assert (first.kind, first.seen, [int(e.seq) for e in first.events]) == (
        StepKind.TEXT,
        1,
        [6, 7],
    )
