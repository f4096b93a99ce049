"""The agent side's line reader, on a real pipe: lines in, whatever the reads, and `stop()`.

A writer thread feeds the pipe the way a peer would (in pieces, with pauses
the reader cannot see); the reader runs its own thread and hands lines to
the event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from protocol._ndjson import ThreadedLineReader

#: How long a test waits for a line or a thread that should come; only failing tests wait.
WAIT_S = 10.0


@contextmanager
def pipe() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """A real pipe as (reading end, writing end), both closed afterwards."""
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as reading, os.fdopen(write_fd, "wb", buffering=0) as writing:
        yield reading, writing


def write_in_pieces(stream: BinaryIO, data: bytes, piece_bytes: int) -> threading.Thread:
    """Write `data` to `stream` `piece_bytes` at a time on a thread, then close it."""

    def run() -> None:
        with stream:
            for start in range(0, len(data), piece_bytes):
                stream.write(data[start : start + piece_bytes])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def read_all(reader: ThreadedLineReader) -> list[bytes]:
    lines = []
    async with asyncio.timeout(WAIT_S):
        while line := await reader.readline():
            lines.append(line)
    return lines


def reader_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "acp-stdin"]


async def test_lines_split_across_many_small_reads_come_out_whole():
    long_line = b"x" * 100_000 + b"\n"
    data = b"first\n" + long_line + b"two\nthree\n" + b"last, without a newline"
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading, read_chunk_bytes=7)
        writer = write_in_pieces(writing, data, piece_bytes=3)

        lines = await read_all(reader)
        writer.join(WAIT_S)

    assert lines == [b"first\n", long_line, b"two\n", b"three\n", b"last, without a newline"]


async def test_many_lines_in_one_read_come_out_one_by_one():
    data = b"".join(b"line %d\n" % n for n in range(1000))
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading)
        writer = write_in_pieces(writing, data, piece_bytes=len(data))

        lines = await read_all(reader)
        writer.join(WAIT_S)

    assert lines == [b"line %d\n" % n for n in range(1000)]


async def test_stop_ends_a_reader_waiting_on_an_idle_pipe_and_its_thread():
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading)
        writing.write(b"one\n")
        assert await asyncio.wait_for(reader.readline(), WAIT_S) == b"one\n"
        waiting = asyncio.create_task(reader.readline())
        await asyncio.sleep(0)

        reader.stop()

        assert await asyncio.wait_for(waiting, WAIT_S) == b""
        assert await reader.readline() == b""
        for thread in reader_threads():
            thread.join(WAIT_S)
        assert reader_threads() == []
        # The pipe is still open, and what comes after the stop is left unread in it.
        writing.write(b"after the stop\n")
        assert reading.readline() == b"after the stop\n"
