"""Who holds a session's writer lease, and whether that process still runs.

A lease names its owner by a random token (one per store handle), the pid,
the host and the process's start mark (`acp_agent.process_marks`), so a
recycled pid is not mistaken for the old owner. A lease whose owner is gone
(exited, SIGKILLed, a zombie) may be taken over. A lease held from another
host is assumed live: we cannot look, and SQLite on a network filesystem is
unsupported anyway.
"""

from __future__ import annotations

import os
import socket

import attrs

from acp_agent.core import LeaseHolder, new_id
from acp_agent.process_marks import start_mark
from acp_agent.values import Value

__all__ = ("LeaseOwner", "is_running", "this_process")


@attrs.frozen
class LeaseOwner(Value):
    """A store handle in a process, as recorded in a lease."""

    token: str
    pid: int
    host: str
    #: "<boot id>:<start ticks>" on Linux; empty where it cannot be read.
    process_start: str

    @property
    def holder(self) -> LeaseHolder:
        return LeaseHolder(self.pid, self.host)


def this_process() -> LeaseOwner:
    """A new owner identity for a store handle in this process."""
    pid = os.getpid()
    return LeaseOwner(new_id("lease"), pid, socket.gethostname(), start_mark(pid) or "")


def is_running(owner: LeaseOwner) -> bool:
    """Whether the lease owner's process may still be running (True when unsure)."""
    if owner.host != socket.gethostname():
        return True
    if owner.pid == os.getpid():
        return owner.process_start == (start_mark(owner.pid) or "")
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    start = start_mark(owner.pid)
    if start is None:
        return True  # no /proc: the pid exists, assume it is the owner
    return start == owner.process_start
