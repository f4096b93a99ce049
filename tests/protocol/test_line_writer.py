"""The agent's line writer: in order, never blocking the caller, giving up on a dead reader."""

from __future__ import annotations

import contextlib
import os
import threading
import time

import pytest

from protocol._line_writer import QueuedLineWriter


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_lines_arrive_whole_and_in_order() -> None:
    read_end, write_end = os.pipe()
    writer = QueuedLineWriter(write_end)
    lines = [f'{{"n":{i},"pad":"{"x" * (i * 37 % 5000)}"}}'.encode() for i in range(500)]
    reader = threading.Thread(target=lambda: received.append(read_all(read_end)))
    received: list[bytes] = []
    reader.start()

    for line in lines:
        writer.write(line)
    assert writer.drain(5.0)
    writer.close()
    os.close(write_end)
    reader.join(5.0)

    assert received[0] == b"".join(line + b"\n" for line in lines)


def test_writing_to_a_reader_that_stopped_never_blocks_and_then_gives_up() -> None:
    read_end, write_end = os.pipe()
    gone: list[str] = []
    writer = QueuedLineWriter(
        write_end, max_queued_bytes=10_000, stall_s=0.3, on_gone=lambda: gone.append("gone")
    )
    line = b"y" * 1000
    started = time.monotonic()
    for _ in range(300):  # 300 KB: far more than the pipe holds; nobody reads it
        writer.write(line)
    took = time.monotonic() - started

    # Nothing more is written, yet the stall is noticed on its own.
    deadline = time.monotonic() + 5.0
    while not gone and time.monotonic() < deadline:
        time.sleep(0.02)

    assert took < 0.25  # queued, not written by the caller
    assert gone == ["gone"]
    assert writer.gone
    with pytest.raises(BrokenPipeError):
        writer.write(line)
    assert gone == ["gone"]  # once
    writer.close()
    os.close(read_end)
    os.close(write_end)


def test_a_slow_reader_within_the_bound_loses_nothing() -> None:
    read_end, write_end = os.pipe()
    writer = QueuedLineWriter(write_end, max_queued_bytes=10_000_000, stall_s=0.2)
    received: list[bytes] = []

    def slow_reader() -> None:
        time.sleep(0.5)  # longer than the stall, but the queue stays under its bound
        received.append(read_all(read_end))

    reader = threading.Thread(target=slow_reader)
    reader.start()
    for i in range(200):
        writer.write(b"z" * 1000 + str(i).encode())
    assert writer.drain(5.0)
    writer.close()
    os.close(write_end)
    reader.join(5.0)

    assert not writer.gone
    assert received[0].count(b"\n") == 200


def test_a_closed_reader_makes_the_writer_give_up() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    gone: list[str] = []
    writer = QueuedLineWriter(write_end, on_gone=lambda: gone.append("gone"))

    with contextlib.suppress(BrokenPipeError):  # at once, or from the writer thread
        writer.write(b"{}")
    deadline = time.monotonic() + 5.0
    while not gone and time.monotonic() < deadline:
        time.sleep(0.01)

    assert gone == ["gone"]
    with pytest.raises(BrokenPipeError):
        writer.write(b"{}")
    os.close(write_end)
