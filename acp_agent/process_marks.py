"""Telling a process apart from a later one that reuses its pid: its start mark.

A pid is recycled; the pair (boot id, start time in clock ticks) from
/proc is not. Whoever records a pid to act on it after a restart (the
store's session leases, background jobs' process groups) records the mark
with it and compares before acting. Where /proc cannot be read (not Linux)
the mark is None and callers decide what "unsure" means for them.
"""

from __future__ import annotations

import contextlib
import os
import signal
from functools import cache
from pathlib import Path
from typing import Final

__all__ = ("DEAD", "GONE", "kill_group_of", "start_mark")

#: The mark of a process that has exited but is not reaped yet (a zombie).
DEAD: Final = "dead"
#: The mark of a pid no process has (/proc works, the entry is missing).
GONE: Final = "gone"


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_mark(pid: int) -> str | None:
    """`"<boot id>:<start ticks>"` of process `pid`; `GONE`, `DEAD`, or None if unknowable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return GONE if Path("/proc/self/stat").exists() else None
    except OSError:
        return None
    # Fields after the command name (which may hold spaces and parentheses).
    fields = stat[stat.rindex(")") + 2 :].split()
    state, start_ticks = fields[0], fields[19]
    if state in ("Z", "X"):
        return DEAD
    return f"{_boot_id()}:{start_ticks}"


def kill_group_of(pgid: int, mark: str | None) -> bool:
    """SIGKILL process group `pgid` if it is still the one whose leader had `mark`.

    The leader alive with another mark: a new process took the pid, and the
    group is not ours. The leader gone: a pid is never reused while a group
    of that id has members, so any member left is ours, on this machine since
    this boot. A mark from another boot id (another machine, whose session
    was taken over here, or before a reboot) names no group of this one.
    Returns whether a signal was sent. Without a mark (or /proc) nothing is
    killed: unsure.
    """
    if not mark or mark in (GONE, DEAD):
        return False
    if mark.partition(":")[0] != _boot_id():
        return False
    now = start_mark(pgid)
    if now is None or (now not in (GONE, DEAD) and now != mark):
        return False
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pgid, os.WNOHANG)  # reap it if it happens to be our child
    return True
