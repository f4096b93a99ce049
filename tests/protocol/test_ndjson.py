"""The agent side's line reader, on a real pipe: lines in whatever the reads, the limit, `stop()`.

Lines come without their newline, and empty ones are skipped (`jsonbounds.LineSplitter`
cuts them; its own tests are in `tests/jsonbounds`).

A writer thread feeds the pipe the way a peer would (in pieces, with pauses
the reader cannot see); the reader runs its own thread and hands lines to
the event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from jsonbounds import HEAD_BYTES, OverLongLine
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
            view = memoryview(data)
            for start in range(0, len(data), piece_bytes):
                stream.write(view[start : start + piece_bytes])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def read_all(reader: ThreadedLineReader) -> list[bytes | bytearray | OverLongLine]:
    lines = []
    async with asyncio.timeout(WAIT_S):
        while line := await reader.readline():
            lines.append(line)
    return lines


def reader_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "acp-stdin"]


async def test_lines_split_across_many_small_reads_come_out_whole():
    long_line = b"x" * 100_000
    data = b"first\n" + long_line + b"\ntwo\n\nthree\n" + b"last, without a newline"
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading, read_chunk_bytes=7)
        writer = write_in_pieces(writing, data, piece_bytes=3)

        lines = await read_all(reader)
        writer.join(WAIT_S)

    assert lines == [b"first", long_line, b"two", b"three", b"last, without a newline"]


async def test_many_lines_in_one_read_come_out_one_by_one():
    data = b"".join(b"line %d\n" % n for n in range(1000))
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading)
        writer = write_in_pieces(writing, data, piece_bytes=len(data))

        lines = await read_all(reader)
        writer.join(WAIT_S)

    assert lines == [b"line %d" % n for n in range(1000)]


async def test_stop_ends_a_reader_waiting_on_an_idle_pipe_and_its_thread():
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading)
        writing.write(b"one\n")
        assert await asyncio.wait_for(reader.readline(), WAIT_S) == b"one"
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


async def test_lines_up_to_the_limit_are_read_and_a_longer_one_is_skipped_to_its_newline():
    limit = 100
    under, at, over = b"u" * (limit - 1), b"a" * limit, b"o" * (limit + 1)
    data = under + b"\n" + at + b"\n" + over + b"\n" + b"next\n" + over
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading, max_line_bytes=limit, read_chunk_bytes=16)
        writer = write_in_pieces(writing, data, piece_bytes=len(data))

        lines = await read_all(reader)
        writer.join(WAIT_S)

    assert lines == [
        under,
        at,
        OverLongLine(size_bytes=limit + 1, limit_bytes=limit, head=over),
        b"next",
        # The last line, cut off by the end of the stream, is over the limit too.
        OverLongLine(size_bytes=limit + 1, limit_bytes=limit, head=over),
    ]


async def test_a_very_long_line_over_many_reads_costs_no_more_than_the_limit():
    limit = 1024 * 1024
    long_line = b"x" * (32 * 1024 * 1024)
    data = long_line + b"\n" + b"the next line\n"
    with pipe() as (reading, writing):
        reader = ThreadedLineReader(reading, max_line_bytes=limit)
        tracemalloc.start()
        try:
            writer = write_in_pieces(writing, data, piece_bytes=4096)
            lines = await read_all(reader)
            writer.join(WAIT_S)
            _, peak_bytes = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

    assert lines == [
        OverLongLine(size_bytes=len(long_line), limit_bytes=limit, head=long_line[:HEAD_BYTES]),
        b"the next line",
    ]
    # What was kept of the line (up to the limit) and a chunk or two, never the line.
    assert peak_bytes < 3 * limit
