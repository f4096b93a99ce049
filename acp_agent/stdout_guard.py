"""Keep the protocol's stdout pure: only ACP messages may ever reach fd 1.

A stray `print()`, a C library's warning or a child process inheriting our
stdout would corrupt the ndjson stream. So the protocol gets a private
duplicate of the real stdout, fd 1 is pointed at stderr, and `sys.stdout`
is rebound to stderr: whatever else writes "to stdout" lands in the log.

For the commands whose stdout is a person's or a pipe's (`exec`, `sessions`, `watch`):
`LeavableStdout` notices when its reader goes away (`| head -1`) and silences it
(`silence_stdout`), so the run ends quietly.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO, TextIO

__all__ = ("LeavableStdout", "claim_stdout", "silence_stdout")


def claim_stdout() -> BinaryIO:
    """Take the real stdout for the protocol and point fd 1 at stderr; returns the stream."""
    sys.stdout.flush()
    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return io.FileIO(protocol_fd, "wb", closefd=True)


def silence_stdout(stream: TextIO | None = None) -> None:
    """Point `stream` (stdout) at /dev/null once its reader went away: what is still
    buffered then goes nowhere, where Python's last flush at exit would otherwise meet
    the closed pipe again and print an "Exception ignored" report."""
    stream = stream or sys.stdout
    try:
        fileno = stream.fileno()
    except (OSError, ValueError):  # no file behind it (a test's StringIO): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fileno)
    finally:
        os.close(devnull)


class LeavableStdout:
    """stdout whose reader may go away (`| head -1`): the first write or flush that meets
    the closed pipe sets `gone`, silences the stream and calls `on_gone` (from whichever
    thread wrote); nothing more is written and nothing is raised, so a write in a task
    reading a connection never ends it with a traceback."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.gone = threading.Event()
        self.on_gone: Callable[[], object] | None = None

    def write(self, text: str) -> int:
        if not self.gone.is_set():
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._lost()
        return len(text)

    def flush(self) -> None:
        if not self.gone.is_set():
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._lost()

    def _lost(self) -> None:
        self.gone.set()
        silence_stdout(self._stream)
        if self.on_gone is not None:
            self.on_gone()
