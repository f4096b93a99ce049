"""What a client shows of a stream of `session/update`s: the conversation at rest.

A live turn sends every streamed piece and every step of a tool call; a replay
sends each message whole and each call in its last state. Both show the same
conversation, which `shown(updates)` folds the way a client renders it:

- consecutive chunks of one message (one kind, one `messageId`) are one entry,
  their text joined;
- a tool call is one entry where it was announced (`tool_call`), each later
  `tool_call_update` of it replacing the fields it sets (content and locations
  are whole lists);
- everything else (the plan, the usage, the title, the commands) is its last
  value, by kind.

Tests compare `shown(...)` of a live stream and of its replay, whatever number
of updates each took; a gap or a duplicate changes a message's text or a call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from protocol import types

__all__ = ("Conversation", "Message", "ToolCallShown", "shown")


@attrs.frozen
class Message:
    """One message as shown: its kind, id and text (a block that is not text: `[type]`)."""

    kind: str
    message_id: str | None
    text: str


@attrs.frozen
class ToolCallShown:
    """One tool call as shown: every field its updates set, the last value of each."""

    tool_call_id: str
    fields: dict[str, Any]


@attrs.frozen
class Conversation:
    """Messages and tool calls in the order they appeared; the last value of the rest."""

    entries: list[Message | ToolCallShown]
    latest: dict[str, types.SessionUpdate]


_CHUNKS = (types.UserMessageChunk, types.AgentMessageChunk, types.AgentThoughtChunk)


def shown(updates: Iterable[types.SessionUpdate]) -> Conversation:
    """The conversation `updates` show (see the module docstring)."""
    entries: list[Message | ToolCallShown] = []
    calls: dict[str, int] = {}
    latest: dict[str, types.SessionUpdate] = {}
    for update in updates:
        if isinstance(update, _CHUNKS):
            content = update.content
            text = content.text if isinstance(content, types.TextContent) else f"[{content.type}]"
            last = entries[-1] if entries else None
            if (
                isinstance(last, Message)
                and last.kind == update.session_update
                and last.message_id == update.message_id
            ):
                entries[-1] = Message(last.kind, last.message_id, last.text + text)
            else:
                entries.append(Message(update.session_update, update.message_id, text))
        elif isinstance(update, types.ToolCall | types.ToolCallProgress):
            call_id = str(update.tool_call_id)
            changed = {
                field.name: value
                for field in attrs.fields(type(update))
                if field.name not in ("session_update", "tool_call_id")
                and (value := getattr(update, field.name)) is not None
            }
            at = calls.get(call_id)
            if at is None:
                calls[call_id] = len(entries)
                entries.append(ToolCallShown(call_id, changed))
            else:
                before = entries[at]
                assert isinstance(before, ToolCallShown)
                entries[at] = ToolCallShown(call_id, {**before.fields, **changed})
        else:
            latest[update.session_update] = update
    return Conversation(entries, latest)
