"""Keep the protocol's stdout pure: only ACP messages may ever reach fd 1.

A stray `print()`, a C library's warning or a child process inheriting our
stdout would corrupt the ndjson stream. So the protocol gets a private
duplicate of the real stdout, fd 1 is pointed at stderr, and `sys.stdout`
is rebound to stderr: whatever else writes "to stdout" lands in the log.

For the commands whose stdout is a person's or a pipe's (`exec`, `sessions`, `watch`):
`silence_stdout` once its reader went away (`| head -1`), so the run ends quietly.
"""

from __future__ import annotations

import io
import os
import sys
from typing import BinaryIO, TextIO

__all__ = ("claim_stdout", "silence_stdout")


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
