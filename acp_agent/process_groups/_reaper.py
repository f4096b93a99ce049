"""The reaper: a small process that ends an agent's process groups when the agent dies.

The agent starts it on its first process group, with the read end of a pipe
as its stdin, and writes one line per change: ``+ NAME PGID MARK [NOTE]``
when a group starts, ``- NAME`` when it is over. When the pipe closes (the
agent exited, or was killed, `kill -9` included: the kernel closes a dead
process's descriptors) it kills every group still held, if its leader is
still the same process (`acp_agent.process_marks`), removes their disk
notes, and exits. So it outlives the agent by as long as that takes, and
never lingers after. It runs in a session of its own (a signal for the
agent's process group does not reach it) and imports nothing but the
standard library, `acp_agent.process_marks` and its package's face (with
`acp_agent.lazy_face`): it starts in a few milliseconds, with `python -I -S`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import BinaryIO

from acp_agent.process_marks import kill_group_of

__all__ = ("PROGRAM", "main", "reap")

#: The program the agent runs: it finds `acp_agent` at the path given as its argument.
PROGRAM = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from acp_agent.process_groups._reaper import main; main()"
)


def reap(lines: BinaryIO) -> int:
    """Follow `lines` until they end, then kill the groups still held; how many were killed."""
    held: dict[str, tuple[int, str, str | None]] = {}
    for raw in lines:
        words = raw.decode("utf-8", "replace").rstrip("\n").split(" ", 4)
        if len(words) >= 4 and words[0] == "+":
            with contextlib.suppress(ValueError):
                held[words[1]] = (int(words[2]), words[3], words[4] if len(words) > 4 else None)
        elif len(words) == 2 and words[0] == "-":
            held.pop(words[1], None)
    killed = 0
    for pgid, mark, note in held.values():
        if kill_group_of(pgid, mark):
            killed += 1
        if note:
            with contextlib.suppress(OSError):
                os.unlink(note)
    return killed


def main() -> None:
    reap(sys.stdin.buffer)
