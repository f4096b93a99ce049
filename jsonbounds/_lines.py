"""Lines out of a byte stream in linear time, each bounded: a peer's stdin, a server's stdout.

`LineSplitter.feed(chunk)` scans only the new chunk for newlines and appends
the bytes in between, so reading a message costs time proportional to its
size (re-splitting the whole pending buffer for every 64 KiB chunk made a
50 MB message cost minutes). A line longer than `max_line_bytes` is not
kept: its bytes are counted and dropped up to its newline, so one line costs
at most the limit in memory whatever its length, and it comes out as an
`OverLongLine` carrying its first bytes (enough to find the JSON-RPC id of
the answer it was).
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ("HEAD_BYTES", "LineSplitter", "OverLongLine")

#: How much of an over-long line is kept, to tell which request it answered.
HEAD_BYTES: Final = 512


@attrs.frozen
class OverLongLine:
    """A line that was longer than the limit: skipped up to its newline, never kept."""

    #: Its length, newline excluded.
    size_bytes: int
    #: The limit it is over.
    limit_bytes: int
    #: Its first `HEAD_BYTES` bytes.
    head: bytes = attrs.field(repr=lambda head: f"<{len(head)} bytes>")


class LineSplitter:
    """Splits a stream's bytes into lines (without newlines), keeping at most the limit.

    The lines it returns are the buffers they were gathered in (`bytearray`),
    not copies: a copy of a 50 MB message is 50 MB more.
    """

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._pending = bytearray()
        self._size = 0
        self._head = bytearray()

    @property
    def max_line_bytes(self) -> int:
        """The longest line kept, newline excluded."""
        return self._max

    def feed(self, chunk: bytes) -> list[bytearray | OverLongLine]:
        """The lines `chunk` completes, in order."""
        lines: list[bytearray | OverLongLine] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            self._take(chunk, start, end)
            if newline < 0:
                return lines
            lines.append(self._finish())
            start = newline + 1

    def end(self) -> bytearray | OverLongLine | None:
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

    def _finish(self) -> bytearray | OverLongLine:
        line: bytearray | OverLongLine
        if self._size > self._max:
            line = OverLongLine(self._size, self._max, bytes(self._head))
        else:
            line = self._pending
        self._pending = bytearray()
        self._head = bytearray()
        self._size = 0
        return line
