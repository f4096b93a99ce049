"""A server's stdout lines as messages: an over-long one still names the request it
answered; a read one is taken (its buffer freed) and kept whatever its text or depth.

How lines are split and bounded is `jsonbounds.LineSplitter` (`tests/jsonbounds`).
"""

from __future__ import annotations

import json

import mcp.types as mcp_types
from mcp.shared.message import SessionMessage

from acp_agent.mcp._stdio import message_id, take_message
from jsonbounds import LineSplitter, OverLongLine


def answer(result: object) -> bytearray:
    return bytearray(json.dumps({"jsonrpc": "2.0", "id": 3, "result": result}).encode())


def result_of(message: SessionMessage | Exception) -> dict[str, object]:
    assert isinstance(message, SessionMessage)
    response = message.message
    assert isinstance(response, mcp_types.JSONRPCResponse)
    return response.result


def test_an_over_long_answer_names_its_id():
    splitter = LineSplitter(10)
    (over,) = splitter.feed(b'{"jsonrpc":"2.0","id":42,"result":"' + b"x" * 50 + b'"}\n')
    assert isinstance(over, OverLongLine)
    assert message_id(over.head) == 42


def test_ids_are_read_from_numbers_and_strings():
    assert message_id(b'{"id": "req-7", "result"') == "req-7"
    assert message_id(b'{"jsonrpc":"2.0","result":{') is None


def test_a_taken_line_is_freed_and_its_message_kept():
    line = answer({"content": [{"type": "text", "text": "ok"}]})
    result = result_of(take_message(line))
    assert result["content"] == [{"type": "text", "text": "ok"}]
    assert line == bytearray()  # the reader's buffer: not held beside the message


def test_a_lone_surrogate_becomes_a_replacement_character():
    line = bytearray(b'{"jsonrpc":"2.0","id":3,"result":{"text":"a\\ud800b \\ud83d\\ude00"}}')
    assert result_of(take_message(line)) == {"text": "a\ufffdb \U0001f600"}


def test_deep_structured_content_is_an_answer_for_the_nesting_check_to_refuse():
    # The SDK's parser refused past 200 levels: the answer was dropped, its call left waiting.
    deep: object = {"leaf": True}
    for _ in range(299):
        deep = {"next": deep}
    result = result_of(take_message(answer({"content": [], "structuredContent": deep})))
    assert result["structuredContent"] == deep


def test_what_is_no_message_is_an_error_not_a_raise():
    assert isinstance(take_message(bytearray(b"\xff{}")), UnicodeDecodeError)
    assert isinstance(take_message(bytearray(b"{not json")), ValueError)
    assert isinstance(take_message(bytearray(b"[" * 100_000 + b"]" * 100_000)), ValueError)
    assert isinstance(take_message(bytearray(b'{"jsonrpc":"2.0"}')), ValueError)
