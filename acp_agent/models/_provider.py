"""The one interface every model provider implements: a request in, a stream of events out.

Usage::

    async with provider.stream(request) as events:
        async for event in events:
            ...

Leaving the `async with` block, by any way (the reply ended, `break`, an
exception, cancellation of the consuming task), closes the HTTP response at
once, so the provider stops generating. Cancelling the task while it waits
for the next event closes it too, even outside a block.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Protocol

from acp_agent.models._events import ModelEvent
from acp_agent.models._request import ModelRequest

__all__ = ("ModelProvider", "ModelStream")


class ModelStream:
    """The events of one reply: an async iterator that is also an async context manager."""

    def __init__(self, events: AsyncGenerator[ModelEvent, None]):
        self._events = events

    def __aiter__(self) -> ModelStream:
        return self

    async def __anext__(self) -> ModelEvent:
        return await self._events.__anext__()

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
