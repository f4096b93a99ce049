"""Streamed text from the template is byte for byte what the typed path writes.

Both go through a real `AgentConnection` with a writer that keeps the bytes:
`notify(SESSION_UPDATE, ...)` of each typed update, and `notify_text_chunks`
of the same chunks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import ConnectionClosed
from protocol.text_chunks import TextChunks, encode_text_chunks


class _Bytes:
    """A writer keeping each write as given."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        pass


def _connection() -> tuple[AgentConnection, _Bytes]:
    connection = AgentConnection()
    writer = _Bytes()
    connection.protocol.set_writer(writer)
    return connection, writer


def typed_lines(
    session_id: str, chunks: TextChunks, metas: list[dict[str, Any]] | None = None
) -> list[bytes]:
    connection, writer = _connection()
    for i, update in enumerate(chunks.updates()):
        notification = types.SessionNotification(
            session_id=session_id, update=update, meta=None if metas is None else metas[i]
        )
        connection.notify(methods.SESSION_UPDATE, notification)
    return writer.writes


# Any text at all: control characters, quotes, backslashes, astral planes, lone surrogates.
texts = st.text(st.characters(codec=None) | st.characters(categories=["Cs"]), max_size=12)
kinds = st.sampled_from(["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"])


@given(
    session_id=texts,
    kind=kinds,
    message_id=st.none() | texts,
    pieces=st.lists(texts, min_size=1, max_size=4),
)
def test_the_template_writes_what_the_typed_path_writes(
    session_id: str, kind: str, message_id: str | None, pieces: list[str]
) -> None:
    chunks = TextChunks(kind, message_id, pieces)  # type: ignore[arg-type]
    connection, writer = _connection()

    connection.notify_text_chunks(session_id, chunks)

    assert writer.writes == [b"\n".join(typed_lines(session_id, chunks))]


@given(
    session_id=texts,
    message_id=st.none() | texts,
    pieces=st.lists(texts, min_size=1, max_size=4),
    cursor=texts,
)
def test_the_template_writes_each_chunks_meta_as_the_typed_path_does(
    session_id: str, message_id: str | None, pieces: list[str], cursor: str
) -> None:
    chunks = TextChunks("agent_message_chunk", message_id, pieces)
    metas = [{"acp-agent": {"cursor": f"{cursor}:{i}"}} for i in range(len(pieces))]
    connection, writer = _connection()

    connection.notify_text_chunks(session_id, chunks, metas=metas)

    assert writer.writes == [b"\n".join(typed_lines(session_id, chunks, metas))]


def test_one_write_carries_every_chunk_each_on_its_own_line() -> None:
    chunks = TextChunks("agent_message_chunk", "req_1", ["Hel", "lo\n", '"."'])

    lines = encode_text_chunks("sess_1", chunks).split(b"\n")

    updates = [json.loads(line)["params"]["update"] for line in lines]
    assert updates == [
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
            "messageId": "req_1",
        }
        for text in ["Hel", "lo\n", '"."']
    ]


def test_a_lone_surrogate_is_escaped_as_the_engine_escapes_it() -> None:
    chunks = TextChunks("agent_thought_chunk", None, ["a\ud800b", "é"])

    encoded = encode_text_chunks("s", chunks)

    first, second = encoded.split(b"\n")
    assert first.isascii()
    assert "é".encode() in second  # only the line that cannot be UTF-8 is escaped
    assert [
        json.loads(line)["params"]["update"]["content"]["text"] for line in encoded.split(b"\n")
    ] == [
        "a\ud800b",
        "é",
    ]


def test_text_chunks_to_a_closed_connection_raise_connection_closed() -> None:
    connection, writer = _connection()
    connection.protocol.close()

    with pytest.raises(ConnectionClosed):
        connection.notify_text_chunks("s", TextChunks("agent_message_chunk", None, ["x"]))
    assert writer.writes == []
