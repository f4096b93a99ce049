"""Newline-delimited framing: one JSON message per line, each way.

Both directions live here: writers that append the newline (W2, given to
the engine's `set_writer`) and line sources that hand whole lines to the
dispatcher. The agent side reads lines of up to
`MAX_AGENT_LINE_BYTES`; a longer one is skipped to its newline without being
kept (`jsonbounds.LineSplitter` cuts the lines), and the source hands on an
`OverLongLine` in its place.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import BinaryIO, Final, Protocol

from jsonbounds import LineSplitter, OverLongLine
from protocol.limits import MAX_AGENT_LINE_BYTES

__all__ = (
    "MAX_CLIENT_LINE_BYTES",
    "LineSource",
    "StreamWriterAdapter",
    "ThreadedLineReader",
    "iter_lines",
)

#: The largest line the client side reads from an agent. Lines carry whole
#: files and base64 images; asyncio's 64 KiB default is far too small (W8).
MAX_CLIENT_LINE_BYTES: Final = 256 * 1024 * 1024
#: How much the agent side reads from its stdin at a time (a pipe holds 64 KiB).
_READ_CHUNK_BYTES: Final = 64 * 1024


class LineSource(Protocol):
    """Anything with an awaitable `readline()` that returns b"" at end of stream.

    A line may keep its newline or not. A source with a line limit returns an
    `OverLongLine` for a line over it.
    """

    async def readline(self) -> bytes | bytearray | OverLongLine: ...


async def iter_lines(source: LineSource) -> AsyncIterator[bytes | bytearray | OverLongLine]:
    """Yield each non-blank line without its line ending, until end of stream."""
    while True:
        line = await source.readline()
        if isinstance(line, OverLongLine):
            yield line
            continue
        if not line:
            return
        # Trimmed by hand: `rstrip` and `strip` copy a bytearray even when they cut nothing.
        end = len(line)
        while end and line[end - 1] in b"\r\n":
            end -= 1
        if end < len(line):
            line = line[:end]
        if line and not line.isspace():
            yield line


class ThreadedLineReader:
    """Read lines from a blocking binary stream (stdin) on a thread of its own.

    A thread copes with every kind of stdin (pipe, file, tty). It reads the
    stream's file descriptor in chunks and splits the lines itself, so no
    lock of the stream object is held while it waits (interpreter exit would
    abort on it), and it waits in `poll` beside a wake-up pipe, so `stop()`
    ends it at once. Bytes the stream object buffered before are not seen
    (nothing reads stdin before serving); a stream without a descriptor is
    read with `read1`.

    A line is kept only up to `max_line_bytes` (newline excluded): past that
    what was kept is dropped and the rest of the line is read and dropped
    chunk by chunk up to its newline, so an over-long line costs at most the
    limit and one chunk of memory, whatever its length; `readline()` returns
    an `OverLongLine` for it and goes on with the next line. Lines come
    without their newline, and empty ones are skipped. The bounded queue
    keeps a flooding peer from buffering without limit; the thread is a
    daemon, so it never holds the process open.
    """

    def __init__(
        self,
        stream: BinaryIO,
        *,
        max_line_bytes: int = MAX_AGENT_LINE_BYTES,
        max_queued_lines: int = 64,
        read_chunk_bytes: int = _READ_CHUNK_BYTES,
    ):
        self._stream = stream
        self._fd = _fileno(stream)
        self._splitter = LineSplitter(max_line_bytes)
        self._chunk_bytes = read_chunk_bytes
        self._room = threading.Semaphore(max_queued_lines)
        self._queue: asyncio.Queue[bytes | bytearray | OverLongLine] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped = False
        # Lines split from the last chunk read and not yet queued.
        self._split: deque[bytearray | OverLongLine] = deque()
        self._at_end = False
        # The wake-up pipe, open while the thread runs; the lock keeps `stop()`
        # from writing to it as the thread closes it.
        self._wake_lock = threading.RLock()
        self._wake: tuple[int, int] | None = None
        # Lines the thread has read, and lines `readline()` has returned: each counter is
        # written by one thread only, so their difference is safe to read from any.
        self._read = 0
        self._taken = 0

    @property
    def lines_waiting(self) -> int:
        """Lines read from the stream and not yet returned by `readline()` (any thread).

        What a background job gives way to: a request may be waiting for the loop
        before any handler of it has started.
        """
        return self._read - self._taken

    async def readline(self) -> bytes | bytearray | OverLongLine:
        if self._stopped:
            return b""
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._loop = asyncio.get_running_loop()
            if self._fd is not None and hasattr(select, "poll"):
                self._wake = os.pipe()
            thread = threading.Thread(
                target=self._pump, args=(self._loop, self._queue), name="acp-stdin", daemon=True
            )
            thread.start()
        line = await self._queue.get()
        self._taken += 1
        self._room.release()
        return b"" if self._stopped else line

    def stop(self) -> None:
        """End the stream now: `readline()` returns b"" from here on, as at its end.

        Lines read but not yet returned are dropped, and the reading thread
        ends without reading further. Safe from any thread.
        """
        self._stopped = True
        with self._wake_lock:
            if self._wake is not None:
                with contextlib.suppress(OSError):
                    os.write(self._wake[1], b"x")
        self._room.release()  # a thread waiting for room in the queue sees the stop
        loop, queue = self._loop, self._queue
        if loop is not None and queue is not None:
            # Wake a `readline()` waiting for a line.
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(queue.put_nowait, b"")

    def _pump(
        self,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[bytes | bytearray | OverLongLine],
    ) -> None:
        try:
            while True:
                self._room.acquire()
                if self._stopped:
                    return
                line = self._next_line()
                if self._stopped:
                    return
                self._read += 1
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, line)
                except RuntimeError:
                    return  # the loop has closed: nobody is listening any more
                if not line:
                    return
        finally:
            with self._wake_lock:
                if self._wake is not None:
                    for fd in self._wake:
                        os.close(fd)
                    self._wake = None

    def _next_line(self) -> bytes | bytearray | OverLongLine:
        """The next non-empty line, without its newline; b"" at the end of the stream.

        An `OverLongLine` instead of a line over the limit.
        """
        while True:
            while self._split:
                line = self._split.popleft()
                if isinstance(line, OverLongLine) or line:
                    return line
            if self._at_end:
                return b""
            chunk = self._read_chunk()
            if chunk:
                self._split.extend(self._splitter.feed(chunk))
            else:
                self._at_end = True
                last = self._splitter.end()  # the end of the stream ends the line too
                if last is not None:
                    self._split.append(last)

    def _read_chunk(self) -> bytes:
        """The next bytes of the stream, as many as are there up to a chunk; b"" at its end."""
        if self._stopped:
            return b""
        return self._read_fd() if self._fd is not None else self._read_stream()

    def _read_fd(self) -> bytes:
        assert self._fd is not None
        poller = None
        wake = self._wake
        if wake is not None:
            poller = select.poll()
            poller.register(self._fd, select.POLLIN)
            poller.register(wake[0], select.POLLIN)
        while not self._stopped:
            if poller is not None and wake is not None:
                ready = poller.poll()
                if any(fd == wake[0] for fd, _ in ready):
                    return b""  # stopped
            try:
                return os.read(self._fd, self._chunk_bytes)
            except BlockingIOError:
                continue  # a non-blocking descriptor with nothing to read yet
            except OSError:
                return b""  # a closed or broken stdin is the end of the stream
        return b""

    def _read_stream(self) -> bytes:
        read = getattr(self._stream, "read1", self._stream.read)
        try:
            chunk: bytes = read(self._chunk_bytes)
        except (OSError, ValueError):
            return b""  # a closed or broken stream is its end
        return chunk


def _fileno(stream: BinaryIO) -> int | None:
    """The stream's file descriptor, or None when it has none (an in-memory stream)."""
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


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
