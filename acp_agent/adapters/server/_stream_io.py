"""ACP lines over an asyncio byte stream (a Unix socket): read whole lines, write without blocking.

`StreamLineSource` splits what the peer sends into lines with the same bound
as stdin (`jsonbounds.LineSplitter`: an over-long line is skipped, kept at
most to the limit, and answered as one error). `StreamLineWriter` writes each
message and its newline into the transport's buffer at once (never blocking
the loop); `writable()` is where a session's updates to this client wait
while the buffer is over its high-water mark, so a slow reader holds back
only its own delivery, which then catches up from the timeline (its memory
tail, then the store) instead of piling up here. A peer that takes nothing
for `stall_s` while that much waits is taken as gone: the connection is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Final

from jsonbounds import LineSplitter, OverLongLine
from protocol.limits import MAX_AGENT_LINE_BYTES

__all__ = ("HIGH_WATER_BYTES", "StreamLineSource", "StreamLineWriter")

logger = logging.getLogger(__name__)

#: Past this much unwritten output, a session's updates to the client wait for it.
HIGH_WATER_BYTES: Final = 1024 * 1024
#: How much is read from the socket at a time.
_READ_BYTES: Final = 64 * 1024


class StreamLineSource:
    """Whole lines from an `asyncio.StreamReader`; b"" at its end (`LineSource`)."""

    def __init__(
        self, reader: asyncio.StreamReader, *, max_line_bytes: int = MAX_AGENT_LINE_BYTES
    ) -> None:
        self._reader = reader
        self._splitter = LineSplitter(max_line_bytes)
        self._lines: deque[bytearray | OverLongLine] = deque()
        self._ended = False

    async def readline(self) -> bytes | bytearray | OverLongLine:
        while not self._lines:
            if self._ended:
                return b""
            try:
                chunk = await self._reader.read(_READ_BYTES)
            except (ConnectionError, OSError):
                chunk = b""
            if chunk:
                self._lines.extend(self._splitter.feed(chunk))
            else:
                self._ended = True
                last = self._splitter.end()
                if last is not None:
                    self._lines.append(last)
        return self._lines.popleft()


class StreamLineWriter:
    """Each message and its newline into an `asyncio.StreamWriter` (the engine's `Writer`).

    `write` never blocks; `writable()` waits while more than `high_water` bytes wait
    to be written, and drops the connection (raising `BrokenPipeError`) when the peer
    took nothing for `stall_s` seconds meanwhile.
    """

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        *,
        stall_s: float,
        high_water: int = HIGH_WATER_BYTES,
    ) -> None:
        self._writer = writer
        self._stall_s = stall_s
        self._high_water = high_water
        self._gone: str | None = None
        transport = writer.transport
        # The transport pauses us (and `drain` waits) past this much.
        transport.set_write_buffer_limits(high=high_water)

    @property
    def gone(self) -> bool:
        return self._gone is not None or self._writer.is_closing()

    def write(self, data: bytes) -> None:
        if self.gone:
            raise BrokenPipeError(self._gone or "the client closed the connection")
        self._writer.write(data + b"\n")

    async def writable(self) -> None:
        """Wait while the client is behind by more than the high-water mark."""
        transport = self._writer.transport
        if self.gone or transport.get_write_buffer_size() <= self._high_water:
            return
        while not self.gone and transport.get_write_buffer_size() > self._high_water:
            before = transport.get_write_buffer_size()
            try:
                async with asyncio.timeout(self._stall_s):
                    await self._writer.drain()
            except TimeoutError:
                if transport.get_write_buffer_size() >= before:
                    self.disconnect(f"the client read nothing for {self._stall_s:g} s")
            except (ConnectionError, OSError) as exc:
                self.disconnect(f"writing failed: {exc}")
        if self._gone is not None:
            raise BrokenPipeError(self._gone)

    def disconnect(self, why: str) -> None:
        """Take the client as gone and close the connection now."""
        if self._gone is None:
            self._gone = why
            logger.warning("closing a client connection: %s", why)
        self._writer.transport.abort()

    def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()
