"""Message chunks in tests: compared without their ids, or reduced to their ids."""

from __future__ import annotations

import attrs

from protocol import types

__all__ = ("CHUNKS", "message_ids", "unnamed")

#: The updates that carry a `messageId`.
CHUNKS = (types.UserMessageChunk, types.AgentMessageChunk, types.AgentThoughtChunk)


def unnamed(updates: list[types.SessionUpdate]) -> list[types.SessionUpdate]:
    """`updates` with the chunks' message ids left out, to compare their content."""
    return [
        attrs.evolve(update, message_id=None) if isinstance(update, CHUNKS) else update
        for update in updates
    ]


def message_ids(updates: list[types.SessionUpdate]) -> list[tuple[str, str | None]]:
    """Each chunk's kind and message id, in order (other updates left out)."""
    return [
        (update.session_update, update.message_id)
        for update in updates
        if isinstance(update, CHUNKS)
    ]
