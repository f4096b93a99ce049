"""Folding events into the assistant message to keep, complete or partial."""

from __future__ import annotations

from acp_agent.models import (
    Message,
    Reasoning,
    ReasoningDelta,
    ReasoningEnded,
    Reply,
    ReplyBuilder,
    ResponseEnded,
    StopReason,
    Text,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    UsageReported,
)


def build(*events: object) -> Reply:
    builder = ReplyBuilder()
    for event in events:
        builder.add(event)  # type: ignore[arg-type]
    return builder.reply()


def test_a_complete_reply_keeps_parts_in_the_order_they_streamed() -> None:
    usage = UsageReported(10, 5)
    reply = build(
        ReasoningDelta("Look "),
        ReasoningDelta("first."),
        ReasoningEnded(Reasoning("Look first.", "sig")),
        TextDelta("Reading "),
        TextDelta("it."),
        ToolCallStarted(0, "c1", "read_file"),
        ToolCallArgumentsDelta(0, '{"path":"a"}'),
        ToolCallEnded(0, "c1", "read_file", '{"path":"a"}'),
        usage,
        ResponseEnded(StopReason.TOOL_USE, "tool_use"),
    )
    assert reply == Reply(
        Message(
            "assistant",
            [
                Reasoning("Look first.", "sig"),
                Text("Reading it."),
                ToolCall("c1", "read_file", '{"path":"a"}'),
            ],
        ),
        StopReason.TOOL_USE,
        usage,
    )
    assert reply.complete
    assert reply.tool_calls == (ToolCall("c1", "read_file", '{"path":"a"}'),)


def test_a_partial_reply_keeps_text_and_reasoning_but_not_an_unfinished_tool_call() -> None:
    reply = build(
        TextDelta("Let me "),
        ToolCallStarted(0, "c1", "write_file"),
        ToolCallArgumentsDelta(0, '{"path":'),
    )
    assert reply == Reply(Message("assistant", [Text("Let me ")]), None, None)
    assert not reply.complete

    thinking = build(ReasoningDelta("Half a thou"))
    assert thinking.message.parts == (Reasoning("Half a thou"),)
