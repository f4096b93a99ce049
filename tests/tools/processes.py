"""Watching the processes a command starts: pid files it writes, and whether they live."""

from __future__ import annotations

from pathlib import Path

import anyio

__all__ = ("TREE", "alive", "all_dead", "pids_in")


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie awaiting its reaper counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


async def pids_in(directory: Path, names: list[str]) -> list[int]:
    """The pids the command wrote to `names` (waits until every file is there)."""

    def written() -> bool:
        return all(
            (directory / name).is_file() and (directory / name).read_text().endswith("\n")
            for name in names
        )

    for _ in range(500):
        if written():
            break
        await anyio.sleep(0.02)
    return [int((directory / name).read_text()) for name in names]


async def all_dead(pids: list[int]) -> bool:
    """Whether every process of `pids` is gone within 5 s."""
    for _ in range(250):
        if not any(alive(pid) for pid in pids):
            return True
        await anyio.sleep(0.02)
    return False


#: Starts a child and a grandchild that would sleep for 1000 s, writing their pids.
TREE = (
    "sleep 1000 & echo $! > child.pid; "
    "(sleep 1000 & echo $! > grandchild.pid; wait) & "
    "echo $$ > shell.pid; wait"
)
