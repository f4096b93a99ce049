"""Helpers for the loop's end-to-end tests: what the updates of a turn show.

The agent itself is started with `tests.support.running_agent`, and talked to
through `tests.support.EditorClient`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol import types

__all__ = ("calls_of", "kinds_of", "text_of_updates")


def kinds_of(updates: list[types.SessionUpdate]) -> list[str]:
    """Each update's `sessionUpdate` kind, with a tool call's status after it."""
    kinds = []
    for update in updates:
        kind = update.session_update
        status = getattr(update, "status", None)
        kinds.append(f"{kind}:{status.value}" if status is not None else kind)
    return kinds


def calls_of(
    updates: list[types.SessionUpdate], call_id: str
) -> list[types.ToolCall | types.ToolCallProgress]:
    """The `tool_call` and `tool_call_update`s of one call."""
    found: list[Any] = []
    for update in updates:
        is_call = isinstance(update, types.ToolCall | types.ToolCallProgress)
        if is_call and update.tool_call_id == call_id:  # type: ignore[union-attr]
            found.append(update)
    return found


def text_of_updates(
    updates: list[types.SessionUpdate], kind: Callable[[Any], bool] | None = None
) -> str:
    """The text of the agent message chunks among `updates`, joined."""
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    )
