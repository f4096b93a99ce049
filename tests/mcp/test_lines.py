"""An over-long line of a server's stdout still names the request it answered.

How lines are split and bounded is `jsonbounds.LineSplitter` (`tests/jsonbounds`).
"""

from __future__ import annotations

from acp_agent.mcp._stdio import message_id
from jsonbounds import LineSplitter, OverLongLine


def test_an_over_long_answer_names_its_id():
    splitter = LineSplitter(10)
    (over,) = splitter.feed(b'{"jsonrpc":"2.0","id":42,"result":"' + b"x" * 50 + b'"}\n')
    assert isinstance(over, OverLongLine)
    assert message_id(over.head) == 42


def test_ids_are_read_from_numbers_and_strings():
    assert message_id(b'{"id": "req-7", "result"') == "req-7"
    assert message_id(b'{"jsonrpc":"2.0","result":{') is None
