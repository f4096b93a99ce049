"""What the agent asks a model for, in terms no provider owns.

A `ModelRequest` is the guide (the system text), the conversation so far as
`Message`s of typed parts, the tools the model may call, and a few knobs.
Each provider translates it into its own wire format; nothing here knows
about HTTP or JSON field names.

Which part goes where::

    user       Text, Image, ToolResult
    assistant  Text, Reasoning, ToolCall

`cacheable_prefix` says how many leading messages are stable from one
request to the next (the history before the newest turn). Providers that
support prompt caching mark the end of that prefix; the others ignore it.
`origin` says where in its session a request comes from (which line of work,
its how-manieth request): the providers ignore it, the scripted model plays by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

import attrs

from acp_agent.values import Value

__all__ = (
    "Image",
    "Message",
    "ModelRequest",
    "Part",
    "Reasoning",
    "ReasoningEffort",
    "RequestOrigin",
    "Role",
    "Text",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
)

Role: TypeAlias = Literal["user", "assistant"]
#: How hard a reasoning model should think; None leaves the provider's default.
ReasoningEffort: TypeAlias = Literal["low", "medium", "high"]


@attrs.frozen
class Text(Value):
    """Visible text: what the person typed, or what the model answered."""

    text: str


@attrs.frozen
class Image(Value):
    """An image given to the model, as base64 data and its MIME type (`image/png`)."""

    data_base64: str = attrs.field(repr=lambda data: f"<{len(data)} base64 chars>")
    mime_type: str


@attrs.frozen
class ToolCall(Value):
    """The model's proposal to call a tool; `arguments` is a JSON object, as text."""

    call_id: str
    name: str
    arguments: str


@attrs.frozen
class ToolResult(Value):
    """What running (or refusing to run) a tool call produced, tied to its call id."""

    call_id: str
    content: str
    is_error: bool = False


@attrs.frozen
class Reasoning(Value):
    """The model's reasoning, kept so it can be sent back in later requests.

    `signature` is the provider's proof that the text is unmodified (Anthropic
    refuses thinking it did not sign). When `redacted` is true the provider
    encrypted the reasoning: `text` is empty and `signature` carries the
    opaque data to send back.
    """

    text: str
    signature: str | None = None
    redacted: bool = False


Part: TypeAlias = Text | Image | ToolCall | ToolResult | Reasoning

_ALLOWED_PARTS: Mapping[Role, tuple[type, ...]] = {
    "user": (Text, Image, ToolResult),
    "assistant": (Text, Reasoning, ToolCall),
}


def _parts_tuple(parts: Iterable[Part]) -> tuple[Part, ...]:
    return tuple(parts)


@attrs.frozen
class Message(Value):
    """One message of the conversation: a role and its parts, in order."""

    role: Role
    parts: tuple[Part, ...] = attrs.field(converter=_parts_tuple)

    @parts.validator
    def _parts_fit_the_role(self, _: Any, parts: tuple[Part, ...]) -> None:
        allowed = _ALLOWED_PARTS[self.role]
        for part in parts:
            if not isinstance(part, allowed):
                names = ", ".join(kind.__name__ for kind in allowed)
                raise ValueError(f"a {self.role} message holds {names}, not {type(part).__name__}")


@attrs.frozen
class ToolSpec(Value):
    """A tool the model may call: its name, what it does, and a JSON Schema for its input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@attrs.frozen
class RequestOrigin(Value):
    """Where in its session a request comes from: which line of work asks, and how many
    requests that line made before this one."""

    #: The branch that asks: None for the session's main line, else its place among the
    #: session's branches in the order they were created (0: the first).
    branch: int | None = None
    #: The branch's title, when it has one.
    title: str | None = None
    #: The requests the line made before this one, failed and cut-short ones included
    #: (a summary of the conversation is no request of it).
    earlier_requests: int = 0


def _messages_tuple(messages: Iterable[Message]) -> tuple[Message, ...]:
    return tuple(messages)


def _tools_tuple(tools: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    return tuple(tools)


@attrs.frozen
class ModelRequest(Value):
    """One request for a streamed reply.

    **Parameters:**

    * `model`: the provider's own model name (`gpt-4.1`, `claude-sonnet-4-5`), without
      the `<provider>/` prefix used in configuration.
    * `guide`: the system text. It explains how to read the input and does not change
      when dynamic values do, so it stays cacheable.
    * `messages`: the conversation so far, oldest first.
    * `tools`: the tools the model may call.
    * `max_output_tokens`: a cap on the visible reply; None takes the provider's default.
    * `reasoning_effort`: None asks for no extended reasoning.
    * `cacheable_prefix`: how many leading `messages` are the same as in the previous
      request and may be cached.
    * `origin`: where in its session the request comes from (None: not said).
    """

    model: str
    guide: str
    messages: tuple[Message, ...] = attrs.field(converter=_messages_tuple)
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_tools_tuple)
    max_output_tokens: int | None = None
    reasoning_effort: ReasoningEffort | None = None
    cacheable_prefix: int = attrs.field(default=0)
    origin: RequestOrigin | None = None

    @cacheable_prefix.validator
    def _prefix_within_messages(self, _: Any, value: int) -> None:
        if not 0 <= value <= len(self.messages):
            raise ValueError(
                f"cacheable_prefix must be between 0 and {len(self.messages)}, not {value}"
            )
