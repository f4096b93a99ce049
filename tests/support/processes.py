"""What runs on this machine, read from /proc: a process, its process group, its children;
and how a test starts one with the signal dispositions it needs, or with no reader for
its output."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from acp_agent.process_marks import start_mark

__all__ = (
    "alive",
    "children_of",
    "command_lines",
    "descendants_of",
    "group_members",
    "reset_signals",
    "run_unread",
    "still_running",
)


def run_unread(
    command: Sequence[str], *, env: Mapping[str, str], timeout_s: float
) -> tuple[int, str]:
    """Run `command` with no one reading its stdout (`command | true`: the pipe is closed
    before it writes); its exit status and stderr."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()
        stderr = process.stderr.read()
        process.wait(timeout_s)
    return process.returncode, stderr


def reset_signals(signals: Collection[signal.Signals]) -> Callable[[], None] | None:
    """A `preexec_fn` that puts `signals` back to their default action in the child (None
    for none): an ignored signal stays ignored across exec, and a suite started under
    `nohup` ignores SIGHUP (in the background, SIGINT too) in every process it starts."""
    if not signals:
        return None
    chosen = tuple(signals)

    def reset() -> None:
        for signum in chosen:
            signal.signal(signum, signal.SIG_DFL)

    return reset


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) of `pid`, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name in parentheses may hold spaces; the fields after it do not.
    state, ppid, pgrp = text.rsplit(")", 1)[1].split()[:3]
    return state, int(ppid), int(pgrp)


def _living() -> dict[int, tuple[int, int]]:
    """Every live process (zombies count as ended): pid -> (parent pid, process group)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None and stat[0] not in ("Z", "X"):
            found[int(entry.name)] = (stat[1], stat[2])
    return found


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie awaiting its reaper counts as ended)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid`."""
    return sorted(pid for pid, (_, pgrp) in _living().items() if pgrp == pgid)


def children_of(ppid: int, *, command_contains: str = "") -> list[int]:
    """The live children of `ppid` whose command line contains `command_contains`."""
    children = []
    for pid, (parent, _) in _living().items():
        if parent != ppid:
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if command_contains in command:
            children.append(pid)
    return sorted(children)


def descendants_of(pid: int) -> dict[int, str]:
    """Every live process below `pid` (children, theirs, ...): pid -> its start mark, to
    tell it from a later process given the same pid (`still_running`)."""
    living = _living()
    found: dict[int, str] = {}
    parents = {pid}
    while parents:
        children = {child for child, (ppid, _) in living.items() if ppid in parents}
        children -= found.keys()
        for child in children:
            mark = start_mark(child)
            if mark is not None:
                found[child] = mark
        parents = children
    return found


def still_running(processes: dict[int, str]) -> list[int]:
    """Which of `processes` (pid -> start mark, from `descendants_of`) are still alive."""
    return sorted(pid for pid, mark in processes.items() if alive(pid) and start_mark(pid) == mark)


def command_lines() -> dict[int, list[str]]:
    """Every live process's command line, split into its arguments: pid -> argv."""
    found = {}
    for pid in _living():
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
        found[pid] = [word.decode(errors="replace") for word in raw.split(b"\0") if word]
    return found
