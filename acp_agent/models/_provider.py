"""The one interface every model provider implements: a request in, a stream of events out.

Usage::

    async with provider.stream(request) as events:
        async for event in events:
            ...

Leaving the `async with` block, by any way (the reply ended, `break`, an
exception, cancellation of the consuming task), closes the HTTP response at
once, so the provider stops generating. Cancelling the task while it waits
for the next event closes it too, even outside a block.

Every provider's events pass through `ModelStream`, the edge where the model's
text enters: a lone surrogate in a delta, in reasoning or in a tool call's
arguments becomes U+FFFD there (`acp_agent.lone_surrogates`), so what came
before it still reaches the editor and the turn goes on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Protocol

import attrs

from acp_agent.lone_surrogates import has_lone_surrogates, replace_in_json, replace_lone_surrogates
from acp_agent.models._events import (
    ModelEvent,
    ReasoningDelta,
    ReasoningEnded,
    TextDelta,
    ToolCallEnded,
)
from acp_agent.models._request import ModelRequest

__all__ = ("ModelProvider", "ModelStream")


class ModelStream:
    """The events of one reply: an async iterator that is also an async context manager."""

    def __init__(self, events: AsyncGenerator[ModelEvent, None]):
        self._events = events

    def __aiter__(self) -> ModelStream:
        return self

    async def __anext__(self) -> ModelEvent:
        return _valid_text(await self._events.__anext__())

    async def aclose(self) -> None:
        """Stop the reply and close its HTTP response; idempotent."""
        await self._events.aclose()

    async def __aenter__(self) -> ModelStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


class ModelProvider(Protocol):
    """Streams model replies. Errors raised are the `ProviderError` tree, never httpx's."""

    @property
    def name(self) -> str:
        """The configured provider name (`openai`, `anthropic`, `ollama`, …), for messages."""
        ...

    def stream(self, request: ModelRequest) -> ModelStream:
        """Start streaming the reply to `request`; the HTTP request is sent on first iteration."""
        ...


def _valid_text(event: ModelEvent) -> ModelEvent:
    """`event` with every lone surrogate in its text replaced (itself when there is none)."""
    if isinstance(event, TextDelta | ReasoningDelta):
        text = replace_lone_surrogates(event.text)
        return event if text is event.text else attrs.evolve(event, text=text)
    if isinstance(event, ReasoningEnded):
        text = replace_lone_surrogates(event.reasoning.text)
        if text is event.reasoning.text:
            return event
        return attrs.evolve(event, reasoning=attrs.evolve(event.reasoning, text=text))
    if isinstance(event, ToolCallEnded):
        call_id = replace_lone_surrogates(event.call_id)
        name = replace_lone_surrogates(event.name)
        arguments = _valid_arguments(event.arguments)
        if call_id is event.call_id and name is event.name and arguments is event.arguments:
            return event
        return attrs.evolve(event, call_id=call_id, name=name, arguments=arguments)
    return event


def _valid_arguments(arguments: str) -> str:
    """Tool call arguments (JSON text) whose strings hold no lone surrogate once parsed.

    The text may name one as an escape (`\\ud800`): parsed, it would be a string that
    cannot be stored. Only arguments that hold such an escape are parsed here.
    """
    if "\\u" not in arguments and not has_lone_surrogates(arguments):
        return arguments
    try:
        value = json.loads(arguments)
    except ValueError:
        return replace_lone_surrogates(arguments)  # not JSON: the tool call fails on it
    repaired = replace_in_json(value)
    if repaired is value:
        return arguments
    return json.dumps(repaired, ensure_ascii=False)
