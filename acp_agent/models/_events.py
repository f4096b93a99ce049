"""What a model stream yields: facts about the reply, in the order they happened.

Every provider yields the same events. A complete reply looks like::

    (TextDelta | ReasoningDelta | ReasoningEnded
     | ToolCallStarted ToolCallArgumentsDelta* ToolCallEnded)*
    UsageReported?
    ResponseEnded

`ResponseEnded` is always last and means the reply is complete. A stream that
stops without it raised `StreamBroken`: what arrived before is a partial reply.

Tool calls are numbered by `index` from 0 in the order the model started them;
their argument deltas may interleave. `ToolCallEnded` carries the whole JSON
arguments, so a consumer that does not show progress can ignore the deltas.
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import attrs

from acp_agent.models._request import Reasoning, ToolCall
from acp_agent.values import Value

__all__ = (
    "ModelEvent",
    "ReasoningDelta",
    "ReasoningEnded",
    "ResponseEnded",
    "StopReason",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallEnded",
    "ToolCallStarted",
    "UsageReported",
)


@enum.unique
class StopReason(enum.StrEnum):
    """Why the model stopped."""

    #: It finished its answer.
    END_TURN = "end_turn"
    #: It wants the tool calls of this reply run, and their results sent back.
    TOOL_USE = "tool_use"
    #: It hit the output token cap (or the context window) mid-reply.
    MAX_TOKENS = "max_tokens"
    #: It declined, or the provider's content filter stopped it.
    REFUSAL = "refusal"


@attrs.frozen
class TextDelta(Value):
    """The next piece of the visible answer."""

    text: str


@attrs.frozen
class ReasoningDelta(Value):
    """The next piece of the model's reasoning."""

    text: str


@attrs.frozen
class ReasoningEnded(Value):
    """A reasoning block is complete; `reasoning` is what to send back in later requests."""

    reasoning: Reasoning


@attrs.frozen
class ToolCallStarted(Value):
    """The model began proposing tool call `index`."""

    index: int
    call_id: str
    name: str


@attrs.frozen
class ToolCallArgumentsDelta(Value):
    """The next piece of the JSON arguments of tool call `index`."""

    index: int
    delta: str


@attrs.frozen
class ToolCallEnded(Value):
    """Tool call `index` is complete; `arguments` is the whole JSON object, as text."""

    index: int
    call_id: str
    name: str
    arguments: str

    @property
    def tool_call(self) -> ToolCall:
        """The call as a message part, for the assistant message."""
        return ToolCall(call_id=self.call_id, name=self.name, arguments=self.arguments)


@attrs.frozen
class UsageReported(Value):
    """Tokens this request used, as the provider counted them.

    `input_tokens` counts the whole prompt, including the part read from or
    written to the provider's cache (`cache_read_tokens`, `cache_write_tokens`),
    so `input_tokens + output_tokens` is the context this exchange filled.
    `reasoning_tokens` is the part of `output_tokens` spent reasoning, where the
    provider says (0 otherwise).
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


@attrs.frozen
class ResponseEnded(Value):
    """The reply is complete. `provider_stop_reason` is the provider's own word, for logs."""

    stop_reason: StopReason
    provider_stop_reason: str | None = None


ModelEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ReasoningEnded
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ToolCallEnded
    | UsageReported
    | ResponseEnded
)
