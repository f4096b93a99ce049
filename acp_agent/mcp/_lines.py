"""Lines out of a byte stream in linear time, each bounded: what a server's stdout gives.

`LineSplitter.feed(chunk)` scans only the new chunk for newlines and appends
the bytes in between, so reading a message costs time proportional to its
size (re-splitting the whole pending buffer for every 64 KiB chunk made a
50 MB result cost minutes). A line longer than `max_line_bytes` is not kept:
its bytes are counted and dropped up to its newline, and it comes out as an
`OverLongLine` carrying its first bytes (enough to find the JSON-RPC id of
the answer it was).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from acp_agent.records import Record

__all__ = ("HEAD_BYTES", "MAX_MESSAGE_BYTES", "LineSplitter", "OverLongLine", "message_id")

#: The largest message an MCP server may send over stdio (newline excluded): generous
#: for tool results (the result budget caps what is kept of them), and what one
#: message may cost in memory.
MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
#: How much of an over-long line is kept, to tell which request it answered.
HEAD_BYTES: Final = 512

_ID: Final = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


@attrs.frozen
class OverLongLine(Record):
    """A line that was longer than the limit: its size and its first bytes."""

    size_bytes: int
    head: bytes


def message_id(head: bytes) -> int | str | None:
    """The JSON-RPC id in the first bytes of a message, if they name one."""
    found = _ID.search(head)
    if found is None:
        return None
    raw = found.group(1)
    if raw.startswith(b'"'):
        return raw[1:-1].decode("utf-8", "replace")
    return int(raw)


class LineSplitter:
    """Splits a stream's bytes into lines (without newlines), keeping at most the limit."""

    def __init__(self, max_line_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._max = max_line_bytes
        self._pending = bytearray()
        self._size = 0
        self._head = bytearray()

    def feed(self, chunk: bytes) -> list[bytes | bytearray | OverLongLine]:
        """The lines `chunk` completes, in order."""
        lines: list[bytes | bytearray | OverLongLine] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            self._take(chunk, start, end)
            if newline < 0:
                return lines
            lines.append(self._finish())
            start = newline + 1

    def end(self) -> bytes | bytearray | OverLongLine | None:
        """The last line, if the stream ended without a newline after it."""
        if not self._size:
            return None
        return self._finish()

    def _take(self, chunk: bytes, start: int, end: int) -> None:
        if start == end:
            return
        if len(self._head) < HEAD_BYTES:
            self._head += chunk[start : min(end, start + HEAD_BYTES - len(self._head))]
        self._size += end - start
        if self._size > self._max:
            self._pending.clear()  # over the limit: count the rest, keep none of it
        else:
            self._pending += memoryview(chunk)[start:end]

    def _finish(self) -> bytes | bytearray | OverLongLine:
        # The kept bytes go out as they are: a copy of a 50 MB message is 50 MB more.
        line: bytes | bytearray | OverLongLine
        if self._size > self._max:
            line = OverLongLine(self._size, bytes(self._head))
        else:
            line = self._pending
        self._pending = bytearray()
        self._head = bytearray()
        self._size = 0
        return line
