"""Streamed text as `session/update` lines, encoded without building typed objects.

A model streams thousands of small deltas a second and each becomes one
`agent_message_chunk` (or `agent_thought_chunk`) notification. Building the
typed update, unstructuring it and encoding it cost more than decoding the
delta from the provider did, so a fast stream backed up behind its own
updates. `encode_text_chunks` writes the same bytes from a template instead;
`TextChunks.updates()` is the typed form of the same chunks, for replays and
for tests, which hold the two to byte equality with the converter's output.

    chunks = TextChunks("agent_message_chunk", "req_1", ["Hel", "lo."])
    connection.notify_text_chunks(session_id, chunks)  # two lines, one write
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from protocol import types

__all__ = ("ChunkKind", "TextChunks", "encode_text_chunks")

#: The `sessionUpdate` of a chunk of text.
ChunkKind: TypeAlias = Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]


def _update_class(
    kind: ChunkKind,
) -> type[types.AgentMessageChunk | types.AgentThoughtChunk | types.UserMessageChunk]:
    # At call time: naming the classes at import would load the types' turn part
    # with the connection, before `initialize` is answered.
    if kind == "agent_thought_chunk":
        return types.AgentThoughtChunk
    if kind == "user_message_chunk":
        return types.UserMessageChunk
    return types.AgentMessageChunk


@attrs.frozen
class TextChunks:
    """Consecutive text chunks of one message: one `session/update` per text, in order."""

    kind: ChunkKind
    #: The `messageId` every chunk carries; None writes none.
    message_id: str | None
    texts: Sequence[str]

    def updates(self) -> list[types.SessionUpdate]:
        """The chunks as typed updates (what `encode_text_chunks` writes)."""
        update_class = _update_class(self.kind)
        return [
            update_class(content=types.TextContent(text=text), message_id=self.message_id)
            for text in self.texts
        ]


def encode_text_chunks(
    session_id: str, chunks: TextChunks, *, metas: Sequence[Mapping[str, Any]] | None = None
) -> bytes:
    """The chunks' `session/update` notifications: compact JSON, one message per line,
    lines joined by newlines (no final one), byte for byte what the converter writes.

    `metas`, one per chunk, is each notification's `_meta` (a cursor, say). Like the
    engine's encoder, a line that cannot be UTF-8 (a lone surrogate) is written with
    every non-ASCII character of it escaped.
    """
    head, tail = _frame(session_id, chunks.kind, chunks.message_id, _quote)
    lines = []
    for i, text in enumerate(chunks.texts):
        meta = None if metas is None else metas[i]
        try:
            lines.append((head + _quote(text) + tail + _meta(meta, False)).encode("utf-8"))
        except UnicodeEncodeError:
            ascii_head, ascii_tail = _frame(session_id, chunks.kind, chunks.message_id, _ascii)
            lines.append(
                (ascii_head + _ascii(text) + ascii_tail + _meta(meta, True)).encode("ascii")
            )
    return b"\n".join(lines)


_quote: Callable[[str], str] = json.encoder.encode_basestring
_ascii: Callable[[str], str] = json.encoder.encode_basestring_ascii


def _meta(meta: Mapping[str, Any] | None, ascii: bool) -> str:
    """What closes a line after its update: its `_meta`, if any, then the params and the
    message."""
    if meta is None:
        return "}}"
    encoded = json.dumps(meta, ensure_ascii=ascii, allow_nan=False, separators=(",", ":"))
    return ',"_meta":' + encoded + "}}"


def _frame(
    session_id: str, kind: str, message_id: str | None, quote: Callable[[str], str]
) -> tuple[str, str]:
    """What comes before a chunk's quoted text, and what after it up to the update's end."""
    head = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
        f'{quote(session_id)},"update":{{"sessionUpdate":"{kind}",'
        '"content":{"type":"text","text":'
    )
    # Closing: the content, then (after the id) the update; `_meta` closes the rest.
    tail = "}}" if message_id is None else '},"messageId":' + quote(message_id) + "}"
    return head, tail
