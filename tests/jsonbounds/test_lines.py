"""Lines of a byte stream: split in linear time, bounded, an over-long one keeps its head.

That reading is linear in a message's size is tested end to end
(`tests/limits/test_big_tool_results.py`) and measured (`benchmarks/big_inputs.py`).
"""

from __future__ import annotations

from jsonbounds import LineSplitter, OverLongLine


def test_lines_split_across_chunks_come_out_whole_and_in_order():
    splitter = LineSplitter(100)
    out = []
    for chunk in (b'{"a":', b'1}\n{"b"', b":2}\n\n", b'{"c":3}'):
        out += splitter.feed(chunk)
    assert out == [b'{"a":1}', b'{"b":2}', b""]
    assert splitter.end() == b'{"c":3}'
    assert splitter.end() is None


def test_a_line_over_the_limit_is_counted_not_kept_and_the_next_one_is_intact():
    splitter = LineSplitter(10)
    head = b'{"jsonrpc":"2.0","id":42,"result":"'
    out = splitter.feed(head + b"x" * 50)
    out += splitter.feed(b'x"}\n{"ok":1}\n')
    over, after = out
    assert isinstance(over, OverLongLine)
    assert over.size_bytes == len(head) + 50 + len(b'x"}')
    assert over.head.startswith(head)
    assert over.limit_bytes == 10
    assert after == b'{"ok":1}'
