"""The model loop: model steps recorded as facts, tool batches between them, how turns end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from acp_agent.capabilities.execution import CoalescingRecorder, record_delta
from acp_agent.capabilities.loop import LoopSettings
from acp_agent.capabilities.loop._loop import LoopState
from acp_agent.capabilities.permissions import PermissionMode
from acp_agent.core import (
    CompactionRecorded,
    CompactionStarted,
    EventDraft,
    ModelReasoningDelta,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestInterrupted,
    ModelRequestStarted,
    ModelTextDelta,
    ToolCallRequested,
    ToolOutcome,
    ToolResultRecorded,
    TurnCancelRequested,
    TurnEnded,
    TurnInterrupted,
    Usage,
)

from .support import CountingTool, in_process_agent, payloads_of

GREETING = {"replies": [[{"thought": "Hi?"}, {"text": "Hel"}, {"text": "lo."}]]}


async def test_a_reply_is_recorded_delta_by_delta_and_ends_the_turn(tmp_path: Path):
    """Every delta is kept, in order (deltas recorded together share an event, as pieces)."""
    async with in_process_agent(GREETING, tmp_path) as agent:
        turn_id = await agent.prompt()
        ended = await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert ended == TurnEnded(turn_id, "end_turn")
    started = payloads_of(history, ModelRequestStarted)
    assert [(s.turn_id, s.model) for s in started] == [(turn_id, "scripted/test")]
    request_id = started[0].request_id
    deltas = payloads_of(history, ModelReasoningDelta, ModelTextDelta)
    assert {d.request_id for d in deltas} == {request_id}
    assert [(type(d).__name__, piece) for d in deltas for piece in d.pieces or [d.text]] == [
        ("ModelReasoningDelta", "Hi?"),
        ("ModelTextDelta", "Hel"),
        ("ModelTextDelta", "lo."),
    ]
    assert all(d.text == "".join(d.pieces or [d.text]) for d in deltas)
    finished = payloads_of(history, ModelRequestFinished)
    assert [(f.request_id, f.stop_reason) for f in finished] == [(request_id, "end_turn")]
    assert finished[0].usage != Usage()  # the scripted estimate


async def test_tool_calls_are_proposed_with_their_presentation_run_and_answered(tmp_path: Path):
    script = {
        "replies": [
            [
                {"text": "Counting."},
                {"tool_call": {"name": "count", "arguments": {"label": "a"}, "id": "c1"}},
                {"tool_call": {"name": "count", "arguments": {"label": "b"}, "id": "c2"}},
            ],
            [{"text": "Counted twice."}],
        ]
    }
    counter = CountingTool(tmp_path / "counter")
    async with in_process_agent(script, tmp_path, tools=lambda: [counter]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        turn_id = await agent.prompt()
        ended = await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert ended == TurnEnded(turn_id, "end_turn")
    requests = payloads_of(history, ToolCallRequested)
    assert [(r.call_id, r.title, r.tool_kind, r.arguments) for r in requests] == [
        ("c1", "Count a", "execute", {"label": "a"}),
        ("c2", "Count b", "execute", {"label": "b"}),
    ]
    results = payloads_of(history, ToolResultRecorded)
    assert [(r.call_id, r.model_text, r.outcome) for r in results] == [
        ("c1", "counted 1", ToolOutcome.FINISHED),
        ("c2", "counted 2", ToolOutcome.FINISHED),
    ]
    assert counter.runs == 2
    # Two model requests: the second one after both results.
    assert [f.stop_reason for f in payloads_of(history, ModelRequestFinished)] == [
        "tool_use",
        "end_turn",
    ]
    kinds = [type(e.payload).__name__ for e in history]
    assert kinds.index("ModelRequestStarted", kinds.index("ToolResultRecorded")) > 0


async def test_a_reused_call_id_is_made_unique_within_the_branch(tmp_path: Path):
    script = {
        "replies": [
            [{"tool_call": {"name": "count", "id": "same"}}],
            [{"tool_call": {"name": "count", "id": "same"}}],
            [{"text": "ok"}],
        ]
    }
    counter = CountingTool(tmp_path / "counter")
    async with in_process_agent(script, tmp_path, tools=lambda: [counter]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    assert [r.call_id for r in payloads_of(history, ToolCallRequested)] == ["same", "same_2"]


@pytest.mark.parametrize(
    ("last_step", "stop_reason"),
    [({"stop": "max_tokens"}, "max_tokens"), ({"stop": "refusal"}, "refusal")],
)
async def test_the_reply_stop_reason_ends_the_turn(tmp_path: Path, last_step, stop_reason):
    async with in_process_agent({"replies": [[{"text": "x"}, last_step]]}, tmp_path) as agent:
        turn_id = await agent.prompt()
        assert await agent.wait_turn_over(turn_id) == TurnEnded(turn_id, stop_reason)


async def test_too_many_requests_in_one_turn_end_it_with_max_turn_requests(tmp_path: Path):
    script = {"replies": [[{"tool_call": {"name": "count"}}]]}  # asks again and again
    counter = CountingTool(tmp_path / "counter")
    settings = LoopSettings(max_turn_requests=3)
    async with in_process_agent(script, tmp_path, tools=lambda: [counter], loop=settings) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        turn_id = await agent.prompt()
        ended = await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert ended == TurnEnded(turn_id, "max_turn_requests")
    assert len(payloads_of(history, ModelRequestStarted)) == 3
    assert counter.runs == 3


async def test_a_provider_failure_keeps_the_partial_reply_and_ends_the_turn(tmp_path: Path):
    script = {"replies": [[{"text": "Half an"}, {"error": "overloaded"}]]}
    async with in_process_agent(script, tmp_path) as agent:
        turn_id = await agent.prompt()
        ended = await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert ended == TurnEnded(turn_id, "end_turn")
    request_id = payloads_of(history, ModelRequestStarted)[0].request_id
    assert payloads_of(history, ModelTextDelta) == [ModelTextDelta(request_id, "Half an")]
    [failed] = payloads_of(history, ModelRequestFailed)
    assert (failed.request_id, failed.error) == (request_id, "stream_broken")
    assert payloads_of(history, ModelRequestFinished) == []


async def test_an_exceeded_context_window_is_compacted_and_the_step_retried(tmp_path: Path):
    script = {"replies": [[{"error": "context_window"}], [{"text": "It fits now."}]]}
    async with in_process_agent(script, tmp_path) as agent:
        turn_id = await agent.prompt()
        ended = await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert ended == TurnEnded(turn_id, "end_turn")
    [failed] = payloads_of(history, ModelRequestFailed)
    assert failed.error == "context_window"
    assert "it is being summarised" in failed.message  # the person reads what happens
    [started] = payloads_of(history, CompactionStarted)
    assert started.trigger == "context_window_exceeded"
    assert len(payloads_of(history, CompactionRecorded)) == 1
    assert [d.text for d in payloads_of(history, ModelTextDelta)] == ["It fits now."]


async def test_a_context_window_exceeded_after_compacting_twice_ends_the_turn_with_max_tokens(
    tmp_path: Path,
):
    async with in_process_agent({"replies": [[{"error": "context_window"}]]}, tmp_path) as agent:
        turn_id = await agent.prompt()
        ended = await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert ended == TurnEnded(turn_id, "max_tokens")
    failed = payloads_of(history, ModelRequestFailed)
    assert [f.error for f in failed] == ["context_window"] * 3
    # Compacted twice (the older history, then all of it), then no more.
    assert len(payloads_of(history, CompactionStarted)) == 2


async def test_without_a_model_the_turn_says_how_to_configure_one(tmp_path: Path):
    async with in_process_agent(None, tmp_path) as agent:
        turn_id = await agent.prompt()
        ended = await agent.wait_turn_over(turn_id)
        [failed] = payloads_of(await agent.history(), ModelRequestFailed)

    assert ended == TurnEnded(turn_id, "end_turn")
    assert failed.error == "not_configured"
    for hint in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ACP_AGENT_MODEL", "--script"):
        assert hint in failed.message


async def test_cancel_during_the_stream_keeps_what_arrived_and_interrupts_the_turn(
    tmp_path: Path,
):
    script = {"replies": [[{"text": "Working"}, {"sleep_ms": 30000}, {"text": "never"}]]}
    async with in_process_agent(script, tmp_path) as agent:
        turn_id = await agent.prompt()
        await agent.wait_for(ModelTextDelta)
        with anyio.fail_after(1):
            await agent.session.main.cancel_turn(turn_id)
        history = await agent.history()
        state = agent.loop.state

    request_id = payloads_of(history, ModelRequestStarted)[0].request_id
    assert payloads_of(history, ModelTextDelta) == [ModelTextDelta(request_id, "Working")]
    tail = payloads_of(history, TurnCancelRequested, ModelRequestInterrupted, TurnInterrupted)
    assert tail == [
        TurnCancelRequested(turn_id),
        ModelRequestInterrupted(request_id, "cancelled"),
        TurnInterrupted(turn_id),
    ]
    assert state is LoopState.IDLE


async def test_the_next_prompt_gets_the_next_reply(tmp_path: Path):
    script = {"replies": [[{"text": "one"}], [{"text": "two"}]]}
    async with in_process_agent(script, tmp_path) as agent:
        for _ in range(2):
            await agent.wait_turn_over(await agent.prompt())
        texts = [d.text for d in payloads_of(await agent.history(), ModelTextDelta)]

    assert texts == ["one", "two"]


async def test_deltas_recorded_together_fold_into_one_event_that_keeps_each_piece():
    appended: list[list[EventDraft]] = []

    async def append(drafts: Sequence[EventDraft]) -> None:
        appended.append(list(drafts))

    recorder = CoalescingRecorder(append)
    for kind, request_id, text in [
        (ModelTextDelta, "req_1", "Hel"),
        (ModelTextDelta, "req_1", "lo"),
        (ModelTextDelta, "req_1", "!"),
        (ModelReasoningDelta, "req_1", "hm"),
        (ModelReasoningDelta, "req_1", "m"),
        (ModelTextDelta, "req_2", "x"),
    ]:
        record_delta(recorder, kind, request_id, text, "test")
    await recorder.flush()

    assert [d.payload for d in appended[0]] == [
        ModelTextDelta("req_1", "Hello!", ["Hel", "lo", "!"]),
        ModelReasoningDelta("req_1", "hmm", ["hm", "m"]),
        ModelTextDelta("req_2", "x"),
    ]
