"""Who holds a session's writer lease, and whether that process still runs.

A lease names its owner by a random token (one per store handle), the pid,
the host and the process's start mark (boot id and start time from /proc on
Linux), so a recycled pid is not mistaken for the old owner. A lease whose
owner is gone (exited, SIGKILLed, a zombie) may be taken over. A lease held
from another host is assumed live: we cannot look, and SQLite on a network
filesystem is unsupported anyway.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path

import attrs

from acp_agent.core import LeaseHolder, new_id

__all__ = ("LeaseOwner", "is_running", "this_process")


@attrs.frozen
class LeaseOwner:
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
    return LeaseOwner(new_id("lease"), pid, socket.gethostname(), _process_start(pid) or "")


def is_running(owner: LeaseOwner) -> bool:
    """Whether the lease owner's process may still be running (True when unsure)."""
    if owner.host != socket.gethostname():
        return True
    if owner.pid == os.getpid():
        return owner.process_start == (_process_start(owner.pid) or "")
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    start = _process_start(owner.pid)
    if start is None:
        return True  # no /proc: the pid exists, assume it is the owner
    return start == owner.process_start


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _process_start(pid: int) -> str | None:
    """The process's start mark, or None if /proc cannot tell; "dead" for a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone" if Path("/proc/self/stat").exists() else None
    except OSError:
        return None
    # Fields after the command name (which may hold spaces and parentheses).
    fields = stat[stat.rindex(")") + 2 :].split()
    state, start_ticks = fields[0], fields[19]
    if state in ("Z", "X"):
        return "dead"
    return f"{_boot_id()}:{start_ticks}"
