"""Newline-delimited framing: one JSON message per line, each way.

pygls frames with Content-Length headers in module functions that offer no
hook (W1), so both directions live here: writers that append the newline
(W2, used with `set_writer(..., include_headers=False)`) and line sources
that hand whole lines, of any length, to the dispatcher.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from typing import BinaryIO, Final, Protocol

__all__ = (
    "MAX_CLIENT_LINE_BYTES",
    "FdWriter",
    "LineSource",
    "StreamWriterAdapter",
    "ThreadedLineReader",
    "iter_lines",
)

#: The largest line the client side reads from an agent. Lines carry whole
#: files and base64 images; asyncio's 64 KiB default is far too small (W8).
MAX_CLIENT_LINE_BYTES: Final = 256 * 1024 * 1024


class LineSource(Protocol):
    """Anything with an awaitable `readline()` that returns b"" at end of stream."""

    async def readline(self) -> bytes: ...


async def iter_lines(source: LineSource) -> AsyncIterator[bytes]:
    """Yield each non-blank line without its line ending, until end of stream."""
    while True:
        line = await source.readline()
        if not line:
            return
        line = line.rstrip(b"\r\n")
        if line.strip():
            yield line


class ThreadedLineReader:
    """Read lines from a blocking binary stream (stdin) on a daemon thread.

    A thread copes with every kind of stdin (pipe, file, tty) and with lines
    of any length. It is a daemon so a reader blocked in `readline()` never
    holds the process open; the bounded queue keeps a flooding peer from
    buffering without limit.
    """

    def __init__(self, stream: BinaryIO, *, max_queued_lines: int = 64):
        self._stream = stream
        self._room = threading.Semaphore(max_queued_lines)
        self._queue: asyncio.Queue[bytes] | None = None

    async def readline(self) -> bytes:
        if self._queue is None:
            self._queue = asyncio.Queue()
            loop = asyncio.get_running_loop()
            thread = threading.Thread(
                target=self._pump, args=(loop, self._queue), name="acp-stdin", daemon=True
            )
            thread.start()
        line = await self._queue.get()
        self._room.release()
        return line

    def _pump(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes]) -> None:
        while True:
            self._room.acquire()
            try:
                line = self._stream.readline()
            except (OSError, ValueError):
                line = b""  # a closed or broken stdin is the end of the stream
            try:
                loop.call_soon_threadsafe(queue.put_nowait, line)
            except RuntimeError:
                return  # the loop has closed: nobody is listening any more
            if not line:
                return


class FdWriter:
    """Write each message and its newline straight to a file descriptor (the agent's stdout).

    `os.write` in a loop: no userspace buffer that could be flushed half-way
    at interpreter exit, and one message is never interleaved with another.
    """

    def __init__(self, fd: int):
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data + b"\n")
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def close(self) -> None:
        os.close(self._fd)


class StreamWriterAdapter:
    """Write each message and its newline to an asyncio stream (the agent process's stdin)."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    def write(self, data: bytes) -> None:
        if self._writer.is_closing():
            raise BrokenPipeError("the agent's stdin is closed")
        self._writer.write(data + b"\n")

    def close(self) -> None:
        self._writer.close()
