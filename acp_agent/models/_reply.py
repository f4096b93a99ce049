"""Folding a stream of events into the assistant message to keep, complete or not.

Usage::

    builder = ReplyBuilder()
    try:
        async with provider.stream(request) as events:
            async for event in events:
                builder.add(event)
                ...  # show the event
    except StreamBroken:
        partial = builder.reply()  # partial.complete is False; keep it, marked incomplete
    reply = builder.reply()

A partial reply keeps the text and reasoning that arrived and the tool calls
that were complete; a tool call still streaming its arguments is left out,
because half a proposal must never run.
"""

from __future__ import annotations

import attrs

from acp_agent.models._events import (
    ModelEvent,
    ReasoningDelta,
    ReasoningEnded,
    ResponseEnded,
    StopReason,
    TextDelta,
    ToolCallEnded,
    UsageReported,
)
from acp_agent.models._request import Message, Part, Reasoning, Text, ToolCall
from acp_agent.values import Value

__all__ = ("Reply", "ReplyBuilder")


@attrs.frozen
class Reply(Value):
    """An assistant message and how it ended; `stop_reason` is None when incomplete."""

    message: Message
    stop_reason: StopReason | None
    usage: UsageReported | None

    @property
    def complete(self) -> bool:
        """Whether the reply ended normally (`ResponseEnded` arrived)."""
        return self.stop_reason is not None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model proposed, in order."""
        return tuple(part for part in self.message.parts if isinstance(part, ToolCall))


class ReplyBuilder:
    """Collects the events of one reply; `reply()` may be called at any time."""

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._stop_reason: StopReason | None = None
        self._usage: UsageReported | None = None

    def add(self, event: ModelEvent) -> None:
        """Take the next event of the stream."""
        if isinstance(event, TextDelta):
            self._text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self._flush_text()
            self._reasoning.append(event.text)
        elif isinstance(event, ReasoningEnded):
            self._flush_text()
            self._reasoning.clear()
            self._parts.append(event.reasoning)
        elif isinstance(event, ToolCallEnded):
            self._flush_text()
            self._parts.append(event.tool_call)
        elif isinstance(event, UsageReported):
            self._usage = event
        elif isinstance(event, ResponseEnded):
            self._stop_reason = event.stop_reason

    def reply(self) -> Reply:
        """What arrived so far, as an assistant message."""
        parts = list(self._parts)
        if self._reasoning:
            parts.append(Reasoning("".join(self._reasoning)))
        if self._text:
            parts.append(Text("".join(self._text)))
        return Reply(Message("assistant", parts), self._stop_reason, self._usage)

    def _flush_text(self) -> None:
        if self._text:
            self._parts.append(Text("".join(self._text)))
            self._text.clear()
