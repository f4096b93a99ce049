"""The event-stream decoder, fed bytes as a network would deliver them."""

from __future__ import annotations

import pytest

from acp_agent.models._sse import ServerSentEvent, SSEDecoder, SSETruncated


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.end()


def every_split(data: bytes) -> list[tuple[bytes, bytes]]:
    return [(data[:cut], data[cut:]) for cut in range(len(data) + 1)]


def test_data_lines_separated_by_blank_lines_are_events() -> None:
    assert decode(b"data: one\n\ndata: two\n\n") == [
        ServerSentEvent("message", "one"),
        ServerSentEvent("message", "two"),
    ]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending_is_understood(newline: bytes) -> None:
    body = b"event: delta" + newline + b"data: x" + newline + newline + b"data: y" + newline * 2
    assert decode(body) == [ServerSentEvent("delta", "x"), ServerSentEvent("message", "y")]


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    assert decode(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [
        ServerSentEvent("message", "a"),
        ServerSentEvent("message", "b"),
    ]


def test_multibyte_characters_split_anywhere_arrive_whole() -> None:
    body = "data: 世界 🎉 é\n\n".encode()
    for head, tail in every_split(body):
        assert decode(head, tail) == [ServerSentEvent("message", "世界 🎉 é")]
    assert decode(*(bytes([byte]) for byte in body)) == [ServerSentEvent("message", "世界 🎉 é")]


def test_comments_are_keep_alives_and_are_skipped() -> None:
    assert decode(b": ping\n\n:\n\ndata: x\n: inside\n\n") == [ServerSentEvent("message", "x")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert decode(b'data: {\ndata:  "a": 1\ndata: }\n\n') == [
        ServerSentEvent("message", '{\n "a": 1\n}')
    ]


def test_field_forms_follow_the_format() -> None:
    # No space after the colon, a field without a colon, an unknown field, an id.
    assert decode(b"data:x\ndata\nretry: 10\nfoo: bar\nid: 7\n\n") == [
        ServerSentEvent("message", "x\n", id="7")
    ]


def test_an_event_without_data_is_not_dispatched() -> None:
    assert decode(b"event: ping\n\ndata: x\n\n") == [ServerSentEvent("message", "x")]


def test_a_last_event_without_the_closing_blank_line_is_dispatched_at_the_end() -> None:
    assert decode(b"data: [DONE]\n") == [ServerSentEvent("message", "[DONE]")]


def test_a_stream_that_ends_in_the_middle_of_a_line_is_truncated() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a"\n\ndata: {"cho') == [ServerSentEvent("message", '{"a"')]
    with pytest.raises(SSETruncated):
        decoder.end()


def test_invalid_utf8_becomes_the_replacement_character() -> None:
    assert decode(b"data: \xff!\n\n") == [ServerSentEvent("message", "\ufffd!")]
