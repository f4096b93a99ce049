"""Keep the protocol's stdout pure: only ACP messages may ever reach fd 1.

A stray `print()`, a C library's warning or a child process inheriting our
stdout would corrupt the ndjson stream. So the protocol gets a private
duplicate of the real stdout, fd 1 is pointed at stderr, and `sys.stdout`
is rebound to stderr: whatever else writes "to stdout" lands in the log.
"""

from __future__ import annotations

import io
import os
import sys
from typing import BinaryIO

__all__ = ("claim_stdout",)


def claim_stdout() -> BinaryIO:
    """Take the real stdout for the protocol and point fd 1 at stderr; returns the stream."""
    sys.stdout.flush()
    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return io.FileIO(protocol_fd, "wb", closefd=True)
